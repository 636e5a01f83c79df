//! Registered names across nodes (`Claim`, `Named` and `Unnamed` frames).
//! A name's arbiter is one live node chosen by rendezvous hashing
//! ([`Names::home_of`]); a claim goes there, which enters the name or
//! refuses it naming the holder; the holder's node then tells every node.
//! After a partition heals, two holders of one name are settled alike on
//! every node ([`prevails`]): the loser is told (`"name_lost"`), or, for a
//! tuple space's home, the space moves.
//!
//! Nodes learn that a node is lost at slightly different moments. A claim
//! refused because the name is held on a node this node already counts as
//! lost (its arbiter has not noticed yet) is not answered: it is asked
//! again on the next tick, for as long as views may reasonably differ
//! ([`AGREE_WITHIN`]), so that a program giving a lost node's name to a
//! process of its own as soon as `s.nodes()` changed finds it free.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::wire::Reader;
use crate::{linda_remote, Attachment, Message, Pid, Runtime};

use super::requests::Requests;
use super::{fields, kind, Head, notice, read_pid, rest_message, Outgoing, PerNode, Peer, Service};

/// How long after its first asking a claim is asked again while its
/// arbiter still counts a node as live that this node has lost: longer
/// than membership takes to tell every node (see `SUSPECT_TO_DOWN`).
const AGREE_WITHIN: Duration = Duration::from_secs(5);

/// A claim on its way: who asked, for which name and pid, and since when.
struct Claim {
    caller: Pid,
    tag: u64,
    name: Box<[u8]>,
    pid: Pid,
    since: Instant,
}

#[derive(Default)]
pub struct Names {
    /// Claims sent to each node, by tag.
    claims: PerNode<HashMap<u64, Claim>>,
    /// Claims refused for a holder on a node lost here: asked again on the
    /// next tick.
    again: Mutex<Vec<Claim>>,
}

impl Names {
    /// Asks the cluster for `name` for `pid` (a process here): the name's
    /// arbiter enters it everywhere, or refuses it, and replies to `caller`
    /// with the tag. An error says why the claim could not even be sent.
    pub fn claim(&self, rt: &Runtime, caller: Pid, tag: u64, name: &[u8], pid: Pid) -> Result<(), String> {
        self.ask(rt, Claim { caller, tag, name: name.into(), pid, since: Instant::now() })
    }

    fn ask(&self, rt: &Runtime, claim: Claim) -> Result<(), String> {
        let t = rt.transport().ok_or("not in a cluster")?;
        let home = Names::home_of(rt, &claim.name);
        let Claim { caller, tag, .. } = claim;
        if home == rt.node_name() {
            let answer = arbitrate(rt, tag, &claim.name, claim.pid);
            if notice::reply_of(&answer).is_some_and(|(_, granted)| granted) {
                broadcast(rt, kind::NAMED, &claim.name, claim.pid);
            }
            rt.send(caller, answer);
            return Ok(());
        }
        let lost = || format!("node {home}, which keeps this name, was lost");
        let alias = t.linked(&home).ok_or_else(lost)?;
        let message = Message::from_vec(notice::name_message(&claim.name, claim.pid));
        rt.service::<Requests>().wait(alias, tag, caller);
        self.claims.with(alias, |c| c.insert(tag, claim));
        let head = fields(|w| {
            w.u64(caller.raw());
            w.varint(tag);
        });
        if !t.push(alias, Outgoing::carrying(kind::CLAIM, head, message)) {
            rt.service::<Requests>().answered(alias, tag);
            self.claims.with(alias, |c| c.remove(&tag));
            return Err(lost());
        }
        Ok(())
    }

    /// The answer `message` to the claim tagged `tag`, sent to `node`, has
    /// arrived: a name granted is entered here. False when the answer is
    /// held back and the claim asked again (see the module's note).
    pub fn answered(&self, rt: &Runtime, node: u16, tag: u64, granted: bool, message: &[u8]) -> bool {
        let Some(claim) = self.claims.with(node, |c| c.remove(&tag)) else { return true };
        if granted {
            self.granted(rt, &claim.name, claim.pid);
            return true;
        }
        let held_on_lost_node = match notice::claim_answer(message) {
            Some(Err((_, Some(holder)))) => !rt.nodes().id(holder.node()).is_some_and(|id| rt.live_nodes().contains(&id.name)),
            _ => false,
        };
        if held_on_lost_node && claim.since.elapsed() < AGREE_WITHIN {
            self.again.lock().push(claim);
            return false;
        }
        true
    }

    /// The name's arbiter gave `name` to `pid`, of this node: it is entered
    /// here and told to every peer, before anything the process sends after
    /// its `register` returns (links keep order). If the process ended
    /// meanwhile, the name goes with it.
    pub fn granted(&self, rt: &Runtime, name: &[u8], pid: Pid) {
        match rt.enter_name(name, pid) {
            Ok(()) => broadcast(rt, kind::NAMED, name, pid),
            Err(_) => self.released(rt, pid, &[name.into()]),
        }
    }

    /// `pid`, of this node, has ended holding `names`: every node forgets them.
    pub fn released(&self, rt: &Runtime, pid: Pid, names: &[Box<[u8]>]) {
        for name in names {
            broadcast(rt, kind::UNNAMED, name, pid);
        }
    }

