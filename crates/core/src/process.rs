//! One process as the core sees it: a slot in the process table with a
//! mailbox, the run state that the scheduler and wakers agree on, links
//! (monitors, names) and an opaque [`Body`] that does the work (the Lua
//! layer's interpreter state). The core never looks inside a body.
//!
//! Run states and who moves between them:
//!
//! 1. `QUEUED`   – in some run queue; only the worker that pops it moves on.
//! 2. `RUNNING`  – a worker is inside [`Body::resume`].
//! 3. `NOTIFIED` – running, and something happened that it may be waiting for;
//!    when the body blocks it is queued again at once instead of going idle.
//! 4. `IDLE`     – blocked; the first [`Process::notify`] queues it.
//! 5. `DEAD`     – the slot is vacant; notifications are ignored.
//!
//! A wake-up is a hint, never a value: a resumed body re-checks what it
//! waits for (mailbox, deadline, channel hand-off) and blocks again if that
//! is not there yet. So every waker stays simple, lost wake-ups cannot
//! happen, and a stray wake-up of a reused slot is harmless.
//!
//! Every change of the state by a waker or a runner is a read-modify-write,
//! even one that leaves it as it was (a waker finding it `QUEUED`), so the
//! changes form one chain that each side reads the end of. A worker that
//! starts a run with a plain store could otherwise look at the mailbox
//! before a waker, which stored a message and then read `QUEUED` (the
//! store not yet seen), had left it: the process went idle with the
//! message unseen, and a two-node ping-pong stopped for good
//! (`process/loom_checks.rs` models it).
//!
//! A pid is valid while the slot's generation matches it. The generation
//! changes only under the mailbox lock, which is also where deliveries check
//! it: no message for an ended process can land in its slot's next tenant.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering::*};

use parking_lot::Mutex;

use crate::mailbox::Mailbox;
// The run state's atomic: loom's in a loom test build (see `sync`).
use crate::sync::AtomicU8;
use crate::waiting::Completion;
use crate::{Message, Pid, Runtime};

pub(crate) const QUEUED: u8 = 0;
pub(crate) const RUNNING: u8 = 1;
pub(crate) const NOTIFIED: u8 = 2;
pub(crate) const IDLE: u8 = 3;
pub(crate) const DEAD: u8 = 4;

/// Why a process ended; it becomes the `reason` of DOWN notices.
#[derive(Clone, Debug, PartialEq)]
pub enum ExitReason {
    Normal,
    /// A value given to `exit`, encoded as a one-value message.
    Value(Vec<u8>),
    /// An error message.
    Error(String),
}

impl ExitReason {
    /// The reason in words, for a line a person reads: `normal`, the error
    /// message, or the value given to `exit` as Lua's `tostring` shows a
    /// string, number, boolean or pid (any other value by its kind).
    pub fn describe(&self) -> String {
        use crate::wire::{Reader, Tag};
        let value = |bytes: &[u8]| -> Option<String> {
            let (mut r, _) = Reader::message(bytes).ok()?;
            Some(match r.tag().ok()? {
                Tag::Nil => "nil".into(),
                Tag::False => "false".into(),
                Tag::True => "true".into(),
                Tag::Int => r.int().ok()?.to_string(),
                Tag::Float => lua_float(r.float().ok()?),
                Tag::Str => String::from_utf8_lossy(r.bytes().ok()?).into_owned(),
                Tag::Pid => r.pid().ok()?.to_string(),
                Tag::Function | Tag::SharedUpvalue => "a function".into(),
                Tag::Shared => "a userdata".into(),
                Tag::Table | Tag::Ref | Tag::Globals | Tag::Library => "a table".into(),
            })
        };
        match self {
            ExitReason::Normal => "normal".into(),
            ExitReason::Error(e) => e.clone(),
            ExitReason::Value(bytes) => value(bytes).unwrap_or_else(|| "a value".into()),
        }
    }
}

