//! The scheduler alone, with a host of the tests' own instead of the
//! runtime: real worker threads, no monitor (so no clock ticks), and
//! processes that do nothing but note that they ran. Every wait is for an
//! event, bounded; nothing sleeps.

use std::sync::atomic::{AtomicUsize, Ordering::*};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::{Host, Scheduler, INJECTOR_EVERY};
use crate::process::Process;
use crate::table::Table;

/// How long a test waits for what it awaits before it fails.
const LIMIT: Duration = Duration::from_secs(20);

/// A host whose processes note their runs; `again(index, run)` says
/// whether a process goes back on its worker's queue after that run.
struct TestHost {
    sched: Scheduler,
    runs: Mutex<Vec<u32>>,
    done: AtomicUsize,
    again: fn(u32, usize) -> bool,
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
        if (self.again)(index, run) {
            self.sched.schedule_back(proc);
        } else {
            self.done.fetch_add(1, SeqCst);
        }
    }

    fn start_worker(&self) -> std::io::Result<()> {
        Ok(())
    }

    fn trim(&self, _stopping: bool) {}
}

/// Runs `workers` worker threads for `host` while `body` schedules and
/// awaits; then stops them and waits for every thread to end.
fn with_workers(host: Arc<TestHost>, workers: usize, body: impl FnOnce(&TestHost)) {
    let threads: Vec<_> = (0..workers)
        .map(|_| {
            let index = host.sched.claim_slot().expect("a slot");
            let host = host.clone();
            std::thread::spawn(move || Scheduler::work(&*host, index))
        })
        .collect();
    body(&host);
    host.sched.stop();
    for t in threads {
        t.join().expect("a worker thread ends cleanly");
    }
}

fn host(workers: usize, again: fn(u32, usize) -> bool) -> Arc<TestHost> {
    Arc::new(TestHost { sched: Scheduler::new(workers), runs: Mutex::new(Vec::new()), done: AtomicUsize::new(0), again })
}

fn processes(n: usize) -> Vec<&'static Process> {
    // Leaked with the table: a test's processes live as long as it does.
    let table: &'static Table = Box::leak(Box::new(Table::new()));
    (0..n).map(|_| table.acquire().expect("a free slot")).collect()
}

fn await_done(host: &TestHost, count: usize, what: &str) {
    let deadline = Instant::now() + LIMIT;
    while host.done.load(SeqCst) < count {
        assert!(Instant::now() < deadline, "{what}: {} of {count} processes done", host.done.load(SeqCst));
        std::thread::yield_now();
    }
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
    let host = host(1, |index, run| index == procs_a() && run < 500);
    A.store(a as usize, SeqCst);
    with_workers(host.clone(), 1, |h| {
        h.sched.schedule(procs[0]);
        // B is queued once A has run at least once (so A is on the worker).
        let deadline = Instant::now() + LIMIT;
        while h.runs.lock().is_empty() {
            assert!(Instant::now() < deadline, "A never ran");
            std::thread::yield_now();
        }
        let queued_at = h.runs.lock().len();
        h.sched.schedule(procs[1]);
        await_done(h, 2, "A and B on one worker");
        let runs = h.runs.lock();
        let b_at = runs.iter().position(|&i| i == procs[1].index()).expect("B ran");
        assert!(b_at - queued_at <= INJECTOR_EVERY as usize + 1, "B waited {} runs of A (at most {} allowed)", b_at - queued_at, INJECTOR_EVERY + 1);
    });
}

/// The index of process A in the test above (a `fn` pointer cannot capture).
static A: AtomicUsize = AtomicUsize::new(usize::MAX);

fn procs_a() -> u32 {
    A.load(SeqCst) as u32
}
