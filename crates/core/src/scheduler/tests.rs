//! The scheduler alone, with a host of the tests' own instead of the
//! runtime: real worker threads, no monitor (so no clock ticks: a test that
//! needs the scheduler's epoch to move moves it itself), and processes that
//! do nothing but note that they ran and do what their test says. Every
//! wait is for an event, bounded; nothing sleeps.
//!
//! This file: every process runs, and the queues' order and fairness (the
//! "next" slot's streak limit, woken before preempted, the injector and the
//! preempted queue each get a turn within a bound, idle workers steal).
//! `tests/stuck.rs`: a stuck worker's hand-off. `tests/polled.rs`: what
//! a worker's own poll delivers.

mod polled;
mod stuck;

use std::sync::atomic::{AtomicUsize, Ordering::*};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::*;
use crate::process::Process;
use crate::table::Table;

/// How long a test waits for what it awaits before it fails.
const LIMIT: Duration = Duration::from_secs(20);

/// What a test's process does in one run (`run` counts its runs, this one
/// included): true to go back on its worker's queue (`schedule_back`).
type Behaviour = Box<dyn Fn(&TestHost, &'static Process, usize) -> bool + Send + Sync>;

/// A host whose processes note their runs and behave as their test says;
/// its worker threads are real, started by `start_worker` as the
/// runtime's are.
struct TestHost {
    sched: Scheduler,
    runs: Mutex<Vec<u32>>,
    done: AtomicUsize,
    behave: Behaviour,
    me: Weak<TestHost>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Host for TestHost {
    fn scheduler(&self) -> &Scheduler {
        &self.sched
    }

    fn run_process(&self, proc: &'static Process) {
        let index = proc.index();
        let run = {
            let mut runs = self.runs.lock();
            runs.push(index);
            runs.iter().filter(|&&i| i == index).count()
        };
        if (self.behave)(self, proc, run) {
            self.sched.schedule_back(proc);
        } else {
            self.done.fetch_add(1, SeqCst);
        }
    }

    fn start_worker(&self) -> std::io::Result<()> {
        let index = self.sched.claim_slot().ok_or_else(|| std::io::Error::other("no free slot"))?;
        let host = self.me.upgrade().expect("the host lives while its workers do");
        self.threads.lock().push(std::thread::spawn(move || Scheduler::work(&*host, index)));
        Ok(())
    }

    fn trim(&self, _stopping: bool) {}
}

/// Runs `workers` worker threads for `host` while `body` schedules and
/// awaits; then stops them and waits for every thread to end (those the
/// test started meanwhile too).
fn with_workers(host: Arc<TestHost>, workers: usize, body: impl FnOnce(&TestHost)) {
    for _ in 0..workers {
        host.start_worker().expect("a worker thread");
    }
    body(&host);
    host.sched.stop();
    loop {
        let Some(t) = host.threads.lock().pop() else { break };
        t.join().expect("a worker thread ends cleanly");
    }
}

/// A host for a scheduler of `workers` workers whose processes go back on
/// their queue while `again(index, run)` says so.
fn host(workers: usize, again: fn(u32, usize) -> bool) -> Arc<TestHost> {
    host_with(workers, Box::new(move |_, p, run| again(p.index(), run)))
}

fn host_with(workers: usize, behave: Behaviour) -> Arc<TestHost> {
    Arc::new_cyclic(|me| TestHost { sched: Scheduler::new(workers), runs: Mutex::new(Vec::new()), done: AtomicUsize::new(0), behave, me: me.clone(), threads: Mutex::new(Vec::new()) })
}

fn processes(n: usize) -> Vec<&'static Process> {
    // Leaked with the table: a test's processes live as long as it does.
    let table: &'static Table = Box::leak(Box::new(Table::new()));
    (0..n).map(|_| table.acquire().expect("a free slot")).collect()
}

/// Waits until `cond` holds, or fails naming `what`.
fn await_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + LIMIT;
    while !cond() {
        assert!(Instant::now() < deadline, "still waiting after {LIMIT:?}: {what}");
        std::thread::yield_now();
    }
}

fn await_done(host: &TestHost, count: usize, what: &str) {
    await_until(&format!("{what}: {count} processes done"), || host.done.load(SeqCst) >= count);
}

/// Where process `p` first ran, in the order of all runs.
fn first_run(host: &TestHost, p: &Process) -> Option<usize> {
    host.runs.lock().iter().position(|&i| i == p.index())
}

