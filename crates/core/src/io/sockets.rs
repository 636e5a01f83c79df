//! The node's netpoller: which processes wait on which socket, and the one
//! poll the scheduler's threads run (`netpoll`) for the sockets and, when a
//! cluster is installed, for its links too.
//!
//! A wait, step by step:
//!
//! 1. A process that found its socket not ready ([`Sockets::watch`]) is
//!    queued on the descriptor for reading or writing. The descriptor is
//!    registered with the poller the first time, for good, edge-triggered
//!    (no system call to arm it on later waits). If an edge came since the
//!    last waiter left (bytes arrived, or room was made, while nobody
//!    waited, perhaps just after the process's failed call) and the
//!    descriptor is still ready, the process is not queued but completed
//!    at once, and tries its call again.
//! 2. It blocks (a store wait under its ticket).
//! 3. The poll reports an edge on the descriptor ([`Netpoller`]): every
//!    waiter for what it became ready for is completed with `Notified`;
//!    with no waiter for it, the edge is kept for the next one (step 1).
//! 4. Woken, the process tries its system call again; a spurious wake-up
//!    (another process took the connection) only means waiting again.
//!    No edge is lost: bytes or room that come after a waiter is queued
//!    make an edge of their own.
//!    A deadline withdraws the waiter ([`Sockets::withdraw`]); closing a
//!    socket ([`Sockets::forget`]) completes its waiters with `Deleted`.
//!
//! The cluster's links have a poller of their own, nested in this one
//! while any socket is watched; until then, the poll is the cluster's
//! alone, so nodes that use no socket pay nothing for them.

use std::collections::HashMap;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::*};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use super::poller::Poller;
use crate::netpoll::Netpoll;
use crate::runtime::Runtime;
use crate::waiting::{Completion, Delivery, Waiter};

/// The token under which the cluster's poller is nested in this one.
const SOURCE: u64 = u64::MAX - 1;

/// What a process waits for on a socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interest {
    Read,
    Write,
}

#[derive(Default)]
struct Watched {
    readers: Vec<Waiter>,
    writers: Vec<Waiter>,
    /// Registered with the poller (edge-triggered, for good).
    added: bool,
    /// An edge of readability (or writability) came while nobody waited
    /// for it: the next waiter takes it instead of waiting (step 1).
    readable: bool,
    writable: bool,
}

/// Who waits on which descriptor (step 1), and the poller they wait in.
pub struct Sockets {
    poller: Option<Poller>,
    watched: Mutex<HashMap<RawFd, Watched>>,
    /// Descriptors registered with the poller.
    count: AtomicUsize,
    /// The cluster's poll, once installed.
    source: OnceLock<Arc<dyn Netpoll>>,
    /// Whether any socket was ever watched: from then on the poll is this
    /// one, with the cluster's poller nested in it.
    nested: AtomicBool,
    /// Held while the cluster's poller is nested (it may come before or
    /// after the first socket).
    nesting: Mutex<()>,
}

impl Default for Sockets {
    fn default() -> Sockets {
        // A node that cannot make a poller (out of descriptors at start)
        // still runs; its sockets say why they cannot wait.
        Sockets { poller: Poller::new().ok(), watched: Mutex::new(HashMap::new()), count: AtomicUsize::new(0), source: OnceLock::new(), nested: AtomicBool::new(false), nesting: Mutex::new(()) }
    }
}

impl Sockets {
    fn poller(&self) -> std::io::Result<&Poller> {
        self.poller.as_ref().ok_or_else(|| std::io::Error::other("the node has no poller for sockets"))
    }

