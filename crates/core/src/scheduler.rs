//! The M:N scheduler: a fixed pool of worker threads that run processes. It
//! decides only *where and when* a process runs; what happens when it runs is
//! the runtime's business (`Shared::run_process`).
//!
//! Each worker owns a FIFO deque and a one-slot "next" cell. A process woken
//! by the process running on this worker goes to the slot, so a message
//! hand-off runs the receiver next, on a warm cache, without touching other
//! threads (the pattern of Go's `runnext`). A streak limit stops two processes
//! ping-ponging through the slot from starving the deque. Wake-ups from
//! outside the pool (timers, the launching thread) go to a global injector.
//!
//! A worker that runs out of work:
//!
//! 1. *spins* for up to [`SPIN`], stealing from the injector and its peers;
//!    while a worker spins, nobody wakes a parked one (the spinner will take
//!    the work), so a process spawning or waking others in a burst does not
//!    pay a futex wake-up, and its peer a sleep and a wake, for each of them;
//! 2. then *parks* on a condition variable, and is woken only when work
//!    lands where it could take it and no worker is spinning.
//!
//! A spinner that finds work wakes a parked worker if work is left over, so
//! that skipping the wake-up in step 1 never leaves work waiting behind a
//! sleeping pool.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::*};
use std::time::{Duration, Instant};

use crossbeam_deque::{Injector, Steal, Stealer, Worker};
use parking_lot::{Condvar, Mutex};

use crate::preempt::WorkerWatch;
use crate::process::Process;
use crate::runtime::Runtime;

/// How many times in a row the "next" slot may be preferred over the deque.
const NEXT_STREAK: u32 = 64;
/// Every this many runs a worker looks at the injector first (fairness to wake-ups from outside).
const INJECTOR_EVERY: u32 = 61;
/// How long a worker out of work looks for more before it parks. Measured on
/// bench/ring's spawn-and-exit: a spawner made a parked peer sleep and wake
/// for nearly every process it started.
const SPIN: Duration = Duration::from_micros(30);

pub(crate) struct Scheduler {
    pub(crate) watches: Vec<WorkerWatch>,
    injector: Injector<&'static Process>,
    stealers: Vec<Stealer<&'static Process>>,
    idle: AtomicUsize,
    /// Workers out of work but still looking (see the module doc).
    spinning: AtomicUsize,
    park_lock: Mutex<()>,
    unpark: Condvar,
    stopping: AtomicBool,
}

struct Local {
    queue: Worker<&'static Process>,
    next: Cell<Option<&'static Process>>,
    streak: Cell<u32>,
    ticks: Cell<u32>,
    scheduler: *const Scheduler,
}

thread_local! {
    static LOCAL: Cell<*const Local> = const { Cell::new(std::ptr::null()) };
}

impl Scheduler {
    /// A scheduler for `workers` threads, and the deques those threads will own.
    pub(crate) fn new(workers: usize) -> (Scheduler, Vec<Worker<&'static Process>>) {
        let queues: Vec<_> = (0..workers.max(1)).map(|_| Worker::new_fifo()).collect();
        let sched = Scheduler {
            watches: queues.iter().map(|_| WorkerWatch::default()).collect(),
            injector: Injector::new(),
            stealers: queues.iter().map(Worker::stealer).collect(),
            idle: AtomicUsize::new(0),
            spinning: AtomicUsize::new(0),
            park_lock: Mutex::new(()),
            unpark: Condvar::new(),
            stopping: AtomicBool::new(false),
        };
        (sched, queues)
    }

    /// Queues a runnable process: on the current worker's "next" slot when
    /// called from a worker of this scheduler, else on the injector.
    pub(crate) fn schedule(&self, proc: &'static Process) {
        self.schedule_with(proc, true)
    }

    /// Queues a process behind the others of this worker (after preemption).
    pub(crate) fn schedule_back(&self, proc: &'static Process) {
        self.schedule_with(proc, false)
    }

    fn schedule_with(&self, proc: &'static Process, as_next: bool) {
        let local = LOCAL.with(|l| l.get());
        // SAFETY: LOCAL points at the running worker's `Local`, which lives for the whole worker loop.
        match unsafe { local.as_ref() } {
            Some(local) if std::ptr::eq(local.scheduler, self) => {
                let to_queue = if as_next { local.next.replace(Some(proc)) } else { Some(proc) };
                if let Some(p) = to_queue {
                    local.queue.push(p);
                    self.wake_one();
                }
            }
            _ => {
                self.injector.push(proc);
                self.wake_one();
            }
        }
    }

