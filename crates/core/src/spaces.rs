//! The tuple spaces of a node, and how a handle names a space anywhere in
//! the cluster. [`Space`] is a store (`linda::Store`) behind a lock;
//! [`Spaces`] is the node's table of them; [`SpaceRef`] is what a handle
//! holds: a name, and where the space lives once that is known.
//!
//! A named space lives on one node, its home, for the life of that node: the
//! first node to use the name claims it cluster-wide (`linda_remote`), and
//! the others send it their operations. A private space (`linda.new()`)
//! lives on the node that made it while something holds it (a handle in
//! some process, a message or a tuple carrying one); the table knows it only
//! weakly. Handles on other nodes hold it the way handles hold a future's
//! result (`dist::carry`): by weight, which each node that had some
//! returns when its last handle goes, so the space goes too once the
//! last handle anywhere has.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use crate::linda::{Store, Text, Tuple};
use crate::waiting::Delivery;
use crate::Pid;

type Fast = crate::hash::FastBuild;

/// What the spaces of a node hold in all, and how much they may
/// (`--max-space-memory`; 0: no limit).
#[derive(Default)]
pub struct Budget {
    used: AtomicU64,
    limit: AtomicU64,
}

impl Budget {
    pub fn used(&self) -> u64 {
        self.used.load(Relaxed)
    }
}

/// Why an `out` was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// It would pass the node's limit.
    Full,
    /// The space has moved to another node: the caller looks for it again.
    Moved,
}

/// A space of the node: its store behind a lock, and the node's budget it
/// counts against. `with` runs an operation on the store, and `out`
/// carries out its deliveries before the lock is released.
#[derive(Default)]
pub struct Space {
    store: Mutex<Store>,
    budget: Arc<Budget>,
}

impl Space {
    /// Runs `op` on the store (what it frees goes back to the budget).
    pub fn with<R>(&self, op: impl FnOnce(&mut Store) -> R) -> R {
        let mut store = self.store.lock();
        let before = store.bytes();
        let result = op(&mut store);
        let after = store.bytes();
        if after != before {
            self.budget.used.fetch_add(after.wrapping_sub(before), Relaxed);
        }
        result
    }

    /// `out`, carrying out its deliveries with `deliver`; refused, and the
    /// tuple not taken, when holding it would pass the node's limit or the
    /// space has moved.
    pub fn out(&self, tuple: Tuple, deliver: impl Fn(Delivery)) -> Result<(), Refused> {
        self.put(tuple, deliver, self.budget.limit.load(Relaxed))
    }

    /// Puts back a tuple this space held a moment ago (an operation that
    /// took it and failed): whatever the limit says, nothing accepted is lost.
    pub fn put_back(&self, tuple: Tuple, deliver: impl Fn(Delivery)) -> Result<(), Refused> {
        self.put(tuple, deliver, 0)
    }

    /// Adds `tuple` unless the space's node would then hold more than
    /// `limit` bytes (0: no limit).
    fn put(&self, tuple: Tuple, deliver: impl Fn(Delivery), limit: u64) -> Result<(), Refused> {
        let weight = tuple.weight();
        if limit > 0 && self.budget.used.fetch_add(weight, Relaxed) + weight > limit {
            self.budget.used.fetch_sub(weight, Relaxed);
            return Err(Refused::Full);
        }
        let mut store = self.store.lock();
        if store.is_moved() {
            drop(store);
            if limit > 0 {
                self.budget.used.fetch_sub(weight, Relaxed);
            }
            return Err(Refused::Moved);
        }
        let before = store.bytes();
        let deliveries = store.out(tuple);
        // Held, it counts what the check reserved; handed to a taker, nothing.
        let held = store.bytes() - before;
        drop(store);
        match limit {
            0 => self.budget.used.fetch_add(held, Relaxed),
            _ => self.budget.used.fetch_sub(weight - held, Relaxed),
        };
        for d in deliveries {
            deliver(d);
        }
        Ok(())
    }
}

impl Drop for Space {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.store.get_mut().bytes(), Relaxed);
    }
}

/// Where a space lives, as a handle knows it.
#[derive(Clone)]
pub enum Home {
    /// A named space nobody has looked up yet.
    Unresolved,
    /// This node: the space's serial here, and the space.
    Here(u64, Arc<Space>),
    /// The node with this alias; for a private space, its serial there.
    There(u16, u64),
    /// A private space that was gone when its handle arrived.
    Gone,
}

/// A space as a handle names it.
#[derive(Clone)]
pub struct SpaceRef {
    /// The name of a named space.
    pub name: Option<Text>,
    pub home: Home,
    /// For another node's private space: this node's hold on it (every
    /// handle here shares one; when the last goes, the weight goes home).
    pub hold: Option<Arc<crate::future::Ticket>>,
}

impl SpaceRef {
    /// What errors call it: the name, or `private space N.S`.
    pub fn describe(&self) -> String {
        match (&self.name, &self.home) {
            (Some(name), _) => String::from_utf8_lossy(name).into_owned(),
            (None, Home::Here(serial, _)) => format!("private space 0.{serial}"),
            (None, Home::There(alias, serial)) => format!("private space {alias}.{serial}"),
            (None, _) => "private space".into(),
        }
    }

