//! The value wire format: how a message's values are laid out as bytes. It is
//! the one format used between processes of a node and, unchanged, between
//! nodes. This module knows tags, varints and bounds, never Lua: the Lua layer
//! walks its values and calls [`Writer`] / [`Reader`]; the core uses them to
//! write the messages it makes itself (DOWN notices). `docs/wire-format.md` is
//! the normative description; keep the two in step.
//!
//! Reading never panics: every read is bounds-checked and junk yields a
//! [`WireError`].

mod reader;
mod walk;
mod writer;
#[cfg(test)]
mod tests;

pub use reader::Reader;
pub use walk::*;
pub use writer::Writer;

use crate::Pid;

pub mod tags;

/// First byte of every message; bump when the layout changes.
pub const VERSION: u8 = tags::VERSION;

/// The kinds of shared values (tag 13), and their variants that the core
/// needs to know (the Lua layer defines them all).
pub mod shared {
    pub const BUFFER: u8 = 1;
    pub const SPACE: u8 = 2;
    pub const FUTURE: u8 = 3;
    /// A future variant: the bytes of a large buffer kept on the node that
    /// made it, which a tuple space hands out in its stead.
    pub const DEFERRED_BUFFER: u8 = 1;
}

/// Deepest nesting of tables and functions a message may carry.
pub const MAX_DEPTH: usize = 200;

#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tag {
    Nil = tags::NIL,
    False = tags::FALSE,
    True = tags::TRUE,
    Int = tags::INT,
    Float = tags::FLOAT,
    Str = tags::STR,
    Table = tags::TABLE,
    Ref = tags::REF,
    Function = tags::FUNCTION,
    Pid = tags::PID,
    Globals = tags::GLOBALS,
    Library = tags::LIBRARY,
    SharedUpvalue = tags::SHARED_UPVALUE,
    /// A userdata shared through the message's attachments.
    Shared = tags::SHARED,
}

impl Tag {
    #[inline]
    fn from_byte(b: u8) -> Option<Tag> {
        use Tag::*;
        Some(match b {
            tags::NIL => Nil,
            tags::FALSE => False,
            tags::TRUE => True,
            tags::INT => Int,
            tags::FLOAT => Float,
            tags::STR => Str,
            tags::TABLE => Table,
            tags::REF => Ref,
            tags::FUNCTION => Function,
            tags::PID => Pid,
            tags::GLOBALS => Globals,
            tags::LIBRARY => Library,
            tags::SHARED_UPVALUE => SharedUpvalue,
            tags::SHARED => Shared,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("message ends early at byte {0}")]
    Truncated(usize),
    #[error("unsupported message version {0} (this build reads version {VERSION})")]
    Version(u8),
    #[error("unknown value tag {tag} at byte {at}")]
    BadTag { tag: u8, at: usize },
    #[error("malformed number at byte {0}")]
    BadVarint(usize),
    #[error("reference to undefined object {0}")]
    BadRef(u64),
    #[error("invalid pid at byte {0}")]
    BadPid(usize),
    #[error("values nested deeper than {MAX_DEPTH} levels")]
    TooDeep,
    #[error("message too large (over {} bytes, or no memory for it)", MAX_MESSAGE)]
    TooLarge,
    #[error("{0} trailing bytes after the last value")]
    Trailing(usize),
    #[error("a pid of a node this link cannot name, at byte {0}")]
    UnknownNode(usize),
}

/// The largest message (its encoded bytes): a sender's program may size a
/// message (a huge string), and encoding it must fail as an error, not
/// abort the node for want of memory.
pub const MAX_MESSAGE: usize = 1 << 31;
