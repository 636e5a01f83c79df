//! Named rendezvous channels (the luaproc model). A send completes only when
//! a receiver has taken the message; a receive waits for a sender. Waiting
//! parties are queued in arrival order.
//!
//! [`ChannelStore`] is the state machine: it queues waiters and returns what
//! it decides, and knows nothing of processes or locks. [`Channels`] is the
//! node's store behind a lock; it carries out the deliveries through the
//! function it is given while still holding the lock, so a waiter that
//! withdraws and is told it was no longer queued finds its completion
//! already delivered.
//!
//! Protocol of one rendezvous:
//!
//! 1. `send` finds a queued receiver: the message is delivered to it
//!    (`Completion::Value`), and the send is complete.
//! 2. Otherwise the sender is queued with its message and blocks.
//! 3. `receive` finds a queued sender: it takes the message, the sender is
//!    told (`Completion::Taken`), and the receive is complete.
//! 4. Otherwise the receiver is queued (or, when asynchronous, gets nothing).
//! 5. `delete` removes the name; every queued waiter is told `Deleted`.
//! 6. A waiter that can no longer wait withdraws; `withdraw` says whether it
//!    was still queued (if not, its completion was delivered).

use std::collections::{HashMap, VecDeque};

use parking_lot::Mutex;

use crate::waiting::{Completion, Delivery, Waiter};
use crate::{Error, Message};

/// What `send` decided.
#[derive(Debug, PartialEq)]
pub enum Sent {
    /// A receiver was waiting: it gets the message.
    Delivered(Delivery),
    /// The sender waits for a receiver.
    Queued,
}

/// What `receive` decided.
#[derive(Debug, PartialEq)]
pub enum Received {
    /// A sender was waiting: here is its message, and its notice.
    Got(Message, Delivery),
    /// The receiver waits for a sender.
    Queued,
    /// Nothing waiting, and the receiver did not want to wait.
    Empty,
}

#[derive(Default)]
struct Queues {
    senders: VecDeque<(Waiter, Message)>,
    receivers: VecDeque<Waiter>,
}

/// The channels of a node, as a state machine.
#[derive(Default)]
pub struct ChannelStore {
    map: HashMap<Box<[u8]>, Queues>,
}

impl ChannelStore {
    /// Creates a channel; false when the name is taken.
    pub fn create(&mut self, name: &[u8]) -> bool {
        if self.map.contains_key(name) {
            return false;
        }
        self.map.insert(name.into(), Queues::default());
        true
    }

    fn queues(&mut self, name: &[u8]) -> Result<&mut Queues, Error> {
        self.map.get_mut(name).ok_or(Error::NoSuchChannel)
    }

    /// Steps 1 and 2.
    pub fn send(&mut self, name: &[u8], sender: Waiter, msg: Message) -> Result<Sent, Error> {
        let q = self.queues(name)?;
        Ok(match q.receivers.pop_front() {
            Some(receiver) => Sent::Delivered((receiver, Completion::Value(msg))),
            None => {
                q.senders.push_back((sender, msg));
                Sent::Queued
            }
        })
    }

    /// Steps 3 and 4.
    pub fn receive(&mut self, name: &[u8], receiver: Waiter, wait: bool) -> Result<Received, Error> {
        let q = self.queues(name)?;
        Ok(match q.senders.pop_front() {
            Some((sender, msg)) => Received::Got(msg, (sender, Completion::Taken)),
            None if wait => {
                q.receivers.push_back(receiver);
                Received::Queued
            }
            None => Received::Empty,
        })
    }

    /// Step 6: true when `waiter` was still queued on `name` (and now is not).
    pub fn withdraw(&mut self, name: &[u8], waiter: Waiter) -> bool {
        let Ok(q) = self.queues(name) else { return false };
        let before = q.senders.len() + q.receivers.len();
        q.senders.retain(|(w, _)| *w != waiter);
        q.receivers.retain(|w| *w != waiter);
        before != q.senders.len() + q.receivers.len()
    }

    /// Step 5: the notices for everyone who was waiting.
    pub fn delete(&mut self, name: &[u8]) -> Result<Vec<Delivery>, Error> {
        let q = self.map.remove(name).ok_or(Error::NoSuchChannel)?;
        Ok(q.senders.into_iter().map(|(w, _)| w).chain(q.receivers).map(|w| (w, Completion::Deleted)).collect())
    }
}

/// The node's channels: the store behind a lock. Each operation carries out
/// its deliveries with `deliver` before the lock is released.
#[derive(Default)]
pub struct Channels {
    store: Mutex<ChannelStore>,
}

impl Channels {
    pub fn create(&self, name: &[u8]) -> bool {
        self.store.lock().create(name)
    }