/// A float as Lua 5.4's `tostring` shows it: `%.14g`, and `.0` after one
/// that would read as an integer.
fn lua_float(x: f64) -> String {
    if !x.is_finite() {
        return match x.is_nan() {
            true => if x.is_sign_negative() { "-nan" } else { "nan" }.into(),
            false => if x < 0.0 { "-inf" } else { "inf" }.into(),
        };
    }
    // `%.14g`: 14 significant digits, trailing zeros dropped, in exponent
    // form below 1e-4 or from 1e14.
    let sci = format!("{x:.13e}");
    let (mantissa, exp) = sci.split_once('e').expect("an exponent");
    let exp: i32 = exp.parse().expect("a decimal exponent");
    let trim = |digits: String| match digits.contains('.') {
        true => digits.trim_end_matches('0').trim_end_matches('.').to_string(),
        false => digits,
    };
    let text = if !(-4..14).contains(&exp) {
        format!("{}e{}{:02}", trim(mantissa.to_string()), if exp < 0 { '-' } else { '+' }, exp.abs())
    } else {
        trim(format!("{x:.*}", (13 - exp) as usize))
    };
    match text.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
        true => text + ".0",
        false => text,
    }
}

#[cfg(test)]
mod describe_tests {
    use super::*;

    #[test]
    fn floats_read_as_lua_shows_them() {
        for (x, shown) in [
            (2.5, "2.5"),
            (2.0, "2.0"),
            (-3.0, "-3.0"),
            (0.1 + 0.2, "0.3"),
            (1e15, "1e+15"),
            (1e14, "1e+14"),
            (99999999999999.0, "99999999999999.0"),
            (1.5e-5, "1.5e-05"),
            (0.0001, "0.0001"),
            (1.0 / 3.0, "0.33333333333333"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
        ] {
            assert_eq!(lua_float(x), shown, "{x}");
        }
    }
}

/// What a body reports back from one [`Body::resume`].
pub enum Step {
    /// It used up its budget and wants to run again later.
    Preempted,
    /// It waits for a notification (a message, a timer, a channel partner).
    Blocked,
    Exited(ExitReason),
}

/// The work a process does. `resume` is only ever called by one worker at a
/// time, so a body needs `Send` but not `Sync`.
pub trait Body: Send {
    fn resume(&mut self, rt: &Runtime, me: &'static Process) -> Step;

    /// What the process is doing, for a person looking at it (where it
    /// waits, its call stack). Called between resumes.
    fn describe(&mut self) -> String {
        String::new()
    }
}

#[derive(Default)]
pub(crate) struct Links {
    pub exited: bool,
    /// The slot's last tenant, kept until the slot is reused, so a monitor
    /// set just after its end still learns how it ended.
    pub last_pid: Option<Pid>,
    /// Boxed: every slot pays for this field, few processes use it.
    pub more: Option<Box<MoreLinks>>,
}

#[derive(Default)]
pub(crate) struct MoreLinks {
    pub monitors: Vec<Pid>,
    pub names: Vec<Box<[u8]>>,
    /// How `last_pid` ended, when not normally.
    pub last_reason: Option<ExitReason>,
    /// What a store gave the process for one of its waits (see `waiting`).
    pub completion: Option<(u64, Completion)>,
    /// Processes that asked for a description of it (see `Runtime::probe`).
    pub probes: Vec<Pid>,
    /// The processes linked to it, of any node (see `runtime/links.rs`).
    pub linked: Vec<Pid>,
    /// Whether a linked process's end comes to it as the message
    /// `"EXIT", pid, reason` instead of ending it.
    pub trap_exit: bool,
    /// Why it was killed, if it was: it ends before it next runs.
    pub killed: Option<ExitReason>,
}

impl Links {
    pub fn more(&mut self) -> &mut MoreLinks {
        self.more.get_or_insert_with(Default::default)
    }

