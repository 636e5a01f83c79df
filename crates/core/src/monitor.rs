//! The monitor: one thread that watches the workers, as Go's `sysmon` does.
//! Running processes are never interrupted on a hot path; instead, at each
//! step the monitor:
//!
//! 1. advances the scheduler's epoch, the coarse clock workers read to be
//!    fair to outside wake-ups and to computing processes, by the ticks (a
//!    quarter of a time slice each) since its last step;
//! 2. signals every worker whose run has lasted a time slice: the body
//!    layer's handler for that signal makes the running process yield at its
//!    next instruction (for Lua: a count hook), and again once a slice while
//!    it goes on (in a C function, say);
//! 3. declares stuck a worker whose run has gone on [`STUCK_AFTER`] ticks,
//!    and whose thread has since its overrun either computed for that long
//!    (a process that cannot yield) or slept in the kernel for that long (a
//!    C function that blocks); a thread that was merely waiting for a
//!    processor (a machine busy with other work) is not stuck: its process
//!    yields as soon as it runs again. It brings a spare thread to work in
//!    its place (see `scheduler`), and names the process once on stderr if
//!    it holds the thread for [`WARN_AFTER`] (a C function computing for a
//!    while, the point of a native kernel, is not worth a word);
//! 4. wakes a parked worker if work is waiting where only a looking worker
//!    finds it.
//! 5. on a node of a cluster, reads the network if no worker does (every
//!    worker is running a process; see `netpoll`), and writes what a run
//!    that overran its slice left queued for other nodes;
//! 6. now and then, lets the payload cache forget memory it has kept too long.
//!
//! **Steps of a tick or of a slice.** While processes compete for the
//! processor (a run has overrun its slice, is not stuck, and other work
//! waits its turn), or the last steps found work for steps 4 and 5, the
//! monitor steps every tick: a run is then signalled 1.5 to 2 ms into a
//! 2 ms slice (2 ms when processes take turns computing, since each run
//! then starts at a step). Once a whole slice has passed without any of
//! that, it steps once a slice: a run is then signalled 2 to 4 ms in (one
//! that computes alone, every second step), and ticking resumes when
//! others wait. A worker running C code in short runs (a scanline of a ray
//! caster, 0.5 ms) or in one long run that nothing else waits behind thus
//! loses its processor to the monitor 500 times a second rather than
//! 2,000; on a node bound to one core that was 5% of `bench/alua-apps`'
//! static scanlines. A run's age is counted from the step that first saw
//! it, so it is never overstated whatever the steps' length.
//!
//! Once the pool has been found quiet at every step for [`REST_AFTER`]
//! ticks (every worker parked, no run but stuck ones, no work in sight)
//! the monitor rests until a worker leaves its park or a stuck one comes
//! back, [`REST_LONGEST`] at a time: an idle node wakes ten times a second,
//! not two thousand. A pool quiet but for a stuck run rests from its second
//! quiet step: that run is in C code, and a step every half millisecond
//! would only take the processor from it (an N-body step of 48 ms in C ran
//! 5-10% slower than the same code under MPI, the monitor's ~2,000 wake-ups
//! a second the difference).
//!
//! So preemption costs nothing until a process actually overruns its slice.

use std::collections::HashSet;
use std::sync::atomic::Ordering::*;
use std::time::{Duration, Instant};

use crate::scheduler::{Host, SLICE_TICKS};
use crate::Pid;

#[cfg(test)]
mod tests;

/// A run is preempted once it has lasted this many ticks.
const PREEMPT_AFTER: u64 = SLICE_TICKS;
/// A run is declared stuck once it has lasted this many ticks (4 ms with
/// the default 2 ms slice): it did not yield to two preemption signals.
/// (10 ms until the monitor rested beside stuck runs: ticking until then
/// took 1.5% from an N-body step of 24 ms in C, `bench/alua-apps`.)
const STUCK_AFTER: u64 = 2 * SLICE_TICKS;
/// Ticks' worth of time between trims of the payload cache and of the replicas kept a moment (half a second by default).
const TRIM_EVERY: u64 = 1000;
/// A stuck run is named once it has lasted this many ticks (a second with
/// the default 2 ms slice).
const WARN_AFTER: u64 = 500 * SLICE_TICKS;
/// Ticks' worth of steps the pool must be found quiet at, in a row, before the monitor
/// rests (50 ms with the default 2 ms slice): a pool that parks between
/// the messages of a conversation is not idle, and waking a resting
/// monitor would cost each message a futex wake-up.
const REST_AFTER: u64 = 100;
/// The longest rest of the monitor while the pool is quiet: its chores
/// that do not wait for a run (the trims) come at least this often.
const REST_LONGEST: Duration = Duration::from_millis(100);
/// Stuck processes remembered, so each is named once.
const WARNED_MAX: usize = 4096;

