//! A stuck worker's hand-off, with real worker threads: a process that
//! holds its worker (here: it waits at a gate the test opens), the worker
//! declared stuck as the monitor declares it, a thread standing in, the
//! stuck worker's queues taken over, its "next" process rescued by the
//! preemption signal's handler, and the worker's return as a spare (or as
//! a worker, when nobody stood in). The monitor's side, when to declare a
//! worker stuck, is tested in `monitor/tests.rs`; here the test declares it.

use std::sync::atomic::Ordering::*;

use parking_lot::{Condvar, Mutex};

use super::*;

/// A door a process waits at until the test opens it (at most `LIMIT`).
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    opened: Condvar,
    /// Someone waits at the door.
    waiting: Mutex<bool>,
}

impl Gate {
    /// Waits until the gate opens; false when it did not within `LIMIT`.
    fn pass(&self) -> bool {
        *self.waiting.lock() = true;
        let mut open = self.open.lock();
        let deadline = Instant::now() + LIMIT;
        while !*open {
            if self.opened.wait_until(&mut open, deadline).timed_out() {
                return *open;
            }
        }
        true
    }

    fn open(&self) {
        *self.open.lock() = true;
        self.opened.notify_all();
    }

    fn has_someone_waiting(&self) -> bool {
        *self.waiting.lock()
    }
}

/// Declares worker `index` stuck, as the monitor does (see `monitor`):
/// it no longer counts as active.
fn declare_stuck(sched: &Scheduler, index: usize) {
    assert!(!sched.slots[index].watch.stuck.swap(true, AcqRel));
    sched.active.fetch_sub(1, AcqRel);
}

/// Brings a thread to stand in for a stuck worker, as the monitor does: a
/// parked spare if there is one, else a new worker thread.
fn stand_in(host: &TestHost) {
    host.sched.active.fetch_add(1, AcqRel);
    if !host.sched.wake_spare() {
        host.sched.active.fetch_sub(1, AcqRel);
        host.start_worker().expect("a thread to stand in");
    }
}

fn parked_spares(sched: &Scheduler) -> usize {
    sched.spares.lock().parked
}

/// The slot of the worker running process `p` now, if one is.
fn worker_of(sched: &Scheduler, p: &Process) -> Option<usize> {
    sched.started_slots().iter().position(|s| s.watch.current().is_some_and(|(q, _)| std::ptr::eq(q, p)))
}

#[test]
fn a_stuck_workers_queue_is_run_by_the_thread_standing_in_which_stands_down_when_the_worker_comes_back() {
    // One worker. A queues B and C on its worker's own queue, then holds
    // the worker. Nobody else can run them until the worker is declared
    // stuck and a thread stands in: that thread steals them. When A lets
    // go, the pool has one worker too many: the thread that stood in parks
    // as a spare, and the worker that came back runs what comes next.
    let procs = processes(4);
    let (a, b, c, d) = (procs[0], procs[1], procs[2], procs[3]);
    let gate = Arc::new(Gate::default());
    let held = gate.clone();
    let d_ran_on = Arc::new(AtomicUsize::new(usize::MAX));
    let d_on = d_ran_on.clone();
    let host = host_with(
        1,
        Box::new(move |h, p, _| {
            if std::ptr::eq(p, a) {
                h.sched.schedule_back(b);
                h.sched.schedule_back(c);
                assert!(held.pass(), "the test opens the gate");
            } else if std::ptr::eq(p, d) {
                d_on.store(worker_of(&h.sched, p).unwrap_or(usize::MAX), SeqCst);
            }
            false
        }),
    );
    with_workers(host.clone(), 1, |h| {
        h.sched.schedule(a);
        await_until("A holds its worker", || gate.has_someone_waiting());
        assert_eq!(h.done.load(SeqCst), 0, "B and C wait behind A: one worker, and it is held");
        declare_stuck(&h.sched, worker_of(&h.sched, a).expect("A runs"));
        stand_in(h);
        await_done(h, 2, "B and C on the thread standing in");
        assert_eq!(first_run(h, a), Some(0));
        assert!(worker_of(&h.sched, a).is_some(), "A still holds its worker");
        gate.open();
        await_until("the thread that stood in parks as a spare", || parked_spares(&h.sched) == 1);
        assert_eq!(h.done.load(SeqCst), 3);
        assert_eq!(h.sched.active.load(SeqCst), 1, "one active worker, the target: the spare does not count");
        assert!(!h.sched.slots[0].watch.stuck.load(SeqCst), "the worker is not stuck any more");
        h.sched.schedule(d);
        await_done(h, 4, "D");
        assert_eq!(d_ran_on.load(SeqCst), 0, "on the worker that came back");
    });
}

