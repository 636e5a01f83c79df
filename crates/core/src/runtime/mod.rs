//! The runtime of one node: the process table, the scheduler's workers, the
//! timer thread, names and channels, and what happens around a process's life
//! (spawn, delivery, monitors, the end of a process). `Runtime` is a cheap
//! handle; the Lua layer receives one in every `Body::resume`.
//!
//! The end of a process, in order:
//!
//! 1. its body is dropped (the Lua state is closed);
//! 2. its links are closed: monitors and names are collected, and later
//!    monitors get their DOWN at once;
//! 3. its slot is vacated: the generation moves on, so later sends to its
//!    pid are dropped, and queued messages are freed;
//! 4. names are released and each monitor gets `"DOWN", pid, reason`;
//! 5. the slot goes back to the free list;
//! 6. if it was the main process, the run ends (`main_process.rs`).
//!
//! In files: this one starts and ends a node (`Config`, `Runtime::start`,
//! `shutdown`) and reaches its parts; `main_process.rs` runs the main
//! process and ends the run (`run_main`, `halt`); `deliver.rs`
//! spawns processes and delivers messages and wake-ups; `watch.rs`
//! monitors, names and the DOWN notices; `run.rs` runs a process's turn and
//! ends it; `pool.rs` the node's task pool and load.

mod deliver;
mod lasting;
mod links;
mod main_process;
mod pool;
mod run;
mod watch;

pub use run::{ProcessInfo, Spawn, MEMORY_LIMIT};
pub use links::{exit_message, reason_message, reason_of, Linked};
pub use watch::{down_message, noconnection};
pub(crate) use watch::noproc;
#[allow(unused_imports)]
use {deliver::*, pool::*, run::*, watch::*};

use std::sync::atomic::Ordering::*;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::channel::Channels;
use crate::spaces::Spaces;
use crate::names::Names;
use crate::ports::Ports;
use crate::node::{NodeId, Nodes};
use crate::process::{Body, ExitReason};
use crate::scheduler::{Scheduler, MAX_WORKERS};
use crate::table::Table;
use crate::timer::Timers;
use crate::{Error, Pid};

pub struct Config {
    /// Worker threads that run processes; 0 means one per core; at most
    /// [`MAX_WORKERS`]. (Spare threads stand in for workers stuck in a
    /// process that cannot yield; see `scheduler`.)
    pub workers: usize,
    pub node_name: String,
    /// The signal that makes a worker's running process yield (see
    /// `monitor`); `None` runs without preemption.
    pub preempt_signal: Option<i32>,
    /// How long a process may run before it is preempted.
    pub time_slice: Duration,
    /// Roughly the memory a process's work touches (its whole state, for a
    /// Lua process): with the last-level cache's size it decides from how
    /// many live processes on wakers warm the processes they wake (see
    /// [`Runtime::wakes_cold`]).
    pub process_bytes: usize,
    /// The memory limit of a process started without one, in bytes.
    pub max_process_memory: Option<u64>,
    /// The body of the node's pool workers (see `pool`); without one, tasks
    /// for the pool wait forever.
    pub pool_worker: Option<fn() -> Box<dyn Body>>,
    /// Called once, as soon as the run is no longer a short one (see
    /// `runtime/lasting.rs`): what only a lasting run is worth starting.
    pub on_lasting: Option<fn()>,
}

impl Default for Config {
    fn default() -> Config {
        Config { workers: 0, node_name: "local".into(), preempt_signal: None, time_slice: Duration::from_millis(2), process_bytes: 8 << 10, max_process_memory: None, pool_worker: None, on_lasting: None }
    }
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq)]
pub enum RunEnd {
    /// The main process ended.
    Exited(ExitReason),
    /// A process halted the run with this exit status.
    Halted(i32),
}

#[derive(Default)]
struct MainWatch {
    pid: Option<Pid>,
    end: Option<RunEnd>,
}

#[derive(Clone)]
pub struct Runtime {
    shared: Arc<Shared>,
}

