//! One process as the core sees it: a pid, a mailbox, the run state that the
//! scheduler and wakers agree on, and an opaque [`Body`] that does the work
//! (the Lua layer's interpreter state). The core never looks inside a body.
//!
//! Run states and who moves between them:
//!
//! 1. `QUEUED`  – in some run queue; only the worker that pops it moves on.
//! 2. `RUNNING` – a worker is inside [`Body::resume`].
//! 3. `NOTIFIED` – running, and something happened that it may be waiting for;
//!    when the body blocks it is queued again at once instead of going idle.
//! 4. `IDLE`    – blocked; the first [`Process::notify`] queues it.
//! 5. `DEAD`    – ended; notifications are ignored.
//!
//! A wake-up is a hint, never a value: a body that is resumed re-checks what
//! it waits for (mailbox, deadline, channel hand-off) and blocks again if that
//! is not there yet. This keeps every waker simple and lost wake-ups impossible.

use std::cell::UnsafeCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::*};

use parking_lot::Mutex;

use crate::{Pid, Runtime};
use std::sync::Arc;

pub(crate) const QUEUED: u8 = 0;
pub(crate) const RUNNING: u8 = 1;
pub(crate) const NOTIFIED: u8 = 2;
pub(crate) const IDLE: u8 = 3;
pub(crate) const DEAD: u8 = 4;

/// An encoded message (see [`crate::wire`]).
pub type Message = Box<[u8]>;

/// Why a process ended; it becomes the `reason` of DOWN notices.
#[derive(Clone, Debug, PartialEq)]
pub enum ExitReason {
    Normal,
    /// A value given to `exit`, encoded as a one-value message.
    Value(Vec<u8>),
    /// An error message.
    Error(String),
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
    fn resume(&mut self, rt: &Runtime, me: &Arc<Process>) -> Step;
}

#[derive(Default)]
pub(crate) struct Links {
    pub monitors: Vec<Pid>,
    pub names: Vec<Box<[u8]>>,
    pub exited: bool,
}

pub struct Process {
    pid: Pid,
    pub(crate) state: AtomicU8,
    mailbox: Mutex<VecDeque<Message>>,
    /// Bumped whenever the process arms a new timer, so stale timers are ignored.
    pub(crate) timer_seq: AtomicU64,
    pub(crate) links: Mutex<Links>,
    body: UnsafeCell<Option<Box<dyn Body>>>,
}

// SAFETY: `body` is only touched by the single worker that moved the process
// from QUEUED to RUNNING (see `take_body`/`put_body`); every other field is
// synchronised.
unsafe impl Sync for Process {}
unsafe impl Send for Process {}

impl Process {
    pub(crate) fn new(pid: Pid, body: Box<dyn Body>) -> Process {
        Process {
            pid,
            state: AtomicU8::new(QUEUED),
            mailbox: Mutex::new(VecDeque::new()),
            timer_seq: AtomicU64::new(0),
            links: Mutex::new(Links::default()),
            body: UnsafeCell::new(Some(body)),
        }
    }

    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// Takes the next message, if any.
    pub fn pop_message(&self) -> Option<Message> {
        self.mailbox.lock().pop_front()
    }

    pub fn mailbox_len(&self) -> usize {
        self.mailbox.lock().len()
    }

    pub(crate) fn push_message(&self, msg: Message) {
        self.mailbox.lock().push_back(msg);
    }

    /// Marks the process as having something to look at. Returns true when
    /// the caller must put it in a run queue.
    pub(crate) fn notify(&self) -> bool {
        let mut s = self.state.load(Acquire);
        loop {
            let next = match s {
                IDLE => QUEUED,
                RUNNING => NOTIFIED,
                _ => return false,
            };
            match self.state.compare_exchange_weak(s, next, AcqRel, Acquire) {
                Ok(_) => return next == QUEUED,
                Err(actual) => s = actual,
            }
        }
    }

    /// After a body blocked: go idle, unless notified meanwhile. Returns true
    /// when the process must be queued again.
    pub(crate) fn park(&self) -> bool {
        match self.state.compare_exchange(RUNNING, IDLE, AcqRel, Acquire) {
            Ok(_) => false,
            Err(_) => {
                self.state.store(QUEUED, Release);
                true
            }
        }
    }

    /// SAFETY: only the worker that dequeued the process may call this, and
    /// must give the body back with `put_body` (or drop it on exit).
    pub(crate) unsafe fn take_body(&self) -> Option<Box<dyn Body>> {
        self.state.store(RUNNING, Release);
        (*self.body.get()).take()
    }

    /// SAFETY: see `take_body`.
    pub(crate) unsafe fn put_body(&self, body: Box<dyn Body>) {
        *self.body.get() = Some(body);
    }
}
