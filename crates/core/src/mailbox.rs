//! A process's mailbox: messages in arrival order behind a one-byte lock.
//! The oldest message sits inline, in the slot's first cache line; only
//! when a second one arrives before the first is taken do messages go to a
//! deque beside it. A hand-off to a waiting process (the common case: its
//! mailbox is empty) therefore touches one line of the receiver's slot, not
//! also a separately allocated buffer that has long left the caches.
//!
//! Laid out by hand (`repr(C)`, the lock and the inline message first),
//! which is why the lock is a raw one rather than a `Mutex<T>`, whose field
//! order the compiler chooses.

use std::cell::UnsafeCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering::*};

#[cfg(not(all(loom, test)))]
use parking_lot::lock_api::RawMutex as _;

// The count and the lock of the run-state protocol: loom's in a loom test
// build (see `sync`).
use crate::sync::{raw_mutex, AtomicU32, RawMutex};

use crate::Message;

/// 80 bytes: the lock, the flag and the count share the first word, the
/// inline message takes the next 32, the deque and the bytes it holds the
/// last 40 (in the slot's second line, touched only when messages queue up).
#[repr(C)]
pub(crate) struct Mailbox {
    lock: RawMutex,
    /// Whether `later` holds messages: known without touching its line.
    overflow: UnsafeCell<bool>,
    /// Messages in the box; written under the lock, read without it, so
    /// looking into an empty mailbox (every receive that blocks) costs no
    /// atomic read-modify-write.
    queued: AtomicU32,
    next: UnsafeCell<Option<Message>>,
    later: UnsafeCell<VecDeque<Message>>,
    /// Bytes of the messages in `later`; written under the lock, read
    /// without it (a process's memory limit counts them).
    later_bytes: AtomicU64,
}

/// The fields behind the lock, while it is held.
struct Queue<'a> {
    overflow: &'a mut bool,
    next: &'a mut Option<Message>,
    later: &'a mut VecDeque<Message>,
}

// SAFETY: the fields behind `lock` are only touched with it held (see `locked`).
unsafe impl Sync for Mailbox {}
unsafe impl Send for Mailbox {}

impl Mailbox {
    pub(crate) fn new() -> Mailbox {
        Mailbox {
            lock: raw_mutex(),
            overflow: UnsafeCell::new(false),
            queued: AtomicU32::new(0),
            next: UnsafeCell::new(None),
            later: UnsafeCell::new(VecDeque::new()),
            later_bytes: AtomicU64::new(0),
        }
    }

