//! Futures: results that stay on the node that computed them (their
//! *home*) until someone asks, and then move straight to the asking node,
//! once per node. [`Store`] is the node's store of results, a state machine
//! like the tuple store: it queues waiters and returns its decisions, and
//! the runtime carries them out (`Runtime::future_*`, below).
//!
//! A store holds two kinds of entries:
//!
//! - results computed here, with the *balance* of the weight their handles
//!   hold (weighted reference counting): a new future's first handle gets
//!   [`FULL_WEIGHT`]; a handle leaving for another node takes half its
//!   holder's weight with it, so no message goes home when handles are
//!   copied; a node whose last handle goes returns what it held. Once all
//!   weight is back, nothing can ask for the result any more and it is
//!   freed (or, if it is still being computed, dropped when it comes).
//!   Weight returned before it was given (the releases of another node can
//!   overtake the task on its way) makes the balance negative for a while;
//!   only a balance that reaches zero after the grant frees the entry.
//! - *replicas*: another node's result, asked for once by the first local
//!   caller of `get` and shared by every later one on this node, kept while
//!   this node holds a handle to it.
//!
//! A [`Ticket`] is a node's hold on one future: every handle to it on this
//! node shares one, and one weight.
//!
//! A result may hold futures itself, whose tickets go back to this store
//! when they drop: so the store never drops a value; the operations that
//! free one hand it back ([`Freed`]), to be dropped after the store's lock.
//!
//! Another node may ask for a result, or return weight, before the task
//! that computes it has arrived here (its messages take another link). What
//! such a request leaves is *provisional*: at most [`PROVISIONAL_MAX`]
//! entries in all, each forgotten when the node that asked is lost, so
//! requests about results that never come cannot make the node grow.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use crate::waiting::{Completion, Delivery, Waiter};
use crate::wire::{Reader, Writer};
use crate::{Message, Runtime};

/// Names a future cluster-wide: the node incarnation that created it (a
/// random number) and a count there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FutureId {
    pub origin: u64,
    pub seq: u64,
}

/// The weight of a new future's first handle: enough to be halved 62 times
/// on its way from node to node.
pub const FULL_WEIGHT: u64 = 1 << 62;

/// Entries that requests of other nodes about unknown results may leave.
pub const PROVISIONAL_MAX: usize = 16 << 10;

#[derive(Default)]
pub struct Store {
    entries: HashMap<FutureId, Entry>,
    /// Entries only a request of another node made (see `Entry::asked_by`).
    provisional: usize,
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
    /// space's handle leaving its home: see `remote::carry`): the value is
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

/// A node's hold on one future: its id, its home (a node alias, 0 for this
/// node) and the weight this node holds. Dropping it returns the weight.
pub struct Ticket {
    pub id: FutureId,
    pub home: u16,
    weight: AtomicU64,
    rt: Runtime,
}

impl Ticket {
    /// Half this node's weight, for a handle leaving for another node (0
    /// when there is no more to halve: that handle then keeps nothing alive).
    pub fn split(&self) -> u64 {
        let mut w = self.weight.load(Relaxed);
        loop {
            let half = w / 2;
            match self.weight.compare_exchange_weak(w, w - half, AcqRel, Relaxed) {
                Ok(_) => return half,
                Err(now) => w = now,
            }
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let weight = *self.weight.get_mut();
        self.rt.ticket_dropped(self.id, self.home, weight);
    }
}

/// A node's futures: its store, its tickets, and where ids come from.
pub struct Futures {
    store: Mutex<Store>,
    tickets: Mutex<HashMap<FutureId, Weak<Ticket>>>,
    /// Replicas kept a moment after they came (see [`Futures::keep`]).
    kept: Mutex<VecDeque<(Instant, Arc<Ticket>)>>,
    origin: u64,
    seq: AtomicU64,
}

/// How long, and how many, fetched replicas are kept past their last handle.
const KEEP_FOR: Duration = Duration::from_secs(1);
const KEEP_MAX: usize = 8;

impl Futures {
    pub(crate) fn new(origin: u64) -> Futures {
        Futures { store: Mutex::new(Store::default()), tickets: Mutex::new(HashMap::new()), kept: Mutex::new(VecDeque::new()), origin, seq: AtomicU64::new(0) }
    }

