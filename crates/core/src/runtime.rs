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
//! 6. if it was the main process, the waiter in `run_main` returns.

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
use crate::process::{Body, ExitReason, Process, Refused, Step, QUEUED};
use crate::scheduler::{Scheduler, MAX_WORKERS};
use crate::table::Table;
use crate::timer::Timers;
use crate::waiting::Delivery;
use crate::wire::Writer;
use crate::remote::Remote;
use crate::{Error, Message, Pid};

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
}

impl Default for Config {
    fn default() -> Config {
        Config { workers: 0, node_name: "local".into(), preempt_signal: None, time_slice: Duration::from_millis(2), process_bytes: 8 << 10, max_process_memory: None, pool_worker: None }
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
    table: Table,
    nodes: Nodes,
    names: Names,
    channels: Channels,
    spaces: Spaces,
    ports: Ports,
    timers: Timers,
    /// See [`Runtime::wakes_cold`].
    warm_above: usize,
    max_process_memory: Option<u64>,
    /// When the node started: the origin of `synodic.clock` and of deadlines.
    started: Instant,
    main: Mutex<MainWatch>,
    main_ended: Condvar,
    threads: Mutex<Vec<JoinHandle<()>>>,
    remote: std::sync::OnceLock<Arc<dyn Remote>>,
    /// The last tag given to a request to another node (see `remote`).
    tags: AtomicU64,
    futures: crate::future::Futures,
    pool: Mutex<crate::pool::Pool>,
    pool_worker: Option<fn() -> Box<dyn Body>>,
}

impl Runtime {
    /// Starts the worker threads, the monitor and the timer thread.
    pub fn start(config: Config) -> Result<Runtime, Error> {
        let workers = match config.workers {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
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
            warm_above: warm_above(crate::cache::last_level_bytes(), config.process_bytes),
            max_process_memory: config.max_process_memory,
            started: Instant::now(),
            main: Mutex::new(MainWatch::default()),
            main_ended: Condvar::new(),
            threads: Mutex::new(Vec::new()),
            remote: std::sync::OnceLock::new(),
            tags: AtomicU64::new(0),
            futures: crate::future::Futures::new(NodeId::fresh("futures").incarnation),
            pool: Mutex::new(crate::pool::Pool::default()),
            pool_worker: config.pool_worker,
        });
        let rt = Runtime { shared };
        for _ in 0..rt.scheduler().target {
            rt.start_worker().map_err(|e| Error::Start(format!("worker thread: {e}")))?;
        }
        let (monitor_rt, signal, slice) = (rt.clone(), config.preempt_signal, config.time_slice);
        rt.start_thread("synodic-monitor", move || crate::monitor::run(&monitor_rt, signal, slice)).map_err(|e| Error::Start(format!("monitor thread: {e}")))?;
        let timer_rt = rt.clone();
        rt.start_thread("synodic-timers", move || timer_rt.shared.timers.run(|p| timer_rt.wake(p))).map_err(|e| Error::Start(format!("timer thread: {e}")))?;
        Ok(rt)
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

    /// Connects this node to others: see [`Remote`]. Once per run; false if
    /// one was installed already.
    pub fn set_remote(&self, remote: Arc<dyn Remote>) -> bool {
        self.shared.remote.set(remote).is_ok()
    }

    /// Has the scheduler's threads read the network through `net` (see
    /// [`crate::netpoll`]). Once per run; false if one was installed already.
    pub fn set_netpoll(&self, net: Arc<dyn crate::netpoll::Netpoll>) -> bool {
        self.scheduler().set_netpoll(net)
    }

    /// The transport to other nodes, once a cluster has installed one.
    pub fn remote(&self) -> Option<&Arc<dyn Remote>> {
        self.shared.remote.get()
    }

    /// The node's futures (see [`crate::future`]).
    pub fn futures(&self) -> &crate::future::Futures {
        &self.shared.futures
    }