#[test]
fn a_process_woken_by_a_stuck_worker_goes_where_other_workers_find_it() {
    // Once its worker is declared stuck, what A wakes does not go to that
    // worker's own queues (it will not look at them for a while) but to
    // the injector, where the thread standing in finds it at once.
    let procs = processes(2);
    let (a, b) = (procs[0], procs[1]);
    let (first, second) = (Arc::new(Gate::default()), Arc::new(Gate::default()));
    let (first_held, second_held) = (first.clone(), second.clone());
    let host = host_with(
        1,
        Box::new(move |h, p, _| {
            if std::ptr::eq(p, a) {
                assert!(first_held.pass());
                h.sched.schedule(b);
                assert!(second_held.pass());
            }
            false
        }),
    );
    with_workers(host.clone(), 1, |h| {
        h.sched.schedule(a);
        await_until("A holds its worker", || first.has_someone_waiting());
        declare_stuck(&h.sched, worker_of(&h.sched, a).expect("A runs"));
        stand_in(h);
        first.open();
        await_done(h, 1, "B, woken by A on its stuck worker");
        assert!(second.has_someone_waiting() && worker_of(&h.sched, a).is_some(), "B ran while A held its worker");
        second.open();
        await_done(h, 2, "A");
    });
}

#[test]
fn the_next_process_of_a_stuck_worker_is_rescued_by_the_preemption_handler() {
    // A hands off to B through its worker's "next" slot, which no other
    // worker can steal from, then holds the worker. Once the worker is
    // declared stuck, the preemption signal's handler (called here on A's
    // thread, as the signal would run it) moves B to the rescue cell, and
    // the thread standing in takes it from there.
    let procs = processes(2);
    let (a, b) = (procs[0], procs[1]);
    let (first, second) = (Arc::new(Gate::default()), Arc::new(Gate::default()));
    let (first_held, second_held) = (first.clone(), second.clone());
    let host = host_with(
        1,
        Box::new(move |h, p, _| {
            if std::ptr::eq(p, a) {
                h.sched.schedule(b);
                assert!(first_held.pass());
                on_preempt_signal();
                assert!(second_held.pass());
            }
            false
        }),
    );
    with_workers(host.clone(), 1, |h| {
        h.sched.schedule(a);
        await_until("A holds its worker", || first.has_someone_waiting());
        declare_stuck(&h.sched, 0);
        stand_in(h);
        assert!(!h.sched.has_visible_work(), "B sits in the next slot: invisible to the thread standing in");
        first.open();
        // The handler wakes nobody (it must be async-signal-safe): the
        // monitor's nudge, every tick, wakes a parked worker for B.
        await_until("B, rescued", || {
            h.sched.nudge();
            h.done.load(SeqCst) >= 1
        });
        assert!(second.has_someone_waiting() && worker_of(&h.sched, a) == Some(0), "B ran while A held its worker");
        assert!(h.sched.slots[0].rescue.load(SeqCst).is_null(), "the rescue cell was emptied");
        second.open();
        await_done(h, 2, "A");
    });
}

#[test]
fn the_preemption_handler_leaves_alone_a_worker_that_is_not_stuck() {
    // One worker: A hands off to B, and the signal comes while A runs, but
    // nobody declared the worker stuck: B stays in the next slot and runs
    // right after A, on the same worker.
    let procs = processes(2);
    let (a, b) = (procs[0], procs[1]);
    let rescue_stayed_empty = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = rescue_stayed_empty.clone();
    let host = host_with(
        1,
        Box::new(move |h, p, _| {
            if std::ptr::eq(p, a) {
                h.sched.schedule(b);
                on_preempt_signal();
                seen.store(h.sched.slots[0].rescue.load(SeqCst).is_null(), SeqCst);
            }
            false
        }),
    );
    with_workers(host.clone(), 1, |h| {
        h.sched.schedule(a);
        await_done(h, 2, "A and B");
    });
    assert!(rescue_stayed_empty.load(SeqCst));
    assert_eq!(*host.runs.lock(), vec![a.index(), b.index()]);
}

