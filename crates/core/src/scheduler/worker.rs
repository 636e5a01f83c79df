//! A worker thread's loop: finding work (next, woken, preempted, the
//! injector, its peers), spinning, parking, and standing aside when stuck.

use std::cell::Cell;
use std::sync::atomic::Ordering::*;
use std::time::Instant;

use crossbeam_deque::{Steal, Worker};

use crate::netpoll;
use crate::process::Process;

use super::*;

pub(super) struct Local {
    pub(super) woken: Deque,
    pub(super) preempted: Deque,
    pub(super) next: Cell<Option<&'static Process>>,
    pub(super) streak: Cell<u32>,
    pub(super) ticks: Cell<u32>,
    /// The epoch at which the injector was last looked at.
    pub(super) injector_seen: Cell<u64>,
    /// The epoch at which a process was last preempted here: a preempted
    /// process gets a turn once a slice has passed since.
    pub(super) preempted_turn: Cell<u64>,
    /// While a process runs (the preemption signal's handler acts only then)...
    pub(super) in_run: Cell<bool>,
    /// ...and is not inside `schedule_with`, which moves `next`.
    pub(super) in_sched: Cell<bool>,
    /// This worker holds the poll token.
    pub(super) polling: Cell<bool>,
    /// Polls of the network in a row, while spinning, that found nothing
    /// (see `spin`).
    pub(super) quiet_polls: Cell<u32>,
    /// It is delivering what its blocking poll read: it runs what that
    /// makes runnable itself, so queuing it wakes no one (see `park`).
    pub(super) delivering: Cell<bool>,
    /// Back from a stuck run, it stays and another worker stands down
    /// (see `rejoin`): its next park is not the one that stands down.
    pub(super) stays: Cell<bool>,
    pub(super) scheduler: *const Scheduler,
    pub(super) slot: *const Slot,
}

thread_local! {
    pub(super) static LOCAL: Cell<*const Local> = const { Cell::new(std::ptr::null()) };
}

/// Called by the handler of the preemption signal, on the signalled worker
/// thread: if the worker was declared stuck, its "next" process moves to the
/// rescue cell, where other threads find it. Async-signal-safe: it touches
/// only this thread's cells and one atomic.
pub fn on_preempt_signal() {
    let local = LOCAL.with(|l| l.get());
    // SAFETY: LOCAL points at the running worker's `Local` (or is null), and
    // the handler runs on that worker's own thread.
    let Some(local) = (unsafe { local.as_ref() }) else { return };
    // SAFETY: a worker's slot lives as long as the scheduler.
    let slot = unsafe { &*local.slot };
    if !local.in_run.get() || local.in_sched.get() || !slot.watch.stuck.load(Relaxed) {
        return;
    }
    if let Some(p) = local.next.take() {
        let p = p as *const Process as *mut Process;
        if slot.rescue.compare_exchange(std::ptr::null_mut(), p, AcqRel, Relaxed).is_err() {
            // The cell is still full: try again at the next signal.
            // SAFETY: as above, `p` came from this cell.
            local.next.set(Some(unsafe { &*p }));
        }
    }
}

/// Whether a spinning worker that reads the network (it polls every
/// round) looks at the other workers' queues in its round `round`, after
/// `quiet` polls in a row that found nothing. While the network is quiet
/// the node's work is its own, and a process new on another worker's
/// queue is most often a spawn whose spawner will wait for it there (an
/// entity's fork waits for its READY): taken at once, the new process ran
/// on this core, its spawner was woken there, and both changed cores at
/// every fork. Looked for one round in [`QUIET_LOOK_EVERY`] (~1 µs), it
/// mostly runs where it was made, as its spawner waits: local forks on a
/// node of a cluster went 2.41–2.46 -> 2.05–2.14 µs (`bench/entities`,
/// 3 interleaved runs), the remote lines and a stream unchanged. While
/// the network delivers, every round (what it delivers runs here, and
/// the next reply comes soon).
fn looks_in_round(quiet: u32, round: u32) -> bool {
    quiet < QUIET_POLLS || round.is_multiple_of(QUIET_LOOK_EVERY)
}

