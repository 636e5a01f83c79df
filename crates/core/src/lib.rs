//! Synodic's native core: everything that is shared between processes or
//! touches threads. A process here is a pid, a mailbox and an opaque body; the
//! Lua layer (`synodic-lua`) supplies the bodies and maps Lua values onto the
//! wire format. Nothing in this crate knows Lua.
//!
//! The native surface, in one place:
//!
//! | module | gives |
//! |---|---|
//! | [`pid`] | `Pid`: node alias, slot and generation in one tagged `u64` |
//! | [`node`] | `NodeId` (name and incarnation), `Nodes`: the node table that pids' aliases index |
//! | [`process`] | `Process`, `Body`, `Step`, `ExitReason` |
//! | `message` | `Message`: encoded values, small ones inline, with shared attachments |
//! | [`payload`] | `Payload`: a buffer's bytes, whose large allocations a cache keeps warm for reuse |
//! | [`dist`] | the distribution layer: one sans-IO service per distributed feature (`Services`), over a narrow `Transport` |
//! | [`io`] | the node's netpoller: processes waiting on sockets, the `Poller` (epoll) that the cluster's links use too |
//! | [`netpoll`] | `Netpoll`: the transport's connections, read and written by the scheduler's own threads |
//! | [`runtime`] | `Runtime`: spawn, send, wake, timers, monitors, names, `run_main`, `halt` |
//! | [`future`] | `Store` of results and replicas (a state machine), `Ticket` (a node's hold on a future), `Futures`; `Runtime::future_*` |
//! | [`pool`] | `Pool` (a state machine): the node's task queue and its worker processes; `Runtime::pool_push` |
//! | [`waiting`] | `Waiter`, `Completion`, `Delivery`: what the stores queue and decide |
//! | [`ports`] | `Ports`: byte sinks of the I/O layer that processes write to by number |
//! | [`channel`] | `ChannelStore` (a state machine) and `Channels` (the node's, behind a lock): named rendezvous |
//! | [`linda`] | `Store` (a state machine): a tuple store indexed by arity and first field, with waiters |
//! | [`spaces`] | `Space`, `Spaces` (the node's), `SpaceRef`: what a handle names, here or on another node |
//! | [`scope`] | `Gate`: the tuple scope's stop, step and break on this node's tuple operations |
//! | [`stats`] | counters of the node's traffic (messages delivered), cheap enough for the hot path |
//! | [`linda_remote`] | tuple-space requests between nodes: their format, `serve` (the home's side), the name `keeper` |
//! | [`wire`] | `Writer` / `Reader`: the value wire format |
//! | [`hash`] | `FastHasher`: hashing for the runtime's own keys |
//! | `scheduler`, `monitor` | the worker pool and its watcher; `on_preempt_signal` for the preemption signal's handler, `MAX_WORKERS` |
//! | [`idle`] | `set_idle_work`: short pieces of work a worker spinning for processes does meanwhile |
//! | `table`, `mailbox`, `timer`, `names` | internal: process slots, message queues, deadlines, name map |
//! | `sync` | internal: the atomics and lock of the run-state protocol, loom's in a loom test build |
//! | [`cache`] | the last-level cache's size (for warming), `largest_block` (the bound on what a program may allocate at once) |
#![deny(unsafe_op_in_unsafe_fn)]

pub mod cache;
pub mod channel;
pub mod dist;
mod error;
pub mod future;
pub mod hash;
pub mod idle;
pub mod io;
pub mod linda;
pub mod linda_remote;
pub mod log;
mod mailbox;
mod message;
mod names;
pub mod netpoll;
pub mod node;
pub mod payload;
pub mod pid;
pub mod ports;
mod monitor;
pub mod pool;
pub mod process;
pub mod runtime;
mod scheduler;
pub mod scope;
pub mod stats;
pub mod spaces;
mod sync;
mod table;
pub mod timer;
pub mod waiting;
pub mod wire;

pub use error::Error;
pub use node::NodeId;
pub use pid::Pid;
pub use message::{Attachment, Message};
pub use process::{Body, ExitReason, Process, Step};
pub use runtime::{Config, ProcessInfo, RunEnd, Runtime, Spawn, MEMORY_LIMIT};
pub use scheduler::{on_preempt_signal, MAX_WORKERS};