    /// How `pid` ended, if it was this slot's last tenant.
    pub fn exit_of(&self, pid: Pid) -> Option<ExitReason> {
        (self.last_pid == Some(pid)).then(|| self.more.as_ref().and_then(|m| m.last_reason.clone()).unwrap_or(ExitReason::Normal))
    }
}

/// Laid out by hand: everything a message hand-off touches (run state,
/// generation, body, the mailbox's lock and inline message) sits in the
/// first cache line; the mailbox's overflow deque, the hot-line hint, links
/// and timer bookkeeping come after. Three lines in all.
#[repr(C, align(64))]
pub struct Process {
    pub(crate) state: AtomicU8,
    /// [`LIMITED`] and [`OVER_LIMIT`].
    flags: AtomicU8,
    node: u16,
    /// Changed only under the mailbox lock (see `vacate`).
    generation: AtomicU32,
    body: UnsafeCell<Option<Box<dyn Body>>>,
    mailbox: Mailbox,
    index: u32,
    /// What a listing shows: the KiB its body held after its last run (the
    /// low 28 bits, up to 256 GiB) and what it waits on (a [`WaitsOn`], the
    /// high 4), in the padding before `timer_seq`. Written only by the
    /// thread running it.
    memory_and_wait: AtomicU32,
    /// Bumped whenever the process arms a new timer, so stale timers are ignored.
    pub(crate) timer_seq: AtomicU64,
    pub(crate) links: Mutex<Links>,
    /// See [`Process::set_hot_lines`]: a 64-byte-aligned window start and
    /// one bit per line of its 128 lines.
    hot_base: AtomicUsize,
    hot_map: [AtomicU64; 2],
    /// The slot index + 1 of the process this one last sent to (0: none);
    /// see [`Process::note_peer`].
    peer: AtomicU32,
    /// What a listing shows: the time slices it ran to their end (in the
    /// padding before `allowance`). Written only by the thread running it.
    slices: AtomicU32,
    /// When [`LIMITED`]: the bytes its mailbox may hold (its memory limit
    /// less what its body takes; see [`Process::set_mailbox_allowance`]).
    allowance: AtomicU64,
}

/// What a process blocked on, as a listing (and the dashboard) shows it.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitsOn {
    Receive = 0,
    Tuple = 1,
    Socket = 2,
    Future = 3,
    Sleep = 4,
    Channel = 5,
    Other = 6,
}

impl WaitsOn {
    /// The name a listing gives it.
    pub fn name(self) -> &'static str {
        ["receive", "tuple", "socket", "future", "sleep", "channel", "other"][self as usize]
    }

    fn from_bits(n: u32) -> WaitsOn {
        [WaitsOn::Receive, WaitsOn::Tuple, WaitsOn::Socket, WaitsOn::Future, WaitsOn::Sleep, WaitsOn::Channel, WaitsOn::Other][(n as usize).min(6)]
    }
}

/// Bit of a process's flags: it has a memory limit, which its queued
/// messages count against.
const LIMITED: u8 = 1;
/// Bit of a process's flags: it went over its memory limit and must end.
const OVER_LIMIT: u8 = 2;
/// Bit of a process's flags: someone asked for its description.
const PROBED: u8 = 4;
/// Bit of a process's flags: another node was told it is busy (see
/// `dist::BUSY_HIGH`), and waits to hear when its mailbox drains.
const DRAIN_WATCHED: u8 = 8;
/// Bit of a process's flags: it was killed and ends before it next runs.
const KILLED: u8 = 16;
/// Bit of a process's flags: it is asked to stop what it computes (an
/// error "interrupted!" at its next preemption; Ctrl-C at a prompt).
const INTERRUPTED: u8 = 32;
/// The two bits of a process's flags that say its role for tools (see
/// [`Role`]).
const ROLE_BITS: u8 = 64 | 128;
const ROLE_SHIFT: u8 = 6;

