//! Tasks for other nodes' pools (`Task` frames) and the load reports that
//! decide where work goes (`Load` frames): every node tells each peer, now
//! and then and whenever the set of nodes changes, its load (live processes
//! per worker thread, ×1000) and how many live nodes it sees.
//! `spawn_on("any")` and the skeletons pick the least loaded node, counting
//! what was started there since its last report.

use std::sync::{Arc, OnceLock};

use crate::wire::Reader;
use crate::{Attachment, Message, Runtime};

use super::{fields, kind, Head, rest_message, Outgoing, PerNode, Peer, Service};

/// What a peer last reported.
#[derive(Clone, Copy)]
struct Report {
    /// Its load, plus what was spawned there since.
    load: u32,
    /// How many live nodes it sees, itself included.
    sees: u32,
}

impl Default for Report {
    fn default() -> Report {
        Report { load: u32::MAX, sees: 0 }
    }
}

#[derive(Default)]
pub struct Pools {
    reports: PerNode<Report>,
    /// Called whenever a report arrives (the transport waits on reports).
    on_report: OnceLock<Arc<dyn Fn() + Send + Sync>>,
}

impl Pools {
    /// Puts `task` in the pool of `node` (see [`crate::pool`]). An error
    /// says why it could not even be sent.
    pub fn submit(&self, rt: &Runtime, node: &str, task: Message) -> Result<(), String> {
        let t = rt.transport().ok_or_else(|| format!("no such node: {node}"))?;
        let alias = t.linked(node).ok_or_else(|| format!("no such node: {node}"))?;
        match t.push(alias, Outgoing::carrying(kind::TASK, Head::new(), task)) {
            true => {
                // Counted there until it reports again: a burst spreads.
                self.started_on(rt, alias);
                Ok(())
            }
            false => Err(format!("node lost: {node}")),
        }
    }

    /// The least loaded live node, this one included, from the last reports.
    pub fn least_loaded(&self, rt: &Runtime) -> Arc<str> {
        let mut best = (rt.load(), rt.node_name());
        let Some(t) = rt.transport() else { return best.1 };
        for node in t.peers() {
            let (Some(id), load) = (rt.nodes().id(node), self.reports.with(node, |r| r.load)) else { continue };
            if load < best.0 || (load == best.0 && id.name < best.1) {
                best = (load, id.name);
            }
        }
        best.1
    }

    /// Until `node` reports again, counts one process just started there.
    pub fn started_on(&self, rt: &Runtime, node: u16) {
        let step = 1000 / rt.workers().max(1) as u32;
        self.reports.with(node, |r| r.load = r.load.saturating_add(step));
    }

    /// Tells every linked node this node's load and that it sees `nodes`.
    pub fn tell(&self, rt: &Runtime, nodes: u32) {
        let Some(t) = rt.transport() else { return };
        let head = fields(|w| {
            w.varint(rt.load() as u64);
            w.varint(nodes as u64);
        });
        for node in t.peers() {
            t.push(node, Outgoing::fields(kind::LOAD, head.clone()));
        }
    }

    /// How many live nodes `node` last said it sees (0: no report yet).
    pub fn sees(&self, node: u16) -> u32 {
        self.reports.with(node, |r| r.sees)
    }

    /// `f` runs whenever a report arrives (once per run).
    pub fn on_report(&self, f: Arc<dyn Fn() + Send + Sync>) {
        let _ = self.on_report.set(f);
    }
}

impl Service for Pools {
    fn kinds(&self) -> &'static [u8] {
        &[kind::TASK, kind::LOAD]
    }

    fn receive(&self, rt: &Runtime, peer: &dyn Peer, kind: u8, body: &[u8], shared: Vec<Attachment>) -> Result<(), String> {
        let mut r = Reader::fields(body);
        if kind == kind::TASK {
            rt.pool_push(rest_message(peer, &mut r, shared)?);
            return Ok(());
        }
        let mut number = || r.varint().map(|n| u32::try_from(n).unwrap_or(u32::MAX)).map_err(|e| e.to_string());
        let report = Report { load: number()?, sees: number()? };
        super::fields_end(&r, kind)?;
        self.reports.with(peer.alias(), |r| *r = report);
        if let Some(f) = self.on_report.get() {
            f();
        }
        Ok(())
    }

    fn lost(&self, _: &Runtime, node: u16, _: &str) {
        self.reports.take(node);
    }
}
