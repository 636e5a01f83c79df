//! Deadlines: for blocked processes (`receive` with a timeout, `sleep`),
//! and messages sent later (`send_after`). One thread sleeps until the
//! earliest deadline and then notifies its process, or sends its message.
//! A wake-up is only a hint: the process re-checks its own deadline. A
//! process arming a new timer bumps its `timer_seq`, so earlier timers of the
//! same process fire into nothing instead of causing spurious wake-ups.
//!
//! A deadline later than the one its live timer stands for adds no entry:
//! the live one is moved to it (`State::wanted`) and, when it comes due,
//! goes back into the heap at the later time instead of waking anyone. A
//! server process that waits with a timeout for each request (an HTTP
//! connection between requests) then costs one entry a timeout's length,
//! not one a request (at 86k requests a second, the heap held ~86k stale
//! entries a second deep, and the timer thread took 7% of the node).
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
    /// The deadline each process's live timer stands for now, by the
    /// process's address (only processes with a live timer).
    wanted: HashMap<usize, Instant, crate::hash::FastBuild>,
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
        let mut state = self.state.lock();
        let key = proc as *const Process as usize;
        match state.wanted.get_mut(&key) {
            // The live timer comes first; it moves on to `at` then.
            Some(wanted) if *wanted <= at => *wanted = at,
            _ => {
                let seq = proc.timer_seq.fetch_add(1, AcqRel) + 1;
                state.wanted.insert(key, at);
                self.push(&mut state, Entry { at, what: What::Wake(proc, seq) });
            }
        }
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
                        What::Wake(proc, seq) if proc.timer_seq.load(Acquire) == seq => {
                            let key = proc as *const Process as usize;
                            match state.wanted.get(&key) {
                                // Moved on to a later deadline: back in the heap.
                                Some(&wanted) if wanted > e.at => {
                                    state.heap.push(Entry { at: wanted, what: e.what });
                                    None
                                }
                                _ => {
                                    state.wanted.remove(&key);
                                    Some(Fired::Wake(proc))
                                }
                            }
                        }
                        What::Wake(..) => None,
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

#[cfg(test)]
mod tests {
    //! The timer thread driven for real, with short deadlines: which
    //! processes it wakes, and when (each wake awaited, none slept for).
    use super::*;
    use std::sync::{mpsc, Arc};
    use std::time::Duration;

    fn process(index: u32) -> &'static Process {
        Box::leak(Box::new(Process::vacant(0, index)))
    }

    /// Runs the timers on a thread; each wake arrives on the channel, with
    /// when it came.
    fn running() -> (Arc<Timers>, mpsc::Receiver<(u32, Instant)>, std::thread::JoinHandle<()>) {
        let timers = Arc::new(Timers::default());
        let (tx, rx) = mpsc::channel();
        let t = timers.clone();
        let thread = std::thread::spawn(move || {
            t.run(|fired| {
                if let Fired::Wake(p) = fired {
                    let _ = tx.send((p.index(), Instant::now()));
                }
            })
        });
        (timers, rx, thread)
    }

    const BOUND: Duration = Duration::from_secs(10);

    #[test]
    fn a_later_deadline_moves_the_live_timer_and_wakes_once_at_the_end() {
        let (timers, woken, thread) = running();
        let p = process(1);
        let start = Instant::now();
        for k in 1..=50u64 {
            timers.arm(p, start + Duration::from_millis(20 + k));
        }
        assert_eq!(timers.state.lock().heap.len(), 1, "one entry for fifty deadlines, each later");
        let (index, at) = woken.recv_timeout(BOUND).expect("woken");
        assert_eq!(index, 1);
        assert!(at >= start + Duration::from_millis(70), "not before the last deadline");
        let state = timers.state.lock();
        assert!(state.heap.is_empty() && state.wanted.is_empty(), "nothing left to wake it again");
        drop(state);
        timers.stop();
        thread.join().unwrap();
    }

    #[test]
    fn an_earlier_deadline_still_wakes_at_its_time() {
        let (timers, woken, thread) = running();
        let (p, q) = (process(2), process(3));
        let start = Instant::now();
        timers.arm(p, start + Duration::from_secs(30));
        timers.arm(p, start + Duration::from_millis(10));
        timers.arm(q, start + Duration::from_millis(15));
        assert_eq!(woken.recv_timeout(BOUND).expect("p woken").0, 2);
        assert_eq!(woken.recv_timeout(BOUND).expect("q woken").0, 3);
        let state = timers.state.lock();
        assert!(state.wanted.is_empty(), "nothing kept for fired timers");
        assert_eq!(state.heap.len(), 1, "only p's stale 30 s entry, which wakes nobody");
        drop(state);
        timers.stop();
        thread.join().unwrap();
    }
}
