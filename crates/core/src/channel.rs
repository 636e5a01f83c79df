//! Named rendezvous channels (the luaproc model). A send completes only when
//! a receiver has taken the message; a receive waits for a sender. Waiting
//! parties are queued in arrival order; each waiter owns a [`Handoff`] that
//! its partner fills in and then wakes it through.
//!
//! Protocol of one rendezvous:
//!
//! 1. `send` finds a queued receiver: the message goes into the receiver's
//!    hand-off, the receiver is woken, and the send is complete.
//! 2. Otherwise the sender queues a hand-off holding its message and blocks.
//! 3. `receive` finds a queued sender: it takes the message, marks the
//!    sender's hand-off done, wakes the sender, and returns the message.
//! 4. Otherwise the receiver queues an empty hand-off and blocks (or, when
//!    asynchronous, returns nothing at once).
//! 5. `delete` removes the name and marks every queued hand-off deleted.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::process::Process;
use crate::Message;
use crate::Error;

/// What a waiting party learns when it looks at its hand-off.
#[derive(Debug, PartialEq)]
pub enum Handed {
    /// Still waiting for a partner.
    Waiting,
    /// Done: for a receiver, the message; for a sender, `None`.
    Done(Option<Message>),
    /// The channel was deleted while waiting.
    Deleted,
}

pub struct Handoff {
    proc: &'static Process,
    slot: Mutex<Slot>,
}

enum Slot {
    Waiting(Option<Message>),
    Done(Option<Message>),
    Deleted,
}

impl Handoff {
    fn new(proc: &'static Process, msg: Option<Message>) -> Arc<Handoff> {
        Arc::new(Handoff { proc, slot: Mutex::new(Slot::Waiting(msg)) })
    }

    /// Takes the outcome if there is one.
    pub fn poll(&self) -> Handed {
        let mut slot = self.slot.lock();
        match &mut *slot {
            Slot::Waiting(_) => Handed::Waiting,
            Slot::Deleted => Handed::Deleted,
            Slot::Done(msg) => Handed::Done(msg.take()),
        }
    }
}

pub enum SendOutcome {
    Delivered,
    Wait(Arc<Handoff>),
}

pub enum ReceiveOutcome {
    Got(Message),
    Wait(Arc<Handoff>),
    Empty,
}

#[derive(Default)]
struct Queues {
    senders: VecDeque<Arc<Handoff>>,
    receivers: VecDeque<Arc<Handoff>>,
}

/// One channel: its queues of waiting parties.
type Channel = Arc<Mutex<Queues>>;

#[derive(Default)]
pub struct Channels {
    map: Mutex<HashMap<Box<[u8]>, Channel>>,
}

impl Channels {
    /// Creates a channel; false when the name is taken.
    pub fn create(&self, name: &[u8]) -> bool {
        let mut map = self.map.lock();
        if map.contains_key(name) {
            return false;
        }
        map.insert(name.into(), Arc::default());
        true
    }

    fn get(&self, name: &[u8]) -> Result<Channel, Error> {
        self.map.lock().get(name).cloned().ok_or(Error::NoSuchChannel)
    }

    /// Offers a message; `wake` is called for a receiver that must run.
    pub fn send(&self, name: &[u8], me: &'static Process, msg: Message, wake: impl Fn(&'static Process)) -> Result<SendOutcome, Error> {
        let chan = self.get(name)?;
        let mut q = chan.lock();
        if let Some(receiver) = q.receivers.pop_front() {
            drop(q);
            *receiver.slot.lock() = Slot::Done(Some(msg));
            wake(receiver.proc);
            return Ok(SendOutcome::Delivered);
        }
        let handoff = Handoff::new(me, Some(msg));
        q.senders.push_back(handoff.clone());
        Ok(SendOutcome::Wait(handoff))
    }

    /// Takes a message, or queues the caller (unless `wait` is false).
    pub fn receive(&self, name: &[u8], me: &'static Process, wait: bool, wake: impl Fn(&'static Process)) -> Result<ReceiveOutcome, Error> {
        let chan = self.get(name)?;
        let mut q = chan.lock();
        if let Some(sender) = q.senders.pop_front() {
            drop(q);
            let msg = {
                let mut slot = sender.slot.lock();
                match std::mem::replace(&mut *slot, Slot::Done(None)) {
                    Slot::Waiting(Some(msg)) => msg,
                    _ => unreachable!("queued senders always hold their message"),
                }
            };
            wake(sender.proc);
            return Ok(ReceiveOutcome::Got(msg));
        }
        if !wait {
            return Ok(ReceiveOutcome::Empty);
        }
        let handoff = Handoff::new(me, None);
        q.receivers.push_back(handoff.clone());
        Ok(ReceiveOutcome::Wait(handoff))
    }

    /// Takes a waiting party's hand-off out of its queue (a caller that can
    /// no longer wait); returns what it had been handed meanwhile.
    pub fn withdraw(&self, name: &[u8], h: &Arc<Handoff>) -> Handed {
        if let Ok(chan) = self.get(name) {
            let mut q = chan.lock();
            q.senders.retain(|x| !Arc::ptr_eq(x, h));
            q.receivers.retain(|x| !Arc::ptr_eq(x, h));
        }
        h.poll()
    }

    /// Deletes a channel and releases everyone waiting on it.
    pub fn delete(&self, name: &[u8], wake: impl Fn(&'static Process)) -> Result<(), Error> {
        let chan = self.map.lock().remove(name).ok_or(Error::NoSuchChannel)?;
        let q = std::mem::take(&mut *chan.lock());
        for h in q.senders.into_iter().chain(q.receivers) {
            *h.slot.lock() = Slot::Deleted;
            wake(h.proc);
        }
        Ok(())
    }
}