    /// Step 1: queues `waiter` on `fd` for `interest`, registering `fd` the
    /// first time; true instead when an edge kept for it says to try again
    /// at once (the waiter is then not queued: the caller completes it).
    pub fn watch(&self, fd: RawFd, interest: Interest, waiter: Waiter) -> std::io::Result<bool> {
        let poller = self.poller()?;
        self.nest_source();
        let mut watched = self.watched.lock();
        let w = watched.entry(fd).or_default();
        if !w.added {
            if let Err(e) = poller.watch_edges(fd, fd as u64) {
                // Never registered: nothing of it is kept.
                watched.remove(&fd);
                return Err(e);
            }
            w.added = true;
            self.count.fetch_add(1, Relaxed);
        }
        let (kept, waiters) = match interest {
            Interest::Read => (&mut w.readable, &mut w.readers),
            Interest::Write => (&mut w.writable, &mut w.writers),
        };
        // A kept edge may be older than what the process has read since:
        // the descriptor is asked (rarely: only after an edge nobody
        // waited for), so that a wait never ends for nothing.
        if std::mem::take(kept) && ready_now(fd, interest) {
            return Ok(true);
        }
        waiters.push(waiter);
        Ok(false)
    }

    /// Step 4: `waiter` no longer waits on `fd` (its deadline passed).
    pub fn withdraw(&self, fd: RawFd, waiter: Waiter) {
        if let Some(w) = self.watched.lock().get_mut(&fd) {
            w.readers.retain(|x| *x != waiter);
            w.writers.retain(|x| *x != waiter);
        }
    }

    /// Step 4: `fd` is about to be closed: it is no longer watched, and
    /// whoever waited on it is told (`Deleted`).
    pub fn forget(&self, fd: RawFd) -> Vec<Delivery> {
        let Some(w) = self.watched.lock().remove(&fd) else { return Vec::new() };
        if w.added {
            if let Some(poller) = &self.poller {
                poller.remove(fd);
            }
            self.count.fetch_sub(1, Relaxed);
        }
        w.readers.into_iter().chain(w.writers).map(|waiter| (waiter, Completion::Deleted)).collect()
    }

    /// Step 3: an edge on `fd`: it became ready for what epoll's `events`
    /// say. Its waiters for that are woken; with none, the edge is kept.
    fn ready(&self, fd: RawFd, events: u32, woken: &mut Vec<Waiter>) {
        let mut watched = self.watched.lock();
        let Some(w) = watched.get_mut(&fd) else { return };
        let broken = events & (libc::EPOLLHUP | libc::EPOLLERR) as u32 != 0;
        if broken || events & (libc::EPOLLIN | libc::EPOLLRDHUP) as u32 != 0 {
            w.readable = w.readers.is_empty();
            woken.append(&mut w.readers);
        }
        if broken || events & libc::EPOLLOUT as u32 != 0 {
            w.writable = w.writers.is_empty();
            woken.append(&mut w.writers);
        }
    }

    /// Installs the cluster's poll (see the module's last paragraph).
    pub(crate) fn set_source(&self, source: Arc<dyn Netpoll>) -> bool {
        let _nesting = self.nesting.lock();
        if self.source.set(source).is_err() {
            return false;
        }
        if self.nested.load(SeqCst) {
            self.nest(true);
        }
        true
    }

    /// From the first socket on, the poll is this one, with the cluster's
    /// poller nested in it.
    fn nest_source(&self) {
        if self.nested.load(Relaxed) {
            return;
        }
        let _nesting = self.nesting.lock();
        if !self.nested.swap(true, SeqCst) {
            self.nest(false);
        }
    }

    /// Nests the cluster's poller, and wakes a thread that waits in the
    /// cluster's poll alone, so that it waits here instead (`fresh`: it
    /// is just installed, so no thread does).
    fn nest(&self, fresh: bool) {
        let (Some(source), Some(poller)) = (self.source.get(), &self.poller) else { return };
        if let Some(fd) = source.fd() {
            let _ = poller.nest(fd, SOURCE);
        }
        if !fresh {
            source.interrupt();
        }
    }
}

