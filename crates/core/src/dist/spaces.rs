//! Tuple spaces homed on other nodes (`Linda` and `Complete` frames): a
//! process's request (`linda_remote` gives its format and serves it at the
//! space's home) and the answer to its wait. A request whose answer is
//! awaited is counted per node, so that the node's loss answers it
//! `Deleted` rather than leaving the process waiting.

use std::collections::HashSet;

use crate::waiting::{Completion, Waiter};
use crate::wire::Reader;
use crate::{linda_remote, Attachment, Message, Pid, Runtime};

use super::{fields, here, kind, read_pid, rest_message, Outgoing, PerNode, Peer, Service};

/// How a `Complete` frame's kind byte names a [`Completion`].
pub mod completion {
    pub const VALUE: u8 = 0;
    pub const TAKEN: u8 = 1;
    pub const NOTIFIED: u8 = 2;
    pub const DELETED: u8 = 3;
    pub const NOTHING: u8 = 4;
    pub const COUNT: u8 = 5;
    pub const FULL: u8 = 6;
    pub const MOVED: u8 = 7;
}

#[derive(Default)]
pub struct Spaces {
    /// Requests waiting for their answer: (process here, ticket).
    waits: PerNode<HashSet<(Pid, u64)>>,
}

impl Spaces {
    /// Sends the request `request` (see [`crate::linda_remote`]) of
    /// `caller`, a wait of a process here, to the node `home`; when
    /// `answered`, its answer is awaited and, should that node be lost
    /// first, given as `Deleted`. False when that node is not linked.
    pub fn linda(&self, rt: &Runtime, home: u16, caller: Waiter, request: Message, answered: bool) -> bool {
        let Some(t) = rt.transport() else { return false };
        let key = (caller.pid, caller.ticket);
        if answered {
            self.waits.with(home, |w| w.insert(key));
        }
        let head = fields(|w| {
            w.u64(caller.pid.raw());
            w.varint(caller.ticket);
        });
        // Held behind the caller's earlier requests to that node's spaces (an `out` of a long tuple).
        let frame = Outgoing { kind: kind::LINDA, head, message: Some(request), between: Some((caller.pid, spaces_there())) };
        let sent = t.push(home, frame);
        if !sent && answered {
            self.waits.with(home, |w| w.remove(&key));
        }
        sent
    }

    /// Gives `answer` to `waiter`, a wait of a process of another node.
    pub fn complete(&self, rt: &Runtime, waiter: Waiter, answer: Completion) {
        let Some(t) = rt.transport() else { return };
        let (kind, count, message) = match answer {
            Completion::Value(m) => (completion::VALUE, 0, m),
            Completion::Taken => (completion::TAKEN, 0, Message::no_values()),
            Completion::Notified => (completion::NOTIFIED, 0, Message::no_values()),
            Completion::Deleted => (completion::DELETED, 0, Message::no_values()),
            Completion::Nothing => (completion::NOTHING, 0, Message::no_values()),
            Completion::Count(n) => (completion::COUNT, n, Message::no_values()),
            Completion::Full => (completion::FULL, 0, Message::no_values()),
            Completion::Moved => (completion::MOVED, 0, Message::no_values()),
        };
        let frame = |what: u8, message| {
            let head = fields(|w| {
                w.u64(waiter.pid.raw());
                w.varint(waiter.ticket);
                w.byte(what);
                w.varint(count);
            });
            Outgoing { kind: kind::COMPLETE, head, message: Some(message), between: Some((waiter.pid, waiter.pid)) }
        };
        if !t.push(waiter.pid.node(), frame(kind, message)) {
            // Values that cannot cross: the waiter is told rather than left waiting.
            t.push(waiter.pid.node(), frame(completion::DELETED, Message::no_values()));
        }
    }
}

/// What frames for another node's tuple spaces queue behind, per caller.
fn spaces_there() -> Pid {
    Pid::new(0, Pid::MAX_INDEX, Pid::GEN_MASK)
}

impl Service for Spaces {
    fn kinds(&self) -> &'static [u8] {
        &[kind::LINDA, kind::COMPLETE]
    }

    fn receive(&self, rt: &Runtime, peer: &dyn Peer, kind: u8, body: &[u8], shared: Vec<Attachment>) -> Result<(), String> {
        let mut r = Reader::fields(body);
        let pid = read_pid(&mut r)?;
        let ticket = r.varint().map_err(|e| e.to_string())?;
        if kind == kind::LINDA {
            let caller = Waiter { pid: peer.ours(pid)?, ticket };
            let request = rest_message(peer, &mut r, shared)?;
            return linda_remote::serve(rt, caller, &request).map_err(|e| format!("a malformed tuple-space request: {e}"));
        }
        let what = r.byte_value().map_err(|e| e.to_string())?;
        if what > completion::MOVED {
            return Err(format!("unknown completion kind {what}"));
        }
        let count = r.varint().map_err(|e| e.to_string())?;
        let to = here(pid);
        self.waits.with(peer.alias(), |w| w.remove(&(to, ticket)));
        let answer = match what {
            completion::VALUE => Completion::Value(rest_message(peer, &mut r, shared)?),
            completion::TAKEN => Completion::Taken,
            completion::NOTIFIED => Completion::Notified,
            completion::NOTHING => Completion::Nothing,
            completion::COUNT => Completion::Count(count),
            completion::FULL => Completion::Full,
            completion::MOVED => Completion::Moved,
            _ => Completion::Deleted,
        };
        rt.complete((Waiter { pid: to, ticket }, answer));
        Ok(())
    }

    fn lost(&self, rt: &Runtime, node: u16, _: &str) {
        for (pid, ticket) in self.waits.take(node) {
            rt.complete((Waiter { pid, ticket }, Completion::Deleted));
        }
    }

    fn gone(&self, rt: &Runtime, node: u16, _: &str) {
        rt.spaces().forget_node(node);
    }
}
