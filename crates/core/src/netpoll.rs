//! The scheduler's hook for reading the network itself, as Go's netpoller
//! does. A transport that installs a [`Netpoll`] (`Runtime::set_netpoll`)
//! has its connections read by the scheduler's own threads, so that a
//! message from another node costs one thread wake-up (the worker that then
//! runs its receiver), not an I/O thread's and then a worker's; and a worker
//! spinning for work catches a reply without sleeping at all.
//!
//! Who reads, step by step:
//!
//! 1. One thread at a time holds the *poll token*. A worker out of work takes
//!    it if it is free, and polls without waiting while it spins (giving
//!    its core away once, at the first poll that finds nothing, unless
//!    [`Netpoll::writing_behind`]: the peer that will answer may be
//!    waiting for that core).
//! 2. If the worker still finds nothing it parks *in the poll* (it waits in
//!    `poll(true)`), keeping the token; other idle workers park as usual.
//!    Waking it is [`Netpoll::interrupt`].
//! 3. What the poll delivers is queued on the polling worker itself, so the
//!    receiver runs next, on that thread. Before running it the worker gives
//!    the token back. Queuing it wakes no other worker (one is woken after
//!    the poll if more than one process came): a remote spawn every 10 µs
//!    had woken the other worker for each, which found nothing and parked
//!    again, two context switches a spawn.
//! 4. While every worker runs a process, the monitor polls once per tick
//!    (every 0.5 ms), so arrivals never wait for longer than that.
//!
//! Writes go the other way: what a process queues for another node while it
//! runs is written when its run ends ([`Netpoll::flush`]), one system call
//! for everything it sent, by the worker itself; or when the process next
//! turns to its mailbox, if it gets there first (`Runtime::flush_queued`:
//! a process that finds its messages waiting and goes on computing, a long
//! native call, would otherwise hold its sends back as long as it computes,
//! while the peers it sent to wait for it, as the N-body's all-gather did).
//! A thread-local flag ([`note_queued`]) says whether there is anything to
//! write, so that a receive costs the transport no call when there is not.
//!
//! 5. What a poll queues itself (the reply to another node's spawn, a
//!    remote `take`'s tuple) waits for the run of the first process that
//!    poll made runnable, and goes out in that run's write: a remote fork's
//!    reply and the new entity's READY travel together. A run that
//!    overruns its slice has what its thread queued written by the monitor
//!    ([`Netpoll::flush_left`]), so nothing waits behind a long C call for
//!    more than a slice or two.

use std::cell::Cell;

pub trait Netpoll: Send + Sync {
    /// Reads what has arrived and delivers it; when `wait`, first waits
    /// until something arrives or [`Netpoll::interrupt`] is called. True
    /// when anything was delivered.
    fn poll(&self, wait: bool) -> bool;

    /// Ends a `poll(true)` in progress, or the next one.
    fn interrupt(&self);

    /// Writes what this thread has queued for other nodes (called after
    /// every run that queued any, and after a poll that made nothing
    /// runnable here, on threads where [`flushes_here`] holds; step 5).
    fn flush(&self);

    /// Writes what any thread queued for other nodes and has not written
    /// yet. The monitor calls it for a run that overruns its slice: its
    /// worker writes what it queued only when the run ends (or the process
    /// turns to its mailbox), and a C function can hold it for as long as
    /// it computes.
    fn flush_left(&self) {}

    /// A descriptor that is readable while `poll(false)` has something to
    /// deliver (an epoll instance's), so the node's netpoller can watch it
    /// beside the sockets (`io`).
    fn fd(&self) -> Option<std::os::fd::RawFd> {
        None
    }

    /// As `poll(false)`, when [`Netpoll::fd`], nested in the netpoller,
    /// was reported readable: what made it so must be taken from it, or
    /// it stays readable. (An epoll instance nested in another is reported
    /// while its ready list holds an entry, even one whose bytes were read
    /// since without a wait on it: a `poll(false)` that reads a socket
    /// straight away would leave the netpoller reporting it for good.)
    fn poll_reported(&self) -> bool {
        self.poll(false)
    }

    /// Whether a thread of the transport is writing what the workers left
    /// (a long message going out): a spinning worker then keeps its core
    /// rather than yield it to that thread for a whole time slice of the
    /// kernel's (see the scheduler's `spin`).
    fn writing_behind(&self) -> bool {
        false
    }

    /// The netpoller is about to learn of arrivals through [`Netpoll::fd`]
    /// (a wait on it, or a poll through it): a source that takes its
    /// connections out of that poller while its one connection is read
    /// straight away at every spinning `poll(false)` puts them back.
    fn watch_all(&self) {}
}

thread_local! {
    static FLUSHES: Cell<bool> = const { Cell::new(false) };
    /// This thread queued something for another node since it last flushed.
    static QUEUED: Cell<bool> = const { Cell::new(false) };
}

/// For the transport: the current thread queued writes that it leaves for
/// its next [`Netpoll::flush`].
#[inline]
pub fn note_queued() {
    QUEUED.with(|q| q.set(true));
}

/// Whether the current thread queued writes since this was last asked.
#[inline]
pub(crate) fn take_queued() -> bool {
    QUEUED.with(|q| q.replace(false))
}

/// Whether the current thread calls [`Netpoll::flush`] soon: a worker, or
/// the monitor while it polls. A transport may leave what such a thread
/// queues for that call, and must see to everyone else's itself.
pub fn flushes_here() -> bool {
    FLUSHES.with(Cell::get)
}

/// Marks the current thread as one that calls [`Netpoll::flush`].
pub(crate) fn set_flushes_here(on: bool) {
    FLUSHES.with(|f| f.set(on));
}
