//! How a message's shared values cross to another node: buffers as their
//! bytes, futures as their id and a share of their weight, tuple-space
//! handles as their space's name, or its home node and serial. The
//! transport calls [`carry`] for each attachment of a message it sends and
//! [`arrive_future`] / [`arrive_space`] for what arrives.

use std::sync::Arc;

use crate::future::{FutureId, Ticket, FULL_WEIGHT};
use crate::payload::Payload;
use crate::spaces::{Home, SpaceRef};
use crate::wire::{Reader, Writer};
use crate::{Attachment, Message, NodeId, Runtime};

use super::{ATTACHMENTS_MAX, MESSAGE_MAX};

/// Whether `msg` can go to another node: buffers cross as their bytes,
/// futures as their id, tuple-space handles as the name or home of their
/// space (see [`carry`]), and the whole must not be too long. The error
/// says what is wrong.
pub fn crossing(msg: &Message) -> Result<(), String> {
    if msg.attachments().iter().any(|a| a.is::<crate::io::SocketCell>()) {
        return Err("cannot send value of type socket".into());
    }
    if msg.attachments().iter().any(|a| !a.is::<Payload>() && !a.is::<Ticket>() && !a.is::<SpaceRef>()) {
        return Err("a value of this kind cannot cross to another node".into());
    }
    if msg.attachments().len() > ATTACHMENTS_MAX {
        return Err(format!("a message to another node carries at most {ATTACHMENTS_MAX} buffers"));
    }
    // Room for the envelope and the frame around the message (`parcel`).
    let most = MESSAGE_MAX - (64 << 10);
    if msg.size() as u64 > most {
        return Err(format!("message too large: {} bytes, at most {most} to another node", msg.size()));
    }
    Ok(())
}

/// An attachment on its way to another node.
#[derive(Clone, Debug, PartialEq)]
pub enum Carried {
    /// A buffer's bytes.
    Bytes(Arc<Payload>),
    /// A future: its home node, its id and the weight that goes with it
    /// (half of what this node held; see [`crate::future`]), encoded.
    Future(Vec<u8>),
    /// A tuple-space handle: its space's name, or its home node and serial
    /// there, encoded.
    Space(Vec<u8>),
}

/// What of `shared` crosses to another node; `None` for what cannot.
pub fn carry(shared: &Attachment, rt: &Runtime) -> Option<Carried> {
    if let Ok(bytes) = shared.clone().downcast::<Payload>() {
        return Some(Carried::Bytes(bytes));
    }
    if let Some(space) = shared.downcast_ref::<SpaceRef>() {
        return carry_space(space, rt).map(Carried::Space);
    }
    let ticket = shared.downcast_ref::<Ticket>()?;
    let home = rt.nodes().id(ticket.home)?;
    let mut w = Writer::fields_after(Vec::new());
    w.bytes(home.name.as_bytes());
    w.u64(home.incarnation);
    w.u64(ticket.id.origin);
    w.u64(ticket.id.seq);
    w.u64(ticket.split());
    Some(Carried::Future(w.finish_small()))
}

/// An attachment that arrived from another node, as this node holds it;
/// `None` for a malformed handle.
pub fn arrive(carried: Carried, rt: &Runtime) -> Option<Attachment> {
    match carried {
        Carried::Bytes(bytes) => Some(bytes as Attachment),
        Carried::Future(encoded) => arrive_future(&encoded, rt),
        Carried::Space(encoded) => arrive_space(&encoded, rt),
    }
}

/// A future that arrived from another node (as [`carry`] encoded it): this
/// node's ticket for it, with the weight it brought.
pub fn arrive_future(bytes: &[u8], rt: &Runtime) -> Option<Attachment> {
    let mut r = Reader::fields(bytes);
    let name = std::str::from_utf8(r.bytes().ok()?).ok()?.into();
    let home = NodeId { name, incarnation: r.u64().ok()? };
    let id = FutureId { origin: r.u64().ok()?, seq: r.u64().ok()? };
    let weight = r.u64().ok()?;
    let alias = rt.nodes().alias(&home)?;
    Some(rt.ticket(id, alias, weight))
}

/// The id under which a private space's home keeps the hold other nodes
/// have on it, as it keeps a future's result (`future::Store::hold`): its
/// home's incarnation and its serial, in ids no future takes (the top bit).
pub fn space_hold(home: &NodeId, serial: u64) -> FutureId {
    FutureId { origin: home.incarnation, seq: 1 << 63 | serial }
}

/// A space handle as it crosses: `0 name`, or `1 node incarnation serial
/// weight` for a private space, with weight as a future's handle carries it:
/// given out by the space's home (which keeps the space until it has all
/// come back), or half of what this node holds.
fn carry_space(space: &SpaceRef, rt: &Runtime) -> Option<Vec<u8>> {
    let mut w = Writer::fields_after(Vec::new());
    let (alias, serial, weight) = match (&space.name, &space.home) {
        (Some(name), _) => {
            w.byte(0);
            w.bytes(name);
            return Some(w.finish_small());
        }
        (None, Home::Here(serial, s)) => {
            let held = s.clone() as Attachment;
            rt.futures().with(|st| st.hold(space_hold(&rt.nodes().me(), *serial), || Message::with_attachments(Writer::message(0).finish_small(), vec![held]), FULL_WEIGHT));
            (0, *serial, FULL_WEIGHT)
        }
        (None, Home::There(alias, serial)) => (*alias, *serial, space.hold.as_ref().map_or(0, |t| t.split())),
        (None, _) => return None,
    };
    let node = rt.nodes().id(alias)?;
    w.byte(1);
    w.bytes(node.name.as_bytes());
    w.u64(node.incarnation);
    w.varint(serial);
    w.u64(weight);
    Some(w.finish_small())
}

/// A space handle that arrived from another node (as [`carry_space`]
/// encoded it).
pub fn arrive_space(bytes: &[u8], rt: &Runtime) -> Option<Attachment> {
    let mut r = Reader::fields(bytes);
    let space = match r.byte_value().ok()? {
        0 => SpaceRef { name: Some(std::sync::Arc::new(r.bytes().ok()?.into())), home: Home::Unresolved, hold: None },
        1 => {
            let name = std::str::from_utf8(r.bytes().ok()?).ok()?.into();
            let node = NodeId { name, incarnation: r.u64().ok()? };
            let serial = r.varint().ok()?;
            let weight = r.u64().ok()?;
            let id = space_hold(&node, serial);
            match rt.nodes().alias(&node)? {
                0 => {
                    // Back home: the weight it brought is returned at once.
                    let home = rt.spaces().get(serial).map_or(Home::Gone, |s| Home::Here(serial, s));
                    drop(rt.futures().with(|st| st.release_held(id, weight)));
                    SpaceRef { name: None, home, hold: None }
                }
                alias => SpaceRef { name: None, home: Home::There(alias, serial), hold: Some(rt.ticket(id, alias, weight)) },
            }
        }
        _ => return None,
    };
    r.finish().ok()?;
    Some(Arc::new(space))
}

