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

mod store;
#[cfg(test)]
mod tests;

pub use store::*;

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use crate::waiting::{Delivery, Waiter};
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
            self.service::<crate::dist::futures::Results>().release(self, home, id, weight);
        }
    }

    /// The value of the future, or `waiter` queued for it (asking its home
    /// node when this is the first wait here for another node's result).
    pub fn future_read(&self, ticket: &Ticket, waiter: Waiter) -> Read {
        let read = self.futures().with(|st| st.read_or_wait(ticket.id, ticket.home, waiter));
        if let Read::Wait { ask: Some(home) } = read {
            match self.transport() {
                Some(_) => self.service::<crate::dist::futures::Results>().fetch(self, home, ticket.id),
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
            match self.transport() {
                Some(_) => self.service::<crate::dist::futures::Results>().fetch(self, home, ticket.id),
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
        for node in resolved.fetchers {
            self.service::<crate::dist::futures::Results>().fetched(self, node, id, value.clone());
        }
    }

    /// Node `from` asks for the result computed here for `id`.
    pub fn future_fetch(&self, from: u16, id: FutureId) {
        let remote = self.service::<crate::dist::futures::Results>();
        match self.futures().with(|st| st.fetch(id, from)) {
            Fetch::Now(value) => remote.fetched(self, from, id, value),
            Fetch::Later => {}
            Fetch::Unknown => remote.fetched(self, from, id, failure("no such result on its node (too many requests for unknown results there)")),
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