    /// The live node that arbitrates `name`: the one whose name hashed with
    /// it scores highest (rendezvous hashing), so that every node with the
    /// same view asks the same one, and a node leaving moves only its own
    /// names' arbiter.
    pub fn home_of(rt: &Runtime, name: &[u8]) -> Arc<str> {
        use std::hash::{Hash, Hasher};
        let score = |node: &str| {
            let mut h = std::hash::DefaultHasher::new();
            (name, node).hash(&mut h);
            h.finish()
        };
        rt.live_nodes().into_iter().max_by_key(|n| score(n)).unwrap_or_else(|| rt.node_name())
    }

    /// `loser`, of this node, lost `name` to `winner`: a space whose home
    /// this node was moves to the winner's node; a process gets the message
    /// `"name_lost", NAME` and keeps running. Every peer forgets this
    /// node's claim.
    fn name_lost(&self, rt: &Runtime, name: &[u8], loser: Pid, winner: Pid) {
        match name.strip_prefix(linda_remote::HOME_PREFIX) {
            Some(space) => linda_remote::moved(rt, space, winner),
            None => {
                let mut w = crate::wire::Writer::message(2);
                w.str(b"name_lost");
                w.str(name);
                rt.send(loser, Message::from_vec(w.finish_small()));
            }
        }
        broadcast(rt, kind::UNNAMED, name, loser);
    }
}

/// This node arbitrates `name`: gives it to `pid` if it is free, and
/// answers the claim tagged `tag` (a refusal names the holder).
fn arbitrate(rt: &Runtime, tag: u64, name: &[u8], pid: Pid) -> Message {
    match rt.enter_name(name, pid) {
        Ok(()) => notice::reply(tag, Ok(None)),
        Err(e) => match rt.whereis(name) {
            Some(holder) => notice::refused(tag, &e.to_string(), holder),
            None => notice::reply(tag, Err(&e.to_string())),
        },
    }
}

/// Of two holders of one name (both sides of a healed partition gave it),
/// whether `new` takes it from `old`: the one on the node whose name sorts
/// first. Every node sees both claims (each holder's node tells every node
/// it links to) and decides alike.
fn prevails(rt: &Runtime, new: Pid, old: Pid) -> bool {
    let name = |p: Pid| rt.nodes().id(p.node()).map(|n| n.name);
    name(new) < name(old)
}

/// Tells every linked node that `name` goes with `pid` (`Named`), or no
/// longer (`Unnamed`).
fn broadcast(rt: &Runtime, kind: u8, name: &[u8], pid: Pid) {
    let Some(t) = rt.transport() else { return };
    for node in t.peers() {
        t.push(node, Outgoing::carrying(kind, Head::new(), Message::from_vec(notice::name_message(name, pid))));
    }
}

impl Service for Names {
    fn kinds(&self) -> &'static [u8] {
        &[kind::CLAIM, kind::NAMED, kind::UNNAMED]
    }

    fn receive(&self, rt: &Runtime, peer: &dyn Peer, kind: u8, body: &[u8], _: Vec<Attachment>) -> Result<(), String> {
        let mut r = Reader::fields(body);
        let caller = match kind {
            kind::CLAIM => Some((peer.ours(read_pid(&mut r)?)?, r.varint().map_err(|e| e.to_string())?)),
            _ => None,
        };
        let message = rest_message(peer, &mut r, Vec::new())?;
        let (name, pid) = notice::name_of(&message).ok_or(match kind {
            kind::CLAIM => "malformed name claim",
            _ => "malformed name",
        })?;
        match (kind, caller) {
            (kind::CLAIM, Some((caller, tag))) => drop(rt.send(caller, arbitrate(rt, tag, name, pid))),
            (kind::NAMED, _) if pid.node() == 0 => {
                if rt.enter_name(name, pid).is_err() && !rt.is_alive(pid) {
                    // Ours, and ended before the name reached us: the name goes with it.
                    self.released(rt, pid, &[name.into()]);
                }
            }
            (kind::NAMED, _) => {
                if let Some(lost) = rt.settle_name(name, pid, |new, old| prevails(rt, new, old)) {
                    if lost.node() == 0 {
                        self.name_lost(rt, name, lost, pid);
                    }
                }
            }
            _ => rt.remove_name(name, pid),
        }
        Ok(())
    }

    /// A new link is told every name held here.
    fn linked(&self, rt: &Runtime, node: u16) {
        let Some(t) = rt.transport() else { return };
        for (name, pid) in rt.names_held_here() {
            t.push(node, Outgoing::carrying(kind::NAMED, Head::new(), Message::from_vec(notice::name_message(&name, pid))));
        }
    }

    fn lost(&self, _: &Runtime, node: u16, _: &str) {
        drop(self.claims.take(node));
    }

    /// Claims held back are asked again (of the arbiter the view now gives).
    fn tick(&self, rt: &Runtime) {
        let again = std::mem::take(&mut *self.again.lock());
        for claim in again {
            let (caller, tag) = (claim.caller, claim.tag);
            if let Err(why) = self.ask(rt, claim) {
                rt.send(caller, notice::reply(tag, Err(&why)));
            }
        }
    }

    /// A name held on a node that left is free as soon as `s.nodes()` no
    /// longer lists the node (a program that waits for that to give the
    /// name to a process of its own must find it free).
    fn leaving(&self, rt: &Runtime, node: u16) {
        rt.drop_names_of(node);
    }

    fn gone(&self, rt: &Runtime, node: u16, _: &str) {
        rt.drop_names_of(node);
    }
}
