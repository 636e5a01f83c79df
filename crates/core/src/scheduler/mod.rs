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
//! at least once per monitor step (a quarter slice while processes compete
//! for the processor, a slice otherwise) and every [`INJECTOR_EVERY`]
//! runs. Other workers steal from a worker's
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
//! while it spins, yielding the processor once, at the first poll that
//! finds nothing, unless the transport is writing a long message
//! (`Netpoll::writing_behind`), and parks in the network poll rather than
//! on the condition variable (see `netpoll`).
//!
//! **Stuck workers.** A process that cannot yield (a busy loop in a callback
//! of a C function, a C function that blocks) holds its worker's thread. As
//! Go does for a thread stuck in a system call, the monitor then declares
//! the worker stuck and starts (or wakes) a spare thread to take its place;
//! the stuck worker's deques are stolen from as usual, and its "next"
//! process is moved out by the preemption signal's handler
//! ([`on_preempt_signal`]) into a rescue cell others take from. When the
//! stuck thread comes back from its process it keeps its place: if a spare
//! stood in, the pool has one worker too many, and the next other worker
//! to park hands its queues to the injector and becomes a spare instead,
//! parked until the monitor needs it again (so the process that ran in C,
//! woken next, stays on the thread whose cache it warmed). Meanwhile the
//! monitor rests if nothing else runs (see `monitor`).
//!
//! In files: this one has the scheduler's state and how processes are put
//! on run queues and workers woken; `worker.rs` a worker thread's loop
//! (finding work, stealing, spinning, parking); `watch.rs` what the
//! monitor sees of each worker's run.

mod watch;
mod worker;
#[cfg(test)]
mod tests;

pub(crate) use watch::Watch;
pub use worker::on_preempt_signal;
use worker::{Local, LOCAL};

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crossbeam_deque::{Injector, Stealer, Worker};
use parking_lot::{Condvar, Mutex};

use crate::netpoll::{self, Netpoll};
use crate::process::Process;

/// How many times in a row the "next" slot may be preferred over the deque.
const NEXT_STREAK: u32 = 64;
/// Every this many runs a worker looks at the injector first, whatever the tick.
const INJECTOR_EVERY: u32 = 61;
/// How long a worker out of work looks for more before it parks. Measured on
/// bench/ring's spawn-and-exit: a spawner made a parked peer sleep and wake
/// for nearly every process it started.
const SPIN: Duration = Duration::from_micros(30);
/// Empty polls in a row after which a spinning worker that reads the
/// network looks at the other workers' queues only one round in
/// [`QUIET_LOOK_EVERY`] (see `worker::looks_in_round`). A remote round
/// trip's reply comes within ~15 rounds.
const QUIET_POLLS: u32 = 64;
const QUIET_LOOK_EVERY: u32 = 4;
/// Monitor ticks per time slice.
pub(crate) const SLICE_TICKS: u64 = 4;
/// The processors this OS process may run on (its CPU affinity), or those
/// online if that cannot be read.
fn processors() -> usize {
    // SAFETY: a zeroed `cpu_set_t` is a valid empty set, and
    // sched_getaffinity writes at most its size into it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
            return libc::CPU_COUNT(&set).max(1) as usize;
        }
        libc::sysconf(libc::_SC_NPROCESSORS_ONLN).max(1) as usize
    }
}

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
    /// The workers to keep running: as given, or one per processor the
    /// node may use, worked out when first needed (`Scheduler::target`).
    target: OnceLock<usize>,
    idle: AtomicUsize,
    /// Wake-ups given to workers parked on `unpark` (`wake_parked`), for
    /// the tests: each is a futex call and a context switch.
    unparked: AtomicUsize,
    /// Workers out of work but still looking (see the module doc).
    spinning: AtomicUsize,
    park_lock: Mutex<()>,
    unpark: Condvar,
    spares: Mutex<Spares>,
    spare_wake: Condvar,
    /// Workers the pool has too many of, back from stuck runs (see `rejoin`).
    standing_down: AtomicUsize,
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
    /// The monitor rests while the pool is quiet (see `rest`).
    monitor_resting: AtomicBool,
    rest_lock: Mutex<()>,
    rest_wake: Condvar,
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

