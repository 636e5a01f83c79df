//! Results computed on other nodes (`Fetch`, `Fetched` and `Release`
//! frames): a node that waits for another node's result asks its home once
//! and gets it when it is there; handles that go return their weight home
//! (see [`crate::future`], whose store decides all of this).

use crate::future::FutureId;
use crate::wire::Reader;
use crate::{Attachment, Message, Runtime};

use super::{fields, kind, rest_message, Outgoing, Peer, Service};

pub struct Results;

impl Results {
    /// Asks the node `home` for the result `id` it computes; it comes back
    /// through `Runtime::future_fill`, or the node's loss through
    /// `Runtime::future_home_lost`.
    pub fn fetch(&self, rt: &Runtime, home: u16, id: FutureId) {
        let asked = rt.transport().is_some_and(|t| t.push(home, Outgoing::fields(kind::FETCH, id_fields(id, None))));
        if !asked {
            let name = rt.nodes().id(home).map_or_else(|| "?".into(), |n| n.name);
            rt.future_home_lost(home, &format!("node lost: {name}"));
        }
    }

    /// Sends the node `to` the result `id` it asked for.
    pub fn fetched(&self, rt: &Runtime, to: u16, id: FutureId, value: Message) {
        if let Some(t) = rt.transport() {
            t.push(to, Outgoing::carrying(kind::FETCHED, id_fields(id, None), value));
        }
    }

    /// Returns `weight` of the result `id` to its home node `home`.
    pub fn release(&self, rt: &Runtime, home: u16, id: FutureId, weight: u64) {
        if let Some(t) = rt.transport() {
            t.push(home, Outgoing::fields(kind::RELEASE, id_fields(id, Some(weight))));
        }
    }
}

fn id_fields(id: FutureId, weight: Option<u64>) -> super::Head {
    fields(|w| {
        w.u64(id.origin);
        w.u64(id.seq);
        if let Some(weight) = weight {
            w.u64(weight);
        }
    })
}

impl Service for Results {
    fn kinds(&self) -> &'static [u8] {
        &[kind::FETCH, kind::FETCHED, kind::RELEASE]
    }

    fn receive(&self, rt: &Runtime, peer: &dyn Peer, kind: u8, body: &[u8], shared: Vec<Attachment>) -> Result<(), String> {
        let mut r = Reader::fields(body);
        let mut number = || r.u64().map_err(|e| e.to_string());
        let id = FutureId { origin: number()?, seq: number()? };
        match kind {
            kind::FETCH => {
                super::fields_end(&r, kind)?;
                rt.future_fetch(peer.alias(), id);
            }
            kind::FETCHED => rt.future_fill(id, rest_message(peer, &mut r, shared)?),
            _ => {
                let weight = r.u64().map_err(|e| e.to_string())?;
                super::fields_end(&r, kind)?;
                rt.future_release(peer.alias(), id, weight);
            }
        }
        Ok(())
    }

    fn gone(&self, rt: &Runtime, node: u16, name: &str) {
        rt.future_home_lost(node, &format!("node lost: {name}"));
    }
}
