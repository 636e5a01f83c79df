//! Spawning processes, routing a pid to its process here or to the
//! transport, delivering messages and completions, and waking.

use std::time::Instant;


use crate::process::{Body, Process, Refused};
use crate::waiting::Delivery;
use crate::{Error, Message, Pid};


use super::*;

impl Runtime {
    /// Starts a process; it runs as soon as a worker is free.
    pub fn spawn(&self, body: Box<dyn Body>) -> Result<Pid, Error> {
        self.spawn_with(body, Spawn::default())
    }

    /// Starts a process, as [`Runtime::spawn`] does, as `spawn` says.
    pub fn spawn_with(&self, body: Box<dyn Body>, spawn: Spawn) -> Result<Pid, Error> {
        let slot = self.shared.table.acquire().ok_or(Error::TooManyProcesses)?;
        let max_memory = spawn.max_memory.or(self.shared.max_process_memory);
        let pid = slot.occupy(body, max_memory);
        if let Some(first) = spawn.first {
            // In no run queue yet: nothing can come before it.
            if slot.deliver(pid, first).is_err() {
                slot.end_over_limit();
            }
        }
        self.scheduler().schedule_back(slot);
        // After the process is queued: the first worker finds it there. A
        // second process starts the rest (see `Runtime::start`).
        // (A load first: a swap on every spawn would bounce the line
        // between workers.)
        let second = self.shared.spawned.load(Relaxed) || self.shared.spawned.swap(true, AcqRel);
        self.start_threads(second)?;
        Ok(pid)
    }

    /// Where `pid` lives: the one place where whatever addresses a process
    /// (send, monitor, a store's delivery) branches off when the process is
    /// on another node. Until nodes talk to each other (the cluster's
    /// transport), a pid of another node reaches nothing.
    #[inline]
    pub(super) fn route(&self, pid: Pid) -> Route {
        match self.shared.table.lookup(pid) {
            Some(slot) => Route::Here(slot),
            // A pid of a node whose alias went to another since names nothing.
            None if pid.node() != 0 && self.shared.nodes.is_current(pid) => Route::Elsewhere(pid.node()),
            None => Route::Nowhere,
        }
    }

