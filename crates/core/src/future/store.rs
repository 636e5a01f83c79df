//! [`Store`]: a node's futures by id: the results computed here and the
//! weight of their handles, replicas of other nodes' results, waiters and
//! the nodes that asked, and the bounded entries other nodes' requests
//! about unknown results may leave.

use std::collections::HashMap;


use crate::waiting::{Completion, Delivery, Waiter};
use crate::Message;
use super::*;

#[derive(Default)]
pub struct Store {
    entries: HashMap<FutureId, Entry>,
    /// Entries only a request of another node made (see `Entry::asked_by`).
    pub(super) provisional: usize,
}

#[derive(Default)]
struct Entry {
    /// The encoded results (`true, values...` or `false, error`), once there.
    value: Option<Message>,
    /// Processes of this node waiting in `get`.
    waiters: Vec<Waiter>,
    /// Nodes (aliases) that asked for a result computed here.
    fetchers: Vec<u16>,
    /// 0: computed here; else the alias of the home of this replica.
    home: u16,
    /// Computed here: weight given out less weight returned.
    balance: i128,
    granted: bool,
    /// A replica whose home has been asked for the value.
    requested: bool,
    /// Not 0: the entry exists only because that node asked about it
    /// (a fetch or a release before the task came).
    asked_by: u16,
}

impl Entry {
    fn abandoned(&self) -> bool {
        self.home == 0 && self.granted && self.balance <= 0
    }
}

/// What a fetch from another node finds.
#[derive(Debug, PartialEq)]
pub enum Fetch {
    Now(Message),
    /// The asking node gets the value when it comes.
    Later,
    /// Unknown here, and not waited for.
    Unknown,
}

/// A value the store let go of: drop it once the store is unlocked.
#[must_use]
pub struct Freed(pub Option<Message>);

/// What `get` finds.
#[derive(Debug, PartialEq)]
pub enum Read {
    Value(Message),
    /// The waiter is queued; `ask` when this node must ask `home` for it
    /// (the first wait on a replica).
    Wait { ask: Option<u16> },
}

/// What a result's arrival decides.
#[derive(Debug, Default, PartialEq)]
pub struct Resolved {
    pub deliveries: Vec<Delivery>,
    /// Nodes to send the value to.
    pub fetchers: Vec<u16>,
}

impl Store {
    /// A task for `id` is about to run here, its handles holding `weight`;
    /// false when all of it was returned already (nobody wants the result).
    pub fn grant(&mut self, id: FutureId, weight: u64) -> bool {
        let e = self.entries.entry(id).or_default();
        if std::mem::take(&mut e.asked_by) != 0 {
            self.provisional -= 1;
        }
        e.balance += weight as i128;
        e.granted = true;
        if e.abandoned() {
            self.remove(id);
            return false;
        }
        true
    }

    /// The entry of `id`, made provisional for node `from` if it is new
    /// (`from` 0: this node's own request makes a lasting one); `None` when
    /// it is new and no more provisional entries may be made.
    fn entry_for(&mut self, id: FutureId, from: u16) -> Option<&mut Entry> {
        if !self.entries.contains_key(&id) && from != 0 {
            if self.provisional >= PROVISIONAL_MAX {
                return None;
            }
            self.provisional += 1;
            self.entries.insert(id, Entry { asked_by: from, ..Entry::default() });
        }
        Some(self.entries.entry(id).or_default())
    }

    fn remove(&mut self, id: FutureId) -> Option<Entry> {
        let e = self.entries.remove(&id)?;
        if e.asked_by != 0 {
            self.provisional -= 1;
        }
        Some(e)
    }

    /// Handles of a result computed here returned `weight`, from node
    /// `from` (0: this one). Weight from another node for a result unknown
    /// here when no more provisional entries may be made is not counted (the
    /// result, if it comes, is then kept until its home ends).
    pub fn release(&mut self, id: FutureId, weight: u64, from: u16) -> Freed {
        let Some(e) = self.entry_for(id, from) else { return Freed(None) };
        e.balance -= weight as i128;
        match e.abandoned() {
            true => Freed(self.remove(id).and_then(|e| e.value)),
            false => Freed(None),
        }
    }

    /// Weight of a hold made here (see [`Store::hold`]) came back home with
    /// a handle; weight for a hold not known here (spent, or forged) is
    /// ignored and leaves nothing behind.
    pub fn release_held(&mut self, id: FutureId, weight: u64) -> Freed {
        match self.entries.contains_key(&id) {
            true => self.release(id, weight, 0),
            false => Freed(None),
        }
    }

    /// Another node is given `weight` of a hold on `value` (a private
    /// space's handle leaving its home: see `dist::carry`): the value is
    /// kept until all weight given out has come back.
    pub fn hold(&mut self, id: FutureId, value: impl FnOnce() -> Message, weight: u64) {
        let e = self.entries.entry(id).or_default();
        e.balance += weight as i128;
        e.granted = true;
        if e.value.is_none() {
            e.value = Some(value());
        }
    }