pub(crate) struct Shared {
    pub(crate) scheduler: Scheduler,
    /// A process's time slice (listings count processor time in them).
    time_slice: Duration,
    table: Table,
    nodes: Nodes,
    names: Names,
    channels: Channels,
    spaces: Spaces,
    ports: Ports,
    timers: Timers,
    sockets: crate::io::Sockets,
    netpoller_installed: std::sync::atomic::AtomicBool,
    /// See [`Runtime::wakes_cold`].
    /// (Read from the processor by the monitor as it starts, off a run's
    /// path: the CPUID instructions trap to the hypervisor on a VM, ~30 µs.
    /// Until then no one is warmed: a process alone has no one to warm.)
    warm_above: std::sync::atomic::AtomicUsize,
    /// Roughly the memory a process's work touches (`Config::process_bytes`).
    process_bytes: usize,
    max_process_memory: Option<u64>,
    /// When the node started: the origin of `synodic.clock` and of deadlines.
    started: Instant,
    main: Mutex<MainWatch>,
    main_ended: Condvar,
    threads: Mutex<Vec<JoinHandle<()>>>,
    transport: std::sync::OnceLock<Arc<dyn crate::dist::Transport>>,
    /// What nodes do for each other (see [`crate::dist`]).
    services: crate::dist::Services,
    /// The last tag given to a request to another node (see `dist::requests`).
    tags: AtomicU64,
    futures: crate::future::Futures,
    pool: Mutex<crate::pool::Pool>,
    pool_worker: Option<fn() -> Box<dyn Body>>,
    /// The tuple scope's hold on this node's tuple operations.
    scope: crate::scope::Gate,
    /// The first worker, started with the first process or claimed by the
    /// main thread (or why it could not start; see `start`).
    first_worker: std::sync::OnceLock<Result<(), String>>,
    /// The other workers and the monitor, started with the second process,
    /// the first network source, a kill or an interrupt.
    threads_started: std::sync::OnceLock<Result<(), String>>,
    /// The preemption signal and time slice the monitor is started with.
    preempt_signal: Option<i32>,
    /// The timer thread, started with the first timer.
    timers_started: std::sync::Once,
    /// Whether a process was spawned before (the second starts the rest
    /// of the threads).
    spawned: std::sync::atomic::AtomicBool,
    /// What the run's end calls where the main thread works as the first
    /// worker (`Runtime::run_main_here`).
    on_end: std::sync::OnceLock<Box<dyn Fn(RunEnd) + Send + Sync>>,
    /// Whether the run lasts yet (`Config::on_lasting`).
    lasting: lasting::Lasting,
}

impl Runtime {
    /// Makes a node's runtime. Its threads start when they have work: a
    /// worker with the first process, which it finds queued (rather than
    /// parking and being woken for it), unless the main thread works as
    /// the first worker (`run_main_here`); the other workers and the
    /// monitor with the second process, the first network source (whose
    /// reads the workers do), or a kill or interrupt (which the monitor
    /// delivers to a running process); the timer thread with the first
    /// timer. A process alone needs no preemption. So `synodic -e ''`
    /// starts no thread of the runtime's, where it started four (each
    /// ~50-100 µs of a start that lua does in about a millisecond).
    pub fn start(config: Config) -> Result<Runtime, Error> {
        // 0: one per processor, counted when first needed (`Scheduler::target`).
        let workers = match config.workers {
            n if n > MAX_WORKERS => return Err(Error::Start(format!("{n} workers asked for; at most {MAX_WORKERS}"))),
            n => n,
        };
        let shared = Arc::new(Shared {
            scheduler: Scheduler::new(workers),
            table: Table::new(),
            nodes: Nodes::new(NodeId::fresh(&config.node_name)),
            names: Names::default(),
            channels: Channels::default(),
            spaces: Spaces::default(),
            ports: Ports::default(),
            timers: Timers::default(),
            sockets: crate::io::Sockets::default(),
            netpoller_installed: std::sync::atomic::AtomicBool::new(false),
            warm_above: std::sync::atomic::AtomicUsize::new(usize::MAX),
            process_bytes: config.process_bytes,
            max_process_memory: config.max_process_memory,
            started: Instant::now(),
            main: Mutex::new(MainWatch::default()),
            main_ended: Condvar::new(),
            threads: Mutex::new(Vec::new()),
            transport: std::sync::OnceLock::new(),
            services: crate::dist::Services::standard(),
            tags: AtomicU64::new(0),
            futures: crate::future::Futures::new(NodeId::fresh("futures").incarnation),
            pool: Mutex::new(crate::pool::Pool::default()),
            pool_worker: config.pool_worker,
            time_slice: config.time_slice,
            scope: crate::scope::Gate::default(),
            first_worker: std::sync::OnceLock::new(),
            threads_started: std::sync::OnceLock::new(),
            preempt_signal: config.preempt_signal,
            timers_started: std::sync::Once::new(),
            spawned: std::sync::atomic::AtomicBool::new(false),
            on_end: std::sync::OnceLock::new(),
            lasting: lasting::Lasting::new(config.on_lasting),
        });
        Ok(Runtime { shared })
    }

