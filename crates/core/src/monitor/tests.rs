//! The monitor's decisions, tick by tick, without real time or real
//! threads: a host of the tests' own answers the monitor's questions (the
//! time, each worker's processor time, time waited for a processor, whether
//! its thread sleeps in the kernel) from numbers the test sets, and notes
//! the signals sent and the threads started. A "run" is a worker slot's
//! watch set as a worker sets it when it starts a process; nothing runs.
//!
//! Ticks count from the run's start: at the tick a run reaches the age
//! `PREEMPT_AFTER` it is signalled and its overrun starts being watched;
//! from `STUCK_AFTER` on it is declared stuck once its thread has held it
//! (computing, or asleep) for `STUCK_AFTER - PREEMPT_AFTER` ticks' worth of
//! time since then.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::*};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::*;
use crate::process::Process;
use crate::scheduler::Scheduler;
use crate::table::Table;

/// The preemption signal the tests ask for (never sent for real).
const SIGNAL: libc::c_int = libc::SIGURG;
/// The slice the tests' monitor is made with: a tick is half a millisecond.
const SLICE: Duration = Duration::from_millis(2);
const TICK: Duration = Duration::from_micros(500);

/// What the test says of one worker's thread.
#[derive(Clone, Copy, Default)]
struct Thread {
    cpu: Duration,
    waited: Duration,
    asleep: bool,
}

/// A host with a clock and threads driven by the test.
struct FakeHost {
    sched: Scheduler,
    /// How far the clock is past `origin`.
    elapsed: Mutex<Duration>,
    origin: Instant,
    threads: Mutex<Vec<Thread>>,
    /// Signals sent: (worker, signal).
    signals: Mutex<Vec<(usize, libc::c_int)>>,
    /// Threads started in place of stuck ones.
    started: AtomicUsize,
    /// Whether a thread can be started (else `start_worker` fails).
    can_start: AtomicBool,
    /// The `stopping` argument of each `trim`.
    trims: Mutex<Vec<bool>>,
}

impl Host for FakeHost {
    fn scheduler(&self) -> &Scheduler {
        &self.sched
    }

    fn run_process(&self, _proc: &'static Process) {
        unreachable!("nothing runs in the monitor's tests")
    }

    /// As the runtime does: a slot claimed (counted as active), a thread
    /// that would start there (none does).
    fn start_worker(&self) -> std::io::Result<()> {
        if !self.can_start.load(SeqCst) {
            return Err(std::io::Error::other("no more threads"));
        }
        self.sched.claim_slot().ok_or_else(|| std::io::Error::other("no free slot"))?;
        self.started.fetch_add(1, SeqCst);
        Ok(())
    }

    fn trim(&self, stopping: bool) {
        self.trims.lock().push(stopping);
    }

    fn now(&self) -> Instant {
        self.origin + *self.elapsed.lock()
    }

    fn cpu_time(&self, index: usize) -> Duration {
        self.thread(index).cpu
    }

    fn run_queue_wait(&self, index: usize) -> Duration {
        self.thread(index).waited
    }

    fn asleep(&self, index: usize) -> bool {
        self.thread(index).asleep
    }

    fn signal(&self, index: usize, signal: libc::c_int) {
        self.signals.lock().push((index, signal));
    }
}

impl FakeHost {
    /// A scheduler of `workers` workers, all started (slots claimed).
    fn new(workers: usize) -> FakeHost {
        let host = FakeHost {
            sched: Scheduler::new(workers),
            elapsed: Mutex::new(Duration::ZERO),
            origin: Instant::now(),
            threads: Mutex::new(Vec::new()),
            signals: Mutex::new(Vec::new()),
            started: AtomicUsize::new(0),
            can_start: AtomicBool::new(true),
            trims: Mutex::new(Vec::new()),
        };
        for _ in 0..workers {
            host.sched.claim_slot().expect("a slot");
        }
        host
    }

    fn thread(&self, index: usize) -> Thread {
        self.threads.lock().get(index).copied().unwrap_or_default()
    }

    fn with_thread(&self, index: usize, f: impl FnOnce(&mut Thread)) {
        let mut threads = self.threads.lock();
        if threads.len() <= index {
            threads.resize(index + 1, Thread::default());
        }
        f(&mut threads[index]);
    }

    /// Worker `index` starts running `proc` now (at the current epoch).
    fn start_run(&self, index: usize, proc: &'static Process) {
        self.sched.started_slots()[index].watch.start_run(self.sched.epoch.load(SeqCst), proc);
    }

    fn end_run(&self, index: usize) -> bool {
        self.sched.started_slots()[index].watch.end_run()
    }

