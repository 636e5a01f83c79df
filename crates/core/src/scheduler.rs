//! The M:N scheduler: worker threads that run processes. It decides only
//! *where and when* a process runs; what happens when it runs is the
//! runtime's business (`Runtime::run_process`), and watching the workers
//! (preemption, stuck workers) is the monitor's (`monitor`).
//!
//! Each worker owns two FIFO deques and a one-slot "next" cell:
//!
//! - *next*: a process woken by the process running on this worker, so a
//!   message hand-off runs the receiver next, on a warm cache, without
//!   touching other threads (Go's `runnext`). A streak limit stops two
//!   processes ping-ponging through it from starving the rest.
//! - *woken*: processes that were woken (message, timer, channel, tuple) or
//!   are new. They run before
//! - *preempted*: processes that used up a time slice. So a woken process
//!   waits behind at most the run in progress, not behind every process
//!   that computes; and the preempted ones still get a turn at least once a
//!   slice, however much woken work there is.
//!
//! Wake-ups from outside the pool (timers, I/O threads, a worker whose
//! process is stuck) go to a global injector, which every worker looks at
//! at least once per monitor tick. Other workers steal from a worker's
//! deques when they run out of work.
//!
//! A worker that runs out of work:
//!
//! 1. *spins* for up to [`SPIN`], stealing from the injector and its peers
//!    and, between looks, doing pieces of idle work (`idle`); a piece done
//!    starts the [`SPIN`] again, since idle work is made by work going on
//!    (new states' memory: a burst of spawns), and a worker that parked
//!    meanwhile would cost the spawner a futex wake-up for each
//!    process it queues (12% of the time of a burst of entity forks);
//!    while a worker spins, nobody wakes a parked one (the spinner will take
//!    the work), so a process spawning or waking others in a burst does not
//!    pay a futex wake-up, and its peer a sleep and a wake, for each of them;
//! 2. then *parks* on a condition variable, and is woken only when work
//!    lands where it could take it and no worker is spinning.
//!
//! A spinner that finds work wakes a parked worker if work is left over, so
//! that skipping the wake-up in step 1 never leaves work waiting behind a
//! sleeping pool.
//!
//! On a node of a cluster, one worker out of work also reads the network
//! while it spins, and parks in the network poll rather than on the
//! condition variable (see `netpoll`).
//!
//! **Stuck workers.** A process that cannot yield (a busy loop in a callback
//! of a C function, a C function that blocks) holds its worker's thread. As
//! Go does for a thread stuck in a system call, the monitor then declares
//! the worker stuck and starts (or wakes) a spare thread to take its place;
//! the stuck worker's deques are stolen from as usual, and its "next"
//! process is moved out by the preemption signal's handler
//! ([`on_preempt_signal`]) into a rescue cell others take from. When the
//! stuck thread comes back from its process and there are enough workers
//! without it, it hands its queues to the injector and becomes a spare
//! itself, parked until the monitor needs it again.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crossbeam_deque::{Injector, Steal, Stealer, Worker};
use parking_lot::{Condvar, Mutex};

use crate::netpoll::{self, Netpoll};
use crate::process::Process;
use crate::runtime::Runtime;

/// How many times in a row the "next" slot may be preferred over the deque.
const NEXT_STREAK: u32 = 64;
/// Every this many runs a worker looks at the injector first, whatever the tick.
const INJECTOR_EVERY: u32 = 61;
/// How long a worker out of work looks for more before it parks. Measured on
/// bench/ring's spawn-and-exit: a spawner made a parked peer sleep and wake
/// for nearly every process it started.
const SPIN: Duration = Duration::from_micros(30);
/// Monitor ticks per time slice.
pub(crate) const SLICE_TICKS: u64 = 4;
/// Threads the pool may start beyond its workers, to stand in for stuck ones.
const MAX_SPARES: usize = 256;
/// The most worker threads a runtime runs processes on.
pub const MAX_WORKERS: usize = 1024;

type Deque = Worker<&'static Process>;

pub(crate) struct Scheduler {
    injector: Injector<&'static Process>,
    slots: Box<[Slot]>,
    /// Slots whose thread has started; they are taken in order.
    started: AtomicUsize,
    /// Worker threads neither stuck nor spare; the monitor keeps it at `target`.
    pub(crate) active: AtomicUsize,
    pub(crate) target: usize,
    idle: AtomicUsize,
    /// Workers out of work but still looking (see the module doc).
    spinning: AtomicUsize,
    park_lock: Mutex<()>,
    unpark: Condvar,
    spares: Mutex<Spares>,
    spare_wake: Condvar,
    stopping: AtomicBool,
    /// Ticks of the monitor: the scheduler's coarse clock, read where a
    /// clock call would cost too much.
    pub(crate) epoch: AtomicU64,
    /// The transport's reader of the network, on a node of a cluster.
    netpoll: OnceLock<Arc<dyn Netpoll>>,
    /// Held by the one thread that reads the network (see `netpoll`).
    poll_token: AtomicBool,
    /// The token's holder waits in the poll: it is woken by an interrupt.
    poll_blocked: AtomicBool,
}