/// What the scheduler's threads need of the node they work for: the
/// scheduler itself, a process's turn run, a thread started in place of a
/// stuck one, and the monitor's periodic chores. The runtime is the one
/// host; the scheduler's tests have their own.
pub(crate) trait Host: Sync {
    fn scheduler(&self) -> &Scheduler;
    /// Runs one turn of `proc`, just taken from a run queue.
    fn run_process(&self, proc: &'static Process);
    /// Starts a new worker thread (on a free slot).
    fn start_worker(&self) -> std::io::Result<()>;
    /// The monitor's housekeeping, now and then (`stopping`: the last time).
    fn trim(&self, stopping: bool);

    // What the monitor reads of the time and of worker `index`'s thread, and
    // how it signals that thread. The defaults read the real clock and the
    // kernel (see `Watch`), and the runtime keeps them: these are methods
    // only so that the monitor's tests can answer from a clock and threads
    // they drive by hand, and test preemption and stuck workers without
    // real time or real threads.

    /// Now, on a monotonic clock.
    fn now(&self) -> Instant {
        Instant::now()
    }
    /// The processor time worker `index`'s thread has used.
    fn cpu_time(&self, index: usize) -> Duration {
        self.scheduler().slots[index].watch.cpu_time()
    }
    /// How long worker `index`'s thread has waited for a processor.
    fn run_queue_wait(&self, index: usize) -> Duration {
        self.scheduler().slots[index].watch.run_queue_wait()
    }
    /// Whether worker `index`'s thread is asleep in the kernel now.
    fn asleep(&self, index: usize) -> bool {
        self.scheduler().slots[index].watch.asleep()
    }
    /// Sends `signal` to worker `index`'s thread.
    fn signal(&self, index: usize, signal: libc::c_int) {
        self.scheduler().slots[index].watch.signal(signal)
    }
}

impl Scheduler {
    /// A scheduler that keeps `workers` threads running processes (0: one
    /// per processor the node may use).
    pub(crate) fn new(workers: usize) -> Scheduler {
        // With 0, the slots are made for every processor the node may run
        // on (one system call), and how many of those a processor quota
        // leaves it is read when first needed.
        let given = (workers > 0).then(|| workers.min(MAX_WORKERS));
        let room = given.unwrap_or_else(processors).clamp(1, MAX_WORKERS);
        Scheduler {
            injector: Injector::new(),
            slots: (0..room + MAX_SPARES)
                .map(|_| Slot { watch: Watch::default(), woken: OnceLock::new(), preempted: OnceLock::new(), rescue: AtomicPtr::default() })
                .collect(),
            started: AtomicUsize::new(0),
            active: AtomicUsize::new(0),
            target: given.map_or_else(OnceLock::new, OnceLock::from),
            idle: AtomicUsize::new(0),
            unparked: AtomicUsize::new(0),
            spinning: AtomicUsize::new(0),
            park_lock: Mutex::new(()),
            unpark: Condvar::new(),
            spares: Mutex::new(Spares::default()),
            spare_wake: Condvar::new(),
            standing_down: AtomicUsize::new(0),
            stopping: AtomicBool::new(false),
            epoch: AtomicU64::new(0),
            netpoll: OnceLock::new(),
            poll_token: AtomicBool::new(false),
            poll_blocked: AtomicBool::new(false),
            monitor_resting: AtomicBool::new(false),
            rest_lock: Mutex::new(()),
            rest_wake: Condvar::new(),
        }
    }