/// What a process is, for tools that look for such processes (the
/// dashboard's skeleton runs and entities): set by the process itself,
/// cleared when its slot is reused.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    None = 0,
    /// It runs a skeleton evaluator (`skel.run`).
    Skeleton = 1,
    /// It is an entity.
    Entity = 2,
}

impl Role {
    pub fn name(self) -> &'static str {
        ["", "skeleton", "entity"][self as usize]
    }
}

/// Why a message was not delivered.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The process has ended (or the queue could not grow).
    Gone,
    /// Its queued messages would go over its memory limit.
    OverLimit,
}

/// The span of memory [`Process::set_hot_lines`] describes: 128 lines.
pub const HOT_WINDOW: usize = 128 * 64;

// SAFETY: `body` is only touched by the single worker that moved the process
// from QUEUED to RUNNING (see `take_body`/`put_body`), or by `occupy` on a
// vacant slot that nobody else can reach; every other field is synchronised.
unsafe impl Sync for Process {}
unsafe impl Send for Process {}

impl Process {
    pub(crate) fn vacant(node: u16, index: u32) -> Process {
        Process {
            index,
            node,
            state: AtomicU8::new(DEAD),
            generation: AtomicU32::new(0),
            mailbox: Mailbox::new(),
            timer_seq: AtomicU64::new(0),
            links: Mutex::new(Links::default()),
            body: UnsafeCell::new(None),
            hot_base: AtomicUsize::new(0),
            hot_map: [AtomicU64::new(0), AtomicU64::new(0)],
            peer: AtomicU32::new(0),
            flags: AtomicU8::new(0),
            allowance: AtomicU64::new(0),
            slices: AtomicU32::new(0),
            memory_and_wait: AtomicU32::new(0),
        }
    }

    pub(crate) fn index(&self) -> u32 {
        self.index
    }

    /// The pid of the process that currently holds this slot.
    #[inline]
    pub fn pid(&self) -> Pid {
        Pid::new(self.node, self.index, self.generation.load(Acquire))
    }

    /// Whether `pid` names the current tenant of this slot.
    #[inline]
    pub(crate) fn is(&self, pid: Pid) -> bool {
        // Generation read on both sides of the state: a slot vacated and
        // reoccupied in between cannot pass for the old tenant.
        let before = self.generation.load(Acquire);
        let alive = self.state.load(Acquire) != DEAD;
        before == pid.generation() && alive && self.generation.load(Acquire) == before
    }

    /// Installs a new process in a vacant slot (from `Table::acquire`),
    /// with a memory limit in bytes if it has one.
    pub(crate) fn occupy(&self, body: Box<dyn Body>, max_memory: Option<u64>) -> Pid {
        // SAFETY: a vacant slot is reachable by no worker; stale wakers see DEAD and back off.
        unsafe { *self.body.get() = Some(body) };
        self.allowance.store(max_memory.unwrap_or(0), Relaxed);
        self.slices.store(0, Relaxed);
        self.memory_and_wait.store(0, Relaxed);
        self.flags.store(if max_memory.is_some() { LIMITED } else { 0 }, Relaxed);
        *self.links.lock() = Links::default();
        self.hot_base.store(0, Relaxed);
        self.peer.store(0, Relaxed);
        let generation = self.generation.load(Acquire);
        self.state.store(QUEUED, Release);
        Pid::new(self.node, self.index, generation)
    }

    /// Ends the tenancy: later sends to its pid are dropped, queued messages
    /// freed. Returns whether the slot may take a new tenant: a slot whose
    /// generations are used up is retired for good, since its next pid would
    /// equal its first (SPEC §2: a pid never names a later process). That
    /// costs one slot per 2^20 processes that lived in it.
    pub(crate) fn vacate(&self) -> bool {
        self.state.store(DEAD, Release);
        let mut reusable = true;
        self.mailbox.clear_with(|| {
            let generation = self.generation.load(Acquire);
            // The last generation, all ones, is never given: no pid with it
            // names a process (`nowhere` pids use it).
            reusable = generation + 1 < Pid::LOCAL_GEN_MASK;
            if reusable {
                self.generation.store(generation + 1, Release);
            }
        });
        reusable
    }