#[derive(Default)]
struct Spares {
    /// Threads parked as spares.
    parked: usize,
    /// Of those, how many the monitor has asked to come back.
    wanted: usize,
}

/// What other threads know of one worker thread.
pub(crate) struct Slot {
    pub(crate) watch: Watch,
    woken: OnceLock<Stealer<&'static Process>>,
    preempted: OnceLock<Stealer<&'static Process>>,
    /// A "next" process moved out of a stuck worker, for others to take.
    rescue: AtomicPtr<Process>,
}

/// A worker's current run, as the monitor sees it. Only the worker writes
/// `started_at` and `running`, so plain stores do (no locked instruction on
/// every run); the monitor only reads them.
#[derive(Default)]
pub(crate) struct Watch {
    started_at: AtomicU64,
    running: AtomicPtr<Process>,
    /// Set by the monitor when the run has lasted too long; cleared by the worker.
    pub(crate) stuck: AtomicBool,
    thread: OnceLock<libc::pthread_t>,
    /// The thread's id in the kernel, for its statistics in /proc.
    tid: OnceLock<libc::pid_t>,
}

impl Watch {
    #[inline]
    fn start_run(&self, epoch: u64, proc: &'static Process) {
        self.started_at.store(epoch, Relaxed);
        self.running.store(proc as *const Process as *mut Process, Release);
    }

    /// Ends a run; true when the monitor declared it stuck meanwhile.
    #[inline]
    fn end_run(&self) -> bool {
        self.running.store(std::ptr::null_mut(), Relaxed);
        self.stuck.load(Relaxed)
    }

    /// The process being run and the tick its run started at.
    pub(crate) fn current(&self) -> Option<(&'static Process, u64)> {
        let p = self.running.load(Acquire);
        // SAFETY: slots live for the whole run (see `Table`).
        let proc = unsafe { p.cast_const().as_ref() }?;
        Some((proc, self.started_at.load(Relaxed)))
    }

    /// The processor time the worker's thread has used.
    pub(crate) fn cpu_time(&self) -> Duration {
        let Some(&thread) = self.thread.get() else { return Duration::ZERO };
        // SAFETY: the thread is a live worker of this runtime; the calls only read its clock.
        unsafe {
            let mut clock: libc::clockid_t = 0;
            let mut ts: libc::timespec = std::mem::zeroed();
            if libc::pthread_getcpuclockid(thread, &mut clock) != 0 || libc::clock_gettime(clock, &mut ts) != 0 {
                return Duration::ZERO;
            }
            Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
        }
    }

    /// Whether the worker's thread is asleep in the kernel now (a system
    /// call that blocks), rather than running or waiting for a processor.
    pub(crate) fn asleep(&self) -> bool {
        let Some(tid) = self.tid.get() else { return false };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")) else { return false };
        // The state follows the command name, which is in parentheses.
        let state = stat.rfind(')').and_then(|i| stat[i + 1..].trim_start().chars().next());
        matches!(state, Some('S' | 'D'))
    }

    /// How long the worker's thread has waited for a processor (runnable,
    /// but another thread ran), from the kernel's scheduler statistics;
    /// zero where they cannot be read.
    pub(crate) fn run_queue_wait(&self) -> Duration {
        let Some(tid) = self.tid.get() else { return Duration::ZERO };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")) else { return Duration::ZERO };
        // "time on a processor, time waiting for one, timeslices", in ns.
        stat.split_whitespace().nth(1).and_then(|w| w.parse().ok()).map_or(Duration::ZERO, Duration::from_nanos)
    }

    /// Sends `signal` to the worker's thread.
    pub(crate) fn signal(&self, signal: libc::c_int) {
        if let Some(&t) = self.thread.get() {
            // SAFETY: the thread is a worker of this runtime; workers outlive the monitor's loop.
            unsafe { libc::pthread_kill(t, signal) };
        }
    }
}

