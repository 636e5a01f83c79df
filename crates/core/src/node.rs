//! Which nodes this node knows, and who it is itself. A node is a name and
//! an *incarnation*: a number drawn afresh each time a node starts, so a
//! node that restarts under the same name is another node, and nothing that
//! named the old one (a pid, a space handle) reaches the new one.
//!
//! Pids stay one word on the hot path: their node field is a small local
//! *alias* into this table (0 is this node), as Erlang's node table does.
//! Only the wire between nodes carries full identities; it translates
//! aliases to identities when it writes a pid and back when it reads one,
//! entering nodes it has not seen before.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::RwLock;

use crate::Pid;

/// A node: its name and the incarnation of it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NodeId {
    pub name: Arc<str>,
    pub incarnation: u64,
}

impl NodeId {
    /// A new incarnation of the node called `name`: a random number, so two
    /// runs never share one.
    pub fn fresh(name: &str) -> NodeId {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        h.write_u128(now.as_nanos());
        h.write_u32(std::process::id());
        NodeId { name: name.into(), incarnation: h.finish() }
    }
}

/// Whether the node called `full` (NAME@HOST) is the one `name` means:
/// the same full name, or NAME alone, whatever its host.
pub fn is_named(full: &str, name: &str) -> bool {
    full == name || full.strip_prefix(name).is_some_and(|host| host.starts_with('@'))
}

/// How long an alias stays with a node gone for good before it may be
/// given to another: a node that was only cut off comes back to its own
/// alias within that time.
pub const QUARANTINE: Duration = Duration::from_secs(60);

/// The node table: alias → identity, and back. The pid format has room
/// for [`Pid::MAX_NODE`] aliases besides this node's; a node that outlives
/// more identities than that (a daemon that programs join and leave for
/// months) gives the aliases of nodes gone for good to new ones, the one
/// retired longest ago first, each time in a new *epoch* (see `pid`): a pid
/// of the old node, kept somewhere, names nothing then.
pub struct Nodes {
    table: RwLock<Table>,
    /// Each alias's epoch, read without the lock (every remote send checks
    /// its pid against it).
    epochs: Box<[AtomicU8]>,
    quarantine: Duration,
}

struct Table {
    ids: Vec<NodeId>,
    aliases: HashMap<NodeId, u16>,
    /// When each alias was given to its node (to find the latest of a name).
    entered: Vec<u64>,
    next_entry: u64,
    /// Aliases of nodes gone for good, and since when.
    retired: HashMap<u16, Instant>,
}

impl Nodes {
    /// A table whose alias 0 is `me`.
    pub fn new(me: NodeId) -> Nodes {
        Nodes::with_quarantine(me, QUARANTINE)
    }

    /// [`Nodes::new`], with aliases given again after `quarantine`.
    pub fn with_quarantine(me: NodeId, quarantine: Duration) -> Nodes {
        let table = Table { aliases: HashMap::from([(me.clone(), 0)]), ids: vec![me], entered: vec![0], next_entry: 1, retired: HashMap::new() };
        let epochs = (0..=Pid::MAX_NODE).map(|_| AtomicU8::new(0)).collect();
        Nodes { table: RwLock::new(table), epochs, quarantine }
    }

    /// This node.
    pub fn me(&self) -> NodeId {
        self.table.read().ids[0].clone()
    }

    /// The node behind an alias, if it is one.
    pub fn id(&self, alias: u16) -> Option<NodeId> {
        self.table.read().ids.get(alias as usize).cloned()
    }

    /// The alias of the latest incarnation met of the node called `name`
    /// (its full name).
    pub fn named(&self, name: &str) -> Option<u16> {
        let t = self.table.read();
        t.ids.iter().enumerate().filter(|(_, id)| &*id.name == name).max_by_key(|(a, _)| t.entered[*a]).map(|(a, _)| a as u16)
    }

    /// Whether a node called `name` (see [`is_named`]) has been met, in
    /// any incarnation.
    pub fn met(&self, name: &str) -> bool {
        self.table.read().ids.iter().any(|id| is_named(&id.name, name))
    }

    /// The current epoch of `alias`.
    #[inline]
    pub fn epoch(&self, alias: u16) -> u8 {
        self.epochs[alias as usize].load(Relaxed)
    }

    /// Whether `pid` names a process of the node its alias means now (not
    /// of a node that had the alias before).
    #[inline]
    pub fn is_current(&self, pid: Pid) -> bool {
        pid.node() == 0 || pid.epoch() == self.epoch(pid.node())
    }

    /// `node` is gone for good (down, and not seen again): its alias may go
    /// to a new node once the table is full and [`QUARANTINE`] has passed.
    pub fn retire(&self, node: &NodeId) {
        let mut t = self.table.write();
        if let Some(&alias) = t.aliases.get(node).filter(|&&a| a != 0) {
            t.retired.entry(alias).or_insert_with(Instant::now);
        }
    }

