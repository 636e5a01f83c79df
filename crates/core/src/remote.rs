//! The runtime's window onto other nodes. The core knows nothing of sockets:
//! the cluster transport (`synodic-net`) implements [`Remote`] and installs
//! it with `Runtime::set_remote`; from then on whatever `Runtime::route`
//! finds on another node (a send, a monitor) goes through it, and so do the
//! requests that need an answer from another node (a spawn, a name). Without
//! one, a node is alone and pids of other nodes reach nothing.
//!
//! A request's answer comes back to its caller as an ordinary message,
//! `"$reply", tag, value` or `"$reply", tag, nil, error` ([`reply`]), which
//! the caller waits for by its tag (a selective receive): no thread ever
//! blocks on the network.

use std::sync::Arc;

use crate::future::{FutureId, Ticket, FULL_WEIGHT};
use crate::payload::Payload;
use crate::spaces::{Home, SpaceRef};
use crate::waiting::{Completion, Waiter};
use crate::wire::{Reader, Tag, Writer};
use crate::{Attachment, Message, NodeId, Pid, Runtime};

pub trait Remote: Send + Sync {
    /// Hands `msg`, from `from`, for `to` (a pid of another node) to the
    /// transport. False when that node is not connected: the message is
    /// dropped, as one to a dead process is.
    fn send(&self, from: Pid, to: Pid, msg: Message) -> bool;

    /// `watcher` (here) monitors `target` (elsewhere). False when that node
    /// is not connected: the caller then gets its DOWN at once.
    fn monitor(&self, watcher: Pid, target: Pid) -> bool;

    /// Removes one of `watcher`'s monitors of `target` (elsewhere); a DOWN
    /// for it that arrives later is dropped. False when none was in place
    /// (its DOWN has arrived, or the node was lost and gave it).
    fn demonitor(&self, watcher: Pid, target: Pid) -> bool;

    /// `watcher` gets `"nodedown", node` when the connection to `node` is
    /// lost. False when it is not connected (the caller says so at once).
    fn monitor_node(&self, watcher: Pid, node: &str) -> bool;

    /// Starts the process that `body` (a spawn message: function, then
    /// arguments) describes on `node`; its pid reaches `caller` as the reply
    /// tagged `tag`. An error says why the request could not even be sent.
    fn spawn(&self, caller: Pid, tag: u64, node: &str, body: Message) -> Result<(), String>;

    /// Asks the cluster for `name` for `pid` (a process of this node): the
    /// node that arbitrates the name enters it everywhere, or refuses it
    /// because another holds it, and replies to `caller` with the tag.
    fn claim(&self, caller: Pid, tag: u64, name: &[u8], pid: Pid) -> Result<(), String>;

    /// `pid`, of this node, has ended holding `names`: every node forgets them.
    fn released(&self, pid: Pid, names: &[Box<[u8]>]);

    /// Whether the link to `to`'s node has room for more, and `to` takes
    /// messages as fast as they come. When not (the peer reads slower than
    /// this node sends, or `to` has told that it is [busy](BUSY_HIGH)),
    /// `sender`, a process here, is woken once there is: so a sender is
    /// slowed in `send` and the memory both nodes spend stays bounded.
    fn room_for(&self, to: Pid, sender: Pid) -> bool;

    /// `pid`, of this node, which some node was told is busy, has taken
    /// its messages down to [`BUSY_LOW`] bytes (or ended): senders there
    /// may go on.
    fn drained(&self, pid: Pid);

    /// The least loaded live node, this one included, from the load the
    /// nodes tell each other.
    fn least_loaded(&self) -> Arc<str>;

    /// The names of the live nodes, this one included, sorted.
    fn nodes(&self) -> Vec<Arc<str>>;

    /// Puts `task` in the pool of `node` (see [`crate::pool`]). An error
    /// says why it could not even be sent.
    fn submit(&self, node: &str, task: Message) -> Result<(), String>;

    /// Asks the node `home` (an alias) for the result `id` it computes; it
    /// comes back through `Runtime::future_fill`, or the node's loss through
    /// `Runtime::future_home_lost`.
    fn fetch(&self, home: u16, id: FutureId);

    /// Sends the node `to` the result `id` it asked for.
    fn fetched(&self, to: u16, id: FutureId, value: Message);

    /// Returns `weight` of the result `id` to its home node `home`.
    fn release(&self, home: u16, id: FutureId, weight: u64);

    /// Sends the tuple-space request `request` (see [`crate::linda_remote`])
    /// of `caller`, a wait of a process here, to the node `home`; when
    /// `answered`, its answer is awaited and, should that node be lost
    /// first, given as `Deleted`. False when that node is not connected.
    fn linda(&self, home: u16, caller: Waiter, request: Message, answered: bool) -> bool;

    /// Gives `completion` to `waiter`, a wait of a process of another node.
    fn complete(&self, waiter: Waiter, completion: Completion);
}

/// A process whose mailbox holds more than this many bytes when a message
/// from another node arrives is *busy* for that node: its senders there
/// wait in `send` until it has taken its messages down to [`BUSY_LOW`].
pub const BUSY_HIGH: u64 = 4 << 20;
pub const BUSY_LOW: u64 = 1 << 20;

/// The longest message (bytes and buffers together) that crosses between nodes.
pub const MESSAGE_MAX: u64 = 1 << 30;
/// The most buffers one message may carry to another node.
pub const ATTACHMENTS_MAX: usize = 4096;

