//! Messages between processes on different nodes (`Send` frames). A
//! message that is the runtime's own notice (sender and receiver the same
//! pid: a reply, a DOWN) settles what it answers first (see [`settle`]).
//! A receiver that takes its messages slower than they come is told to the
//! peer as busy, whose senders then wait in `send` (`Peer::busy`).

use crate::wire::Reader;
use crate::{Attachment, Message, Pid, Runtime};

use super::monitors::Monitors;
use super::names::Names;
use super::notice;
use super::requests::Requests;
use super::{fields, here, kind, read_pid, rest_message, Outgoing, Peer, Service};

pub struct Mail;

impl Mail {
    /// Hands `msg`, from `from`, for `to` (a pid of another node) to the
    /// transport. False when that node is not linked: the message is
    /// dropped, as one to a dead process is.
    pub fn send(&self, rt: &Runtime, from: Pid, to: Pid, msg: Message) -> bool {
        let Some(t) = rt.transport() else { return false };
        let head = fields(|w| {
            w.u64(to.raw());
            w.u64(from.raw());
        });
        t.push(to.node(), Outgoing { kind: kind::SEND, head, message: Some(msg), between: Some((from, to)) })
    }
}

impl Service for Mail {
    fn kinds(&self) -> &'static [u8] {
        &[kind::SEND]
    }

    fn receive(&self, rt: &Runtime, peer: &dyn Peer, _: u8, body: &[u8], shared: Vec<Attachment>) -> Result<(), String> {
        let mut r = Reader::fields(body);
        let (to, from) = (read_pid(&mut r)?, read_pid(&mut r)?);
        let message = rest_message(peer, &mut r, shared)?;
        if from == to && !settle(rt, peer.alias(), to, &message) {
            return Ok(());
        }
        let to = here(to);
        rt.send(to, message);
        // A process that takes messages slower than they come: its senders
        // over there wait, until it has taken them down. (A receiver
        // keeping up costs no lock.)
        if rt.is_busy(to) {
            peer.busy(to);
        }
        Ok(())
    }
}

/// A notice for `to` has arrived from `node`: what it answers is no longer
/// awaited (a name it grants is entered). False when it is to be dropped:
/// the DOWN of a monitor removed since it was sent, or a name claim's
/// refusal held back while the claim is asked again.
fn settle(rt: &Runtime, node: u16, to: Pid, message: &[u8]) -> bool {
    if let Some((tag, granted)) = notice::reply_of(message) {
        rt.service::<Requests>().answered(node, tag);
        return rt.service::<Names>().answered(rt, node, tag, granted, message);
    }
    match notice::down_of(message) {
        Some(target) => rt.service::<Monitors>().forget(node, here(to), target),
        None => true,
    }
}