impl Scheduler {
    /// The body of one worker thread, on slot `index`, working for `host`.
    pub(crate) fn work<H: Host>(host: &H, index: usize) {
        let sched = host.scheduler();
        let slot = &sched.slots[index];
        let local = Local {
            woken: Worker::new_fifo(),
            preempted: Worker::new_fifo(),
            next: Cell::new(None),
            streak: Cell::new(0),
            ticks: Cell::new(0),
            injector_seen: Cell::new(0),
            preempted_turn: Cell::new(0),
            in_run: Cell::new(false),
            in_sched: Cell::new(false),
            polling: Cell::new(false),
            delivering: Cell::new(false),
            stays: Cell::new(false),
            quiet_polls: Cell::new(0),
            scheduler: sched,
            slot,
        };
        let _ = slot.woken.set(local.woken.stealer());
        let _ = slot.preempted.set(local.preempted.stealer());
        // SAFETY: pthread_self and gettid have no preconditions.
        let _ = slot.watch.thread.set(unsafe { libc::pthread_self() });
        let _ = slot.watch.tid.set(unsafe { libc::gettid() });
        LOCAL.with(|l| l.set(&local));
        netpoll::set_flushes_here(true);
        while !sched.is_stopping() {
            if let Some(proc) = sched.find_work(&local).or_else(|| sched.spin(&local)).or_else(|| sched.park(&local)) {
                sched.release_poll_token(&local);
                slot.watch.start_run(sched.epoch.load(Relaxed), proc);
                local.in_run.set(true);
                host.run_process(proc);
                local.in_run.set(false);
                // Only a run that queued writes has any to flush, as at
                // a receive: a node with a network source (a cluster, a
                // dashboard) does not call into it after every run.
                sched.flush_queued();
                if slot.watch.end_run() {
                    sched.rejoin(&local);
                }
            }
        }
        sched.release_poll_token(&local);
        netpoll::set_flushes_here(false);
        LOCAL.with(|l| l.set(std::ptr::null()));
    }

    /// A worker back from a run the monitor declared stuck: it counts as
    /// active again. If a spare took its place the pool has one worker too
    /// many, and the next *other* worker to park stands down as a spare
    /// (`stand_down`), one parked now being woken to do so: this one keeps
    /// its cache, and the process it ran, woken next on this thread, does
    /// not move to another thread at every long native call (an N-body
    /// step in C, one a node per iteration, hopped threads at each and
    /// waited for a processor a fifth of the time).
    pub(super) fn rejoin(&self, local: &Local) {
        // SAFETY: the slot of this worker.
        let slot = unsafe { &*local.slot };
        // (Sequentially consistent against the monitor's rest: `quiet`.)
        slot.watch.stuck.store(false, SeqCst);
        self.rouse_monitor();
        if self.active.fetch_add(1, AcqRel) < self.target() {
            return;
        }
        self.standing_down.fetch_add(1, SeqCst);
        local.stays.set(true);
        self.wake_parked();
    }

    /// Step 0 of parking: a worker stands down as a spare if the pool has
    /// one too many (see `rejoin`). True if it did (and has since been
    /// wanted back).
    pub(super) fn stand_down(&self, local: &Local) -> bool {
        if local.stays.replace(false) || self.standing_down.load(SeqCst) == 0 {
            return false;
        }
        if self.standing_down.fetch_update(SeqCst, SeqCst, |n| n.checked_sub(1)).is_err() {
            return false;
        }
        self.active.fetch_sub(1, AcqRel);
        if local.polling.get() {
            // The network is read by someone else from now on.
            self.release_poll_token(local);
            self.wake_parked();
        }
        self.park_as_spare(local);
        true
    }

    /// Gives this worker's queues to the others and parks it as a spare
    /// until the monitor wants it (or the pool stops).
    fn park_as_spare(&self, local: &Local) {
        let mut handed = false;
        for p in local.next.take().into_iter().chain(std::iter::from_fn(|| local.woken.pop())).chain(std::iter::from_fn(|| local.preempted.pop())) {
            self.injector.push(p);
            handed = true;
        }
        if handed {
            self.wake_one();
        }
        let mut spares = self.spares.lock();
        spares.parked += 1;
        while spares.wanted == 0 && !self.is_stopping() {
            self.spare_wake.wait(&mut spares);
        }
        spares.parked -= 1;
        if spares.wanted > 0 {
            spares.wanted -= 1;
        }
    }

