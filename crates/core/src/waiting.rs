//! What blocked callers of the stores (channels, tuple spaces) are and what
//! they are given. A store never touches a process: it queues [`Waiter`]s,
//! plain data naming a process and one of its waits, and returns its
//! decisions as [`Delivery`]s, which the runtime carries out
//! (`Runtime::complete`): into the process's completion slot when it lives
//! on this node, and later over the network when it does not. So the stores
//! are state machines that tests drive directly, and a waiter can be a
//! process anywhere.

use crate::{Message, Pid};

/// A process blocked on a store, and which of its waits this is (a process
/// numbers its waits, so a completion meant for an earlier one is never
/// taken for a later one).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Waiter {
    pub pid: Pid,
    pub ticket: u64,
}

/// What a store gives a waiter.
#[derive(Clone, Debug, PartialEq)]
pub enum Completion {
    /// A message (channel receive) or a tuple's values (take, rd), handed over.
    Value(Message),
    /// A rendezvous send: a receiver took the message.
    Taken,
    /// Something the waiter may want arrived; it looks again (a `where` template).
    Notified,
    /// The store went away under the waiter (a deleted channel, a tuple
    /// space whose node was lost).
    Deleted,
    /// Nothing to hand over: a probe that found nothing, a withdrawn wait,
    /// an operation that gives no values done (a remote `out`).
    Nothing,
    /// A number: how many tuples matched (a remote `count`).
    Count(u64),
    /// Refused: the space's node holds as much as its limit allows (a
    /// remote `out`).
    Full,
    /// The space has moved to another node (a partition healed): the
    /// caller finds it again and asks there.
    Moved,
}

/// A store's decision: give this completion to this waiter.
pub type Delivery = (Waiter, Completion);