    /// Starts the first worker, once, or with `all` the other workers and
    /// the monitor too; an error says which thread could not start.
    pub(crate) fn start_threads(&self, all: bool) -> Result<(), Error> {
        let first = self.shared.first_worker.get_or_init(|| self.start_worker().map_err(|e| format!("worker thread: {e}")));
        if !all {
            return first.clone().map_err(Error::Start);
        }
        let started = self.shared.threads_started.get_or_init(|| {
            // A run with more threads than the main one lasts (what that
            // starts, the command's signal thread, may as well come first).
            self.lasting();
            for _ in 1..self.scheduler().target() {
                self.start_worker().map_err(|e| format!("worker thread: {e}"))?;
            }
            let (monitor_rt, signal, slice) = (self.clone(), self.shared.preempt_signal, self.shared.time_slice);
            self.start_thread("synodic-monitor", move || {
                let shared = &monitor_rt.shared;
                shared.warm_above.store(warm_above(crate::cache::last_level_bytes(), shared.process_bytes), Relaxed);
                crate::monitor::run(&monitor_rt, signal, slice)
            })
            .map_err(|e| format!("monitor thread: {e}"))
        });
        started.clone().map_err(Error::Start)
    }

    /// Starts the timer thread, once (a failure is logged: timers then
    /// never fire, and nothing else is lost).
    pub(crate) fn start_timers(&self) {
        self.shared.timers_started.call_once(|| {
            let timer_rt = self.clone();
            if let Err(e) = self.start_thread("synodic-timers", move || timer_rt.shared.timers.run(|fired| timer_rt.fired(fired))) {
                eprintln!("synodic: cannot start the timer thread: {e}");
            }
        });
    }

    /// Starts one more worker thread, counted as active (see `scheduler`).
    pub(crate) fn start_worker(&self) -> std::io::Result<()> {
        let sched = self.scheduler();
        let index = sched.claim_slot().ok_or_else(|| std::io::Error::other("the pool has reached its thread limit"))?;
        let rt = self.clone();
        self.start_thread(&format!("synodic-worker-{index}"), move || Scheduler::work(&rt, index)).inspect_err(|_| {
            sched.active.fetch_sub(1, AcqRel);
        })
    }

    fn start_thread(&self, name: &str, body: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
        let handle = std::thread::Builder::new().name(name.into()).spawn(body)?;
        self.shared.threads.lock().push(handle);
        Ok(())
    }

    pub(crate) fn scheduler(&self) -> &Scheduler {
        &self.shared.scheduler
    }

    /// Connects this node to others: the services (see [`crate::dist`])
    /// send their frames through `transport`. Once per run; false if one
    /// was installed already.
    pub fn set_transport(&self, transport: Arc<dyn crate::dist::Transport>) -> bool {
        self.shared.transport.set(transport).is_ok()
    }

    /// Has the scheduler's threads read the network through `net` (see
    /// [`crate::netpoll`]). Once per run; false if one was installed already.
    pub fn set_netpoll(&self, net: Arc<dyn crate::netpoll::Netpoll>) -> bool {
        let installed = self.shared.sockets.set_source(net);
        self.install_netpoller();
        installed
    }