    pub(super) fn find_work(&self, local: &Local) -> Option<&'static Process> {
        let epoch = self.epoch.load(Relaxed);
        let ticks = local.ticks.get().wrapping_add(1);
        local.ticks.set(ticks);
        // Wake-ups from outside (timers first of all) wait at most a
        // monitor step or INJECTOR_EVERY runs, plus the run in progress.
        if epoch != local.injector_seen.get() || ticks.is_multiple_of(INJECTOR_EVERY) {
            local.injector_seen.set(epoch);
            if let Some(p) = self.steal_injector(local) {
                return Some(p);
            }
        }
        // Processes that compute get a turn at least once a slice, however
        // much woken work there is.
        if epoch.wrapping_sub(local.preempted_turn.get()) >= SLICE_TICKS {
            if let Some(p) = local.preempted.pop() {
                return Some(p);
            }
        }
        if let Some(p) = local.next.take() {
            // Prefer the hand-off target, unless it has been preferred for
            // a while and others are waiting: then it goes to the back.
            if local.streak.get() < NEXT_STREAK || local.woken.is_empty() {
                local.streak.set(local.streak.get() + 1);
                return Some(p);
            }
            local.woken.push(p);
        }
        local.streak.set(0);
        if let Some(p) = local.woken.pop().or_else(|| self.steal_injector(local)) {
            return Some(p);
        }
        local.preempted.pop().or_else(|| self.steal_peers(local))
    }

    pub(super) fn steal_injector(&self, local: &Local) -> Option<&'static Process> {
        retry(|| self.injector.steal_batch_and_pop(&local.woken))
    }

    /// Takes work from other workers: woken processes first, then rescued
    /// ones, then preempted ones.
    pub(super) fn steal_peers(&self, local: &Local) -> Option<&'static Process> {
        let slots = self.started_slots();
        let woken = || slots.iter().filter_map(|s| s.woken.get()).find_map(|s| retry(|| s.steal_batch_and_pop(&local.woken)));
        let rescued = || slots.iter().find_map(Slot::take_rescued);
        let preempted = || slots.iter().filter_map(|s| s.preempted.get()).find_map(|s| retry(|| s.steal_batch_and_pop(&local.preempted)));
        woken().or_else(rescued).or_else(preempted)
    }

    /// Step 1 of running out of work: looks for some for up to [`SPIN`],
    /// reading the network meanwhile if no one else does.
    pub(super) fn spin(&self, local: &Local) -> Option<&'static Process> {
        self.spinning.fetch_add(1, SeqCst);
        let net = self.netpoll.get();
        let mut start = Instant::now();
        let mut yielded = false;
        let mut rounds = 0u32;
        let found = loop {
            rounds = rounds.wrapping_add(1);
            let idle_work = match net {
                Some(net) if self.hold_poll_token(local) => {
                    let delivered = net.poll(false);
                    local.quiet_polls.set(if delivered { 0 } else { local.quiet_polls.get().saturating_add(1) });
                    if delivered {
                        if let Some(p) = self.delivered_here(local).or_else(|| self.find_work(local)) {
                            break Some(p);
                        }
                        false
                    } else if crate::idle::piece() {
                        true
                    } else {
                        // Nothing came: the processor goes, once, to
                        // whoever waits for it (on a machine with as many
                        // nodes as cores, often the other node's thread
                        // that will send what this one waits for: a remote
                        // round trip 22 -> 16 us on a 2-core VM). Not to a
                        // long write of the transport's: that would keep
                        // the core for a slice while replies wait.
                        if !yielded {
                            yielded = true;
                            if !net.writing_behind() {
                                std::thread::yield_now();
                            }
                        }
                        false
                    }
                }
                _ if crate::idle::piece() => true,
                _ => {
                    (0..64).for_each(|_| std::hint::spin_loop());
                    false
                }
            };
            // (A worker without the poll token pauses each round already.)
            if !local.polling.get() || looks_in_round(local.quiet_polls.get(), rounds) {
                if let Some(p) = self.steal_injector(local).or_else(|| self.steal_peers(local)) {
                    break Some(p);
                }
            }
            if self.is_stopping() {
                break None;
            }
            // Idle work means work is being made (new states' memory): more
            // is likely to come, and parking now would cost its maker a wake-up.
            if idle_work {
                start = Instant::now();
            } else if start.elapsed() >= SPIN {
                break None;
            }
        };
        self.spinning.fetch_sub(1, SeqCst);
        if found.is_some() && self.has_visible_work() {
            self.wake_one();
        }
        found
    }

    pub(crate) fn has_visible_work(&self) -> bool {
        !self.injector.is_empty()
            || self.started_slots().iter().any(|s| {
                s.woken.get().is_some_and(|q| !q.is_empty()) || s.preempted.get().is_some_and(|q| !q.is_empty()) || !s.rescue.load(Relaxed).is_null()
            })
    }

    /// Step 5 of `netpoll`: after a poll that delivered, the first process
    /// it made runnable on this worker (the receiver of a message, a
    /// process another node asked for), if any. What the poll queued for
    /// other nodes (a spawn's reply, a remote `take`'s tuple) is then
    /// written with what that process sends, when its run ends or it
    /// turns to its mailbox: a remote fork's reply and the new entity's
    /// READY go out in one write, and the caller wakes once (a remote fork
    /// 16-19 -> 13-14 us). With nothing to run, it is written now. A run
    /// that overruns its slice in C code has it written by the monitor
    /// (`Netpoll::flush_left`).
    fn delivered_here(&self, local: &Local) -> Option<&'static Process> {
        // Spinning or parked, this worker's own queues were empty before
        // the poll: what is in them now, the poll put there.
        let first = local.next.take().or_else(|| local.woken.pop());
        if first.is_none() {
            self.flush_queued();
        }
        first
    }

    /// Step 2 of running out of work: the holder of the poll token waits in
    /// the poll, anyone else on the condition variable. The poll's holder
    /// returns what the poll made runnable first (`delivered_here`).
    pub(super) fn park(&self, local: &Local) -> Option<&'static Process> {
        if self.stand_down(local) {
            return None;
        }
        if let Some(net) = self.netpoll.get().filter(|_| self.hold_poll_token(local)) {
            self.poll_blocked.store(true, SeqCst);
            std::sync::atomic::fence(SeqCst);
            if !self.has_visible_work() && !self.is_stopping() {
                local.delivering.set(true);
                net.poll(true);
                local.delivering.set(false);
            }
            self.poll_blocked.store(false, SeqCst);
            self.rouse_monitor();
            let first = self.delivered_here(local);
            // One wake-up for whatever else the poll queued here, not one
            // per process: a remote spawn every 10 us woke (and parked)
            // the other worker for each, 2 context switches a spawn.
            if first.is_some() && self.has_visible_work() {
                self.wake_one();
            }
            return first;
        }
        let mut guard = self.park_lock.lock();
        self.idle.fetch_add(1, SeqCst);
        // Re-check under the lock: a scheduler that pushed before seeing us idle left work behind.
        if !self.has_visible_work() && !self.is_stopping() {
            self.unpark.wait(&mut guard);
        }
        self.idle.fetch_sub(1, SeqCst);
        drop(guard);
        self.rouse_monitor();
        None
    }
}

