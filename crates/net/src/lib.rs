//! Synodic's I/O layer: everything that waits on sockets runs here, on one
//! thread of its own driving a tokio runtime, apart from the scheduler's
//! workers. Processes never block on I/O: the I/O thread turns what arrives
//! into messages to processes, and what processes write goes through the
//! runtime's ports (`synodic_core::ports`) to the tasks here.
//!
//! The surface, in one place:
//!
//! | module | gives |
//! |---|---|
//! | [`Io`] | the I/O thread: `start`, `spawn` |
//! | [`cluster`] | `Cluster`: this node's links to the others (TCP), membership over UDP, the runtime's `Remote`: `start`, `join`, `addr` |
//! | [`console`] | the console endpoint (`listen`), its line protocol (`HELLO`, `escape`, `unescape`) |
//! | [`cookie`] | the shared secret: `default_file`, `load_or_create`, warnings about a weak one |
//! | [`frame`] | the node protocol's frames: `Frame`, `Hello`, the `Decoder` of a byte stream |
//! | `link` | one connection to a peer: its state, queueing frames, whose senders wait |
//! | `outbox` | what waits to be written on a link: sealed into records ahead, written in order |
//! | `inbound` | what arrives on a link: records opened, frames cut, parts read straight into parcels |
//! | [`parcel`] | long messages and messages with buffers cut into parts and put back together: `Parcel`, `Assembler` |
//! | [`membership`] | SWIM membership and failure detection (foca), sans-IO: `Membership`, `Member`, `Event`; `seal`/`open` for its datagrams |
//! | [`launch`] | hostfiles (`parse_hostfile`, `place`) and the `Job` mpirun or srun describe in the environment |
//! | [`handshake`] | the cookie proven both ways, the connecting side first, and the session keys (X25519, HKDF, HMAC): `Handshake`, `Config`, `Peer`, `Session`; `blocking` runs one over a std socket |
//! | [`record`] | every byte after the handshake in sealed records (AEGIS-128L, or authenticated only): `Sealer`, `Opener` |
//! | `gate` | the few places for connections that have not proved themselves yet |
//! | [`Error`] | what can go wrong |
#![deny(unsafe_op_in_unsafe_fn)]

pub mod cluster;
pub mod console;
pub mod cookie;
mod error;
pub mod frame;
mod gate;
pub mod handshake;
mod inbound;
pub mod launch;
mod link;
pub mod membership;
mod outbox;
pub mod parcel;
pub mod record;

pub use error::Error;

use std::future::Future;

/// The I/O thread: a single-threaded tokio runtime that runs until the OS
/// process ends (a node's I/O is light; the work is in processes).
pub struct Io {
    handle: tokio::runtime::Handle,
}

impl Io {
    /// Starts the I/O thread.
    pub fn start() -> Result<Io, Error> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_io().enable_time().build().map_err(Error::Start)?;
        let handle = runtime.handle().clone();
        std::thread::Builder::new()
            .name("synodic-io".into())
            .spawn(move || runtime.block_on(std::future::pending::<()>()))
            .map_err(Error::Start)?;
        Ok(Io { handle })
    }

    /// The tokio runtime of the I/O thread.
    pub fn handle(&self) -> &tokio::runtime::Handle {
        &self.handle
    }

    /// Runs `task` on the I/O thread.
    pub fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        self.handle.spawn(task);
    }

    /// Runs `task` on the I/O thread and waits for its result (for setting
    /// things up: binding a listener).
    pub fn run<T: Send + 'static>(&self, task: impl Future<Output = T> + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        self.handle.spawn(async move {
            let _ = tx.send(task.await);
        });
        rx.recv().expect("the I/O thread runs as long as the process")
    }
}