    /// Moves the slot's generation on, as if it had had `generation` tenants
    /// already (so tests reach the end of the generations without spawning
    /// millions of processes).
    #[cfg(test)]
    pub(crate) fn age_to(&self, generation: u32) {
        self.generation.store(generation, Release);
    }

    /// Takes the next message, if any.
    #[inline]
    pub fn pop_message(&self) -> Option<Message> {
        self.mailbox.pop()
    }

    /// Messages waiting in the mailbox.
    pub fn mailbox_len(&self) -> usize {
        self.mailbox.len()
    }

    /// A copy of the message at `index` in the mailbox (0 is the oldest).
    /// Only the process itself takes messages out, so indices stay put
    /// between its calls.
    pub fn peek_message(&self, index: usize) -> Option<Message> {
        self.mailbox.get(index, Message::clone)
    }

    /// The first message at `from` or later for which `pred` holds
    /// (examined under the mailbox's lock: `pred` must not block), taken
    /// out; or how many messages there are.
    pub fn take_first_match(&self, from: usize, pred: impl FnMut(&Message) -> bool) -> Result<Message, usize> {
        self.mailbox.take_first(from, pred)
    }

    /// Takes the message at `index` out of the mailbox.
    pub fn take_message_at(&self, index: usize) -> Option<Message> {
        self.mailbox.take_first(index, |_| true).ok()
    }

    /// Hands `completion` to the wait `ticket` of this slot's tenant, if
    /// `pid` still names it; true when it did (the caller wakes it).
    pub(crate) fn complete(&self, pid: Pid, ticket: u64, completion: Completion) -> bool {
        let mut links = self.links.lock();
        if links.exited || !self.is(pid) {
            return false;
        }
        links.more().completion = Some((ticket, completion));
        true
    }

    /// What a store gave the wait `ticket`, if anything yet.
    pub fn take_completion(&self, ticket: u64) -> Option<Completion> {
        let mut links = self.links.lock();
        let more = links.more.as_mut()?;
        match &more.completion {
            Some((t, _)) if *t == ticket => more.completion.take().map(|(_, c)| c),
            _ => None,
        }
    }

    /// Delivers a message if `to` still names this slot's tenant, and its
    /// memory limit (if it has one) has room for it.
    #[inline]
    pub(crate) fn deliver(&self, to: Pid, msg: Message) -> Result<(), Refused> {
        let limit = (self.flags.load(Relaxed) & LIMITED != 0).then(|| self.allowance.load(Relaxed));
        let mut alive = false;
        if self.mailbox.push_if(msg, limit, || {
            alive = self.generation.load(Acquire) == to.generation() && self.state.load(Acquire) != DEAD;
            alive
        }) {
            return Ok(());
        }
        Err(if alive && limit.is_some() { Refused::OverLimit } else { Refused::Gone })
    }

    /// The process's body takes `body_bytes` of its memory limit `limit`:
    /// the rest is what its mailbox may hold.
    pub fn set_mailbox_allowance(&self, limit: u64, body_bytes: u64) {
        self.allowance.store(limit.saturating_sub(body_bytes), Relaxed);
    }

    /// Bytes of the messages waiting behind the oldest in the mailbox (a
    /// body checking its memory limit counts them).
    pub fn queued_bytes(&self) -> u64 {
        self.mailbox.queued_bytes()
    }