/// Whether `fd` is ready for `interest` now (or broken), without waiting.
fn ready_now(fd: RawFd, interest: Interest) -> bool {
    let events = match interest {
        Interest::Read => libc::POLLIN | libc::POLLRDHUP,
        Interest::Write => libc::POLLOUT,
    };
    let mut probe = libc::pollfd { fd, events, revents: 0 };
    // SAFETY: one valid pollfd, no wait.
    let n = unsafe { libc::poll(&mut probe, 1, 0) };
    n != 0 && (n < 0 || probe.revents != 0)
}

/// The runtime's [`Netpoll`]: the sockets' poll, with the cluster's inside
/// it (step 3).
pub(crate) struct Netpoller(pub(crate) Runtime);

impl Netpoll for Netpoller {
    fn poll(&self, wait: bool) -> bool {
        let sockets = self.0.sockets();
        let source = sockets.source.get();
        if !sockets.nested.load(SeqCst) {
            return source.is_some_and(|s| s.poll(wait));
        }
        let Some(poller) = &sockets.poller else { return source.is_some_and(|s| s.poll(wait)) };
        if !wait && sockets.count.load(Relaxed) == 0 {
            return source.is_some_and(|s| s.poll(false));
        }
        if let Some(s) = source {
            s.watch_all();
        }
        let (mut woken, mut any) = (Vec::new(), false);
        poller.wait_events(wait, &mut |token, events| match token {
            SOURCE => any |= source.is_some_and(|s| s.poll_reported()),
            fd => sockets.ready(fd as RawFd, events, &mut woken),
        });
        any |= !woken.is_empty();
        for waiter in woken {
            self.0.complete((waiter, Completion::Notified));
        }
        any
    }

    fn interrupt(&self) {
        let sockets = self.0.sockets();
        match (sockets.nested.load(SeqCst), sockets.source.get(), &sockets.poller) {
            (false, Some(source), _) => source.interrupt(),
            (_, _, Some(poller)) => poller.interrupt(),
            (_, Some(source), None) => source.interrupt(),
            _ => {}
        }
    }

    fn flush(&self) {
        if let Some(source) = self.0.sockets().source.get() {
            source.flush();
        }
    }

    fn flush_left(&self) {
        if let Some(source) = self.0.sockets().source.get() {
            source.flush_left();
        }
    }

    fn writing_behind(&self) -> bool {
        self.0.sockets().source.get().is_some_and(|s| s.writing_behind())
    }
}

#[cfg(test)]
mod tests {
    //! The waiters' bookkeeping, driven by hand over a socket pair: no
    //! runtime, no scheduler (the poll is the test's own call).
    use super::*;
    use crate::Pid;
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    fn waiter(n: u32) -> Waiter {
        Waiter { pid: Pid::new(0, n, 0), ticket: 1 }
    }

    /// One non-blocking poll: the waiters it wakes.
    fn poll(sockets: &Sockets) -> Vec<Waiter> {
        let mut woken = Vec::new();
        sockets.poller.as_ref().unwrap().wait_events(false, &mut |token, events| sockets.ready(token as RawFd, events, &mut woken));
        woken
    }

    #[test]
    fn readers_wait_until_bytes_arrive_and_are_all_woken() {
        let sockets = Sockets::default();
        let (mut peer, ours) = UnixStream::pair().unwrap();
        let fd = ours.as_raw_fd();
        sockets.watch(fd, Interest::Read, waiter(1)).unwrap();
        sockets.watch(fd, Interest::Read, waiter(2)).unwrap();
        assert!(poll(&sockets).is_empty(), "nothing to read yet");
        peer.write_all(b"x").unwrap();
        let mut woken = poll(&sockets);
        woken.sort_by_key(|w| w.pid.raw());
        assert_eq!(woken, [waiter(1), waiter(2)]);
        assert!(poll(&sockets).is_empty(), "nobody waits any more");
        // Edge-triggered: the byte already reported (its readers read it)
        // wakes nobody again; the next bytes do.
        assert!(!sockets.watch(fd, Interest::Read, waiter(3)).unwrap());
        assert!(poll(&sockets).is_empty());
        peer.write_all(b"y").unwrap();
        assert_eq!(poll(&sockets), [waiter(3)]);
    }