    fn is_stuck(&self, index: usize) -> bool {
        self.sched.started_slots()[index].watch.stuck.load(SeqCst)
    }

    fn active(&self) -> usize {
        self.sched.active.load(SeqCst)
    }

    /// How many times worker `index` was sent the preemption signal.
    fn signal_count(&self, index: usize) -> usize {
        self.signals.lock().iter().filter(|(i, s)| *i == index && *s == SIGNAL).count()
    }
}

/// Drives a monitor tick by tick; at each tick the clock moves on by one
/// tick, and each thread as its `how` says; the monitor steps at the ticks
/// it would wake at (every tick, or once a slice: see the module doc).
struct Ticker {
    monitor: Monitor,
    ticks: u64,
    /// Ticks since the monitor's last step.
    since_step: u64,
    /// The ticks at which the monitor stepped.
    steps: Vec<u64>,
}

/// What one worker's thread does while a tick passes.
#[derive(Clone, Copy)]
enum Doing {
    /// Computes for the whole tick (a loop that cannot yield).
    Computing,
    /// Sleeps in the kernel for the whole tick (a C call that blocks).
    Asleep,
    /// Is runnable but waits for a processor for the whole tick.
    WaitingForProcessor,
    /// Sleeps in the kernel, but the kernel counts the time as waited for a
    /// processor (what the monitor must subtract).
    AsleepButCountedAsWaiting,
}

impl Ticker {
    fn new(signal: Option<libc::c_int>) -> Ticker {
        Ticker { monitor: Monitor::new(signal, SLICE), ticks: 0, since_step: 0, steps: Vec::new() }
    }

    /// One tick, worker 0's thread doing `doing`.
    fn tick(&mut self, host: &FakeHost, doing: Doing) {
        *host.elapsed.lock() += TICK;
        host.with_thread(0, |t| match doing {
            Doing::Computing => {
                t.cpu += TICK;
                t.asleep = false;
            }
            Doing::Asleep => t.asleep = true,
            Doing::WaitingForProcessor => t.asleep = false,
            Doing::AsleepButCountedAsWaiting => {
                t.asleep = true;
                t.waited += TICK;
            }
        });
        self.ticks += 1;
        self.since_step += 1;
        if self.since_step == self.monitor.step_ticks() {
            assert_eq!(self.monitor.step(host), self.since_step, "a step stands for the ticks since the last");
            self.since_step = 0;
            self.steps.push(self.ticks);
        }
    }

    /// Ticks until the tick numbered `n` (counted from the first) is done.
    fn until(&mut self, host: &FakeHost, n: u64, doing: Doing) {
        while self.ticks < n {
            self.tick(host, doing);
        }
    }
}

fn processes(n: usize) -> Vec<&'static Process> {
    // Leaked with the table: a test's processes live as long as it does.
    let table: &'static Table = Box::leak(Box::new(Table::new()));
    (0..n).map(|_| table.acquire().expect("a free slot")).collect()
}

#[test]
fn the_epoch_follows_the_ticks_stepping_each_tick_at_first_then_once_a_slice_while_nothing_competes() {
    let host = FakeHost::new(2);
    let mut t = Ticker::new(Some(SIGNAL));
    t.until(&host, 6 * SLICE_TICKS, Doing::Computing);
    assert_eq!(host.sched.epoch.load(SeqCst), 6 * SLICE_TICKS, "the epoch counts ticks, whatever the steps' length");
    let first_slice: Vec<u64> = (1..=SLICE_TICKS).collect();
    let then: Vec<u64> = (2..=6).map(|k| k * SLICE_TICKS).collect();
    assert_eq!(t.steps, [first_slice, then].concat(), "a step a tick for a slice, then one a slice");
    assert!(host.signals.lock().is_empty(), "no worker runs anything: nobody is signalled");
}

#[test]
fn short_runs_let_the_monitor_step_once_a_slice() {
    // A worker running C code in pieces shorter than a slice (a scanline):
    // nothing to preempt, so nothing to tick for.
    let host = FakeHost::new(1);
    let p = processes(2);
    let mut t = Ticker::new(Some(SIGNAL));
    for i in 0..40 {
        host.start_run(0, p[i % 2]);
        t.until(&host, t.ticks + 3, Doing::Computing);
        assert!(!host.end_run(0));
    }
    assert_eq!(host.signal_count(0), 0, "no run overran");
    let late = t.steps.iter().filter(|&&k| k > 2 * SLICE_TICKS).count() as u64;
    assert_eq!(late, (t.ticks - 2 * SLICE_TICKS) / SLICE_TICKS, "once a slice after the first");
}