    /// A task for the node's pool (see [`crate::pool`]): an idle worker
    /// takes it, or it waits, and a worker is started if the pool may grow.
    pub fn pool_push(&self, task: Message) {
        let pushed = self.shared.pool.lock().push(task, self.workers());
        match pushed {
            crate::pool::Pushed::Handed(delivery) => self.complete(delivery),
            crate::pool::Pushed::Queued { start: false } => {}
            crate::pool::Pushed::Queued { start: true } => self.start_pool_worker(),
        }
    }

    /// A pool worker waits for a result (or runs again, `false`): another
    /// worker starts if tasks would wait for it.
    pub fn pool_worker_waits(&self, waits: bool) {
        let start = {
            let mut pool = self.shared.pool.lock();
            if !waits {
                pool.worker_unblocked();
                return;
            }
            pool.worker_blocked(self.workers())
        };
        if start {
            self.start_pool_worker();
        }
    }

    fn start_pool_worker(&self) {
        let started = self.shared.pool_worker.map(|body| self.spawn_with(body(), Spawn { first: None, max_memory: None }));
        if !matches!(started, Some(Ok(_))) {
            self.shared.pool.lock().worker_ended();
        }
    }

    /// Runs `op` on the node's pool.
    pub fn with_pool<R>(&self, op: impl FnOnce(&mut crate::pool::Pool) -> R) -> R {
        op(&mut self.shared.pool.lock())
    }

    /// A fresh tag for a request to another node (see `remote`).
    pub fn next_tag(&self) -> u64 {
        self.shared.tags.fetch_add(1, Relaxed) + 1
    }

    /// How many worker threads run processes.
    pub fn workers(&self) -> usize {
        self.scheduler().target
    }

    /// How loaded this node is: live processes per worker thread, ×1000.
    pub fn load(&self) -> u32 {
        let per_worker = self.shared.table.occupied() * 1000 / self.scheduler().target.max(1);
        per_worker.min(u32::MAX as usize) as u32
    }

    /// The least loaded live node (this one when it is alone).
    pub fn least_loaded_node(&self) -> Arc<str> {
        match self.shared.remote.get() {
            Some(remote) => remote.least_loaded(),
            None => self.node_name(),
        }
    }

    /// The names of the live nodes, this one included, sorted.
    pub fn live_nodes(&self) -> Vec<Arc<str>> {
        match self.shared.remote.get() {
            Some(remote) => remote.nodes(),
            None => vec![self.node_name()],
        }
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

    pub fn spaces(&self) -> &Spaces {
        &self.shared.spaces
    }

    /// The I/O layer's byte sinks (see `ports`).
    pub fn ports(&self) -> &Ports {
        &self.shared.ports
    }

    /// Starts a process; it runs as soon as a worker is free.
    pub fn spawn(&self, body: Box<dyn Body>) -> Result<Pid, Error> {
        self.spawn_with(body, Spawn::default())
    }

    /// Starts a process, as [`Runtime::spawn`] does, as `spawn` says.
    pub fn spawn_with(&self, body: Box<dyn Body>, spawn: Spawn) -> Result<Pid, Error> {
        let slot = self.shared.table.acquire().ok_or(Error::TooManyProcesses)?;
        let max_memory = spawn.max_memory.or(self.shared.max_process_memory);
        let pid = slot.occupy(body, max_memory);
        if let Some(first) = spawn.first {
            // In no run queue yet: nothing can come before it.
            if slot.deliver(pid, first).is_err() {
                slot.end_over_limit();
            }
        }
        self.scheduler().schedule_back(slot);
        Ok(pid)
    }

    /// Where `pid` lives: the one place where whatever addresses a process
    /// (send, monitor, a store's delivery) branches off when the process is
    /// on another node. Until nodes talk to each other (the cluster's
    /// transport), a pid of another node reaches nothing.
    #[inline]
    fn route(&self, pid: Pid) -> Route {
        match self.shared.table.lookup(pid) {
            Some(slot) => Route::Here(slot),
            // A pid of a node whose alias went to another since names nothing.
            None if pid.node() != 0 && self.shared.nodes.is_current(pid) => Route::Elsewhere(pid.node()),
            None => Route::Nowhere,
        }
    }

    /// The slot of a live process of this node.
    fn live(&self, pid: Pid) -> Option<&'static Process> {
        match self.route(pid) {
            Route::Here(slot) => Some(slot).filter(|p| p.is(pid)),
            _ => None,
        }
    }