    /// Whether two handles name the same space.
    pub fn same(&self, other: &SpaceRef) -> bool {
        match (&self.name, &other.name, &self.home, &other.home) {
            (Some(a), Some(b), ..) => a == b,
            (None, None, Home::Here(a, _), Home::Here(b, _)) => a == b,
            (None, None, Home::There(n, a), Home::There(m, b)) => (n, a) == (m, b),
            _ => false,
        }
    }
}

/// A named space: its serial and the space.
type Named = (u64, Arc<Space>);

/// A space as [`Spaces::all`] lists it: serial, name if it has one, the space.
pub type Listed = (u64, Option<Box<[u8]>>, Arc<Space>);

/// All spaces of a node.
#[derive(Default)]
pub struct Spaces {
    named: Mutex<HashMap<Box<[u8]>, Named>>,
    by_id: Mutex<ById>,
    next_id: AtomicU64,
    /// The process that holds this node's claims on space names (see `linda_remote`).
    pub(crate) keeper: Mutex<Option<Pid>>,
    budget: Arc<Budget>,
}

#[derive(Default)]
struct ById {
    spaces: HashMap<u64, Weak<Space>, Fast>,
    /// Entries at the last sweep of dead ones; the next comes at twice as many.
    swept_at: usize,
}

impl Spaces {
    /// The space of this node with this name, created on first use, and its serial.
    pub fn open(&self, name: &[u8]) -> (u64, Arc<Space>) {
        let mut named = self.named.lock();
        if let Some((id, space)) = named.get(name) {
            return (*id, space.clone());
        }
        let (id, space) = self.create();
        named.insert(name.into(), (id, space.clone()));
        (id, space)
    }

    /// Limits what the node's spaces hold in all to `bytes` (0: no limit).
    pub fn set_limit(&self, bytes: u64) {
        self.budget.limit.store(bytes, Relaxed);
    }

    /// What the node's spaces hold, and may hold.
    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    /// The named space `name` of this node, no longer under that name (it
    /// moves to another node).
    pub fn unname(&self, name: &[u8]) -> Option<Arc<Space>> {
        self.named.lock().remove(name).map(|(_, space)| space)
    }

    /// A fresh private space and its serial.
    pub fn create(&self) -> (u64, Arc<Space>) {
        let id = self.next_id.fetch_add(1, Relaxed) + 1;
        let space = Arc::new(Space { store: Mutex::default(), budget: self.budget.clone() });
        let mut by_id = self.by_id.lock();
        if by_id.spaces.len() >= 2 * by_id.swept_at.max(32) {
            by_id.spaces.retain(|_, s| s.strong_count() > 0);
            by_id.swept_at = by_id.spaces.len();
        }
        by_id.spaces.insert(id, Arc::downgrade(&space));
        (id, space)
    }

    /// The space with this serial, if something still holds it.
    pub fn get(&self, id: u64) -> Option<Arc<Space>> {
        self.by_id.lock().spaces.get(&id).and_then(Weak::upgrade)
    }

    /// Spaces alive, named or held (a snapshot, for tests and tools).
    pub fn live(&self) -> usize {
        self.by_id.lock().spaces.values().filter(|s| s.strong_count() > 0).count()
    }

    /// Every space of this node alive, by serial, with its name if it has
    /// one (a snapshot, for tools).
    pub fn all(&self) -> Vec<Listed> {
        let mut names: HashMap<u64, Box<[u8]>> = self.named.lock().iter().map(|(n, (id, _))| (*id, n.clone())).collect();
        let mut all: Vec<_> = self.by_id.lock().spaces.iter().filter_map(|(id, s)| Some((*id, names.remove(id), s.upgrade()?))).collect();
        all.sort_by_key(|(id, ..)| *id);
        all
    }

    /// Withdraws, from every space, the waiters of the node with this alias (it was lost).
    pub fn forget_node(&self, alias: u16) {
        let all: Vec<Arc<Space>> = self.by_id.lock().spaces.values().filter_map(Weak::upgrade).collect();
        for space in all {
            space.with(|st| st.forget_node(alias));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_private_space_goes_when_nothing_holds_it() {
        let spaces = Spaces::default();
        let (named, _) = spaces.open(b"n");
        let (id, space) = spaces.create();
        assert!(spaces.get(id).is_some());
        drop(space);
        assert!(spaces.get(id).is_none(), "gone with its last holder");
        assert!(spaces.get(named).is_some(), "a named space stays");
        for _ in 0..10_000 {
            drop(spaces.create());
        }
        assert!(spaces.by_id.lock().spaces.len() < 200, "dead entries are swept");
        assert_eq!(spaces.live(), 1);
        let (_, _kept) = spaces.create();
        let all = spaces.all();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].1.as_deref(), Some(&b"n"[..]), "named spaces are listed with their name");
    }
}