    /// Offers a message; true when a receiver took it at once (else the
    /// sender is queued, and told `Taken` or `Deleted` later).
    pub fn send(&self, name: &[u8], sender: Waiter, msg: Message, deliver: impl Fn(Delivery)) -> Result<bool, Error> {
        let mut store = self.store.lock();
        match store.send(name, sender, msg)? {
            Sent::Delivered(d) => {
                deliver(d);
                Ok(true)
            }
            Sent::Queued => Ok(false),
        }
    }

    /// Takes a message (`Ok(Some)`), or queues the receiver unless `wait`
    /// is false (`Ok(None)`).
    pub fn receive(&self, name: &[u8], receiver: Waiter, wait: bool, deliver: impl Fn(Delivery)) -> Result<Option<Message>, Error> {
        let mut store = self.store.lock();
        match store.receive(name, receiver, wait)? {
            Received::Got(msg, d) => {
                deliver(d);
                Ok(Some(msg))
            }
            Received::Queued | Received::Empty => Ok(None),
        }
    }

    pub fn withdraw(&self, name: &[u8], waiter: Waiter) -> bool {
        self.store.lock().withdraw(name, waiter)
    }

    pub fn delete(&self, name: &[u8], deliver: impl Fn(Delivery)) -> Result<(), Error> {
        let mut store = self.store.lock();
        for d in store.delete(name)? {
            deliver(d);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Pid;

    fn w(n: u32) -> Waiter {
        Waiter { pid: Pid::new(0, n, 0), ticket: 1 }
    }

    fn m(b: u8) -> Message {
        Message::from_slice(&[b])
    }

    #[test]
    fn a_rendezvous_either_way_round() {
        let mut st = ChannelStore::default();
        assert!(st.create(b"c") && !st.create(b"c"), "a name is created once");
        // Sender first: it waits, and the receiver's take tells it.
        assert_eq!(st.send(b"c", w(1), m(7)).unwrap(), Sent::Queued);
        assert_eq!(st.receive(b"c", w(2), true).unwrap(), Received::Got(m(7), (w(1), Completion::Taken)));
        // Receiver first: it waits, and the send delivers to it.
        assert_eq!(st.receive(b"c", w(2), true).unwrap(), Received::Queued);
        assert_eq!(st.send(b"c", w(1), m(8)).unwrap(), Sent::Delivered((w(2), Completion::Value(m(8)))));
        assert_eq!(st.receive(b"c", w(2), false).unwrap(), Received::Empty, "an asynchronous receive does not queue");
        assert_eq!(st.send(b"nope", w(1), m(1)), Err(Error::NoSuchChannel));
    }

    #[test]
    fn waiters_are_served_in_arrival_order() {
        let mut st = ChannelStore::default();
        st.create(b"c");
        for n in 1..=3 {
            assert_eq!(st.send(b"c", w(n), m(n as u8)).unwrap(), Sent::Queued);
        }
        for n in 1..=3 {
            assert_eq!(st.receive(b"c", w(9), true).unwrap(), Received::Got(m(n as u8), (w(n), Completion::Taken)));
        }
    }

    #[test]
    fn a_withdrawn_waiter_is_never_served() {
        let mut st = ChannelStore::default();
        st.create(b"c");
        st.receive(b"c", w(1), true).unwrap();
        st.receive(b"c", w(2), true).unwrap();
        assert!(st.withdraw(b"c", w(1)), "it was queued");
        assert!(!st.withdraw(b"c", w(1)), "and now is not");
        assert_eq!(st.send(b"c", w(3), m(5)).unwrap(), Sent::Delivered((w(2), Completion::Value(m(5)))), "the next in line gets it");
        // A sender that withdraws takes its message back with it.
        st.send(b"c", w(4), m(6)).unwrap();
        assert!(st.withdraw(b"c", w(4)));
        assert_eq!(st.receive(b"c", w(2), false).unwrap(), Received::Empty);
        // Once served, withdrawing says so: the completion was delivered.
        st.receive(b"c", w(5), true).unwrap();
        st.send(b"c", w(6), m(1)).unwrap();
        assert!(!st.withdraw(b"c", w(5)));
    }

    #[test]
    fn delete_tells_every_waiter() {
        let mut st = ChannelStore::default();
        st.create(b"c");
        st.send(b"c", w(1), m(1)).unwrap();
        st.send(b"c", w(2), m(2)).unwrap();
        let told = st.delete(b"c").unwrap();
        assert_eq!(told, vec![(w(1), Completion::Deleted), (w(2), Completion::Deleted)]);
        assert_eq!(st.delete(b"c"), Err(Error::NoSuchChannel));
        assert!(st.create(b"c"), "the name is free again");
    }
}