    /// The node's sockets' waiters (see [`crate::io`]).
    pub fn sockets(&self) -> &crate::io::Sockets {
        &self.shared.sockets
    }

    /// Step 1 of `io`: `waiter` waits until `fd` is ready for `interest`
    /// (the scheduler's threads watch it from now on).
    pub fn watch_socket(&self, fd: std::os::fd::RawFd, interest: crate::io::Interest, waiter: crate::waiting::Waiter) -> std::io::Result<()> {
        self.install_netpoller();
        if self.shared.sockets.watch(fd, interest, waiter)? {
            self.complete((waiter, crate::waiting::Completion::Notified));
        }
        Ok(())
    }

    /// `fd` is about to be closed: whoever waited on it is told.
    pub fn forget_socket(&self, fd: std::os::fd::RawFd) {
        for delivery in self.shared.sockets.forget(fd) {
            self.complete(delivery);
        }
    }

    /// The scheduler's threads poll the node's netpoller (once, from the
    /// first socket or cluster on).
    fn install_netpoller(&self) {
        if !self.shared.netpoller_installed.load(Relaxed) && !self.shared.netpoller_installed.swap(true, AcqRel) {
            self.scheduler().set_netpoll(Arc::new(crate::io::Netpoller(self.clone())));
            if let Err(e) = self.start_threads(true) {
                eprintln!("synodic: {e}");
            }
        }
    }

    /// The transport to other nodes, once a cluster has installed one.
    pub fn transport(&self) -> Option<&Arc<dyn crate::dist::Transport>> {
        self.shared.transport.get()
    }

    /// The node's services (see [`crate::dist`]).
    pub fn services(&self) -> &crate::dist::Services {
        &self.shared.services
    }

    /// The distributed service of type `T` (see [`crate::dist::Services`]).
    pub fn service<T: crate::dist::Service>(&self) -> &T {
        self.shared.services.get::<T>()
    }

    /// The node's futures (see [`crate::future`]).
    pub fn futures(&self) -> &crate::future::Futures {
        &self.shared.futures
    }

    /// This node's name.
    pub fn node_name(&self) -> std::sync::Arc<str> {
        self.shared.nodes.me().name
    }

    /// The memory limit of a process started without one (bytes).
    pub fn max_process_memory(&self) -> Option<u64> {
        self.shared.max_process_memory
    }

    /// Time since the node started.
    pub fn uptime(&self) -> Duration {
        self.shared.started.elapsed()
    }

    /// The instant `uptime` after the node started.
    pub fn at_uptime(&self, uptime: Duration) -> Instant {
        self.shared.started + uptime
    }

    /// The node table (see `node`).
    pub fn nodes(&self) -> &Nodes {
        &self.shared.nodes
    }

    pub fn channels(&self) -> &Channels {
        &self.shared.channels
    }

    /// The tuple scope's hold on this node's tuple operations.
    pub fn scope(&self) -> &crate::scope::Gate {
        &self.shared.scope
    }

    pub fn spaces(&self) -> &Spaces {
        &self.shared.spaces
    }

    /// The I/O layer's byte sinks (see `ports`).
    pub fn ports(&self) -> &Ports {
        &self.shared.ports
    }

    /// Stops the workers and the timer thread and waits for them. Processes
    /// still alive are abandoned where they stand.
    pub fn shutdown(&self) {
        self.scheduler().stop();
        self.shared.timers.stop();
        let threads = std::mem::take(&mut *self.shared.threads.lock());
        let me = std::thread::current().id();
        for t in threads {
            if t.thread().id() != me {
                let _ = t.join();
            }
        }
    }
}

impl crate::scheduler::Host for Runtime {
    fn scheduler(&self) -> &Scheduler {
        Runtime::scheduler(self)
    }

    fn run_process(&self, proc: &'static crate::Process) {
        Runtime::run_process(self, proc)
    }

    fn start_worker(&self) -> std::io::Result<()> {
        Runtime::start_worker(self)
    }

    fn trim(&self, stopping: bool) {
        // Kept tickets hold the runtime: all go as it stops.
        self.futures().trim_kept(stopping);
    }
}
