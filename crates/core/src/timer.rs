//! Deadlines: for blocked processes (`receive` with a timeout, `sleep`),
//! and messages sent later (`send_after`). One thread sleeps until the
//! earliest deadline and then notifies its process, or sends its message.
//! A wake-up is only a hint: the process re-checks its own deadline. A
//! process arming a new timer bumps its `timer_seq`, so earlier timers of the
//! same process fire into nothing instead of causing spurious wake-ups.
//!
//! A pending message costs one heap entry and one map entry, and nothing
//! until it is due (no tick); a cancelled one leaves its heap entry behind,
//! swept when they outnumber the live ones.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::sync::atomic::Ordering::*;
use std::time::Instant;

use parking_lot::{Condvar, Mutex};

use crate::process::Process;
use crate::{Message, Pid};

/// Where a message sent later goes: a pid, or whoever holds a name then.
pub enum Dest {
    Pid(Pid),
    Name(Box<[u8]>),
}

/// A message due later: its sender, its destination, the message.
pub struct Later {
    pub from: Pid,
    pub to: Dest,
    pub message: Message,
}

/// What a due timer does.
pub(crate) enum Fired {
    Wake(&'static Process),
    Send(Later),
}

#[derive(Clone, Copy)]
enum What {
    /// Wake this process if its `timer_seq` is still `seq`.
    Wake(&'static Process, u64),
    /// Send the pending message with this reference.
    Send(u64),
}

struct Entry {
    at: Instant,
    what: What,
}

impl Entry {
    fn key(&self) -> u64 {
        match self.what {
            What::Wake(_, seq) | What::Send(seq) => seq,
        }
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    // Reversed: BinaryHeap is a max-heap and we want the earliest deadline on top.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.key()).cmp(&(self.at, self.key()))
    }
}

#[derive(Default)]
struct State {
    heap: BinaryHeap<Entry>,
    /// Messages due later, by reference.
    pending: HashMap<u64, Later>,
    /// The last reference given.
    last_ref: u64,
    stopped: bool,
}

#[derive(Default)]
pub(crate) struct Timers {
    state: Mutex<State>,
    changed: Condvar,
}

impl Timers {
    pub(crate) fn arm(&self, proc: &'static Process, at: Instant) {
        let seq = proc.timer_seq.fetch_add(1, AcqRel) + 1;
        self.push(&mut self.state.lock(), Entry { at, what: What::Wake(proc, seq) });
    }

    /// Sends `later` at `at`; returns its reference (never 0).
    pub(crate) fn send_at(&self, at: Instant, later: Later) -> u64 {
        let mut state = self.state.lock();
        state.last_ref += 1;
        let id = state.last_ref;
        state.pending.insert(id, later);
        self.push(&mut state, Entry { at, what: What::Send(id) });
        if state.heap.len() > 1024 && state.heap.len() > 2 * state.pending.len() + 64 {
            sweep(&mut state);
        }
        id
    }

    /// Cancels the message with reference `id`: true if it had not been sent.
    pub(crate) fn cancel(&self, id: u64) -> bool {
        self.state.lock().pending.remove(&id).is_some()
    }

    fn push(&self, state: &mut State, entry: Entry) {
        let earliest = state.heap.peek().is_none_or(|top| entry.at < top.at);
        state.heap.push(entry);
        if earliest {
            self.changed.notify_one();
        }
    }

    pub(crate) fn stop(&self) {
        self.state.lock().stopped = true;
        self.changed.notify_all();
    }

    /// The timer thread: fires due timers through `fire` until stopped.
    pub(crate) fn run(&self, fire: impl Fn(Fired)) {
        let mut state = self.state.lock();
        loop {
            if state.stopped {
                return;
            }
            let now = Instant::now();
            match state.heap.peek() {
                Some(top) if top.at <= now => {
                    let e = state.heap.pop().expect("peeked");
                    let fired = match e.what {
                        What::Wake(proc, seq) => (proc.timer_seq.load(Acquire) == seq).then_some(Fired::Wake(proc)),
                        What::Send(id) => state.pending.remove(&id).map(Fired::Send),
                    };
                    if let Some(fired) = fired {
                        drop(state);
                        fire(fired);
                        state = self.state.lock();
                    }
                }
                Some(top) => {
                    let at = top.at;
                    self.changed.wait_until(&mut state, at);
                }
                None => self.changed.wait(&mut state),
            }
        }
    }
}

/// Drops the heap entries of cancelled messages.
fn sweep(state: &mut State) {
    let pending = &state.pending;
    let kept: Vec<Entry> = std::mem::take(&mut state.heap).into_iter().filter(|e| !matches!(e.what, What::Send(id) if !pending.contains_key(&id))).collect();
    state.heap = BinaryHeap::from(kept);
}
