//! Counters of a node's traffic, cheap enough for the hot path: each thread
//! counts in a counter of its own (a plain load and store, no atomic
//! read-modify-write, no line shared with another thread), and a reader
//! sums them. Counters of threads that ended stay in the sum. Only what is
//! read is summed, so a node nobody watches pays one add per message.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use parking_lot::Mutex;

/// One thread's counters, on a line of their own.
#[repr(align(64))]
#[derive(Default)]
struct Counters {
    messages: AtomicU64,
}

/// Every thread's counters (leaked: a thread's count outlives it).
static ALL: Mutex<Vec<&'static Counters>> = Mutex::new(Vec::new());

thread_local! {
    static MINE: &'static Counters = {
        let c: &'static Counters = Box::leak(Box::default());
        ALL.lock().push(c);
        c
    };
}

/// Counts one message delivered to a process of this node.
#[inline]
pub fn message() {
    MINE.with(|c| c.messages.store(c.messages.load(Relaxed) + 1, Relaxed));
}

/// Messages delivered to processes of this node since it started.
pub fn messages() -> u64 {
    ALL.lock().iter().map(|c| c.messages.load(Relaxed)).sum()
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_threads_messages_are_summed() {
        let before = super::messages();
        super::message();
        std::thread::spawn(|| (0..3).for_each(|_| super::message())).join().unwrap();
        assert!(super::messages() >= before + 4);
    }
}
