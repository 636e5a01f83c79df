//! Starting processes on other nodes (`Spawn` frames): the caller's node
//! sends the function and arguments; the other node starts them with the
//! spawner the Lua layer installed and replies with the pid or an error.

use std::sync::{Arc, OnceLock};

use crate::wire::Reader;
use crate::{Attachment, Message, Pid, Runtime};

use super::pool::Pools;
use super::requests::Requests;
use super::{fields, kind, notice, read_pid, rest_message, Outgoing, Peer, Service};

/// Starts the process a spawn message (function, then arguments) describes.
/// The runtime's bodies are the Lua layer's, which this layer does not know.
pub type Spawner = Arc<dyn Fn(Message) -> Result<Pid, String> + Send + Sync>;

#[derive(Default)]
pub struct Spawns {
    spawner: OnceLock<Spawner>,
}

impl Spawns {
    /// How this node starts what other nodes ask it to (once per run).
    pub fn set_spawner(&self, spawner: Spawner) {
        let _ = self.spawner.set(spawner);
    }

    /// Starts the process that `body` describes on `node`; its pid reaches
    /// `caller` as the reply tagged `tag`. An error says why the request
    /// could not even be sent.
    pub fn spawn(&self, rt: &Runtime, caller: Pid, tag: u64, node: &str, body: Message) -> Result<(), String> {
        let t = rt.transport().ok_or_else(|| format!("no such node: {node}"))?;
        let alias = t.linked(node).ok_or_else(|| format!("no such node: {node}"))?;
        rt.service::<Requests>().wait(alias, tag, caller);
        let head = fields(|w| {
            w.u64(caller.raw());
            w.varint(tag);
        });
        if !t.push(alias, Outgoing::carrying(kind::SPAWN, head, body)) {
            rt.service::<Requests>().answered(alias, tag);
            return Err(format!("node lost: {node}"));
        }
        rt.service::<Pools>().started_on(rt, alias);
        Ok(())
    }
}

impl Service for Spawns {
    fn kinds(&self) -> &'static [u8] {
        &[kind::SPAWN]
    }

    fn receive(&self, rt: &Runtime, peer: &dyn Peer, _: u8, body: &[u8], shared: Vec<Attachment>) -> Result<(), String> {
        let mut r = Reader::fields(body);
        let caller = peer.ours(read_pid(&mut r)?)?;
        let tag = r.varint().map_err(|e| e.to_string())?;
        let message = rest_message(peer, &mut r, shared)?;
        let started = match self.spawner.get() {
            Some(spawner) => spawner(message),
            None => Err("this node starts no processes for others".into()),
        };
        rt.send(caller, notice::reply(tag, started.as_ref().map(|p| Some(*p)).map_err(|e| e.as_str())));
        Ok(())
    }
}