/// Whether `msg` can go to another node: buffers cross as their bytes,
/// futures as their id, tuple-space handles as the name or home of their
/// space (see [`carry`]), and the whole must not be too long. The error
/// says what is wrong.
pub fn crossing(msg: &Message) -> Result<(), String> {
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

const REPLY: &[u8] = b"$reply";

/// The answer to the request tagged `tag`: a pid, `true` (`None`), or an error.
pub fn reply(tag: u64, answer: Result<Option<Pid>, &str>) -> Message {
    let mut w = Writer::message(if answer.is_ok() { 3 } else { 4 });
    w.str(REPLY);
    w.int(tag as i64);
    match answer {
        Ok(Some(pid)) => w.pid(pid),
        Ok(None) => w.tag(Tag::True),
        Err(e) => {
            w.tag(Tag::Nil);
            w.str(e.as_bytes());
        }
    }
    Message::from_vec(w.finish_small())
}

/// A claim's refusal: [`reply`]'s error, then the pid that holds the name.
pub fn refused(tag: u64, why: &str, holder: Pid) -> Message {
    let mut w = Writer::message(5);
    w.str(REPLY);
    w.int(tag as i64);
    w.tag(Tag::Nil);
    w.str(why.as_bytes());
    w.pid(holder);
    Message::from_vec(w.finish_small())
}

/// What the reply `msg` to a name claim says: granted, or refused, with
/// why and, when the refusal names it, the pid that holds the name.
pub fn claim_answer(msg: &[u8]) -> Option<Result<(), (String, Option<Pid>)>> {
    let (_, granted) = reply_of(msg)?;
    if granted {
        return Some(Ok(()));
    }
    let (mut r, count) = Reader::message(msg).ok()?;
    for _ in 0..3 {
        skip_scalar(&mut r)?;
    }
    let why = match r.tag().ok()? {
        Tag::Str => String::from_utf8_lossy(r.bytes().ok()?).into_owned(),
        _ => return None,
    };
    let holder = if count == 5 && r.tag().ok()? == Tag::Pid { Some(r.pid().ok()?) } else { None };
    Some(Err((why, holder)))
}

/// Reads past one string, integer or nil.
fn skip_scalar(r: &mut Reader) -> Option<()> {
    match r.tag().ok()? {
        Tag::Str => drop(r.bytes().ok()?),
        Tag::Int => drop(r.int().ok()?),
        Tag::Nil => {}
        _ => return None,
    }
    Some(())
}

/// The tag of `msg` if it is a reply.
pub fn reply_tag(msg: &[u8]) -> Option<u64> {
    reply_of(msg).map(|(tag, _)| tag)
}

/// The tag of `msg` if it is a reply, and whether it grants what was asked
/// (it is not an error).
pub fn reply_of(msg: &[u8]) -> Option<(u64, bool)> {
    let (mut r, count) = Reader::message(msg).ok()?;
    if count < 3 || r.tag().ok()? != Tag::Str || r.bytes().ok()? != REPLY || r.tag().ok()? != Tag::Int {
        return None;
    }
    r.int().ok().map(|t| (t as u64, count == 3))
}

/// `"nodedown", node`: what a node monitor gets when `node` is lost.
pub fn nodedown(node: &[u8]) -> Message {
    let mut w = Writer::message(2);
    w.str(b"nodedown");
    w.str(node);
    Message::from_vec(w.finish_small())
}

/// A name and a pid as a message (what the transport carries of a name).
pub fn name_message(name: &[u8], pid: Pid) -> Vec<u8> {
    let mut w = Writer::message(2);
    w.str(name);
    w.pid(pid);
    w.finish_small()
}

/// The name and pid of a [`name_message`].
pub fn name_of(msg: &[u8]) -> Option<(&[u8], Pid)> {
    let (mut r, count) = Reader::message(msg).ok()?;
    if count != 2 || r.tag().ok()? != Tag::Str {
        return None;
    }
    let name = r.bytes().ok()?;
    if r.tag().ok()? != Tag::Pid {
        return None;
    }
    Some((name, r.pid().ok()?))
}

/// The pid a DOWN notice (`"DOWN", pid, reason`) is about, if `msg` is one.
pub fn down_of(msg: &[u8]) -> Option<Pid> {
    let (mut r, count) = Reader::message(msg).ok()?;
    if count != 3 || r.tag().ok()? != Tag::Str || r.bytes().ok()? != b"DOWN" || r.tag().ok()? != Tag::Pid {
        return None;
    }
    r.pid().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_and_downs_are_told_apart() {
        let pid = Pid::new(0, 3, 1);
        assert_eq!(reply_tag(&reply(7, Ok(Some(pid)))), Some(7));
        assert_eq!(reply_of(&reply(9, Err("no"))), Some((9, false)));
        assert_eq!(reply_of(&reply(9, Ok(None))), Some((9, true)));
        let down = crate::runtime::down_message(pid, &crate::ExitReason::Normal);
        assert_eq!(down_of(&down), Some(pid));
        assert_eq!(reply_tag(&down), None);
        assert_eq!(down_of(&reply(7, Ok(Some(pid)))), None);
        assert_eq!(down_of(b"junk"), None);
        assert_eq!(claim_answer(&reply(4, Ok(None))), Some(Ok(())));
        assert_eq!(claim_answer(&reply(4, Err("taken"))), Some(Err(("taken".into(), None))));
        assert_eq!(claim_answer(&refused(4, "taken", pid)), Some(Err(("taken".into(), Some(pid)))));
        assert_eq!(claim_answer(b"junk"), None);
    }
}