    fn wake_one(&self) {
        // Pairs with the decrement of `spinning` and the increment of `idle`
        // in `spin` and `park`: either we see the spinning or parking worker,
        // or it sees the work we just pushed.
        std::sync::atomic::fence(SeqCst);
        if self.spinning.load(SeqCst) == 0 && self.idle.load(SeqCst) > 0 {
            let _guard = self.park_lock.lock();
            self.unpark.notify_one();
        }
    }

    pub(crate) fn stop(&self) {
        self.stopping.store(true, SeqCst);
        let _guard = self.park_lock.lock();
        self.unpark.notify_all();
    }

    pub(crate) fn is_stopping(&self) -> bool {
        self.stopping.load(Relaxed)
    }

    /// The body of one worker thread.
    pub(crate) fn work(rt: &Runtime, index: usize, queue: Worker<&'static Process>) {
        let sched = rt.scheduler();
        let watch = &sched.watches[index];
        watch.register_current_thread();
        let local = Local {
            queue,
            next: Cell::new(None),
            streak: Cell::new(0),
            ticks: Cell::new(0),
            scheduler: sched,
        };
        LOCAL.with(|l| l.set(&local));
        while !sched.is_stopping() {
            match sched.find_work(&local).or_else(|| sched.spin(&local)) {
                Some(proc) => {
                    watch.start_run();
                    rt.run_process(proc);
                    watch.end_run();
                }
                None => sched.park(),
            }
        }
        LOCAL.with(|l| l.set(std::ptr::null()));
    }

    fn find_work(&self, local: &Local) -> Option<&'static Process> {
        let ticks = local.ticks.get().wrapping_add(1);
        local.ticks.set(ticks);
        if ticks.is_multiple_of(INJECTOR_EVERY) {
            if let Some(p) = self.steal_injector(local) {
                return Some(p);
            }
        }
        if let Some(p) = local.next.take() {
            // Prefer the hand-off target, unless it has been preferred for
            // a while and others are waiting: then it goes to the back.
            if local.streak.get() < NEXT_STREAK || local.queue.is_empty() {
                local.streak.set(local.streak.get() + 1);
                return Some(p);
            }
            local.queue.push(p);
        }
        local.streak.set(0);
        local.queue.pop().or_else(|| self.steal_injector(local)).or_else(|| self.steal_peers(local))
    }

    fn steal_injector(&self, local: &Local) -> Option<&'static Process> {
        loop {
            match self.injector.steal_batch_and_pop(&local.queue) {
                Steal::Success(p) => return Some(p),
                Steal::Empty => return None,
                Steal::Retry => continue,
            }
        }
    }

    fn steal_peers(&self, local: &Local) -> Option<&'static Process> {
        for s in &self.stealers {
            loop {
                match s.steal_batch_and_pop(&local.queue) {
                    Steal::Success(p) => return Some(p),
                    Steal::Empty => break,
                    Steal::Retry => continue,
                }
            }
        }
        None
    }

    /// Step 1 of running out of work: looks for some for up to [`SPIN`].
    fn spin(&self, local: &Local) -> Option<&'static Process> {
        self.spinning.fetch_add(1, SeqCst);
        let start = Instant::now();
        let found = loop {
            for _ in 0..64 {
                std::hint::spin_loop();
            }
            if let Some(p) = self.steal_injector(local).or_else(|| self.steal_peers(local)) {
                break Some(p);
            }
            if self.is_stopping() || start.elapsed() >= SPIN {
                break None;
            }
        };
        self.spinning.fetch_sub(1, SeqCst);
        if found.is_some() && self.has_visible_work() {
            self.wake_one();
        }
        found
    }

    fn has_visible_work(&self) -> bool {
        !self.injector.is_empty() || self.stealers.iter().any(|s| !s.is_empty())
    }

    fn park(&self) {
        let mut guard = self.park_lock.lock();
        self.idle.fetch_add(1, SeqCst);
        // Re-check under the lock: a scheduler that pushed before seeing us idle left work behind.
        if !self.has_visible_work() && !self.is_stopping() {
            self.unpark.wait(&mut guard);
        }
        self.idle.fetch_sub(1, SeqCst);
    }
}