#[test]
fn every_process_scheduled_from_outside_runs_once() {
    let host = host(2, |_, _| false);
    let procs = processes(500);
    with_workers(host.clone(), 2, |h| {
        for p in &procs {
            h.sched.schedule(p);
        }
        await_done(h, procs.len(), "500 processes on 2 workers");
    });
    let mut runs = host.runs.lock().clone();
    runs.sort_unstable();
    let mut expected: Vec<u32> = procs.iter().map(|p| p.index()).collect();
    expected.sort_unstable();
    assert_eq!(runs, expected, "each process ran exactly once");
}

#[test]
fn processes_that_requeue_themselves_all_finish_across_workers() {
    // Each runs 20 turns, going back on its worker's queue after each: the
    // workers steal from each other and none is lost or run twice at once.
    let host = host(3, |_, run| run < 20);
    let procs = processes(60);
    with_workers(host.clone(), 3, |h| {
        for p in &procs {
            h.sched.schedule(p);
        }
        await_done(h, procs.len(), "60 processes of 20 turns on 3 workers");
    });
    let runs = host.runs.lock();
    assert_eq!(runs.len(), 60 * 20);
    for p in &procs {
        assert_eq!(runs.iter().filter(|&&i| i == p.index()).count(), 20);
    }
}

#[test]
fn a_busy_worker_still_takes_work_from_outside_within_a_bound() {
    // One worker; process A requeues itself 500 times. B arrives from
    // outside (the injector) while A keeps the worker busy, and no monitor
    // ticks: the worker must still look at the injector every
    // INJECTOR_EVERY runs, so B waits behind at most that many of A's.
    let procs = processes(2);
    let a = procs[0].index();
    let host = host_with(1, Box::new(move |_, p, run| p.index() == a && run < 500));
    with_workers(host.clone(), 1, |h| {
        h.sched.schedule(procs[0]);
        // B is queued once A has run at least once (so A is on the worker).
        await_until("A runs", || !h.runs.lock().is_empty());
        let queued_at = h.runs.lock().len();
        h.sched.schedule(procs[1]);
        await_done(h, 2, "A and B on one worker");
        let b_at = first_run(h, procs[1]).expect("B ran");
        assert!(b_at - queued_at <= INJECTOR_EVERY as usize + 1, "B waited {} runs of A (at most {} allowed)", b_at - queued_at, INJECTOR_EVERY + 1);
    });
}

#[test]
fn a_hand_off_pair_runs_back_to_back_but_cannot_starve_the_woken_queue() {
    // One worker. A and B hand off to each other through the "next" slot
    // (as two processes trading messages do); C was woken behind them at
    // A's first run. The pair is preferred (B runs right after A), but only
    // for NEXT_STREAK runs in a row: then C gets its turn.
    let procs = processes(3);
    let (a, b, c) = (procs[0], procs[1], procs[2]);
    let host = host_with(
        1,
        Box::new(move |h, p, _| {
            let total = h.runs.lock().len();
            if total == 1 {
                h.sched.schedule_back(c);
            }
            if !std::ptr::eq(p, c) && total < 300 {
                h.sched.schedule(if std::ptr::eq(p, a) { b } else { a });
            }
            false
        }),
    );
    with_workers(host.clone(), 1, |h| {
        h.sched.schedule(a);
        await_until("300 hand-offs and C", || h.runs.lock().len() >= 300 && first_run(h, c).is_some());
    });
    assert_eq!(host.runs.lock()[1], b.index(), "the hand-off target runs next, ahead of C");
    let c_at = first_run(&host, c).expect("C ran");
    assert!(c_at > 2, "the pair kept the worker for a while (C ran at {c_at})");
    assert!(c_at <= NEXT_STREAK as usize + 1, "C waited {c_at} runs (at most {} allowed)", NEXT_STREAK + 1);
}

#[test]
fn woken_processes_run_before_preempted_ones() {
    // One worker; A's run leaves P preempted (it used up its slice) and
    // then wakes W: W runs first, P after.
    let procs = processes(3);
    let (a, p, w) = (procs[0], procs[1], procs[2]);
    let host = host_with(
        1,
        Box::new(move |h, proc, _| {
            if std::ptr::eq(proc, a) {
                h.sched.schedule_preempted(p);
                h.sched.schedule_back(w);
            }
            false
        }),
    );
    with_workers(host.clone(), 1, |h| {
        h.sched.schedule(a);
        await_done(h, 3, "A, W and P");
    });
    assert_eq!(*host.runs.lock(), vec![a.index(), w.index(), p.index()]);
}