    pub fn is_alive(&self, pid: Pid) -> bool {
        self.live(pid).is_some()
    }

    /// Whether the process `pid` of this node holds more than
    /// [`BUSY_HIGH`](crate::remote::BUSY_HIGH) bytes of messages; if so it
    /// is noted that a node waits to hear when it drains (see
    /// [`Remote::drained`](crate::remote::Remote::drained)).
    pub fn busy(&self, pid: Pid) -> bool {
        match self.live(pid) {
            Some(slot) if slot.queued_bytes() > crate::remote::BUSY_HIGH => {
                slot.watch_drain();
                true
            }
            _ => false,
        }
    }

    /// [`Runtime::send`] from the running process `from`, which learns its
    /// peer from it (see [`Process::note_peer`]).
    pub fn send_from(&self, from: &Process, to: Pid, msg: Message) -> bool {
        from.note_peer(to);
        self.send_as(from.pid(), to, msg)
    }

    /// Delivers a message; false when the destination is gone (the message is dropped).
    pub fn send(&self, to: Pid, msg: Message) -> bool {
        self.send_as(to, to, msg)
    }

    /// [`Runtime::send`], saying who sends (the transport keeps messages of
    /// one sender to one receiver in order; the runtime's own notices name
    /// their receiver as sender).
    fn send_as(&self, from: Pid, to: Pid, msg: Message) -> bool {
        let slot = match self.route(to) {
            Route::Here(slot) => slot,
            Route::Elsewhere(_) => return self.shared.remote.get().is_some_and(|r| r.send(from, to, msg)),
            Route::Nowhere => return false,
        };
        if self.wakes_cold() {
            // Its line would otherwise only be asked for after the mailbox
            // lock's atomic operations, one miss after another.
            slot.prefetch_hint();
        }
        match slot.deliver(to, msg) {
            Ok(()) => {
                self.wake(slot);
                true
            }
            Err(Refused::OverLimit) => {
                // The receiver's queued messages would go over its memory
                // limit: it ends (alone), and this message is dropped.
                slot.end_over_limit();
                self.wake(slot);
                false
            }
            Err(Refused::Gone) => false,
        }
    }

    /// Wakes the process `pid` of this node, if it lives, to look again at
    /// what it waits for.
    pub fn nudge(&self, pid: Pid) {
        if let Some(slot) = self.live(pid) {
            self.wake(slot);
        }
    }

    /// Lets a process know something it may wait for has happened.
    #[inline]
    pub fn wake(&self, proc: &'static Process) {
        if proc.notify() {
            if self.wakes_cold() {
                self.warm(proc);
            }
            self.scheduler().schedule(proc);
        }
    }

    /// Whether so many processes are alive that a woken one is likely to
    /// have left the caches; only then do wakers warm it (see
    /// [`Process::set_hot_lines`]), since warming a hot process is wasted work.
    #[inline]
    pub fn wakes_cold(&self) -> bool {
        self.shared.table.occupied() > self.shared.warm_above
    }

    /// Starts loading what `proc`, about to be queued, will touch: its body,
    /// its hot lines, and the slot of its peer, whose lines `run_process`
    /// asks for when `proc` starts. (A peer's lines are thus asked for twice:
    /// a hop early, and again when it is woken. Measured on the ring at
    /// N=100k, asking only once loses most of the gain: 430 -> 560 ns/send.)
    #[inline]
    fn warm(&self, proc: &'static Process) {
        proc.warm_body();
        proc.prefetch_hot_lines();
        if let Some(peer) = self.peer_of(proc) {
            peer.prefetch_slot();
        }
    }

    /// The process `proc` last sent to, if it is of this node.
    #[inline]
    fn peer_of(&self, proc: &Process) -> Option<&'static Process> {
        self.shared.table.slot(proc.peer()?)
    }

