//! Links and kill across nodes (`Link`, `Unlink`, `Exit` and `Kill`
//! frames; see `runtime/links.rs` for what a link means). Each node keeps
//! the links between its processes and each other node's, so that when a
//! node is lost every local end gets its exit signal `"noconnection"`.

use std::collections::HashSet;

use crate::runtime::{reason_message, reason_of};
use crate::wire::Reader;
use crate::{Attachment, ExitReason, Message, Pid, Runtime};

use super::{fields, here, kind, read_pid, rest_message, Outgoing, PerNode, Peer, Service};

#[derive(Default)]
pub struct Links {
    /// (process here, process there) for each linked pair, by node.
    pairs: PerNode<HashSet<(Pid, Pid)>>,
}

impl Links {
    /// Asks `node` to link `other`, of it, to `me`, of this node. False
    /// when that node is not linked.
    pub fn link(&self, rt: &Runtime, node: u16, me: Pid, other: Pid) -> bool {
        let Some(t) = rt.transport() else { return false };
        self.pairs.with(node, |p| p.insert((me, other)));
        let sent = t.push(node, Outgoing::fields(kind::LINK, pair(me, other)));
        if !sent {
            self.pairs.with(node, |p| p.remove(&(me, other)));
        }
        sent
    }

    /// Tells `node` that `me` (here) and `other` (there) are unlinked.
    pub fn unlink(&self, rt: &Runtime, node: u16, me: Pid, other: Pid) {
        if self.pairs.with(node, |p| p.remove(&(me, other))) {
            if let Some(t) = rt.transport() {
                t.push(node, Outgoing::fields(kind::UNLINK, pair(me, other)));
            }
        }
    }

    /// Sends `to` (on `node`) the exit signal of `from` (here).
    pub fn signal(&self, rt: &Runtime, node: u16, from: Pid, to: Pid, reason: &ExitReason) {
        self.pairs.with(node, |p| p.remove(&(from, to)));
        if let Some(t) = rt.transport() {
            t.push(node, Outgoing::carrying(kind::EXIT, pair(from, to), Message::from_vec(reason_message(reason))));
        }
    }

    /// Asks `node` to kill `target`. False when that node is not linked.
    pub fn kill(&self, rt: &Runtime, node: u16, target: Pid, reason: &ExitReason) -> bool {
        let Some(t) = rt.transport() else { return false };
        let head = fields(|w| w.u64(target.raw()));
        t.push(node, Outgoing::carrying(kind::KILL, head, Message::from_vec(reason_message(reason))))
    }
}

fn pair(a: Pid, b: Pid) -> super::Head {
    fields(|w| {
        w.u64(a.raw());
        w.u64(b.raw());
    })
}

impl Service for Links {
    fn kinds(&self) -> &'static [u8] {
        &[kind::LINK, kind::UNLINK, kind::EXIT, kind::KILL]
    }

    fn receive(&self, rt: &Runtime, peer: &dyn Peer, kind: u8, body: &[u8], _: Vec<Attachment>) -> Result<(), String> {
        let mut r = Reader::fields(body);
        let node = peer.alias();
        if kind == kind::KILL {
            let target = here(read_pid(&mut r)?);
            let reason = reason_of(rest_message(peer, &mut r, Vec::new())?.into_vec());
            rt.kill(target, reason);
            return Ok(());
        }
        // Every other frame names the sender's process, then ours.
        let (theirs, mine) = (peer.ours(read_pid(&mut r)?)?, here(read_pid(&mut r)?));
        match kind {
            kind::LINK => {
                super::fields_end(&r, kind)?;
                match rt.linked_from(mine, theirs) {
                    Ok(()) => drop(self.pairs.with(node, |p| p.insert((mine, theirs)))),
                    Err(how) => {
                        let reason = how.unwrap_or_else(|| ExitReason::Value(crate::runtime::noproc()));
                        self.signal(rt, node, mine, theirs, &reason);
                    }
                }
            }
            kind::UNLINK => {
                super::fields_end(&r, kind)?;
                self.pairs.with(node, |p| p.remove(&(mine, theirs)));
                rt.unlinked(mine, theirs);
            }
            _ => {
                let reason = reason_of(rest_message(peer, &mut r, Vec::new())?.into_vec());
                self.pairs.with(node, |p| p.remove(&(mine, theirs)));
                rt.exit_signal(theirs, mine, &reason);
            }
        }
        Ok(())
    }

    fn lost(&self, rt: &Runtime, node: u16, _: &str) {
        let lost = ExitReason::Value(crate::runtime::noconnection());
        for (mine, theirs) in self.pairs.take(node) {
            rt.exit_signal(theirs, mine, &lost);
        }
    }
}