    /// The alias of `node`, entered if it is new (a node retired and back
    /// is back under its alias); `None` when the table is full and no
    /// alias can be given again yet.
    pub fn alias(&self, node: &NodeId) -> Option<u16> {
        {
            let t = self.table.read();
            if let Some(&a) = t.aliases.get(node) {
                if !t.retired.contains_key(&a) {
                    return Some(a);
                }
            }
        }
        let mut t = self.table.write();
        if let Some(&a) = t.aliases.get(node) {
            t.retired.remove(&a);
            return Some(a);
        }
        let alias = match u16::try_from(t.ids.len()).ok().filter(|&a| a <= Pid::MAX_NODE) {
            Some(fresh) => {
                t.ids.push(node.clone());
                t.entered.push(0);
                fresh
            }
            None => {
                let now = Instant::now();
                let (&oldest, _) = t.retired.iter().filter(|(_, &since)| now.duration_since(since) >= self.quarantine).min_by_key(|(_, &since)| since)?;
                t.retired.remove(&oldest);
                let gone = std::mem::replace(&mut t.ids[oldest as usize], node.clone());
                t.aliases.remove(&gone);
                let epoch = &self.epochs[oldest as usize];
                epoch.store((epoch.load(Relaxed) + 1) % Pid::EPOCHS, Relaxed);
                oldest
            }
        };
        t.aliases.insert(node.clone(), alias);
        t.entered[alias as usize] = t.next_entry;
        t.next_entry += 1;
        Some(alias)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_restarted_node_is_another_node() {
        let me = NodeId::fresh("a");
        let nodes = Nodes::new(me.clone());
        assert_eq!(nodes.alias(&me), Some(0));
        let b1 = NodeId::fresh("b");
        let b2 = NodeId::fresh("b");
        assert_ne!(b1, b2, "two runs of b draw different incarnations");
        let (a1, a2) = (nodes.alias(&b1).unwrap(), nodes.alias(&b2).unwrap());
        assert!(a1 != a2 && a1 != 0 && a2 != 0);
        assert_eq!(nodes.alias(&b1), Some(a1), "an alias is stable");
        assert_eq!(nodes.id(a2), Some(b2));
        assert_ne!(Pid::new(a1, 5, 0), Pid::new(a2, 5, 0), "so their pids never meet");
        assert_eq!(nodes.me(), me);
    }

    #[test]
    fn the_table_refuses_to_overflow_the_pid_format() {
        let nodes = Nodes::new(NodeId::fresh("me"));
        for i in 1..=Pid::MAX_NODE as u64 {
            assert!(nodes.alias(&NodeId { name: "n".into(), incarnation: i }).is_some());
        }
        assert_eq!(nodes.alias(&NodeId { name: "n".into(), incarnation: u64::MAX }), None);
        // A node gone for good gives its alias only after the quarantine.
        nodes.retire(&NodeId { name: "n".into(), incarnation: 1 });
        assert_eq!(nodes.alias(&NodeId { name: "n".into(), incarnation: u64::MAX }), None);
    }

    fn node(i: u64) -> NodeId {
        NodeId { name: format!("n{i}").into(), incarnation: i }
    }

    #[test]
    fn aliases_of_nodes_gone_for_good_are_given_again_in_a_new_epoch() {
        let nodes = Nodes::with_quarantine(NodeId::fresh("me"), Duration::ZERO);
        for i in 1..=Pid::MAX_NODE as u64 {
            nodes.alias(&node(i)).unwrap();
        }
        let old = Pid::new(7, 3, 5);
        assert!(nodes.is_current(old));
        // Retired in this order: 7, then 9; a node that comes back is back.
        nodes.retire(&node(7));
        std::thread::sleep(Duration::from_millis(2));
        nodes.retire(&node(9));
        nodes.retire(&node(12));
        assert_eq!(nodes.alias(&node(12)), Some(12), "back under its own alias");
        let newcomer = NodeId::fresh("newcomer");
        assert_eq!(nodes.alias(&newcomer), Some(7), "the alias retired longest ago");
        assert_eq!(nodes.id(7), Some(newcomer.clone()));
        assert_eq!(nodes.epoch(7), 1);
        assert!(!nodes.is_current(old), "a pid of the old node names nothing now");
        assert!(nodes.is_current(old.aliased(7, 1)));
        assert_eq!(nodes.named("newcomer@").or(nodes.named(&newcomer.name)), Some(7));
        assert_eq!(nodes.alias(&NodeId::fresh("second")), Some(9));
        assert_eq!(nodes.alias(&NodeId::fresh("third")), None, "none retired left");
        // The old node itself, back after its alias went: a new alias if any.
        nodes.retire(&newcomer);
        assert_eq!(nodes.alias(&node(7)), Some(7));
        assert_eq!(nodes.epoch(7), 2);
        // Epochs come round after Pid::EPOCHS givings.
        for round in 0..Pid::EPOCHS as u64 {
            nodes.retire(&nodes.id(7).unwrap());
            nodes.alias(&NodeId { name: "again".into(), incarnation: round }).unwrap();
        }
        assert_eq!(nodes.epoch(7), 2);
    }
}