    /// Keeps the replica of `ticket` on this node for a moment even if its
    /// last handle here goes: processes whose handles arrive a little later
    /// (the answers to several readers of one tuple, on a loaded node) find
    /// it here instead of fetching it again. At most [`KEEP_MAX`], for
    /// [`KEEP_FOR`].
    pub fn keep(&self, ticket: Arc<Ticket>) {
        let mut kept = self.kept.lock();
        kept.push_back((Instant::now(), ticket));
        let over = kept.len().saturating_sub(KEEP_MAX);
        let gone: Vec<_> = kept.drain(..over).collect();
        drop(kept);
        drop(gone);
    }

    /// Lets go of the replicas kept longer than [`KEEP_FOR`] (all of them
    /// when `all`: the node stops).
    pub(crate) fn trim_kept(&self, all: bool) {
        let now = Instant::now();
        let mut kept = self.kept.lock();
        let old = kept.iter().take_while(|(at, _)| all || now - *at >= KEEP_FOR).count();
        let gone: Vec<_> = kept.drain(..old).collect();
        drop(kept);
        drop(gone);
    }

    /// Runs `op` on the store.
    pub fn with<R>(&self, op: impl FnOnce(&mut Store) -> R) -> R {
        op(&mut self.store.lock())
    }
}

/// A task for the pool, as the Lua layer encodes it: its first three values
/// are the future's origin, count and weight (integers).
pub fn task_head(task: &[u8]) -> Option<(FutureId, u64)> {
    let (mut r, count) = Reader::message(task).ok()?;
    if count < 3 {
        return None;
    }
    let mut int = || match r.tag().ok()? {
        crate::wire::Tag::Int => r.int().ok(),
        _ => None,
    };
    let (origin, seq, weight) = (int()?, int()?, int()?);
    Some((FutureId { origin: origin as u64, seq: seq as u64 }, weight as u64))
}

/// The encoded results of a task that failed with `why`.
pub fn failure(why: &str) -> Message {
    let mut w = Writer::message(2);
    w.tag(crate::wire::Tag::False);
    w.str(why.as_bytes());
    Message::from_vec(w.finish_small())
}

impl Runtime {
    /// A fresh future whose result will be computed on the node `home` (an
    /// alias, 0 for this node), and this node's first handle to it.
    pub fn new_future(&self) -> (FutureId, u64) {
        let f = self.futures();
        (FutureId { origin: f.origin, seq: f.seq.fetch_add(1, Relaxed) + 1 }, FULL_WEIGHT)
    }

    /// This node's ticket for `id` with `weight` more (a handle arrived, or
    /// was made here): the one every handle here shares.
    pub fn ticket(&self, id: FutureId, home: u16, weight: u64) -> Arc<Ticket> {
        let mut tickets = self.futures().tickets.lock();
        if let Some(t) = tickets.get(&id).and_then(Weak::upgrade) {
            t.weight.fetch_add(weight, AcqRel);
            return t;
        }
        let t = Arc::new(Ticket { id, home, weight: AtomicU64::new(weight), rt: self.clone() });
        tickets.insert(id, Arc::downgrade(&t));
        t
    }

    fn ticket_dropped(&self, id: FutureId, home: u16, weight: u64) {
        let f = self.futures();
        let freed = {
            let mut tickets = f.tickets.lock();
            // A handle that arrived after this ticket's last one went, but
            // before this drop got here, made a new ticket: the replica is
            // that one's now, and its readers may be waiting in it. The lock
            // stays held so that no ticket is made between the look and the
            // drop.
            let replaced = tickets.get(&id).is_some_and(|w| w.strong_count() > 0);
            if !replaced {
                tickets.remove(&id);
            }
            match (home, replaced) {
                (0, _) => f.with(|st| st.release(id, weight, 0)),
                (_, false) => f.with(|st| st.drop_replica(id)),
                (_, true) => Freed(None),
            }
        };
        // A freed value may hold tickets, whose drops take the lock again.
        drop(freed);
        if home != 0 {
            if let Some(remote) = self.remote() {
                remote.release(home, id, weight);
            }
        }
    }

    /// The value of the future, or `waiter` queued for it (asking its home
    /// node when this is the first wait here for another node's result).
    pub fn future_read(&self, ticket: &Ticket, waiter: Waiter) -> Read {
        let read = self.futures().with(|st| st.read_or_wait(ticket.id, ticket.home, waiter));
        if let Read::Wait { ask: Some(home) } = read {
            match self.remote() {
                Some(remote) => remote.fetch(home, ticket.id),
                None => self.future_home_lost(home, "this node is not in a cluster"),
            }
        }
        read
    }