    /// The slot of a live process of this node.
    pub(super) fn live(&self, pid: Pid) -> Option<&'static Process> {
        match self.route(pid) {
            Route::Here(slot) => Some(slot).filter(|p| p.is(pid)),
            _ => None,
        }
    }

    pub fn is_alive(&self, pid: Pid) -> bool {
        self.live(pid).is_some()
    }

    /// Whether the process `pid` of this node holds more than
    /// [`BUSY_HIGH`](crate::dist::BUSY_HIGH) bytes of messages; if so it
    /// is noted that a node waits to hear when it drains (see
    /// [`Transport::drained`](crate::dist::Transport::drained)).
    pub fn busy(&self, pid: Pid) -> bool {
        match self.live(pid) {
            Some(slot) if slot.queued_bytes() > crate::dist::BUSY_HIGH => {
                slot.watch_drain();
                true
            }
            _ => false,
        }
    }

    /// [`Runtime::busy`] without noting anything: a cheap look first, for
    /// a caller that must take a lock before it may note.
    pub fn is_busy(&self, pid: Pid) -> bool {
        self.live(pid).is_some_and(|slot| slot.queued_bytes() > crate::dist::BUSY_HIGH)
    }

    /// [`Runtime::send`] from the running process `from`, which learns its
    /// peer from it (see [`Process::note_peer`]).
    pub fn send_from(&self, from: &Process, to: Pid, msg: Message) -> bool {
        from.note_peer(to);
        self.send_as(from.pid(), to, msg)
    }

    /// Delivers a message; false when the destination is gone (the message is dropped).
    pub fn send(&self, to: Pid, msg: Message) -> bool {
        self.send_as(to, to, msg)
    }

    /// [`Runtime::send`], saying who sends (the transport keeps messages of
    /// one sender to one receiver in order; the runtime's own notices name
    /// their receiver as sender).
    pub(super) fn send_as(&self, from: Pid, to: Pid, msg: Message) -> bool {
        let slot = match self.route(to) {
            Route::Here(slot) => slot,
            Route::Elsewhere(_) => return self.service::<crate::dist::mail::Mail>().send(self, from, to, msg),
            Route::Nowhere => return false,
        };
        if self.wakes_cold() {
            // Its line would otherwise only be asked for after the mailbox
            // lock's atomic operations, one miss after another.
            slot.prefetch_hint();
        }
        match slot.deliver(to, msg) {
            Ok(()) => {
                crate::stats::message();
                self.wake(slot);
                true
            }
            Err(Refused::OverLimit) => {
                // The receiver's queued messages would go over its memory
                // limit: it ends (alone), and this message is dropped.
                slot.end_over_limit();
                self.wake(slot);
                false
            }
            Err(Refused::Gone) => false,
        }
    }

    /// For the running process, as it turns to its mailbox: what this
    /// thread queued for other nodes goes out now (see `netpoll`, "Writes").
    #[inline]
    pub fn flush_queued(&self) {
        self.scheduler().flush_queued()
    }

    /// Wakes the process `pid` of this node, if it lives, to look again at
    /// what it waits for.
    pub fn nudge(&self, pid: Pid) {
        if let Some(slot) = self.live(pid) {
            self.wake(slot);
        }
    }

    /// Lets a process know something it may wait for has happened.
    #[inline]
    pub fn wake(&self, proc: &'static Process) {
        if proc.notify() {
            if self.wakes_cold() {
                self.warm(proc);
            }
            self.scheduler().schedule(proc);
        }
    }

    /// Whether so many processes are alive that a woken one is likely to
    /// have left the caches; only then do wakers warm it (see
    /// [`Process::set_hot_lines`]), since warming a hot process is wasted work.
    #[inline]
    pub fn wakes_cold(&self) -> bool {
        self.shared.table.occupied() > self.shared.warm_above.load(Relaxed)
    }

    /// Starts loading what `proc`, about to be queued, will touch: its body,
    /// its hot lines, and the slot of its peer, whose lines `run_process`
    /// asks for when `proc` starts. (A peer's lines are thus asked for twice:
    /// a hop early, and again when it is woken. Measured on the ring at
    /// N=100k, asking only once loses most of the gain: 430 -> 560 ns/send.)
    #[inline]
    pub(super) fn warm(&self, proc: &'static Process) {
        proc.warm_body();
        proc.prefetch_hot_lines();
        if let Some(peer) = self.peer_of(proc) {
            peer.prefetch_slot();
        }
    }

    /// The process `proc` last sent to, if it is of this node.
    #[inline]
    pub(super) fn peer_of(&self, proc: &Process) -> Option<&'static Process> {
        self.shared.table.slot(proc.peer()?)
    }

    /// Carries out a store's decision (see `waiting`): the waiter's process
    /// gets the completion and is woken. A waiter that has ended gets nothing.
    /// A waiter of another node is answered over the network.
    pub fn complete(&self, (waiter, completion): Delivery) {
        match self.route(waiter.pid) {
            Route::Here(slot) => {
                if slot.complete(waiter.pid, waiter.ticket, completion) {
                    self.wake(slot);
                }
            }
            Route::Elsewhere(_) => {
                self.service::<crate::dist::spaces::Spaces>().complete(self, waiter, completion);
            }
            Route::Nowhere => {}
        }
    }

    /// Wakes `proc` at `at` (it re-checks its own deadline then).
    pub fn arm_timer(&self, proc: &'static Process, at: Instant) {
        self.start_timers();
        self.shared.timers.arm(proc, at);
    }

    /// Sends `later` at `at` (`send_after`); returns its reference.
    pub fn send_at(&self, at: Instant, later: crate::timer::Later) -> u64 {
        self.start_timers();
        self.shared.timers.send_at(at, later)
    }

    /// Cancels the message with reference `id`: true if it had not been sent.
    pub fn cancel_timer(&self, id: u64) -> bool {
        self.shared.timers.cancel(id)
    }

    /// A due timer: a process woken, or a message sent.
    pub(super) fn fired(&self, fired: crate::timer::Fired) {
        use crate::timer::{Dest, Fired};
        match fired {
            Fired::Wake(proc) => self.wake(proc),
            Fired::Send(later) => {
                let to = match later.to {
                    Dest::Pid(pid) => Some(pid),
                    Dest::Name(name) => self.whereis(&name),
                };
                if let Some(to) = to {
                    self.send_as(later.from, to, later.message);
                }
            }
        }
    }
}

/// Where a pid lives (see [`Runtime::route`]).
pub(super) enum Route {
    Here(&'static Process),
    /// On the node with this alias.
    Elsewhere(#[allow(dead_code)] u16),
    /// On this node, in no slot there is (a pid from junk, or made up).
    Nowhere,
}

/// How many live processes of `process_bytes` each fit in half the
/// last-level cache: beyond that, wakers warm what they wake. Measured on the
/// ring (bench/ring, 2-core EPYC, 32 MB L3, 7 KB processes): warming costs
/// ~3% up to 2,000 processes and pays from 2,500 on (at 4,000: 780 -> 320
/// ns/send); half the cache is 2,300 of them.
pub(super) fn warm_above(last_level_bytes: usize, process_bytes: usize) -> usize {
    last_level_bytes / 2 / process_bytes.max(1)
}
