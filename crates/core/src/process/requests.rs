//! What is asked of a process from outside its run, and what a listing
//! reads of it: ending over its memory limit, being killed or interrupted,
//! descriptions for the console, the drain a busy receiver's senders wait
//! for, and its state, memory and processor time. Each is a bit of the
//! process's flags (one load on the hot path tells whether any is set) and,
//! where it carries more, a field of its links.

use std::sync::atomic::Ordering::*;

use super::*;

/// The bits of `memory_and_wait` that hold the memory in KiB.
const MEMORY_MASK: u32 = (1 << 28) - 1;

impl Process {
    /// Marks the process as over its memory limit: it ends when it is next
    /// scheduled, whatever it is doing (the caller wakes it).
    pub(crate) fn end_over_limit(&self) {
        self.flags.fetch_or(OVER_LIMIT, Relaxed);
    }

    /// For the running process's body: it went over its memory limit
    /// outside what the core counts (memory its body holds); it ends when
    /// it next yields, with reason "memory limit".
    pub fn exceed_memory_limit(&self) {
        self.end_over_limit();
    }

    /// Notes that a node was told this process is busy; true if none was
    /// waiting to hear when it drains yet.
    pub(crate) fn watch_drain(&self) -> bool {
        self.flags.fetch_or(DRAIN_WATCHED, Relaxed) & DRAIN_WATCHED == 0
    }

    /// Whether a node waits to hear that this process has drained, and it
    /// has (or `ended`): the flag is cleared when so.
    #[inline]
    pub(crate) fn drained(&self, ended: bool) -> bool {
        self.flags.load(Relaxed) & DRAIN_WATCHED != 0 && (ended || self.queued_bytes() < crate::dist::BUSY_LOW) && self.flags.fetch_and(!DRAIN_WATCHED, Relaxed) & DRAIN_WATCHED != 0
    }

    /// Whether the process must end, over its memory limit.
    #[inline]
    pub(crate) fn is_over_limit(&self) -> bool {
        self.flags.load(Relaxed) & OVER_LIMIT != 0
    }

    /// Whether something is asked of the process before it runs (to end
    /// over its limit, to be described): one load on the hot path.
    #[inline]
    pub(crate) fn has_requests(&self) -> bool {
        self.flags.load(Relaxed) & (OVER_LIMIT | PROBED | KILLED) != 0
    }

    /// Whether anything is asked of the process that its next preemption
    /// answers (to end, to be interrupted, to be described): a monitor does
    /// not rest beside its run (`Scheduler::quiet`).
    pub(crate) fn awaits_preemption(&self) -> bool {
        self.flags.load(Relaxed) & (OVER_LIMIT | PROBED | KILLED | INTERRUPTED) != 0
    }

    /// Kills the process if `pid` is its tenant (the first reason given
    /// stands): it ends before it next runs (the caller wakes it). False
    /// when `pid` is no longer here.
    pub(crate) fn kill(&self, pid: Pid, reason: ExitReason) -> bool {
        let mut links = self.links.lock();
        if links.exited || !self.is(pid) {
            return false;
        }
        links.more().killed.get_or_insert(reason);
        self.flags.fetch_or(KILLED, Relaxed);
        true
    }

    /// Why the process was killed, if it was.
    pub(crate) fn take_kill(&self) -> Option<ExitReason> {
        if self.flags.load(Relaxed) & KILLED == 0 {
            return None;
        }
        let mut links = self.links.lock();
        links.more.as_mut().and_then(|m| m.killed.take())
    }

    /// For the body, after a run: the memory it holds now.
    pub fn note_memory(&self, bytes: u64) {
        let kib = (bytes >> 10).min(u64::from(MEMORY_MASK)) as u32;
        self.memory_and_wait.store((self.memory_and_wait.load(Relaxed) & !MEMORY_MASK) | kib, Relaxed);
    }

    /// The bytes its body held after its last run.
    pub(crate) fn body_bytes(&self) -> u64 {
        ((self.memory_and_wait.load(Relaxed) & MEMORY_MASK) as u64) << 10
    }

    /// It ran a whole time slice (it was preempted).
    pub(crate) fn note_slice(&self) {
        self.slices.store(self.slices.load(Relaxed).wrapping_add(1), Relaxed);
    }

    /// The time slices it ran to their end.
    pub(crate) fn slices(&self) -> u32 {
        self.slices.load(Relaxed)
    }

    /// Asks the process to stop what it computes, if `pid` is its tenant.
    pub(crate) fn interrupt(&self, pid: Pid) -> bool {
        let links = self.links.lock();
        if links.exited || !self.is(pid) {
            return false;
        }
        self.flags.fetch_or(INTERRUPTED, Relaxed);
        true
    }

    /// For the running process's body: whether it was asked to stop what
    /// it computes (the flag is cleared).
    pub fn take_interrupt(&self) -> bool {
        self.flags.load(Relaxed) & INTERRUPTED != 0 && self.flags.fetch_and(!INTERRUPTED, Relaxed) & INTERRUPTED != 0
    }

    /// Asks for a description for `asker` (it is made when the process next
    /// runs); false when `pid` no longer names this slot's tenant.
    pub(crate) fn add_probe(&self, pid: Pid, asker: Pid) -> bool {
        let mut links = self.links.lock();
        if links.exited || !self.is(pid) {
            return false;
        }
        links.more().probes.push(asker);
        self.flags.fetch_or(PROBED, Relaxed);
        true
    }

    /// The askers of descriptions (and no more probes pending).
    pub(crate) fn take_probes(&self) -> Vec<Pid> {
        let mut links = self.links.lock();
        self.flags.fetch_and(!PROBED, Relaxed);
        links.more.as_mut().map(|m| std::mem::take(&mut m.probes)).unwrap_or_default()
    }

    /// How the process stands, for a listing.
    pub(crate) fn run_state(&self) -> &'static str {
        match self.state.load(Relaxed) {
            QUEUED => "runnable",
            RUNNING | NOTIFIED => "running",
            IDLE => "waiting",
            _ => "ended",
        }
    }

    /// For the running process's body: what it is about to block on (what a
    /// listing shows while it waits).
    pub fn set_waits_on(&self, on: WaitsOn) {
        let kib = self.memory_and_wait.load(Relaxed) & MEMORY_MASK;
        self.memory_and_wait.store(((on as u32) << 28) | kib, Relaxed);
    }

    /// What the process waits on, as last set.
    pub(crate) fn waits_on(&self) -> WaitsOn {
        WaitsOn::from_bits(self.memory_and_wait.load(Relaxed) >> 28)
    }

    /// For the running process's body: its role for tools.
    pub fn set_role(&self, role: Role) {
        let old = self.flags.load(Relaxed);
        if (old & ROLE_BITS) >> ROLE_SHIFT != role as u8 {
            self.flags.fetch_and(!ROLE_BITS, Relaxed);
            self.flags.fetch_or((role as u8) << ROLE_SHIFT, Relaxed);
        }
    }

    /// Its role for tools.
    pub(crate) fn role(&self) -> Role {
        match (self.flags.load(Relaxed) & ROLE_BITS) >> ROLE_SHIFT {
            1 => Role::Skeleton,
            2 => Role::Entity,
            _ => Role::None,
        }
    }

    /// The names the process holds.
    pub(crate) fn names(&self) -> Vec<String> {
        let links = self.links.lock();
        links.more.as_ref().map(|m| m.names.iter().map(|n| String::from_utf8_lossy(n).into_owned()).collect()).unwrap_or_default()
    }
}