    /// Runs `f` with the queue locked.
    #[inline]
    fn locked<R>(&self, f: impl FnOnce(Queue) -> R) -> R {
        struct Unlock<'a>(&'a RawMutex);
        impl Drop for Unlock<'_> {
            fn drop(&mut self) {
                // SAFETY: locked just below, by this thread.
                unsafe { self.0.unlock() }
            }
        }
        self.lock.lock();
        let _unlock = Unlock(&self.lock);
        // SAFETY: the lock is held until `_unlock` drops, after `f` returns.
        f(unsafe { Queue { overflow: &mut *self.overflow.get(), next: &mut *self.next.get(), later: &mut *self.later.get() } })
    }

    /// Appends `msg` if `accept()` (checked under the lock) allows it and,
    /// when `limit` is given, the messages in the box would then take at
    /// most that many bytes; false when refused, or when there is no memory
    /// for the queue to grow.
    #[inline]
    pub(crate) fn push_if(&self, msg: Message, limit: Option<u64>, accept: impl FnOnce() -> bool) -> bool {
        self.locked(|q| {
            if !accept() {
                return false;
            }
            if let Some(limit) = limit {
                let held = q.next.as_ref().map_or(0, Message::size) as u64 + self.later_bytes.load(Relaxed);
                if held + msg.size() as u64 > limit {
                    return false;
                }
            }
            if q.next.is_none() {
                *q.next = Some(msg);
            } else {
                if q.later.try_reserve(1).is_err() {
                    return false;
                }
                self.later_bytes.store(self.later_bytes.load(Relaxed) + msg.size() as u64, Relaxed);
                q.later.push_back(msg);
                *q.overflow = true;
            }
            self.queued.store(self.queued.load(Relaxed) + 1, Release);
            true
        })
    }

    /// Bytes of the messages queued behind the oldest (read without the lock).
    pub(crate) fn queued_bytes(&self) -> u64 {
        self.later_bytes.load(Relaxed)
    }

    /// `msg` leaves the deque (under the lock).
    #[inline]
    fn left_later(&self, msg: &Message) {
        self.later_bytes.store(self.later_bytes.load(Relaxed).saturating_sub(msg.size() as u64), Relaxed);
    }

    /// Takes the oldest message. An empty box is seen without the lock: a
    /// message arriving meanwhile is followed by a wake-up, as always.
    #[inline]
    pub(crate) fn pop(&self) -> Option<Message> {
        if self.queued.load(Acquire) == 0 {
            return None;
        }
        self.locked(|q| {
            let msg = q.next.take()?;
            if *q.overflow {
                *q.next = q.later.pop_front();
                if let Some(m) = q.next.as_ref() {
                    self.left_later(m);
                }
                *q.overflow = !q.later.is_empty();
            }
            self.queued.store(self.queued.load(Relaxed) - 1, Release);
            Some(msg)
        })
    }

    /// Messages in the box.
    pub(crate) fn len(&self) -> usize {
        self.queued.load(Acquire) as usize
    }

    /// `f` of the message at `index` (0: the oldest), if there is one.
    pub(crate) fn get<R>(&self, index: usize, f: impl FnOnce(&Message) -> R) -> Option<R> {
        if index >= self.len() {
            return None;
        }
        self.locked(|q| match index {
            0 => q.next.as_ref().map(f),
            i => q.later.get(i - 1).map(f),
        })
    }

    /// Takes out the first message at `from` or later for which `pred`
    /// holds; otherwise says how many messages there are.
    pub(crate) fn take_first(&self, from: usize, mut pred: impl FnMut(&Message) -> bool) -> Result<Message, usize> {
        // Read once: a second read could count a message that arrived after
        // the first, which the caller would then never look at.
        let len = self.len();
        if from >= len {
            return Err(len);
        }
        self.locked(|q| {
            let count = q.next.is_some() as usize + q.later.len();
            let found = (from..count).find(|&i| pred(if i == 0 { q.next.as_ref().expect("counted") } else { &q.later[i - 1] }));
            let Some(i) = found else { return Err(count) };
            let msg = if i == 0 {
                let msg = q.next.take().expect("counted");
                *q.next = q.later.pop_front();
                if let Some(m) = q.next.as_ref() {
                    self.left_later(m);
                }
                msg
            } else {
                let msg = q.later.remove(i - 1).expect("counted");
                self.left_later(&msg);
                msg
            };
            *q.overflow = !q.later.is_empty();
            self.queued.store(self.queued.load(Relaxed) - 1, Release);
            Ok(msg)
        })
    }

    /// Drops every message and gives back the deque's memory, running
    /// `then` under the lock (the slot changes hands there).
    pub(crate) fn clear_with(&self, then: impl FnOnce()) {
        let dropped = self.locked(|q| {
            then();
            *q.overflow = false;
            self.later_bytes.store(0, Relaxed);
            self.queued.store(0, Release);
            (q.next.take(), std::mem::take(q.later))
        });
        drop(dropped);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(n: u8) -> Message {
        Message::from_slice(&[n])
    }

    #[test]
    fn messages_come_out_in_arrival_order_across_the_inline_slot() {
        let m = Mailbox::new();
        for round in 0..3u8 {
            for i in 0..5 {
                assert!(m.push_if(msg(round * 10 + i), None, || true));
            }
            for i in 0..5 {
                assert_eq!(m.pop(), Some(msg(round * 10 + i)));
            }
            assert_eq!(m.pop(), None);
        }
        assert!(m.push_if(msg(1), None, || true));
        assert_eq!(m.pop(), Some(msg(1)), "inline alone");
        assert!(m.push_if(msg(2), None, || true));
        assert!(m.push_if(msg(3), None, || true));
        assert_eq!(m.pop(), Some(msg(2)));
        assert!(m.push_if(msg(4), None, || true), "arrives while one waits in the deque");
        assert_eq!(m.pop(), Some(msg(3)));
        assert_eq!(m.pop(), Some(msg(4)));
        assert_eq!(m.pop(), None);
    }

    #[test]
    fn a_message_is_taken_from_anywhere_and_the_rest_keep_their_order() {
        let m = Mailbox::new();
        for i in 0..6 {
            m.push_if(msg(i), None, || true);
        }
        assert_eq!(m.get(3, |x| x.clone()), Some(msg(3)));
        assert_eq!(m.take_first(0, |x| x[0] % 3 == 2), Ok(msg(2)), "the first match");
        assert_eq!(m.take_first(3, |x| x[0] < 3), Err(5), "none at 3 or later: five messages");
        assert_eq!(m.take_first(0, |x| x[0] == 0), Ok(msg(0)), "the inline one");
        assert_eq!(m.len(), 4);
        let rest: Vec<u8> = std::iter::from_fn(|| m.pop()).map(|x| x[0]).collect();
        assert_eq!(rest, vec![1, 3, 4, 5]);
        assert_eq!(m.take_first(0, |_| true), Err(0));
    }

    /// A search that finds nothing says how many messages it looked at, and
    /// the next one starts there: it must never count one that arrived
    /// after it looked (that message would be passed over until another
    /// search started from the beginning, a `receive_match` waiting out its
    /// timeout with its message in the box).
    #[test]
    fn a_search_never_counts_a_message_it_did_not_look_at() {
        let m = std::sync::Arc::new(Mailbox::new());
        let sender = {
            let m = m.clone();
            std::thread::spawn(move || {
                for i in 0..20_000u32 {
                    while m.len() > 0 {
                        std::hint::spin_loop();
                    }
                    assert!(m.push_if(msg(i as u8), None, || true));
                }
            })
        };
        let mut taken = 0;
        while taken < 20_000 {
            // Every message matches: a search from 0 finds one, or looked at none.
            match m.take_first(0, |_| true) {
                Ok(_) => taken += 1,
                Err(counted) => assert_eq!(counted, 0, "a message counted as looked at, not taken"),
            }
        }
        sender.join().unwrap();
    }

    #[test]
    fn a_limit_counts_every_queued_byte() {
        let m = Mailbox::new();
        let big = |n: usize| Message::from_vec(vec![0; n]);
        assert!(m.push_if(big(100), Some(250), || true));
        assert!(m.push_if(big(100), Some(250), || true));
        assert!(!m.push_if(big(100), Some(250), || true), "300 bytes would not fit in 250");
        assert!(m.push_if(big(40), Some(250), || true));
        assert_eq!(m.queued_bytes(), 140, "behind the oldest");
        m.pop();
        assert_eq!(m.queued_bytes(), 40);
        assert!(m.push_if(big(100), Some(250), || true), "room again");
    }

    #[test]
    fn refused_and_cleared_messages_are_gone() {
        let m = Mailbox::new();
        assert!(!m.push_if(msg(1), None, || false));
        assert_eq!(m.pop(), None);
        for i in 0..4 {
            m.push_if(msg(i), None, || true);
        }
        let mut ran = false;
        m.clear_with(|| ran = true);
        assert!(ran);
        assert_eq!(m.pop(), None);
        m.push_if(msg(9), None, || true);
        assert_eq!(m.pop(), Some(msg(9)));
    }
}