    /// Asks the home of another node's result for it, unless asked already.
    pub fn future_prefetch(&self, ticket: &Ticket) {
        if ticket.home == 0 {
            return;
        }
        if let Some(home) = self.futures().with(|st| st.prefetch(ticket.id, ticket.home)) {
            match self.remote() {
                Some(remote) => remote.fetch(home, ticket.id),
                None => self.future_home_lost(home, "this node is not in a cluster"),
            }
        }
    }

    /// The task computing `id` here has ended with `value`: waiters here
    /// get it, and so do the nodes that asked.
    pub fn future_resolve(&self, id: FutureId, value: Message) {
        let (resolved, freed) = self.futures().with(|st| st.resolve(id, value.clone()));
        drop(freed);
        self.complete_all(resolved.deliveries);
        if let Some(remote) = self.remote() {
            for node in resolved.fetchers {
                remote.fetched(node, id, value.clone());
            }
        }
    }

    /// Node `from` asks for the result computed here for `id`.
    pub fn future_fetch(&self, from: u16, id: FutureId) {
        let Some(remote) = self.remote() else { return };
        match self.futures().with(|st| st.fetch(id, from)) {
            Fetch::Now(value) => remote.fetched(from, id, value),
            Fetch::Later => {}
            Fetch::Unknown => remote.fetched(from, id, failure("no such result on its node (too many requests for unknown results there)")),
        }
    }

    /// Node `from` returns `weight` of its handles to the result `id` computed here.
    pub fn future_release(&self, from: u16, id: FutureId, weight: u64) {
        drop(self.futures().with(|st| st.release(id, weight, from)));
    }

    /// The value of another node's result came.
    pub fn future_fill(&self, id: FutureId, value: Message) {
        let (deliveries, freed) = self.futures().with(|st| st.fill(id, value));
        drop(freed);
        self.complete_all(deliveries);
    }

    /// The node `home` is lost: waits for its results end with an error.
    pub fn future_home_lost(&self, home: u16, why: &str) {
        let deliveries = self.futures().with(|st| st.home_lost(home, &failure(why)));
        self.complete_all(deliveries);
    }