    /// The result computed here for `id` has come (if nobody wants it any
    /// more, it is handed back in `freed`).
    pub fn resolve(&mut self, id: FutureId, value: Message) -> (Resolved, Freed) {
        let Some(e) = self.entries.get_mut(&id) else { return (Resolved::default(), Freed(Some(value))) };
        let resolved = Resolved { deliveries: e.waiters.drain(..).map(|w| (w, Completion::Value(value.clone()))).collect(), fetchers: std::mem::take(&mut e.fetchers) };
        e.value = Some(value);
        (resolved, Freed(None))
    }

    /// The value of `id` (computed here, or a replica of `home`'s), or
    /// `waiter` queued for it.
    pub fn read_or_wait(&mut self, id: FutureId, home: u16, waiter: Waiter) -> Read {
        let e = self.entries.entry(id).or_insert_with(|| Entry { home, ..Entry::default() });
        if let Some(v) = &e.value {
            return Read::Value(v.clone());
        }
        e.waiters.push(waiter);
        let ask = (e.home != 0 && !std::mem::replace(&mut e.requested, true)).then_some(e.home);
        Read::Wait { ask }
    }

    /// A replica of `home`'s result `id` is wanted: `Some(home)` if this node
    /// has not asked for it yet (and now must).
    pub fn prefetch(&mut self, id: FutureId, home: u16) -> Option<u16> {
        let e = self.entries.entry(id).or_insert_with(|| Entry { home, ..Entry::default() });
        (e.home != 0 && e.value.is_none() && !std::mem::replace(&mut e.requested, true)).then_some(e.home)
    }

    /// The value of `id`, if it is here.
    pub fn value(&self, id: FutureId) -> Option<Message> {
        self.entries.get(&id)?.value.clone()
    }

    /// Whether the value of `id` is here.
    pub fn is_ready(&self, id: FutureId) -> bool {
        self.entries.get(&id).is_some_and(|e| e.value.is_some())
    }

    /// Whether a task computing `id` here is still wanted.
    pub fn is_wanted(&self, id: FutureId) -> bool {
        self.entries.get(&id).is_none_or(|e| !e.abandoned())
    }

    /// `waiter` no longer waits.
    pub fn cancel(&mut self, id: FutureId, waiter: Waiter) {
        if let Some(e) = self.entries.get_mut(&id) {
            e.waiters.retain(|w| *w != waiter);
        }
    }

    /// Node `from` asks for the result computed here for `id`: the value
    /// now, or later, when it comes (`Fetch::Later`), or never: it is
    /// unknown here and no more provisional entries may be made.
    pub fn fetch(&mut self, id: FutureId, from: u16) -> Fetch {
        let Some(e) = self.entry_for(id, from) else { return Fetch::Unknown };
        if let Some(v) = &e.value {
            return Fetch::Now(v.clone());
        }
        if !e.fetchers.contains(&from) {
            e.fetchers.push(from);
        }
        Fetch::Later
    }

    /// The value of the replica `id` came from its home (unwanted, it is
    /// handed back).
    pub fn fill(&mut self, id: FutureId, value: Message) -> (Vec<Delivery>, Freed) {
        match self.entries.get_mut(&id) {
            Some(e) if e.home != 0 && e.value.is_none() => {
                let deliveries = e.waiters.drain(..).map(|w| (w, Completion::Value(value.clone()))).collect();
                e.value = Some(value);
                (deliveries, Freed(None))
            }
            _ => (Vec::new(), Freed(Some(value))),
        }
    }

    /// This node holds no handle to the replica `id` any more.
    pub fn drop_replica(&mut self, id: FutureId) -> Freed {
        match self.entries.get(&id).is_some_and(|e| e.home != 0) {
            true => Freed(self.remove(id).and_then(|e| e.value)),
            false => Freed(None),
        }
    }

    /// The node `home` was lost: the replicas of its results that had not
    /// come get `lost` (an encoded error), it asks for nothing more, and
    /// what only its requests made here is forgotten.
    pub fn home_lost(&mut self, home: u16, lost: &Message) -> Vec<Delivery> {
        let mut deliveries = Vec::new();
        for e in self.entries.values_mut() {
            e.fetchers.retain(|&f| f != home);
            if e.home == home && e.value.is_none() {
                deliveries.extend(e.waiters.drain(..).map(|w| (w, Completion::Value(lost.clone()))));
                e.value = Some(lost.clone());
            }
        }
        // Entries made for requests of the lost node alone; one that other
        // nodes have asked about since stays theirs.
        let asked: Vec<FutureId> = self.entries.iter().filter(|(_, e)| e.asked_by == home && e.fetchers.is_empty()).map(|(id, _)| *id).collect();
        for id in asked {
            self.remove(id);
        }
        deliveries
    }

    /// Entries held (results and replicas).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}