struct Local {
    woken: Deque,
    preempted: Deque,
    next: Cell<Option<&'static Process>>,
    streak: Cell<u32>,
    ticks: Cell<u32>,
    /// The epoch at which the injector was last looked at.
    injector_seen: Cell<u64>,
    /// The epoch at which a process was last preempted here: a preempted
    /// process gets a turn once a slice has passed since.
    preempted_turn: Cell<u64>,
    /// While a process runs (the preemption signal's handler acts only then)...
    in_run: Cell<bool>,
    /// ...and is not inside `schedule_with`, which moves `next`.
    in_sched: Cell<bool>,
    /// This worker holds the poll token.
    polling: Cell<bool>,
    scheduler: *const Scheduler,
    slot: *const Slot,
}

thread_local! {
    static LOCAL: Cell<*const Local> = const { Cell::new(std::ptr::null()) };
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

impl Scheduler {
    /// A scheduler that keeps `workers` threads running processes.
    pub(crate) fn new(workers: usize) -> Scheduler {
        let target = workers.clamp(1, MAX_WORKERS);
        Scheduler {
            injector: Injector::new(),
            slots: (0..target + MAX_SPARES)
                .map(|_| Slot { watch: Watch::default(), woken: OnceLock::new(), preempted: OnceLock::new(), rescue: AtomicPtr::default() })
                .collect(),
            started: AtomicUsize::new(0),
            active: AtomicUsize::new(0),
            target,
            idle: AtomicUsize::new(0),
            spinning: AtomicUsize::new(0),
            park_lock: Mutex::new(()),
            unpark: Condvar::new(),
            spares: Mutex::new(Spares::default()),
            spare_wake: Condvar::new(),
            stopping: AtomicBool::new(false),
            epoch: AtomicU64::new(0),
            netpoll: OnceLock::new(),
            poll_token: AtomicBool::new(false),
            poll_blocked: AtomicBool::new(false),
        }
    }

    /// Has the workers read the network through `net` (see `netpoll`);
    /// false if a reader was installed already.
    pub(crate) fn set_netpoll(&self, net: Arc<dyn Netpoll>) -> bool {
        self.netpoll.set(net).is_ok()
    }

    /// The slots of the threads started so far.
    pub(crate) fn started_slots(&self) -> &[Slot] {
        &self.slots[..self.started.load(Acquire).min(self.slots.len())]
    }

    /// Claims the slot for one more thread, counted as active; `None` when
    /// the pool is at its limit.
    pub(crate) fn claim_slot(&self) -> Option<usize> {
        let index = self.started.fetch_add(1, AcqRel);
        if index >= self.slots.len() {
            self.started.fetch_sub(1, AcqRel);
            return None;
        }
        self.active.fetch_add(1, AcqRel);
        Some(index)
    }

    /// Queues a runnable process that was woken: on the current worker's
    /// "next" slot when called from a worker of this scheduler, else on the injector.
    pub(crate) fn schedule(&self, proc: &'static Process) {
        self.schedule_with(proc, Class::Next)
    }

    /// Queues a new process, or one woken while it ran, behind the woken ones.
    pub(crate) fn schedule_back(&self, proc: &'static Process) {
        self.schedule_with(proc, Class::Woken)
    }

    /// Queues a process that used up its time slice.
    pub(crate) fn schedule_preempted(&self, proc: &'static Process) {
        self.schedule_with(proc, Class::Preempted)
    }

    fn schedule_with(&self, proc: &'static Process, class: Class) {
        // SAFETY: LOCAL points at the running worker's `Local`, which lives for the whole worker loop.
        match unsafe { self.local() } {
            // SAFETY: the slot of a running worker.
            Some(local) if !unsafe { &*local.slot }.watch.stuck.load(Relaxed) => {
                match class {
                    Class::Next => {
                        local.in_sched.set(true);
                        std::sync::atomic::compiler_fence(SeqCst);
                        let displaced = local.next.replace(Some(proc));
                        std::sync::atomic::compiler_fence(SeqCst);
                        local.in_sched.set(false);
                        if let Some(p) = displaced {
                            local.woken.push(p);
                            self.wake_one();
                        }
                    }
                    Class::Woken => {
                        local.woken.push(proc);
                        self.wake_one();
                    }
                    Class::Preempted => {
                        // A process just computed for a slice: woken ones
                        // get the next one before the preempted queue's turn.
                        local.preempted_turn.set(self.epoch.load(Relaxed));
                        local.preempted.push(proc);
                        self.wake_one();
                    }
                }
            }
            // Outside the pool, or on a stuck worker, which will not look
            // at its own queues for a while.
            _ => {
                self.injector.push(proc);
                self.wake_one();
            }
        }
    }

    /// The current thread's worker state, if it is a worker of this scheduler.
    ///
    /// SAFETY: the result must not outlive the worker loop (it never does:
    /// it is only used within one call).
    unsafe fn local(&self) -> Option<&Local> {
        let local = LOCAL.with(|l| l.get());
        local.as_ref().filter(|l| std::ptr::eq(l.scheduler, self))
    }

    pub(crate) fn wake_one(&self) {
        // Pairs with the decrement of `spinning` and the increment of `idle`
        // (or the setting of `poll_blocked`) in `spin` and `park`: either we
        // see the spinning or parking worker, or it sees the work we just pushed.
        std::sync::atomic::fence(SeqCst);
        if self.spinning.load(SeqCst) != 0 {
            return;
        }
        if self.idle.load(SeqCst) > 0 {
            let _guard = self.park_lock.lock();
            self.unpark.notify_one();
        } else if self.poll_blocked.load(SeqCst) {
            if let Some(net) = self.netpoll.get() {
                net.interrupt();
            }
        }
    }

    /// Wakes a parked worker if work waits where only a looking worker
    /// finds it (the monitor calls this every tick).
    pub(crate) fn nudge(&self) {
        if (self.idle.load(SeqCst) > 0 || self.poll_blocked.load(SeqCst)) && self.has_visible_work() {
            self.wake_one();
        }
    }

    /// Step 4 of `netpoll`: the monitor reads the network if no worker
    /// holds the token (all run processes); what it delivers goes to the
    /// injector. If workers are parked meanwhile, one is woken to take the
    /// token over, so that the network is read at once again.
    pub(crate) fn poll_unwatched(&self) {
        let Some(net) = self.netpoll.get() else { return };
        if self.poll_token.compare_exchange(false, true, AcqRel, Relaxed).is_err() {
            return;
        }
        netpoll::set_flushes_here(true);
        net.poll(false);
        net.flush();
        netpoll::set_flushes_here(false);
        self.poll_token.store(false, SeqCst);
        std::sync::atomic::fence(SeqCst);
        if self.spinning.load(SeqCst) == 0 && self.idle.load(SeqCst) > 0 {
            let _guard = self.park_lock.lock();
            self.unpark.notify_one();
        }
    }

    /// Takes the poll token for this worker, if it is free; true when the
    /// worker holds it.
    fn hold_poll_token(&self, local: &Local) -> bool {
        if !local.polling.get() && self.poll_token.compare_exchange(false, true, AcqRel, Relaxed).is_ok() {
            local.polling.set(true);
        }
        local.polling.get()
    }

    /// Step 3 of `netpoll`: a worker about to run a process lets another
    /// thread read the network meanwhile.
    fn release_poll_token(&self, local: &Local) {
        if local.polling.replace(false) {
            self.poll_token.store(false, Release);
        }
    }

    pub(crate) fn stop(&self) {
        self.stopping.store(true, SeqCst);
        if let Some(net) = self.netpoll.get() {
            net.interrupt();
        }
        {
            let _guard = self.park_lock.lock();
            self.unpark.notify_all();
        }
        let _guard = self.spares.lock();
        self.spare_wake.notify_all();
    }

    pub(crate) fn is_stopping(&self) -> bool {
        self.stopping.load(Relaxed)
    }

    /// Brings one more thread to work in place of a stuck one: a parked
    /// spare if there is one (true), else the caller must start a thread
    /// (false). The caller has counted it in `active` already.
    pub(crate) fn wake_spare(&self) -> bool {
        let mut spares = self.spares.lock();
        if spares.parked > spares.wanted {
            spares.wanted += 1;
            self.spare_wake.notify_one();
            return true;
        }
        false
    }

    /// The body of one worker thread, on slot `index`.
    pub(crate) fn work(rt: &Runtime, index: usize) {
        let sched = rt.scheduler();
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
            match sched.find_work(&local).or_else(|| sched.spin(&local)) {
                Some(proc) => {
                    sched.release_poll_token(&local);
                    slot.watch.start_run(sched.epoch.load(Relaxed), proc);
                    local.in_run.set(true);
                    rt.run_process(proc);
                    local.in_run.set(false);
                    if let Some(net) = sched.netpoll.get() {
                        net.flush();
                    }
                    if slot.watch.end_run() {
                        sched.rejoin(&local);
                    }
                }
                None => sched.park(&local),
            }
        }
        sched.release_poll_token(&local);
        netpoll::set_flushes_here(false);
        LOCAL.with(|l| l.set(std::ptr::null()));
    }

    /// A worker back from a run the monitor declared stuck: it counts as
    /// active again, unless a spare took its place; then it gives its queues
    /// to the others and parks as a spare itself until it is wanted.
    fn rejoin(&self, local: &Local) {
        // SAFETY: the slot of this worker.
        let slot = unsafe { &*local.slot };
        slot.watch.stuck.store(false, Relaxed);
        if self.active.fetch_add(1, AcqRel) < self.target {
            return;
        }
        self.active.fetch_sub(1, AcqRel);
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

    fn find_work(&self, local: &Local) -> Option<&'static Process> {
        let epoch = self.epoch.load(Relaxed);
        let ticks = local.ticks.get().wrapping_add(1);
        local.ticks.set(ticks);
        // Wake-ups from outside (timers first of all) wait at most a tick
        // plus the run in progress.
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

    fn steal_injector(&self, local: &Local) -> Option<&'static Process> {
        retry(|| self.injector.steal_batch_and_pop(&local.woken))
    }

    /// Takes work from other workers: woken processes first, then rescued
    /// ones, then preempted ones.
    fn steal_peers(&self, local: &Local) -> Option<&'static Process> {
        let slots = self.started_slots();
        let woken = || slots.iter().filter_map(|s| s.woken.get()).find_map(|s| retry(|| s.steal_batch_and_pop(&local.woken)));
        let rescued = || slots.iter().find_map(Slot::take_rescued);
        let preempted = || slots.iter().filter_map(|s| s.preempted.get()).find_map(|s| retry(|| s.steal_batch_and_pop(&local.preempted)));
        woken().or_else(rescued).or_else(preempted)
    }

    /// Step 1 of running out of work: looks for some for up to [`SPIN`],
    /// reading the network meanwhile if no one else does.
    fn spin(&self, local: &Local) -> Option<&'static Process> {
        self.spinning.fetch_add(1, SeqCst);
        let net = self.netpoll.get();
        let mut start = Instant::now();
        let found = loop {
            let idle_work = match net {
                Some(net) if self.hold_poll_token(local) => {
                    if net.poll(false) {
                        net.flush();
                        if let Some(p) = self.find_work(local) {
                            break Some(p);
                        }
                        false
                    } else {
                        crate::idle::piece()
                    }
                }
                _ if crate::idle::piece() => true,
                _ => {
                    (0..64).for_each(|_| std::hint::spin_loop());
                    false
                }
            };
            if let Some(p) = self.steal_injector(local).or_else(|| self.steal_peers(local)) {
                break Some(p);
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

    fn has_visible_work(&self) -> bool {
        !self.injector.is_empty()
            || self.started_slots().iter().any(|s| {
                s.woken.get().is_some_and(|q| !q.is_empty()) || s.preempted.get().is_some_and(|q| !q.is_empty()) || !s.rescue.load(Relaxed).is_null()
            })
    }

    /// Step 2 of running out of work: the holder of the poll token waits in
    /// the poll, anyone else on the condition variable.
    fn park(&self, local: &Local) {
        if let Some(net) = self.netpoll.get().filter(|_| self.hold_poll_token(local)) {
            self.poll_blocked.store(true, SeqCst);
            std::sync::atomic::fence(SeqCst);
            if !self.has_visible_work() && !self.is_stopping() {
                net.poll(true);
                net.flush();
            }
            self.poll_blocked.store(false, SeqCst);
            return;
        }
        let mut guard = self.park_lock.lock();
        self.idle.fetch_add(1, SeqCst);
        // Re-check under the lock: a scheduler that pushed before seeing us idle left work behind.
        if !self.has_visible_work() && !self.is_stopping() {
            self.unpark.wait(&mut guard);
        }
        self.idle.fetch_sub(1, SeqCst);
    }
}

impl Slot {
    fn take_rescued(&self) -> Option<&'static Process> {
        if self.rescue.load(Relaxed).is_null() {
            return None;
        }
        let p = self.rescue.swap(std::ptr::null_mut(), AcqRel);
        // SAFETY: the cell holds processes of the table, whose slots live for the whole run.
        unsafe { p.cast_const().as_ref() }
    }
}

/// Where a runnable process goes (see the module doc).
#[derive(Clone, Copy)]
enum Class {
    Next,
    Woken,
    Preempted,
}

/// Runs a steal until it does not ask to be retried.
fn retry(mut steal: impl FnMut() -> Steal<&'static Process>) -> Option<&'static Process> {
    loop {
        match steal() {
            Steal::Success(p) => return Some(p),
            Steal::Empty => return None,
            Steal::Retry => continue,
        }
    }
}