    fn complete_all(&self, deliveries: Vec<Delivery>) {
        deliveries.into_iter().for_each(|d| self.complete(d));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Pid;

    const A: FutureId = FutureId { origin: 7, seq: 1 };

    fn waiter(n: u32) -> Waiter {
        Waiter { pid: Pid::new(0, n, 1), ticket: 1 }
    }

    fn msg(b: &[u8]) -> Message {
        Message::from_slice(b)
    }

    #[test]
    fn a_result_is_freed_once_all_weight_is_back() {
        let mut st = Store::default();
        assert!(st.grant(A, 100));
        assert!(st.release(A, 50, 0).0.is_none()); // a node's half
        assert_eq!(st.resolve(A, msg(b"v")).0, Resolved::default());
        assert!(st.is_ready(A));
        assert_eq!(st.release(A, 50, 0).0, Some(msg(b"v")));
        assert!(st.is_empty(), "nobody can ask any more");
        assert_eq!(st.resolve(A, msg(b"late")).1 .0, Some(msg(b"late")), "a value nobody wants is handed back");
    }

    #[test]
    fn releases_that_overtake_the_grant_do_not_free_early() {
        let mut st = Store::default();
        let _ = st.release(A, 30, 3); // another node dropped its handle before the task came
        assert!(st.is_wanted(A));
        assert!(st.grant(A, 100));
        assert!(st.is_wanted(A));
        let _ = st.release(A, 70, 0);
        assert!(st.is_empty());
        // All weight back before the task ran: it need not run.
        let _ = st.release(A, 100, 4);
        assert!(!st.grant(A, 100));
        assert!(st.is_empty());
    }

    #[test]
    fn waiters_and_asking_nodes_get_the_value() {
        let mut st = Store::default();
        st.grant(A, 10);
        assert_eq!(st.read_or_wait(A, 0, waiter(1)), Read::Wait { ask: None });
        assert_eq!(st.fetch(A, 3), Fetch::Later);
        let (r, _) = st.resolve(A, msg(b"v"));
        assert_eq!(r.deliveries, vec![(waiter(1), Completion::Value(msg(b"v")))]);
        assert_eq!(r.fetchers, vec![3]);
        assert_eq!(st.fetch(A, 4), Fetch::Now(msg(b"v")));
        assert_eq!(st.read_or_wait(A, 0, waiter(2)), Read::Value(msg(b"v")));
    }

    #[test]
    fn requests_about_unknown_results_are_bounded_and_go_with_their_node() {
        let mut st = Store::default();
        let id = |seq| FutureId { origin: 9, seq };
        for seq in 0..PROVISIONAL_MAX as u64 {
            let asked = if seq % 2 == 0 { st.fetch(id(seq), 3) == Fetch::Later } else { st.release(id(seq), 5, 3).0.is_none() };
            assert!(asked);
        }
        assert_eq!(st.fetch(id(u64::MAX), 3), Fetch::Unknown, "no more");
        let _ = st.release(id(u64::MAX), 5, 3);
        assert_eq!(st.len(), PROVISIONAL_MAX);
        // A task that comes makes its entry a lasting one.
        assert!(st.grant(id(0), 10));
        assert_eq!(st.fetch(id(u64::MAX), 4), Fetch::Later, "room again");
        // The asking node is lost: what only its requests made goes.
        st.home_lost(3, &failure("lost"));
        assert_eq!(st.len(), 2, "the granted entry, and node 4's request");
        st.home_lost(4, &failure("lost"));
        assert_eq!(st.len(), 1);
        assert_eq!(st.provisional, 0);
    }

    #[test]
    fn a_request_other_nodes_joined_outlives_the_node_that_made_it() {
        let mut st = Store::default();
        assert_eq!(st.fetch(A, 3), Fetch::Later);
        assert_eq!(st.fetch(A, 4), Fetch::Later);
        st.home_lost(3, &failure("lost"));
        assert_eq!(st.len(), 1, "node 4 still waits for the value");
        let (r, _) = st.resolve(A, msg(b"v"));
        assert_eq!(r.fetchers, vec![4]);
    }

    #[test]
    fn weight_back_home_for_an_unknown_hold_leaves_nothing() {
        let mut st = Store::default();
        for seq in 0..1000 {
            assert!(st.release_held(FutureId { origin: 0, seq }, 5).0.is_none());
        }
        assert!(st.is_empty());
        st.hold(A, || msg(b"space"), 10);
        assert!(st.release_held(A, 4).0.is_none());
        assert_eq!(st.release_held(A, 6).0, Some(msg(b"space")));
        assert!(st.is_empty());
    }

    #[test]
    fn a_replica_asks_its_home_once_and_serves_every_waiter() {
        let mut st = Store::default();
        assert_eq!(st.read_or_wait(A, 5, waiter(1)), Read::Wait { ask: Some(5) });
        assert_eq!(st.read_or_wait(A, 5, waiter(2)), Read::Wait { ask: None });
        st.cancel(A, waiter(2));
        assert_eq!(st.fill(A, msg(b"v")).0, vec![(waiter(1), Completion::Value(msg(b"v")))]);
        assert_eq!(st.read_or_wait(A, 5, waiter(3)), Read::Value(msg(b"v")));
        assert_eq!(st.drop_replica(A).0, Some(msg(b"v")));
        assert!(st.is_empty());
    }

    #[test]
    fn a_ticket_dropped_after_a_new_one_was_made_leaves_the_replica_to_it() {
        let rt = Runtime::start(crate::runtime::Config { workers: 1, ..Default::default() }).unwrap();
        let live = rt.ticket(A, 5, 10);
        assert_eq!(rt.futures().with(|st| st.read_or_wait(A, 5, waiter(1))), Read::Wait { ask: Some(5) });
        // The drop of the ticket this one replaced comes late.
        rt.ticket_dropped(A, 5, 4);
        let (deliveries, freed) = rt.futures().with(|st| st.fill(A, msg(b"v")));
        assert!(freed.0.is_none(), "the replica is still wanted");
        assert_eq!(deliveries, vec![(waiter(1), Completion::Value(msg(b"v")))]);
        drop(live);
        assert!(rt.futures().with(|st| st.is_empty()), "the last ticket took the replica with it");
        rt.shutdown();
    }

    #[test]
    fn a_lost_home_fails_its_replicas() {
        let mut st = Store::default();
        st.read_or_wait(A, 5, waiter(1));
        let lost = failure("node lost: b");
        assert_eq!(st.home_lost(5, &lost), vec![(waiter(1), Completion::Value(lost.clone()))]);
        assert_eq!(st.read_or_wait(A, 5, waiter(2)), Read::Value(lost));
    }
}