    /// Carries out a store's decision (see `waiting`): the waiter's process
    /// gets the completion and is woken. A waiter that has ended gets nothing.
    /// A waiter of another node is answered over the network.
    pub fn complete(&self, (waiter, completion): Delivery) {
        match self.route(waiter.pid) {
            Route::Here(slot) => {
                if slot.complete(waiter.pid, waiter.ticket, completion) {
                    self.wake(slot);
                }
            }
            Route::Elsewhere(_) => {
                if let Some(remote) = self.shared.remote.get() {
                    remote.complete(waiter, completion);
                }
            }
            Route::Nowhere => {}
        }
    }

    /// Wakes `proc` at `at` (it re-checks its own deadline then).
    pub fn arm_timer(&self, proc: &'static Process, at: Instant) {
        self.shared.timers.arm(proc, at);
    }

    /// `watcher` gets `"DOWN", target, reason` when `target` ends, at once if it already has.
    pub fn monitor(&self, watcher: Pid, target: Pid) {
        let mut reason = ExitReason::Value(noproc());
        match self.route(target) {
            Route::Here(slot) => {
                let mut links = slot.links.lock();
                if !links.exited && slot.is(target) {
                    links.more().monitors.push(watcher);
                    return;
                }
                if let Some(last) = links.exit_of(target) {
                    reason = last;
                }
            }
            Route::Elsewhere(_) => match self.shared.remote.get() {
                Some(remote) if remote.monitor(watcher, target) => return,
                _ => reason = ExitReason::Value(noconnection()),
            },
            Route::Nowhere => {}
        }
        self.send(watcher, down_message(target, &reason));
    }

    /// Removes one of `watcher`'s monitors of `target`. True when one was
    /// in place: no DOWN will come for it. False when none was: the DOWN
    /// of one `watcher` set is then already delivered or on its way.
    pub fn demonitor(&self, watcher: Pid, target: Pid) -> bool {
        match self.route(target) {
            Route::Here(slot) => {
                let mut links = slot.links.lock();
                if links.exited || !slot.is(target) {
                    return false;
                }
                let Some(more) = links.more.as_mut() else { return false };
                let found = more.monitors.iter().position(|&w| w == watcher);
                found.map(|i| more.monitors.swap_remove(i)).is_some()
            }
            Route::Elsewhere(_) => self.shared.remote.get().is_some_and(|remote| remote.demonitor(watcher, target)),
            Route::Nowhere => false,
        }
    }

    pub fn register(&self, name: &[u8], pid: Pid) -> Result<(), Error> {
        let proc = self.live(pid).ok_or(Error::NoProcess(pid))?;
        self.shared.names.register(name, proc)
    }

    pub fn whereis(&self, name: &[u8]) -> Option<Pid> {
        self.shared.names.whereis(name)
    }

    /// Enters a name the cluster has given `pid`, a process of any node
    /// (see `names`). Refused when the name is held by another, or `pid`
    /// is of this node and has ended.
    pub fn enter_name(&self, name: &[u8], pid: Pid) -> Result<(), Error> {
        match self.route(pid) {
            Route::Here(_) => self.register(name, pid),
            Route::Elsewhere(_) => self.shared.names.enter_remote(name, pid),
            Route::Nowhere => Err(Error::NoProcess(pid)),
        }
    }

    /// Enters a name that another node says `pid`, one of its processes,
    /// holds, settling a clash with another holder (both sides of a healed
    /// partition gave the name): `prevails(pid, holder)` decides, the same
    /// way on every node; returns the holder the name was taken from.
    pub fn settle_name(&self, name: &[u8], pid: Pid, prevails: impl FnOnce(Pid, Pid) -> bool) -> Option<Pid> {
        self.shared.names.settle(name, pid, prevails)
    }

    /// Removes `name` if `pid` holds it (its process ended on another node).
    pub fn remove_name(&self, name: &[u8], pid: Pid) {
        self.shared.names.remove(name, pid)
    }

    /// Forgets the names held on the node with this alias (it was lost).
    pub fn drop_names_of(&self, alias: u16) {
        self.shared.names.drop_node(alias)
    }