    /// Marks the process as having something to look at. Returns true when
    /// the caller must put it in a run queue.
    #[inline]
    pub(crate) fn notify(&self) -> bool {
        let mut s = self.state.load(Acquire);
        loop {
            let next = match s {
                IDLE => QUEUED,
                RUNNING => NOTIFIED,
                // Written as it is (see the module doc): the worker that
                // takes it from its queue then reads this, and so sees the
                // message stored before.
                QUEUED | NOTIFIED => s,
                _ => return false,
            };
            match self.state.compare_exchange_weak(s, next, AcqRel, Acquire) {
                Ok(_) => return s == IDLE,
                Err(actual) => s = actual,
            }
        }
    }

    /// After a body blocked: go idle, unless notified meanwhile. Returns true
    /// when the process must be queued again.
    #[inline]
    pub(crate) fn park(&self) -> bool {
        match self.state.compare_exchange(RUNNING, IDLE, AcqRel, Acquire) {
            Ok(_) => false,
            Err(_) => {
                self.requeue();
                true
            }
        }
    }

    /// Its worker puts it back in a run queue (notified while it ran, or
    /// out of its slice).
    #[inline]
    pub(crate) fn requeue(&self) {
        self.state.swap(QUEUED, AcqRel);
    }

    /// SAFETY: only the worker that dequeued the process may call this, and
    /// must give the body back with `put_body` (or drop it on exit).
    #[inline]
    pub(crate) unsafe fn take_body(&self) -> Option<Box<dyn Body>> {
        // A swap, not a store: the body's look at its mailbox must follow
        // whatever a waker wrote here (see the module doc).
        self.state.swap(RUNNING, AcqRel);
        // SAFETY: the caller is the one worker that dequeued the process
        // (this function's contract): no one else touches the body now.
        unsafe { (*self.body.get()).take() }
    }

    /// Records, while the process runs, which 64-byte lines of the
    /// [`HOT_WINDOW`] bytes at `base` (64-byte aligned) its body will touch
    /// when it next runs: bit `i` of `map` stands for `base + 64 * i`.
    ///
    /// A process woken from cold memory (one of 100,000 in a ring) would
    /// otherwise wait for each line in turn, every load depending on the one
    /// before (state, frame, closure, code). The waker starts loading them
    /// all at once before it queues the process (`Runtime::warm`), so they
    /// arrive together while the waker finishes its own work. Only a hint:
    /// a stale or empty map costs speed, never correctness.
    pub fn set_hot_lines(&self, base: *const u8, map: [u64; 2]) {
        debug_assert_eq!(base as usize % 64, 0);
        self.hot_base.store(base as usize, Relaxed);
        self.hot_map[0].store(map[0], Relaxed);
        self.hot_map[1].store(map[1], Relaxed);
    }

    /// Starts loading the line of the hot-line hint (read by `warm`).
    #[inline]
    pub(crate) fn prefetch_hint(&self) {
        prefetch(&self.hot_base as *const AtomicUsize as *const u8);
    }

    /// Starts loading both lines of the slot a message hand-off touches.
    #[inline]
    pub(crate) fn prefetch_slot(&self) {
        prefetch(self as *const Process as *const u8);
        self.prefetch_hint();
    }

    /// Records that this process sent a message to `to`. A process mostly
    /// talks to the same peer (the next in a ring or a pipeline, the server
    /// it calls), so when it is woken its peer is likely the next to run,
    /// and the runtime starts warming that one a whole hop early.
    #[inline]
    pub(crate) fn note_peer(&self, to: Pid) {
        let peer = to.index() + 1;
        if self.peer.load(Relaxed) != peer {
            self.peer.store(peer, Relaxed);
        }
    }

    /// The slot index of the last peer (see `note_peer`).
    #[inline]
    pub(crate) fn peer(&self) -> Option<u32> {
        self.peer.load(Relaxed).checked_sub(1)
    }

