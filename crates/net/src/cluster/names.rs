//! Registered names across nodes: claims arbitrated by the name's home
//! node, the losing holder told after a partition heals.

use std::sync::Arc;

use synodic_core::remote::{self, Remote};
use synodic_core::{linda_remote, Message, Pid};

use crate::frame::Frame;

use super::*;

impl Cluster {
    /// Of two holders of one name (both sides of a healed partition gave
    /// it), whether `new` takes it from `old`: the one on the node whose
    /// name sorts first. Every node sees both claims (each holder's node
    /// tells every node it links to) and decides alike.
    pub(super) fn prevails(&self, new: Pid, old: Pid) -> bool {
        let nodes = self.inner.rt.nodes();
        let name = |p: Pid| nodes.id(p.node()).map(|n| n.name);
        name(new) < name(old)
    }

    /// `loser`, of this node, lost `name` to `winner`: a space whose home
    /// this node was moves to the winner's node; a process gets the message
    /// `"name_lost", NAME` and keeps running. Every peer forgets this
    /// node's claim.
    pub(super) fn name_lost(&self, name: &[u8], loser: Pid, winner: Pid) {
        let rt = &self.inner.rt;
        match name.strip_prefix(linda_remote::HOME_PREFIX) {
            Some(space) => linda_remote::moved(rt, space, winner),
            None => {
                let mut w = synodic_core::wire::Writer::message(2);
                w.str(b"name_lost");
                w.str(name);
                rt.send(loser, Message::from_vec(w.finish_small()));
            }
        }
        self.broadcast(|| remote::name_message(name, loser), |message| Frame::Unnamed { message });
    }

    /// The name's arbiter gave `name` to `pid`, of this node: it is
    /// entered here and told to every peer, before anything the process
    /// sends after its `register` returns (links keep order). If the
    /// process ended meanwhile, the name goes with it.
    pub(super) fn name_granted(&self, name: &[u8], pid: Pid) {
        match self.inner.rt.enter_name(name, pid) {
            Ok(()) => self.broadcast(|| remote::name_message(name, pid), |message| Frame::Named { message }),
            Err(_) => self.released(pid, &[name.into()]),
        }
    }

    /// This node arbitrates `name`: gives it to `pid` if it is free, and
    /// answers the claim tagged `tag` (a refusal names the holder).
    pub(super) fn arbitrate(&self, tag: u64, name: &[u8], pid: Pid) -> Message {
        let rt = &self.inner.rt;
        match rt.enter_name(name, pid) {
            Ok(()) => remote::reply(tag, Ok(None)),
            Err(e) => match rt.whereis(name) {
                Some(holder) => remote::refused(tag, &e.to_string(), holder),
                None => remote::reply(tag, Err(&e.to_string())),
            },
        }
    }

    /// Sends a message-carrying frame to every peer.
    pub(super) fn broadcast(&self, message: impl Fn() -> Vec<u8>, frame: impl Fn(Vec<u8>) -> Frame) {
        let links: Vec<_> = self.inner.links.lock().values().cloned().collect();
        for link in links {
            link.push_message(self.inner.rt.nodes(), Message::from_vec(message()), None, &frame);
        }
    }

    /// The live node that arbitrates `name`: the one whose name hashed
    /// with it scores highest (rendezvous hashing), so that every node
    /// with the same view asks the same one, and a node leaving moves only
    /// its own names' arbiter.
    pub(super) fn home_of(&self, name: &[u8]) -> Arc<str> {
        use std::hash::{Hash, Hasher};
        let score = |node: &str| {
            let mut h = std::hash::DefaultHasher::new();
            (name, node).hash(&mut h);
            h.finish()
        };
        let live = self.inner.live.lock();
        live.iter().max_by_key(|n| score(n)).cloned().unwrap_or_else(|| self.inner.me.name.clone())
    }
}