    /// The names held by this node's processes.
    pub fn names_held_here(&self) -> Vec<(Box<[u8]>, Pid)> {
        self.shared.names.held_here()
    }

    /// Runs `body` as the main process and blocks until the run ends: when
    /// that process ends, or when some process calls [`Runtime::halt`].
    pub fn run_main(&self, body: Box<dyn Body>) -> RunEnd {
        let mut main = self.shared.main.lock();
        match self.spawn(body) {
            Ok(pid) => main.pid = Some(pid),
            Err(e) => return RunEnd::Exited(ExitReason::Error(e.to_string())),
        }
        loop {
            if let Some(end) = &main.end {
                return end.clone();
            }
            self.shared.main_ended.wait(&mut main);
        }
    }

    /// The main process of the run, once `run_main` has started it.
    pub fn main_pid(&self) -> Option<Pid> {
        self.shared.main.lock().pid
    }

    /// Ends the run with `status`, whatever the main process is doing.
    pub fn halt(&self, status: i32) {
        let mut main = self.shared.main.lock();
        if main.end.is_none() {
            main.end = Some(RunEnd::Halted(status));
            self.shared.main_ended.notify_all();
        }
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

    /// Runs one scheduled process until it yields (called by workers).
    pub(crate) fn run_process(&self, proc: &'static Process) {
        // SAFETY: the process was popped from a run queue, so this worker is its only runner.
        let Some(mut body) = (unsafe { proc.take_body() }) else { return };
        if proc.has_requests() {
            if proc.is_over_limit() {
                drop(body);
                self.finish(proc, ExitReason::Error(MEMORY_LIMIT.into()));
                return;
            }
            self.answer_probes(proc, &mut *body);
        }
        if self.wakes_cold() {
            // The peer's slot was asked for when this process was woken; its
            // lines now get a whole hop to arrive (see `Process::note_peer`).
            if let Some(peer) = self.peer_of(proc) {
                peer.prefetch_hot_lines();
            }
        }
        let step = body.resume(self, proc);
        if proc.drained(matches!(step, Step::Exited(_))) {
            if let Some(remote) = self.remote() {
                remote.drained(proc.pid());
            }
        }
        match step {
            Step::Preempted => {
                unsafe { proc.put_body(body) };
                proc.state.store(QUEUED, Release);
                self.scheduler().schedule_preempted(proc);
            }
            Step::Blocked => {
                unsafe { proc.put_body(body) };
                if proc.park() {
                    self.scheduler().schedule_back(proc);
                }
            }
            Step::Exited(reason) => {
                drop(body);
                self.finish(proc, reason);
            }
        }
    }

    /// Sends each asker `"probe", pid, description` (the body describes
    /// itself between two resumes; it is resumed afterwards as usual, which
    /// a blocked process takes as a spurious wake-up).
    fn answer_probes(&self, proc: &'static Process, body: &mut dyn Body) {
        let askers = proc.take_probes();
        if askers.is_empty() {
            return;
        }
        let pid = proc.pid();
        let names = proc.names();
        let held = if names.is_empty() { String::new() } else { format!(", registered as {}", names.join(", ")) };
        let text = format!("process {pid}{held}, {} messages waiting\n{}", proc.mailbox_len(), body.describe());
        for asker in askers {
            let mut w = Writer::message(3);
            w.str(b"probe");
            w.pid(pid);
            w.str(text.as_bytes());
            if let Ok(bytes) = w.finish() {
                self.send(asker, Message::from_vec(bytes));
            }
        }
    }

    /// Asks `pid` to describe itself to `asker` (a message `"probe", pid,
    /// text`, when it next runs: at once if it waits); false when there is
    /// no such process.
    pub fn probe(&self, pid: Pid, asker: Pid) -> bool {
        let Some(slot) = self.live(pid) else { return false };
        if !slot.add_probe(pid, asker) {
            return false;
        }
        self.wake(slot);
        true
    }

    /// The live processes of this node, in slot order.
    pub fn processes(&self) -> Vec<ProcessInfo> {
        self.shared
            .table
            .slots()
            .filter(|p| p.run_state() != "ended")
            .map(|p| ProcessInfo { pid: p.pid(), state: p.run_state(), mailbox: p.mailbox_len(), names: p.names() })
            .collect()
    }

    fn finish(&self, proc: &'static Process, reason: ExitReason) {
        let pid = proc.pid();
        let more = {
            let mut links = proc.links.lock();
            let more = links.more.take().map(|b| *b).unwrap_or_default();
            links.exited = true;
            links.last_pid = Some(pid);
            if reason != ExitReason::Normal {
                links.more().last_reason = Some(reason.clone());
            }
            more
        };
        let reusable = proc.vacate();
        self.shared.names.release(pid, &more.names);
        if let Some(remote) = self.shared.remote.get().filter(|_| !more.names.is_empty()) {
            remote.released(pid, &more.names);
        }
        if !more.monitors.is_empty() {
            let down = down_message(pid, &reason);
            for watcher in more.monitors {
                self.send(watcher, down.clone());
            }
        }
        self.shared.table.release(proc, reusable);
        let mut main = self.shared.main.lock();
        if main.pid == Some(pid) && main.end.is_none() {
            main.end = Some(RunEnd::Exited(reason));
            self.shared.main_ended.notify_all();
        }
    }
}

/// A live process, as a listing shows it.
#[derive(Clone, Debug)]
pub struct ProcessInfo {
    pub pid: Pid,
    /// "running", "runnable" (queued) or "waiting" (blocked).
    pub state: &'static str,
    /// Messages in its mailbox.
    pub mailbox: usize,
    /// The names it holds.
    pub names: Vec<String>,
}

/// The reason a process over its memory limit ends with.
pub const MEMORY_LIMIT: &str = "memory limit";

/// How a process starts (see [`Runtime::spawn_with`]).
#[derive(Default)]
pub struct Spawn {
    /// A message waiting in its mailbox before anything else can arrive
    /// (what a body boots from).
    pub first: Option<Message>,
    /// Its memory limit in bytes (default: the node's, if any): its body's
    /// memory and its queued messages together.
    pub max_memory: Option<u64>,
}

/// Where a pid lives (see [`Runtime::route`]).
enum Route {
    Here(&'static Process),
    /// On the node with this alias.
    Elsewhere(#[allow(dead_code)] u16),
    /// On this node, in no slot there is (a pid from junk, or made up).
    Nowhere,
}

/// How many live processes of `process_bytes` each fit in half the
/// last-level cache: beyond that, wakers warm what they wake. Measured on the
/// ring (bench/ring, 2-core EPYC, 32 MB L3, 7 KB processes): warming costs
/// ~3% up to 2,000 processes and pays from 2,500 on (at 4,000: 780 -> 320
/// ns/send); half the cache is 2,300 of them.
fn warm_above(last_level_bytes: usize, process_bytes: usize) -> usize {
    last_level_bytes / 2 / process_bytes.max(1)
}

/// The reason given for a process that ended too long ago to remember how.
fn noproc() -> Vec<u8> {
    reason_text(b"noproc")
}

/// The reason of a DOWN for a process whose node was lost (SPEC §9).
pub fn noconnection() -> Vec<u8> {
    reason_text(b"noconnection")
}

fn reason_text(text: &[u8]) -> Vec<u8> {
    let mut w = Writer::message(1);
    w.str(text);
    w.finish_small()
}

/// `"DOWN", pid, reason` as a message.
pub fn down_message(pid: Pid, reason: &ExitReason) -> Message {
    let mut w = Writer::message(3);
    w.str(b"DOWN");
    w.pid(pid);
    match reason {
        ExitReason::Normal => w.str(b"normal"),
        ExitReason::Error(msg) => w.str(msg.as_bytes()),
        // A one-value message: skip its version byte and its count (1, one byte).
        ExitReason::Value(encoded) => w.raw(&encoded[2..]),
    }
    Message::from_vec(w.finish_small())
}