impl Slot {
    pub(super) fn take_rescued(&self) -> Option<&'static Process> {
        if self.rescue.load(Relaxed).is_null() {
            return None;
        }
        let p = self.rescue.swap(std::ptr::null_mut(), AcqRel);
        // SAFETY: the cell holds processes of the table, whose slots live for the whole run.
        unsafe { p.cast_const().as_ref() }
    }
}

/// Runs a steal until it does not ask to be retried.
pub(super) fn retry(mut steal: impl FnMut() -> Steal<&'static Process>) -> Option<&'static Process> {
    loop {
        match steal() {
            Steal::Success(p) => return Some(p),
            Steal::Empty => return None,
            Steal::Retry => continue,
        }
    }
}

#[cfg(test)]
mod quiet_tests {
    use super::*;

    #[test]
    fn beside_a_quiet_network_others_queues_are_looked_at_one_round_in_four() {
        assert!((1..=100).all(|round| looks_in_round(0, round) && looks_in_round(QUIET_POLLS - 1, round)));
        let looked = (1..=100).filter(|&round| looks_in_round(QUIET_POLLS, round)).count();
        assert_eq!(looked, 100 / QUIET_LOOK_EVERY as usize);
        assert!(looks_in_round(u32::MAX, QUIET_LOOK_EVERY), "a count that saturates still looks");
    }
}