#[test]
fn a_stuck_worker_that_comes_back_before_anyone_stood_in_carries_on() {
    // Declared stuck, but no thread could stand in (the pool is one short):
    // when its process lets go, the worker counts as active again and goes
    // on working instead of parking.
    let procs = processes(2);
    let (a, b) = (procs[0], procs[1]);
    let gate = Arc::new(Gate::default());
    let held = gate.clone();
    let host = host_with(
        1,
        Box::new(move |_, p, _| {
            if std::ptr::eq(p, a) {
                assert!(held.pass());
            }
            false
        }),
    );
    with_workers(host.clone(), 1, |h| {
        h.sched.schedule(a);
        await_until("A holds its worker", || gate.has_someone_waiting());
        declare_stuck(&h.sched, 0);
        assert_eq!(h.sched.active.load(SeqCst), 0);
        gate.open();
        await_until("the worker counts again", || h.sched.active.load(SeqCst) == 1);
        h.sched.schedule(b);
        await_done(h, 2, "B, on the same worker");
        assert_eq!(parked_spares(&h.sched), 0);
        assert!(!h.sched.slots[0].watch.stuck.load(SeqCst));
        assert_eq!(h.sched.started_slots().len(), 1, "no thread was started");
    });
}

#[test]
fn a_parked_spare_is_woken_to_stand_in_before_any_new_thread_is_started() {
    // Worker 0 gets stuck on A; the thread that stood in (worker 1) parks
    // as a spare once A lets go (as in the first test). Then worker 0 gets
    // stuck on C, which queued D behind itself: the spare comes back, takes
    // D, and no third thread is started.
    let procs = processes(4);
    let (a, b, c, d) = (procs[0], procs[1], procs[2], procs[3]);
    let (first, second) = (Arc::new(Gate::default()), Arc::new(Gate::default()));
    let (first_held, second_held) = (first.clone(), second.clone());
    let host = host_with(
        1,
        Box::new(move |h, p, _| {
            if std::ptr::eq(p, a) {
                assert!(first_held.pass());
            } else if std::ptr::eq(p, c) {
                h.sched.schedule_back(d);
                assert!(second_held.pass());
            }
            false
        }),
    );
    with_workers(host.clone(), 1, |h| {
        h.sched.schedule(a);
        await_until("A holds worker 0", || first.has_someone_waiting());
        declare_stuck(&h.sched, 0);
        stand_in(h);
        h.sched.schedule(b);
        await_done(h, 1, "B, on the thread standing in");
        first.open();
        await_until("worker 1 parks as a spare", || parked_spares(&h.sched) == 1);
        h.sched.schedule(c);
        await_until("C holds worker 0", || second.has_someone_waiting());
        assert_eq!(worker_of(&h.sched, c), Some(0));
        declare_stuck(&h.sched, 0);
        stand_in(h);
        await_done(h, 3, "A, B and D (D on the spare that came back)");
        assert_eq!(first_run(h, d).map(|_| worker_of(&h.sched, c)), Some(Some(0)), "D ran while C held worker 0");
        assert_eq!(h.sched.started_slots().len(), 2, "no third thread: the spare stood in");
        assert_eq!(parked_spares(&h.sched), 0);
        second.open();
        await_until("worker 1 parks as a spare again", || parked_spares(&h.sched) == 1);
        assert_eq!(h.done.load(SeqCst), 4);
    });
}

#[test]
fn a_pool_quiet_but_for_a_stuck_run_lets_the_monitor_rest_until_the_stuck_worker_comes_back() {
    // A holds its worker (as a C function computing would). Declared stuck,
    // with a thread standing in that finds nothing to do, the pool is quiet:
    // the monitor may rest, and A's return ends the rest at once (its next
    // run must be watched).
    let procs = processes(1);
    let a = procs[0];
    let gate = Arc::new(Gate::default());
    let held = gate.clone();
    let host = host_with(
        1,
        Box::new(move |_, p, _| {
            if std::ptr::eq(p, a) {
                assert!(held.pass(), "the test opens the gate");
            }
            false
        }),
    );
    with_workers(host.clone(), 1, |h| {
        h.sched.schedule(a);
        await_until("A holds its worker", || gate.has_someone_waiting());
        assert!(!h.sched.quiet(), "a run under way, not declared stuck: not quiet");
        declare_stuck(&h.sched, worker_of(&h.sched, a).expect("A runs"));
        stand_in(h);
        await_until("the thread standing in parks", || h.sched.quiet());
        assert!(h.sched.has_stuck());
        let resting = std::thread::scope(|scope| {
            let rest = scope.spawn(|| {
                let began = Instant::now();
                (h.sched.rest(LIMIT * 10), began.elapsed())
            });
            await_until("the monitor rests", || h.sched.monitor_resting.load(SeqCst));
            gate.open();
            rest.join().expect("the resting thread ends")
        });
        assert!(resting.0, "quiet but for a stuck run: the monitor rests");
        assert!(resting.1 < LIMIT, "the stuck worker's return ended the rest ({:?})", resting.1);
        await_done(h, 1, "A");
        assert!(!h.sched.has_stuck());
    });
}