#[test]
fn a_run_that_overruns_between_steps_a_slice_apart_is_signalled_within_two_slices_and_ticking_resumes_if_others_wait() {
    let host = FakeHost::new(1);
    let p = processes(2);
    let mut t = Ticker::new(Some(SIGNAL));
    t.until(&host, 3 * SLICE_TICKS, Doing::Computing);
    assert_eq!(t.monitor.step_ticks(), SLICE_TICKS, "nothing competes: steps a slice long");
    // Another process waits its turn (on the injector: the test is no worker).
    host.sched.schedule(p[1]);
    // The run starts just after a step, at the worst moment; and just before one.
    for late in [0, SLICE_TICKS - 1] {
        let start = t.ticks + late;
        t.until(&host, start, Doing::Computing);
        host.start_run(0, p[0]);
        let before = host.signal_count(0);
        while host.signal_count(0) == before {
            t.tick(&host, Doing::AsleepButCountedAsWaiting);
        }
        let lasted = t.ticks - start;
        assert!((SLICE_TICKS..=2 * SLICE_TICKS).contains(&lasted), "signalled {lasted} ticks in");
        assert_eq!(t.monitor.step_ticks(), 1, "runs compete: a step a tick again");
        assert!(!host.end_run(0));
        t.until(&host, t.ticks + 2 * SLICE_TICKS, Doing::Computing);
        assert_eq!(t.monitor.step_ticks(), SLICE_TICKS, "a slice without it: a step a slice again");
    }
}

#[test]
fn a_run_computing_alone_is_signalled_once_a_step_a_slice_apart() {
    // Nothing waits behind it: ticking would only take the processor from it.
    let host = FakeHost::new(1);
    let mut t = Ticker::new(Some(SIGNAL));
    t.until(&host, 2 * SLICE_TICKS, Doing::Computing);
    host.start_run(0, processes(1)[0]);
    let start = t.ticks;
    t.until(&host, start + 10 * SLICE_TICKS, Doing::AsleepButCountedAsWaiting);
    assert_eq!(t.monitor.step_ticks(), SLICE_TICKS);
    assert_eq!(t.steps.iter().filter(|&&k| k > start).count(), 10, "a step a slice throughout");
    assert_eq!(host.signal_count(0), 9, "signalled at every step but the one that first saw it");
}

#[test]
fn a_run_is_left_alone_until_it_has_lasted_a_slice_then_signalled() {
    let host = FakeHost::new(1);
    let p = processes(1)[0];
    host.start_run(0, p);
    let mut t = Ticker::new(Some(SIGNAL));
    t.until(&host, PREEMPT_AFTER - 1, Doing::Computing);
    assert_eq!(host.signal_count(0), 0, "a run younger than a slice is not signalled");
    t.tick(&host, Doing::Computing);
    assert_eq!(*host.signals.lock(), vec![(0, SIGNAL)], "signalled at the slice's end, with the signal asked for");
}

#[test]
fn a_run_that_does_not_yield_is_signalled_again_once_a_slice_not_every_tick() {
    let host = FakeHost::new(1);
    host.start_run(0, processes(1)[0]);
    let mut t = Ticker::new(Some(SIGNAL));
    let mut signalled_at = Vec::new();
    for _ in 0..4 * SLICE_TICKS {
        let before = host.signal_count(0);
        // Asleep in the kernel, but counted as waiting: never stuck, so
        // only the signals are at stake here.
        t.tick(&host, Doing::AsleepButCountedAsWaiting);
        if host.signal_count(0) > before {
            signalled_at.push(t.ticks);
        }
    }
    let every_slice: Vec<u64> = (0..4).map(|k| PREEMPT_AFTER + k * SLICE_TICKS).collect();
    assert_eq!(signalled_at, every_slice);
}

#[test]
fn a_worker_declared_stuck_is_signalled_once_more_so_its_next_process_is_rescued() {
    // The handler moves a worker's "next" process out only once the worker
    // is stuck; the monitor may rest from the next tick on, so it signals
    // the worker again as it declares it stuck, whatever the slice's count.
    let host = FakeHost::new(1);
    host.start_run(0, processes(1)[0]);
    let mut t = Ticker::new(Some(SIGNAL));
    t.until(&host, STUCK_AFTER - 1, Doing::Computing);
    let before = host.signal_count(0);
    t.tick(&host, Doing::Computing);
    assert!(host.is_stuck(0));
    assert_eq!(host.signal_count(0), before + 2, "the slice's signal, then one as it is declared stuck");
}