    /// Starts loading the body's first lines into the cache. Called by a
    /// waker between a successful `notify` and queueing the process, when no
    /// worker can be running it.
    #[inline]
    pub(crate) fn warm_body(&self) {
        // SAFETY: the process is QUEUED but in no queue yet, so nobody moves its body.
        if let Some(body) = unsafe { &*self.body.get() } {
            let at = &**body as *const dyn Body as *const u8;
            prefetch(at);
            prefetch(at.wrapping_add(64));
        }
    }

    /// Starts loading the lines of the hint. Reads only atomics, so it may
    /// be called on any slot at any time (a stale hint only wastes a little;
    /// the hint written before `park` is visible to a waker through the run
    /// state's acquire).
    #[inline]
    pub(crate) fn prefetch_hot_lines(&self) {
        let base = self.hot_base.load(Relaxed);
        if base == 0 {
            return;
        }
        for (half, word) in self.hot_map.iter().enumerate() {
            let mut bits = word.load(Relaxed);
            while bits != 0 {
                let line = half * 64 + bits.trailing_zeros() as usize;
                prefetch((base + line * 64) as *const u8);
                bits &= bits - 1;
            }
        }
    }

    /// SAFETY: see `take_body`.
    #[inline]
    pub(crate) unsafe fn put_body(&self, body: Box<dyn Body>) {
        // SAFETY: the caller took the body with `take_body` and is still the
        // only one running the process (this function's contract).
        unsafe { *self.body.get() = Some(body) };
    }
}

/// Asks the CPU to start loading the line at `at`; never faults.
#[inline(always)]
fn prefetch(at: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it does not fault on any address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(at as *const i8, std::arch::x86_64::_MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

#[cfg(all(loom, test))]
mod loom_checks;
mod requests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hand_off_fields_share_one_cache_line() {
        let p = Process::vacant(0, 1);
        let base = &p as *const Process as usize;
        // The mailbox's lock, flag and inline message are its first 40 bytes.
        let end_of_inline = &p.mailbox as *const _ as usize + 40;
        assert!(end_of_inline - base <= 64, "hot fields end at byte {}", end_of_inline - base);
        assert_eq!(base % 64, 0);
    }

    #[test]
    fn a_slot_is_three_cache_lines() {
        assert_eq!(std::mem::size_of::<Process>(), 192);
    }

    #[test]
    fn a_slot_whose_generations_are_used_up_is_retired() {
        let p = Process::vacant(0, 7);
        p.age_to(Pid::LOCAL_GEN_MASK - 2);
        let older = p.occupy(Box::new(Idle), None);
        assert!(p.vacate(), "one generation left");
        let last = p.occupy(Box::new(Idle), None);
        assert_ne!(older, last);
        assert_eq!(last.generation(), Pid::LOCAL_GEN_MASK - 1);
        assert!(!p.vacate(), "no generation left: the slot must not be reused");
        assert!(!p.is(last) && !p.is(older), "and no pid of it names anything");
        assert!(p.deliver(last, Message::from_slice(&[1])).is_err(), "nor takes a message");
    }

    #[test]
    fn hints_are_kept_until_the_slot_changes_hands() {
        let p = Process::vacant(0, 7);
        assert_eq!(p.peer(), None);
        p.note_peer(Pid::new(0, 42, 3));
        assert_eq!(p.peer(), Some(42));
        p.note_peer(Pid::new(0, 0, 0));
        assert_eq!(p.peer(), Some(0), "slot 0 is a peer too");
        let line = [0u8; 128];
        let base = ((line.as_ptr() as usize + 63) & !63) as *const u8;
        p.set_hot_lines(base, [0b101, 1 << 63]);
        p.prefetch_hot_lines(); // a hint: nothing to observe but that it does not fault
        p.occupy(Box::new(Idle), None);
        assert_eq!(p.peer(), None, "a new tenant starts without hints");
        assert_eq!(p.hot_base.load(Relaxed), 0);
    }

    struct Idle;
    impl Body for Idle {
        fn resume(&mut self, _rt: &Runtime, _me: &'static Process) -> Step {
            Step::Blocked
        }
    }
}