/// A run the monitor watches since it overran its slice: when that was, and
/// its thread's processor time and time waited for a processor then.
#[derive(Clone, Copy)]
struct Overrun {
    since: Instant,
    cpu: Duration,
    waited: Duration,
    /// The epoch at which it was last signalled.
    signalled: u64,
}

/// The run a worker slot was last seen running.
#[derive(Clone, Copy)]
struct Seen {
    /// The process, and the epoch its run started at: together they tell
    /// one run from the next.
    run: (usize, u64),
    /// The epoch of the step that first saw it: the run has lasted at least
    /// the ticks since.
    first_seen: u64,
    overrun: Option<Overrun>,
}

/// The monitor thread's loop, until the runtime stops. `signal` is the
/// preemption signal (`None`: no preemption, stuck workers are still
/// replaced).
pub(crate) fn run<H: Host>(host: &H, signal: Option<libc::c_int>, slice: Duration) {
    let sched = host.scheduler();
    let mut monitor = Monitor::new(signal, slice);
    // Steps keep to a fixed schedule, not a sleep after each (which would
    // add the wake-up's lateness every time), and the kernel is asked not
    // to round the sleeps up (its default slack is 50 us, a tenth of a tick).
    // SAFETY: PR_SET_TIMERSLACK only changes this thread's timer slack.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong) };
    let mut next_step = Instant::now();
    let (mut quiet_ticks, mut quiet_steps) = (0, 0);
    while !sched.is_stopping() {
        next_step += monitor.tick * monitor.step_ticks() as u32;
        let now = Instant::now();
        if next_step > now {
            std::thread::sleep(next_step - now);
        } else {
            next_step = now; // far behind (a stopped machine): start afresh
        }
        let ticks = monitor.step(host);
        // A pool found quiet at every step for a while lets the monitor
        // rest until a worker wakes (see `Scheduler::rest`), for as long as
        // it stays quiet. The epoch stands still meanwhile (but for a step
        // between rests, for the trims): no run is under way to be timed.
        (quiet_ticks, quiet_steps) = if sched.quiet() { (quiet_ticks + ticks, quiet_steps + 1) } else { (0, 0) };
        // (Beside a stuck run, from the second quiet step: the first may
        // come before the signal's handler has moved the stuck worker's
        // "next" process where it is seen.)
        if quiet_ticks >= REST_AFTER || (quiet_steps >= 2 && sched.has_stuck()) {
            while sched.rest(REST_LONGEST) && sched.quiet() && !sched.is_stopping() {
                monitor.step(host);
            }
            next_step = Instant::now();
            (quiet_ticks, quiet_steps) = (0, 0);
        }
    }
    // What the host keeps may hold it: let go of it as it stops.
    host.trim(true);
}

/// What the monitor keeps from one step to the next. The loop above only
/// paces the steps; each step's work is [`Monitor::step`], which reads the
/// time and the workers' threads through the host alone (so the tests
/// drive it tick by tick, with a clock of their own).
struct Monitor {
    /// The preemption signal, if any.
    signal: Option<libc::c_int>,
    /// A quarter of a time slice.
    tick: Duration,
    /// Stuck processes named already.
    warned: HashSet<Pid>,
    /// Per worker slot: the run it was last seen running.
    runs: Vec<Option<Seen>>,
    /// Steps a tick long still to come before steps a slice long: set to a
    /// slice's worth whenever a step finds something that wants ticking.
    ticking: u64,
    /// When the last trim was (the monitor's start before the first).
    trimmed_at: Option<Instant>,
}

impl Monitor {
    fn new(signal: Option<libc::c_int>, slice: Duration) -> Monitor {
        Monitor {
            signal,
            tick: slice / SLICE_TICKS as u32,
            warned: HashSet::new(),
            runs: Vec::new(),
            ticking: SLICE_TICKS,
            trimmed_at: None,
        }
    }

    /// How many ticks the next step comes after this one: one, or a
    /// slice's worth (see the module doc).
    fn step_ticks(&self) -> u64 {
        if self.ticking > 0 {
            1
        } else {
            SLICE_TICKS
        }
    }