#[test]
fn a_run_that_yields_in_time_is_never_signalled_and_the_next_one_counts_afresh() {
    let host = FakeHost::new(1);
    let p = processes(2);
    let mut t = Ticker::new(Some(SIGNAL));
    for i in 0..20 {
        // Each run lasts less than a slice.
        host.start_run(0, p[i % 2]);
        for _ in 0..PREEMPT_AFTER - 1 {
            t.tick(&host, Doing::Computing);
        }
        assert!(!host.end_run(0), "not declared stuck");
    }
    assert_eq!(host.signal_count(0), 0);
}

#[test]
fn without_a_preemption_signal_nothing_is_signalled_but_a_stuck_worker_is_still_replaced() {
    let host = FakeHost::new(1);
    host.start_run(0, processes(1)[0]);
    let mut t = Ticker::new(None);
    t.until(&host, STUCK_AFTER, Doing::Computing);
    assert!(host.signals.lock().is_empty());
    assert!(host.is_stuck(0));
    assert_eq!(host.started.load(SeqCst), 1, "a thread stands in");
}

#[test]
fn a_run_computing_past_the_stuck_mark_is_declared_stuck_and_a_thread_stands_in() {
    let host = FakeHost::new(2);
    host.start_run(0, processes(1)[0]);
    let mut t = Ticker::new(Some(SIGNAL));
    t.until(&host, STUCK_AFTER - 1, Doing::Computing);
    assert!(!host.is_stuck(0), "not before the stuck mark");
    assert_eq!((host.active(), host.started.load(SeqCst)), (2, 0));
    t.tick(&host, Doing::Computing);
    assert!(host.is_stuck(0), "stuck at the mark: it computed through every signal");
    assert_eq!(host.started.load(SeqCst), 1, "one thread started in its place");
    assert_eq!(host.active(), 2, "the pool is back at its target");
    assert_eq!(host.sched.started_slots().len(), 3, "on a slot of its own");
    // Later ticks neither count it out again nor start more threads.
    t.until(&host, STUCK_AFTER + 40, Doing::Computing);
    assert_eq!((host.active(), host.started.load(SeqCst)), (2, 1));
    assert!(host.end_run(0), "the worker learns, as its run ends, that it was declared stuck");
}

#[test]
fn a_thread_asleep_in_the_kernel_for_as_long_is_stuck_too() {
    let host = FakeHost::new(1);
    host.start_run(0, processes(1)[0]);
    let mut t = Ticker::new(Some(SIGNAL));
    t.until(&host, STUCK_AFTER - 1, Doing::Asleep);
    assert!(!host.is_stuck(0));
    t.tick(&host, Doing::Asleep);
    assert!(host.is_stuck(0), "a C call that blocks holds the thread as much as a loop");
    assert_eq!(host.started.load(SeqCst), 1);
}

#[test]
fn a_thread_only_waiting_for_a_processor_is_never_declared_stuck() {
    // A busy machine: the thread is runnable but others run. Its process
    // will yield as soon as it runs again, so nobody stands in.
    let host = FakeHost::new(1);
    host.start_run(0, processes(1)[0]);
    let mut t = Ticker::new(Some(SIGNAL));
    t.until(&host, 10 * STUCK_AFTER, Doing::WaitingForProcessor);
    assert!(!host.is_stuck(0));
    assert_eq!(host.started.load(SeqCst), 0);
    assert!(host.signal_count(0) > 0, "it is still signalled, once a slice");
}

#[test]
fn time_the_kernel_counts_as_waited_for_a_processor_is_not_held() {
    let host = FakeHost::new(1);
    host.start_run(0, processes(1)[0]);
    let mut t = Ticker::new(Some(SIGNAL));
    t.until(&host, 10 * STUCK_AFTER, Doing::AsleepButCountedAsWaiting);
    assert!(!host.is_stuck(0));
    assert_eq!(host.started.load(SeqCst), 0);
}

#[test]
fn holding_is_counted_from_the_overrun_not_from_the_runs_start() {
    // The thread computes nothing until the overrun is first seen, then
    // computes: it is stuck only once it has computed for the whole
    // stretch since then, not at the stuck mark.
    let host = FakeHost::new(1);
    let p = processes(2);
    host.start_run(0, p[0]);
    host.sched.schedule(p[1]); // waits its turn: the monitor ticks
    let mut t = Ticker::new(Some(SIGNAL));
    t.until(&host, PREEMPT_AFTER + 3, Doing::WaitingForProcessor);
    t.until(&host, STUCK_AFTER, Doing::Computing);
    assert!(!host.is_stuck(0), "computed for only part of the stretch");
    t.until(&host, STUCK_AFTER + 3, Doing::Computing);
    assert!(host.is_stuck(0), "computed STUCK_AFTER - PREEMPT_AFTER ticks since the overrun was seen");
}

