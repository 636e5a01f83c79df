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
use std::sync::Arc;

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

/// The node table: alias → identity, and back.
pub struct Nodes {
    table: RwLock<Table>,
}

struct Table {
    ids: Vec<NodeId>,
    aliases: HashMap<NodeId, u16>,
}

impl Nodes {
    /// A table whose alias 0 is `me`.
    pub fn new(me: NodeId) -> Nodes {
        Nodes { table: RwLock::new(Table { aliases: HashMap::from([(me.clone(), 0)]), ids: vec![me] }) }
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
        self.table.read().ids.iter().rposition(|id| &*id.name == name).map(|a| a as u16)
    }

    /// Whether a node called `name` (see [`is_named`]) has been met, in
    /// any incarnation.
    pub fn met(&self, name: &str) -> bool {
        self.table.read().ids.iter().any(|id| is_named(&id.name, name))
    }

    /// The alias of `node`, entered if it is new; `None` when the table is
    /// full (the pid format has room for [`Pid::MAX_NODE`] + 1 aliases).
    pub fn alias(&self, node: &NodeId) -> Option<u16> {
        if let Some(&a) = self.table.read().aliases.get(node) {
            return Some(a);
        }
        let mut t = self.table.write();
        if let Some(&a) = t.aliases.get(node) {
            return Some(a);
        }
        let alias = u16::try_from(t.ids.len()).ok().filter(|&a| a <= Pid::MAX_NODE)?;
        t.ids.push(node.clone());
        t.aliases.insert(node.clone(), alias);
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
    }
}