    #[test]
    fn an_edge_that_finds_no_waiter_is_kept_for_the_next_one() {
        let sockets = Sockets::default();
        let (mut peer, ours) = UnixStream::pair().unwrap();
        let fd = ours.as_raw_fd();
        assert!(!sockets.watch(fd, Interest::Read, waiter(1)).unwrap());
        peer.write_all(b"x").unwrap();
        assert_eq!(poll(&sockets), [waiter(1)]);
        // Bytes come while the process runs (between its read and its wait).
        peer.write_all(b"y").unwrap();
        assert!(poll(&sockets).is_empty());
        assert!(sockets.watch(fd, Interest::Read, waiter(1)).unwrap(), "the kept edge: try again at once");
        assert!(!sockets.watch(fd, Interest::Read, waiter(1)).unwrap(), "taken: the next wait waits");
        // A kept edge whose bytes were read meanwhile ends no wait.
        peer.write_all(b"z").unwrap();
        assert_eq!(poll(&sockets), [waiter(1)]);
        peer.write_all(b"w").unwrap();
        assert!(poll(&sockets).is_empty(), "kept");
        let mut got = [0u8; 8];
        assert_eq!((&ours).read(&mut got).unwrap(), 4, "xyzw");
        assert!(!sockets.watch(fd, Interest::Read, waiter(1)).unwrap(), "read already: it waits");
        // Room to write was reported at registration, with no writer then.
        assert!(sockets.watch(fd, Interest::Write, waiter(2)).unwrap());
    }

    #[test]
    fn a_writer_is_woken_when_the_socket_takes_bytes_and_a_reader_stays() {
        let sockets = Sockets::default();
        let (_peer, ours) = UnixStream::pair().unwrap();
        let fd = ours.as_raw_fd();
        sockets.watch(fd, Interest::Read, waiter(1)).unwrap();
        sockets.watch(fd, Interest::Write, waiter(2)).unwrap();
        assert_eq!(poll(&sockets), [waiter(2)], "writable at once, nothing to read");
        assert!(poll(&sockets).is_empty(), "the reader is armed again, and still waits");
        assert_eq!(sockets.forget(fd), [(waiter(1), Completion::Deleted)], "closing tells the reader");
    }

    #[test]
    fn a_withdrawn_waiter_is_not_woken() {
        let sockets = Sockets::default();
        let (mut peer, ours) = UnixStream::pair().unwrap();
        let fd = ours.as_raw_fd();
        sockets.watch(fd, Interest::Read, waiter(1)).unwrap();
        sockets.watch(fd, Interest::Read, waiter(2)).unwrap();
        sockets.withdraw(fd, waiter(1));
        peer.write_all(b"x").unwrap();
        assert_eq!(poll(&sockets), [waiter(2)]);
        assert!(sockets.forget(fd).is_empty());
        assert_eq!(sockets.count.load(Relaxed), 0, "forgotten: no longer registered");
    }

    #[test]
    fn a_peer_that_closes_wakes_its_readers() {
        let sockets = Sockets::default();
        let (peer, ours) = UnixStream::pair().unwrap();
        let fd = ours.as_raw_fd();
        sockets.watch(fd, Interest::Read, waiter(1)).unwrap();
        drop(peer);
        assert_eq!(poll(&sockets), [waiter(1)], "the end of the stream is something to read");
    }

    #[test]
    fn watching_a_descriptor_that_is_not_open_is_an_error_not_a_waiter() {
        let sockets = Sockets::default();
        assert!(sockets.watch(-1, Interest::Read, waiter(1)).is_err());
        assert!(sockets.watched.lock().is_empty(), "nothing kept of it");
    }
}