#[test]
fn a_new_run_on_the_same_worker_is_watched_afresh() {
    // Run A computes a long while but ends just before the stuck mark; run
    // B starts at once, first waits for a processor, then computes. B's
    // overrun is measured from B's own: A's processor time does not count.
    let host = FakeHost::new(1);
    let p = processes(3);
    host.start_run(0, p[0]);
    host.sched.schedule(p[2]); // waits its turn: the monitor ticks
    let mut t = Ticker::new(Some(SIGNAL));
    t.until(&host, STUCK_AFTER - 1, Doing::Computing);
    assert!(!host.end_run(0));
    host.start_run(0, p[1]);
    let b = t.ticks;
    t.until(&host, b + PREEMPT_AFTER + 4, Doing::WaitingForProcessor);
    t.until(&host, b + STUCK_AFTER, Doing::Computing);
    assert!(!host.is_stuck(0), "B computed for 12 ticks since its overrun: A's time is not B's");
    t.until(&host, b + STUCK_AFTER + 4, Doing::Computing);
    assert!(host.is_stuck(0), "B, in turn, once it has computed the whole stretch");
}

#[test]
fn only_the_worker_that_holds_its_thread_is_declared_stuck() {
    let host = FakeHost::new(2);
    let p = processes(2);
    host.start_run(0, p[0]);
    host.start_run(1, p[1]);
    // Worker 1's thread (not driven by the ticker) neither computes nor sleeps.
    let mut t = Ticker::new(Some(SIGNAL));
    t.until(&host, STUCK_AFTER + 8, Doing::Computing);
    assert!(host.is_stuck(0));
    assert!(!host.is_stuck(1));
    assert!(host.signal_count(1) > 0, "both overran their slice");
}

#[test]
fn when_no_thread_can_be_started_the_pool_stays_short_and_the_monitor_goes_on() {
    let host = FakeHost::new(2);
    host.can_start.store(false, SeqCst);
    host.start_run(0, processes(1)[0]);
    let mut t = Ticker::new(Some(SIGNAL));
    t.until(&host, STUCK_AFTER + 10, Doing::Computing);
    assert!(host.is_stuck(0));
    assert_eq!(host.active(), 1, "one short of the target: the failed start is not counted");
    assert_eq!(host.started.load(SeqCst), 0);
    // Threads can be had again: the next step makes up for it.
    host.can_start.store(true, SeqCst);
    t.until(&host, t.ticks + t.monitor.step_ticks(), Doing::Computing);
    assert_eq!((host.active(), host.started.load(SeqCst)), (2, 1));
}

#[test]
fn a_stuck_run_is_named_once_and_only_after_the_warning_mark() {
    let host = FakeHost::new(1);
    let p = processes(1)[0];
    host.start_run(0, p);
    let mut t = Ticker::new(Some(SIGNAL));
    t.until(&host, WARN_AFTER - 1, Doing::Computing);
    assert!(host.is_stuck(0));
    assert!(t.monitor.warned.is_empty(), "stuck, but not for long enough to be worth a word");
    t.tick(&host, Doing::Computing);
    assert!(t.monitor.warned.contains(&p.pid()), "named at the mark");
    t.until(&host, WARN_AFTER + 50, Doing::Computing);
    assert_eq!(t.monitor.warned.len(), 1, "named once");
}

#[test]
fn the_host_trims_once_every_trim_period() {
    let host = FakeHost::new(1);
    let mut t = Ticker::new(Some(SIGNAL));
    t.until(&host, TRIM_EVERY - 1, Doing::Computing);
    assert!(host.trims.lock().is_empty());
    t.tick(&host, Doing::Computing);
    assert_eq!(*host.trims.lock(), vec![false]);
    t.until(&host, 2 * TRIM_EVERY + 1, Doing::Computing);
    assert_eq!(*host.trims.lock(), vec![false, false], "not the last trim: the runtime is not stopping");
}

#[test]
fn the_loop_ends_when_the_scheduler_stops_and_trims_for_the_last_time() {
    // The one test of `run` itself: it is stopped before it starts, so it
    // never sleeps, and its last act is the final trim.
    let host = FakeHost::new(1);
    host.sched.stop();
    run(&host, Some(SIGNAL), SLICE);
    assert_eq!(*host.trims.lock(), vec![true]);
    assert_eq!(host.sched.epoch.load(SeqCst), 0, "no tick");
}
