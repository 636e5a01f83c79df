//! Deadlines for blocked processes (`receive` with a timeout, `sleep`). One
//! thread sleeps until the earliest deadline and then notifies its process.
//! A timer is only a wake-up hint: the process re-checks its own deadline. A
//! process arming a new timer bumps its `timer_seq`, so earlier timers of the
//! same process fire into nothing instead of causing spurious wake-ups.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::atomic::Ordering::*;
use std::time::Instant;

use parking_lot::{Condvar, Mutex};

use crate::process::Process;

struct Entry {
    at: Instant,
    seq: u64,
    proc: &'static Process,
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
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

#[derive(Default)]
pub(crate) struct Timers {
    heap: Mutex<(BinaryHeap<Entry>, bool)>,
    changed: Condvar,
}

impl Timers {
    pub(crate) fn arm(&self, proc: &'static Process, at: Instant) {
        let seq = proc.timer_seq.fetch_add(1, AcqRel) + 1;
        let mut heap = self.heap.lock();
        let earliest = heap.0.peek().is_none_or(|top| at < top.at);
        heap.0.push(Entry { at, seq, proc });
        if earliest {
            self.changed.notify_one();
        }
    }

    pub(crate) fn stop(&self) {
        self.heap.lock().1 = true;
        self.changed.notify_all();
    }

    /// The timer thread: fires due timers through `wake` until stopped.
    pub(crate) fn run(&self, wake: impl Fn(&'static Process)) {
        let mut guard = self.heap.lock();
        loop {
            if guard.1 {
                return;
            }
            let now = Instant::now();
            match guard.0.peek() {
                Some(top) if top.at <= now => {
                    let e = guard.0.pop().expect("peeked");
                    if e.proc.timer_seq.load(Acquire) == e.seq {
                        drop(guard);
                        wake(e.proc);
                        guard = self.heap.lock();
                    }
                }
                Some(top) => {
                    let at = top.at;
                    self.changed.wait_until(&mut guard, at);
                }
                None => self.changed.wait(&mut guard),
            }
        }
    }
}