    /// The workers to keep running. Where none was given: the processors
    /// this node may use, as the standard library counts them (its CPU
    /// affinity and its cgroup's quota: reading the cgroup's files took
    /// ~60 µs of every start, so it waits for the first need, which a
    /// process alone never has), at most the slots made.
    pub(crate) fn target(&self) -> usize {
        *self.target.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, self.slots.len() - MAX_SPARES))
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
                            self.push_woken(local, p);
                        }
                    }
                    Class::Woken => self.push_woken(local, proc),
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

    /// Queues `proc` behind this worker's woken ones and wakes a peer for
    /// it, unless the worker's blocking poll is delivering (it runs what
    /// that makes runnable itself: `worker::park`).
    fn push_woken(&self, local: &Local, proc: &'static Process) {
        local.woken.push(proc);
        if !local.delivering.get() {
            self.wake_one();
        }
    }

    /// The current thread's worker state, if it is a worker of this scheduler.
    ///
    /// SAFETY: the result must not outlive the worker loop (it never does:
    /// it is only used within one call).
    unsafe fn local(&self) -> Option<&Local> {
        let local = LOCAL.with(|l| l.get());
        // SAFETY: `LOCAL` points at the worker loop's own state while the
        // loop runs on this thread, and is null otherwise; the caller keeps
        // the reference within one call (this function's contract).
        unsafe { local.as_ref() }.filter(|l| std::ptr::eq(l.scheduler, self))
    }

    /// For the running process, as it turns to its mailbox: writes what
    /// this thread queued for other nodes (see `netpoll`, "Writes"). A
    /// process that blocks there would have had it written at its run's
    /// end anyway; one that relays a stream it finds waiting now writes
    /// once per message received, not once per run.
    pub(crate) fn flush_queued(&self) {
        if !crate::netpoll::take_queued() {
            return;
        }
        if let Some(net) = self.netpoll.get() {
            net.flush();
        }
    }

    /// For the monitor, beside a run that overran its slice: writes what
    /// any thread left queued for other nodes (`netpoll`, step 5).
    pub(crate) fn flush_left(&self) {
        if let Some(net) = self.netpoll.get() {
            net.flush_left();
        }
    }

    pub(crate) fn wake_one(&self) {
        // Pairs with the decrement of `spinning` and the increment of `idle`
        // (or the setting of `poll_blocked`) in `spin` and `park`: either we
        // see the spinning or parking worker, or it sees the work we just pushed.
        std::sync::atomic::fence(SeqCst);
        if self.spinning.load(SeqCst) != 0 {
            return;
        }
        self.wake_parked();
    }

    /// Wakes one parked worker, on the condition variable or else in the
    /// network poll, if one is parked.
    pub(super) fn wake_parked(&self) {
        if self.idle.load(SeqCst) > 0 {
            let _guard = self.park_lock.lock();
            self.unpark.notify_one();
            self.unparked.fetch_add(1, Relaxed);
        } else if self.poll_blocked.load(SeqCst) {
            if let Some(net) = self.netpoll.get() {
                net.interrupt();
            }
        }
    }

    /// Wakes a parked worker if work waits where only a looking worker
    /// finds it (the monitor calls this every step); true when work waited so.
    pub(crate) fn nudge(&self) -> bool {
        let waiting = (self.idle.load(SeqCst) > 0 || self.poll_blocked.load(SeqCst)) && self.has_visible_work();
        if waiting {
            self.wake_one();
        }
        waiting
    }

    /// Step 4 of `netpoll`: the monitor reads the network if no worker
    /// holds the token (all run processes); what it delivers goes to the
    /// injector. If workers are parked meanwhile, one is woken to take the
    /// token over, so that the network is read at once again. True when
    /// anything was delivered.
    pub(crate) fn poll_unwatched(&self) -> bool {
        let Some(net) = self.netpoll.get() else { return false };
        if self.poll_token.compare_exchange(false, true, AcqRel, Relaxed).is_err() {
            return false;
        }
        netpoll::set_flushes_here(true);
        let delivered = net.poll(false);
        net.flush();
        netpoll::set_flushes_here(false);
        self.poll_token.store(false, SeqCst);
        std::sync::atomic::fence(SeqCst);
        if self.spinning.load(SeqCst) == 0 && self.idle.load(SeqCst) > 0 {
            let _guard = self.park_lock.lock();
            self.unpark.notify_one();
        }
        delivered
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

    /// Whether the pool is quiet: every active worker parked (on the
    /// condition variable or, one of them where the node reads a network,
    /// in its poll), none spinning, no run in progress but runs declared
    /// stuck (a spare stands in for each) that nothing is asked of (a kill
    /// waits for the run's next preemption, which the monitor's signal
    /// brings), and no work in sight. Nothing then needs the monitor: no
    /// run to preempt or declare stuck, no one to wake, no network left
    /// unread.
    pub(crate) fn quiet(&self) -> bool {
        let polling = self.poll_blocked.load(SeqCst);
        let parked = self.idle.load(SeqCst) + usize::from(polling);
        self.spinning.load(SeqCst) == 0
            && parked >= self.active.load(SeqCst)
            && (polling || self.netpoll.get().is_none())
            && self.started_slots().iter().all(|s| s.watch.current().is_none_or(|(p, _)| s.watch.stuck.load(SeqCst) && !p.awaits_preemption()))
            && !self.has_visible_work()
    }

    /// Whether a worker's run is declared stuck (in C code, a spare in its
    /// place): the monitor may rest at once (see `monitor`).
    pub(crate) fn has_stuck(&self) -> bool {
        self.started_slots().iter().any(|s| s.watch.stuck.load(SeqCst))
    }

    /// The monitor's rest: while the pool is quiet it sleeps until a worker
    /// leaves its park (`rouse_monitor`) or `longest` has passed, instead of
    /// ticking 2,000 times a second for nothing (an idle node's monitor took
    /// 3.6% of a core). True if it rested.
    ///
    /// No wake-up is lost: the monitor sets `monitor_resting` and then reads
    /// the parked counts; a worker leaving its park changes its count and
    /// then reads `monitor_resting` (all sequentially consistent), so one of
    /// them sees the other; and a worker that sees it takes `rest_lock`,
    /// which the monitor holds until it is waiting.
    pub(crate) fn rest(&self, longest: Duration) -> bool {
        let mut guard = self.rest_lock.lock();
        self.monitor_resting.store(true, SeqCst);
        let quiet = self.quiet() && !self.is_stopping();
        if quiet {
            self.rest_wake.wait_for(&mut guard, longest);
        }
        self.monitor_resting.store(false, SeqCst);
        quiet
    }

    /// A worker leaving its park, or coming back from a stuck run, wakes
    /// the monitor if it rests: a run may start, and runs are what the
    /// monitor watches. (The slow paths only: a worker that never parked
    /// or stuck never rested the monitor.)
    pub(crate) fn rouse_monitor(&self) {
        if self.monitor_resting.load(SeqCst) {
            let _guard = self.rest_lock.lock();
            self.rest_wake.notify_one();
        }
    }

    pub(crate) fn stop(&self) {
        self.stopping.store(true, SeqCst);
        self.rouse_monitor();
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
}

/// Where a runnable process goes (see the module doc).
#[derive(Clone, Copy)]
enum Class {
    Next,
    Woken,
    Preempted,
}