    /// One step: steps 1 to 6 of the module doc. Returns the ticks it
    /// stood for.
    fn step<H: Host>(&mut self, host: &H) -> u64 {
        let sched = host.scheduler();
        let tick = self.tick;
        let ticks = self.step_ticks();
        let epoch = sched.epoch.fetch_add(ticks, Relaxed) + ticks;
        let slots = sched.started_slots();
        self.runs.resize(slots.len(), None);
        // Whether a run has overrun its slice, unstuck.
        let mut overran = false;
        // Whether a run was signalled at this step: what its thread queued
        // for other nodes is written for it (`netpoll`, step 5).
        let mut signalled = false;
        for (index, slot) in slots.iter().enumerate() {
            let Some((proc, started)) = slot.watch.current() else {
                self.runs[index] = None;
                continue;
            };
            let run = (proc as *const _ as usize, started);
            let seen = match &mut self.runs[index] {
                Some(seen) if seen.run == run => seen,
                other => other.insert(Seen { run, first_seen: epoch, overrun: None }),
            };
            // The ticks it has lasted at the least, and one more: at most
            // that many when steps are a tick long.
            let age = epoch - seen.first_seen + 1;
            if age < PREEMPT_AFTER {
                continue;
            }
            let stuck = slot.watch.stuck.load(Acquire);
            overran |= !stuck;
            let overrun = match &mut seen.overrun {
                Some(o) => o,
                None => {
                    let (cpu, waited) = (host.cpu_time(index), host.run_queue_wait(index));
                    let since = host.now();
                    if let Some(signal) = self.signal {
                        host.signal(index, signal);
                    }
                    signalled = true;
                    seen.overrun = Some(Overrun { since, cpu, waited, signalled: epoch });
                    continue;
                }
            };
            // Once a slice: a run that did not yield to the first signal is
            // in C code, which a signal every tick would only interrupt.
            if epoch - overrun.signalled >= SLICE_TICKS {
                overrun.signalled = epoch;
                signalled = true;
                if let Some(signal) = self.signal {
                    host.signal(index, signal);
                }
            }
            if stuck {
                // By the clock: the epoch stands still while the monitor rests.
                let held = host.now().saturating_duration_since(overrun.since) + tick * PREEMPT_AFTER as u32;
                if held >= tick * WARN_AFTER as u32 {
                    warn_once(&mut self.warned, proc.pid(), index, held);
                }
                continue;
            }
            if age < STUCK_AFTER || !held_for(host, index, *overrun, tick * (STUCK_AFTER - PREEMPT_AFTER) as u32) {
                continue;
            }
            if !slot.watch.stuck.swap(true, AcqRel) {
                sched.active.fetch_sub(1, AcqRel);
                // Once more, now that it is stuck: the handler then moves
                // the worker's "next" process where others find it (the
                // monitor may rest from the next step on).
                if let Some(signal) = self.signal {
                    host.signal(index, signal);
                }
            }
        }
        while sched.active.load(Acquire) < sched.target() && !sched.is_stopping() {
            if !replace_stuck(host) {
                break;
            }
        }
        if signalled {
            sched.flush_left();
        }
        let nudged = sched.nudge();
        let delivered = sched.poll_unwatched();
        // Runs compete when one overran while others wait their turn (alone,
        // it is preempted once a step all the same: its sends go out as
        // each run ends).
        let competing = overran && sched.has_visible_work();
        self.ticking = if competing || nudged || delivered { SLICE_TICKS } else { self.ticking.saturating_sub(1) };
        // By the clock, not the epoch, which stands still while the monitor rests.
        let now = host.now();
        // (Counted from the monitor's start, a tick before its first step.)
        let last = *self.trimmed_at.get_or_insert_with(|| now.checked_sub(tick).unwrap_or(now));
        if now.saturating_duration_since(last) >= tick * TRIM_EVERY as u32 {
            self.trimmed_at = Some(now);
            crate::payload::trim();
            host.trim(false);
        }
        ticks
    }
}

/// Names a process that holds its worker's thread, once.
fn warn_once(warned: &mut HashSet<Pid>, pid: Pid, index: usize, held: Duration) {
    if warned.len() >= WARNED_MAX {
        warned.clear();
    }
    if warned.insert(pid) {
        eprintln!(
            "synodic: process {pid} has held worker thread {index} for {} ms without yielding (a call that cannot yield, or a C function that blocks); its other processes moved to another thread",
            held.as_millis()
        );
    }
}

/// Whether worker `index`'s thread has held its run for `long` since the
/// monitor began watching its overrun: computing that long, or asleep in
/// the kernel now and for that long but for the time it waited for a
/// processor. (The kernel counts a wait only once it is over, so a thread
/// waiting now must have computed to count.)
fn held_for<H: Host>(host: &H, index: usize, seen: Overrun, long: Duration) -> bool {
    if host.cpu_time(index).saturating_sub(seen.cpu) >= long {
        return true;
    }
    let waited = host.run_queue_wait(index).saturating_sub(seen.waited);
    host.asleep(index) && host.now().saturating_duration_since(seen.since).saturating_sub(waited) >= long
}

/// Brings one thread to work in place of a stuck one; false when the pool
/// cannot grow any more.
fn replace_stuck<H: Host>(host: &H) -> bool {
    let sched = host.scheduler();
    sched.active.fetch_add(1, AcqRel);
    if sched.wake_spare() {
        return true;
    }
    sched.active.fetch_sub(1, AcqRel);
    match host.start_worker() {
        Ok(()) => true,
        Err(e) => {
            static ONCE: std::sync::Once = std::sync::Once::new();
            ONCE.call_once(|| eprintln!("synodic: cannot start a thread to stand in for a stuck worker: {e}"));
            false
        }
    }
}