#[test]
fn a_preempted_process_gets_a_turn_once_a_slice_however_much_woken_work() {
    // One worker; W1 and W2 wake themselves over and over, so there is
    // always woken work. P was preempted. While the scheduler's clock
    // stands still P waits (woken work first); once a slice has passed on
    // it (the test moves the epoch, as the monitor's ticks would), P runs
    // at the worker's next choice.
    let procs = processes(4);
    let (a, p, w1, w2) = (procs[0], procs[1], procs[2], procs[3]);
    let host = host_with(
        1,
        Box::new(move |h, proc, _| {
            if std::ptr::eq(proc, a) {
                h.sched.schedule_preempted(p);
                h.sched.schedule_back(w1);
                h.sched.schedule_back(w2);
                return false;
            }
            (std::ptr::eq(proc, w1) || std::ptr::eq(proc, w2)) && first_run(h, p).is_none()
        }),
    );
    with_workers(host.clone(), 1, |h| {
        h.sched.schedule(a);
        await_until("300 runs of W1 and W2", || h.runs.lock().len() >= 300);
        assert_eq!(first_run(h, p), None, "P waits while the clock stands still");
        let bumped_at = h.runs.lock().len();
        h.sched.epoch.fetch_add(SLICE_TICKS, SeqCst);
        await_done(h, 4, "P runs, then W1 and W2 end");
        let p_at = first_run(h, p).expect("P ran");
        assert!(p_at <= bumped_at + 1, "P ran {} runs after the slice passed (at most 1 allowed)", p_at - bumped_at);
    });
}

#[test]
fn an_idle_worker_steals_the_queue_of_a_busy_one() {
    // Two workers. A queues ten processes on its own worker's queue and
    // then holds that worker until all ten have run: only the other worker
    // can run them, by stealing.
    let procs = processes(11);
    let (a, queued) = (procs[0], procs[1..].to_vec());
    let all_ran_while_a_held = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = all_ran_while_a_held.clone();
    let host = host_with(
        2,
        Box::new(move |h, proc, _| {
            if std::ptr::eq(proc, a) {
                for q in &queued {
                    h.sched.schedule_back(q);
                }
                let deadline = Instant::now() + LIMIT;
                while h.done.load(SeqCst) < queued.len() && Instant::now() < deadline {
                    std::thread::yield_now();
                }
                seen.store(h.done.load(SeqCst) == queued.len(), SeqCst);
            }
            false
        }),
    );
    with_workers(host.clone(), 2, |h| {
        h.sched.schedule(a);
        await_done(h, 11, "A and its ten");
    });
    assert!(all_ran_while_a_held.load(SeqCst), "the ten ran on the other worker while A held its own");
}

#[test]
fn the_monitors_rest_ends_when_a_worker_leaves_its_park() {
    // One worker, nothing to run: once it has parked the pool is quiet and
    // the monitor may rest. Work from outside wakes the worker, and the
    // worker wakes the resting monitor long before its rest would end.
    let host = host(1, |_, _| false);
    let procs = processes(1);
    with_workers(host.clone(), 1, |h| {
        await_until("the worker parks", || h.sched.quiet());
        let resting = std::thread::scope(|scope| {
            let rest = scope.spawn(|| {
                let began = Instant::now();
                (h.sched.rest(LIMIT * 10), began.elapsed())
            });
            await_until("the monitor rests", || h.sched.monitor_resting.load(SeqCst));
            h.sched.schedule(procs[0]);
            rest.join().expect("the resting thread ends")
        });
        assert!(resting.0, "a quiet pool lets the monitor rest");
        assert!(resting.1 < LIMIT, "the rest ended when the worker woke, not at its end ({:?})", resting.1);
        await_done(h, 1, "the process that woke the worker");
    });
}

#[test]
fn the_monitor_does_not_rest_while_a_run_is_under_way() {
    // The one process holds its worker until the test has seen that the
    // monitor would not rest.
    let seen = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let release = seen.clone();
    let host = host_with(
        1,
        Box::new(move |_, _, _| {
            await_until("the test looks at the pool", || release.load(SeqCst));
            false
        }),
    );
    let procs = processes(1);
    with_workers(host.clone(), 1, |h| {
        h.sched.schedule(procs[0]);
        await_until("the run starts", || h.sched.started_slots()[0].watch.current().is_some());
        assert!(!h.sched.quiet(), "a pool with a run under way is not quiet");
        assert!(!h.sched.rest(LIMIT), "the monitor does not rest beside a run");
        seen.store(true, SeqCst);
        await_done(h, 1, "the run");
    });
}
