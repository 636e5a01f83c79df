//! The runtime's window onto other nodes. The core knows nothing of sockets:
//! the cluster transport (`synodic-net`) implements [`Remote`] and installs
//! it with `Runtime::set_remote`; from then on whatever `Runtime::route`
//! finds on another node (a send, a monitor) goes through it. Without one,
//! a node is alone and pids of other nodes reach nothing.

use std::sync::Arc;

use crate::{Message, Pid};

pub trait Remote: Send + Sync {
    /// Hands `msg`, from `from`, for `to` (a pid of another node) to the
    /// transport. False when that node is not connected: the message is
    /// dropped, as one to a dead process is.
    fn send(&self, from: Pid, to: Pid, msg: Message) -> bool;

    /// `watcher` (here) monitors `target` (elsewhere). False when that node
    /// is not connected: the caller then gets its DOWN at once.
    fn monitor(&self, watcher: Pid, target: Pid) -> bool;

    /// The names of the live nodes, this one included, sorted.
    fn nodes(&self) -> Vec<Arc<str>>;
}
