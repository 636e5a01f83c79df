//! Process identifiers. A pid is one `u64` that names a process: the alias of
//! its node in this node's node table (0: this node; see `node`), the index
//! of the process's slot in that node's process table, and the slot's
//! generation (bumped each time the slot is reused, and a slot is retired
//! before its generations run out, so a pid never names a later process),
//! plus a fixed tag in the low bits. A node's own generations use the low
//! [`Pid::LOCAL_GEN_BITS`] bits of the field; in a pid of another node, the
//! bits above are the *epoch* of its alias: how many times this node has
//! given that alias to a new node (`node::Nodes`), so a pid kept from a node
//! long gone never reaches the node its alias was given to later. The tag lets the Lua layer carry pids as light userdata
//! (which compare by value and work as table keys) and still tell them apart
//! from the aligned pointers other C libraries use as light userdata.

use std::fmt;
use std::num::NonZeroU64;

const TAG_BITS: u32 = crate::wire::tags::PID_TAG_BITS;
const TAG: u64 = crate::wire::tags::PID_TAG;
const NODE_BITS: u32 = 12;
const INDEX_BITS: u32 = 24;
const GEN_BITS: u32 = 64 - TAG_BITS - NODE_BITS - INDEX_BITS;
const NODE_SHIFT: u32 = TAG_BITS;
const INDEX_SHIFT: u32 = NODE_SHIFT + NODE_BITS;
const GEN_SHIFT: u32 = INDEX_SHIFT + INDEX_BITS;

/// Never zero (the tag is not), so an `Option<Pid>` is one word.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pid(NonZeroU64);

impl Pid {
    /// Processes a node can hold at once.
    pub const MAX_INDEX: u32 = (1 << INDEX_BITS) - 1;
    pub const MAX_NODE: u16 = (1 << NODE_BITS) - 1;
    pub const GEN_MASK: u32 = (1 << GEN_BITS) - 1;
    /// The bits of the generation field a node's own slots use.
    pub const LOCAL_GEN_BITS: u32 = 20;
    pub const LOCAL_GEN_MASK: u32 = (1 << Self::LOCAL_GEN_BITS) - 1;
    /// Epochs an alias goes through before its numbers come round again.
    pub const EPOCHS: u8 = 1 << (GEN_BITS - Self::LOCAL_GEN_BITS);

    pub fn new(node: u16, index: u32, generation: u32) -> Pid {
        debug_assert!(node <= Self::MAX_NODE && index <= Self::MAX_INDEX);
        let g = (generation & Self::GEN_MASK) as u64;
        Pid(NonZeroU64::new(g << GEN_SHIFT | (index as u64) << INDEX_SHIFT | (node as u64) << NODE_SHIFT | TAG).expect("the tag is not zero"))
    }

    /// Rebuilds a pid from its raw form; `None` when the bits are not a pid.
    pub fn from_raw(raw: u64) -> Option<Pid> {
        if raw & ((1 << TAG_BITS) - 1) != TAG {
            return None;
        }
        NonZeroU64::new(raw).map(Pid)
    }

    pub fn raw(self) -> u64 {
        self.0.get()
    }

    pub fn node(self) -> u16 {
        ((self.raw() >> NODE_SHIFT) & ((1 << NODE_BITS) - 1)) as u16
    }

    pub fn index(self) -> u32 {
        ((self.raw() >> INDEX_SHIFT) & ((1 << INDEX_BITS) - 1)) as u32
    }

    pub fn generation(self) -> u32 {
        (self.raw() >> GEN_SHIFT) as u32
    }

    /// The generation its own node gave it, without an alias's epoch.
    pub fn local_generation(self) -> u32 {
        self.generation() & Self::LOCAL_GEN_MASK
    }

    /// The epoch of its node's alias (0 for this node's own pids).
    pub fn epoch(self) -> u8 {
        (self.generation() >> Self::LOCAL_GEN_BITS) as u8
    }

    /// The same process, named under alias `node` of epoch `epoch`.
    pub fn aliased(self, node: u16, epoch: u8) -> Pid {
        Pid::new(node, self.index(), self.local_generation() | (epoch as u32 % Self::EPOCHS as u32) << Self::LOCAL_GEN_BITS)
    }
}

impl Pid {
    /// The pid printed as `text` (`<node.index.generation>`, as `Display`
    /// writes it; the angle brackets may be left out).
    pub fn parse(text: &str) -> Option<Pid> {
        let inner = text.trim();
        let inner = inner.strip_prefix('<').and_then(|t| t.strip_suffix('>')).unwrap_or(inner);
        let mut parts = inner.split('.');
        let node: u16 = parts.next()?.parse().ok()?;
        let index: u32 = parts.next()?.parse().ok()?;
        let generation: u32 = parts.next()?.parse().ok()?;
        if parts.next().is_some() || node > Self::MAX_NODE || index > Self::MAX_INDEX || generation > Self::GEN_MASK {
            return None;
        }
        Some(Pid::new(node, index, generation))
    }
}

impl fmt::Display for Pid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{}.{}.{}>", self.node(), self.index(), self.generation())
    }
}

impl fmt::Debug for Pid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_non_pids() {
        let pid = Pid::new(3, 123_456, 7);
        assert_eq!(Pid::from_raw(pid.raw()), Some(pid));
        assert_eq!((pid.node(), pid.index(), pid.generation()), (3, 123_456, 7));
        assert_eq!(pid.to_string(), "<3.123456.7>");
        assert_eq!(Pid::from_raw(0x1000), None, "an aligned pointer is not a pid");
        let max = Pid::new(Pid::MAX_NODE, Pid::MAX_INDEX, Pid::GEN_MASK);
        assert_eq!((max.node(), max.index(), max.generation()), (Pid::MAX_NODE, Pid::MAX_INDEX, Pid::GEN_MASK));
        assert_ne!(Pid::new(0, 1, 1), Pid::new(0, 1, 2), "a reused slot gives a new pid");
    }
}
