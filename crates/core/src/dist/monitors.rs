//! Monitors across nodes (`Monitor` and `Demonitor` frames): a process
//! here watching a process there, and a process watching a whole node.
//! The watched node sends the DOWN as an ordinary notice; this side counts
//! what it awaits, so that a DOWN of a monitor removed meanwhile is
//! dropped, and so that the node's loss gives every watcher its DOWN
//! `"noconnection"` (and every node watcher `"nodedown"`).

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::runtime::{down_message, noconnection};
use crate::wire::Reader;
use crate::{Attachment, ExitReason, Pid, Runtime};

use super::{fields, here, kind, notice, read_pid, Outgoing, PerNode, Peer, Service};

#[derive(Default)]
pub struct Monitors {
    /// (watcher here, target there), with how many times it was asked for.
    watching: PerNode<HashMap<(Pid, Pid), u32>>,
    /// Processes here that watch a node, by its name.
    node_watchers: Mutex<HashMap<Arc<str>, Vec<Pid>>>,
}

impl Monitors {
    /// `watcher` (here) monitors `target` (elsewhere). False when that node
    /// is not linked: the caller then gets its DOWN at once.
    pub fn monitor(&self, rt: &Runtime, watcher: Pid, target: Pid) -> bool {
        let Some(t) = rt.transport() else { return false };
        let node = target.node();
        self.watching.with(node, |w| *w.entry((watcher, target)).or_default() += 1);
        let sent = t.push(node, Outgoing::fields(kind::MONITOR, pair(watcher, target)));
        if !sent {
            self.forget(node, watcher, target);
        }
        sent
    }

    /// Removes one of `watcher`'s monitors of `target` (elsewhere); a DOWN
    /// for it that arrives later is dropped. False when none was in place.
    pub fn demonitor(&self, rt: &Runtime, watcher: Pid, target: Pid) -> bool {
        let Some(t) = rt.transport() else { return false };
        if !self.forget(target.node(), watcher, target) {
            return false;
        }
        t.push(target.node(), Outgoing::fields(kind::DEMONITOR, pair(watcher, target)));
        true
    }

    /// Counts one of `watcher`'s monitors of `target` (on `node`) as no
    /// longer awaited (its DOWN came, or it was removed); false when none was.
    pub fn forget(&self, node: u16, watcher: Pid, target: Pid) -> bool {
        self.watching.with(node, |w| {
            let Some(n) = w.get_mut(&(watcher, target)) else { return false };
            *n -= 1;
            if *n == 0 {
                w.remove(&(watcher, target));
            }
            true
        })
    }

    /// `watcher` gets `"nodedown", node` when the node is lost. False when
    /// it is not linked (the caller says so at once).
    pub fn monitor_node(&self, rt: &Runtime, watcher: Pid, node: &str) -> bool {
        let Some(t) = rt.transport() else { return false };
        if t.linked(node).is_none() {
            return false;
        }
        self.node_watchers.lock().entry(node.into()).or_default().push(watcher);
        // The node may have been lost meanwhile, before the watcher was entered.
        if t.linked(node).is_none() {
            self.node_watchers.lock().remove(node);
            return false;
        }
        true
    }
}

fn pair(watcher: Pid, target: Pid) -> super::Head {
    fields(|w| {
        w.u64(watcher.raw());
        w.u64(target.raw());
    })
}

impl Service for Monitors {
    fn kinds(&self) -> &'static [u8] {
        &[kind::MONITOR, kind::DEMONITOR]
    }

    fn receive(&self, rt: &Runtime, peer: &dyn Peer, kind: u8, body: &[u8], _: Vec<Attachment>) -> Result<(), String> {
        let mut r = Reader::fields(body);
        let (watcher, target) = (read_pid(&mut r)?, read_pid(&mut r)?);
        super::fields_end(&r, kind)?;
        let (watcher, target) = (peer.ours(watcher)?, here(target));
        match kind {
            kind::MONITOR => rt.monitor(watcher, target),
            _ => drop(rt.demonitor(watcher, target)),
        }
        Ok(())
    }

    fn lost(&self, rt: &Runtime, node: u16, _: &str) {
        let lost = ExitReason::Value(noconnection());
        for (watcher, target) in self.watching.take(node).into_keys() {
            rt.send(watcher, down_message(target, &lost));
        }
    }

    fn gone(&self, rt: &Runtime, _: u16, name: &str) {
        let watchers = self.node_watchers.lock().remove(name).unwrap_or_default();
        for watcher in watchers {
            rt.send(watcher, notice::nodedown(name.as_bytes()));
        }
    }
}
