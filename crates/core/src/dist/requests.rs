//! Requests to other nodes that wait for an answer (a spawn's pid, a name
//! claim's verdict): who waits, by node and tag. The answer arrives as the
//! reply tagged so ([`super::notice::reply`]); if the node is lost first,
//! the caller gets an error reply instead.

use std::collections::HashMap;

use crate::{Attachment, Pid, Runtime};

use super::{notice, PerNode, Peer, Service};

#[derive(Default)]
pub struct Requests {
    waiting: PerNode<HashMap<u64, Pid>>,
}

impl Requests {
    /// `caller` waits for the answer tagged `tag` from `node`.
    pub fn wait(&self, node: u16, tag: u64, caller: Pid) {
        self.waiting.with(node, |w| w.insert(tag, caller));
    }

    /// The answer tagged `tag` came from `node` (or will not be asked for):
    /// false when none was awaited.
    pub fn answered(&self, node: u16, tag: u64) -> bool {
        self.waiting.with(node, |w| w.remove(&tag).is_some())
    }
}

impl Service for Requests {
    fn kinds(&self) -> &'static [u8] {
        &[]
    }

    fn receive(&self, _: &Runtime, _: &dyn Peer, kind: u8, _: &[u8], _: Vec<Attachment>) -> Result<(), String> {
        Err(format!("unknown frame kind {kind}"))
    }

    fn lost(&self, rt: &Runtime, node: u16, name: &str) {
        let why = format!("node lost: {name}");
        for (tag, caller) in self.waiting.take(node) {
            rt.send(caller, notice::reply(tag, Err(&why)));
        }
    }
}
