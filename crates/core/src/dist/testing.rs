//! The services without sockets: an in-memory [`Transport`] that records
//! what the services queue for each node, a [`Peer`] that stands for a
//! link, and processes that keep what they receive. Every wait is for an
//! event, bounded; nothing sleeps. Built for this crate's tests and, with
//! the `testing` feature, for the fuzz targets.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::process::{Body, Process, Step};
use crate::runtime::Config;
use crate::{Message, NodeId, Pid, Runtime};

use super::{Outgoing, Peer, Transport};

/// How long a test waits for what it awaits before it fails.
const LIMIT: Duration = Duration::from_secs(20);

/// A frame a service queued: for which node, its kind, fields and message.
#[derive(Debug, Clone, PartialEq)]
pub struct Sent {
    pub node: u16,
    pub kind: u8,
    pub head: Vec<u8>,
    pub message: Option<Vec<u8>>,
}

/// The transport of a node whose links are a list of (alias, name).
#[derive(Default)]
pub struct Wire {
    pub sent: Mutex<Vec<Sent>>,
    pub links: Mutex<Vec<(u16, Arc<str>)>>,
    pub me: Mutex<Option<Arc<str>>>,
}

impl Wire {
    /// What was queued so far, taken out.
    pub fn take(&self) -> Vec<Sent> {
        std::mem::take(&mut *self.sent.lock())
    }
}

impl Transport for Wire {
    fn push(&self, node: u16, frame: Outgoing) -> bool {
        if !self.links.lock().iter().any(|(a, _)| *a == node) {
            return false;
        }
        let message = frame.message.map(|m| m.into_vec());
        self.sent.lock().push(Sent { node, kind: frame.kind, head: frame.head.to_vec(), message });
        true
    }

    fn peers(&self) -> Vec<u16> {
        self.links.lock().iter().map(|(a, _)| *a).collect()
    }

    fn linked(&self, name: &str) -> Option<u16> {
        self.links.lock().iter().find(|(_, n)| &**n == name).map(|(a, _)| *a)
    }

    fn nodes(&self) -> Vec<Arc<str>> {
        let mut all: Vec<Arc<str>> = self.links.lock().iter().map(|(_, n)| n.clone()).collect();
        all.extend(self.me.lock().clone());
        all.sort();
        all
    }

    fn room_for(&self, _: Pid, _: Pid) -> bool {
        true
    }

    fn drained(&self, _: Pid) {}
}

/// A node for a test: a runtime whose transport is a [`Wire`] linked to
/// the nodes `peers` (names), which get aliases 1, 2, ... in order.
pub fn node(peers: &[&str]) -> (Runtime, Arc<Wire>) {
    let rt = Runtime::start(Config { workers: 1, node_name: "me".into(), ..Default::default() }).expect("a runtime");
    let wire = Arc::new(Wire::default());
    *wire.me.lock() = Some(rt.node_name());
    for name in peers {
        let alias = rt.nodes().alias(&NodeId { name: (*name).into(), incarnation: 1 }).expect("room in the node table");
        wire.links.lock().push((alias, (*name).into()));
    }
    assert!(rt.set_transport(wire.clone()));
    (rt, wire)
}

/// A link from the node with alias `alias`, which names our pids with
/// node 0 and its own with 0 too (its view), as a real peer does once it
/// has announced nothing else.
pub struct Link {
    pub alias: u16,
    pub busy: Mutex<Vec<Pid>>,
}

impl Link {
    pub fn new(alias: u16) -> Link {
        Link { alias, busy: Mutex::new(Vec::new()) }
    }
}

impl Peer for Link {
    fn alias(&self) -> u16 {
        self.alias
    }

    fn ours(&self, pid: Pid) -> Result<Pid, String> {
        match pid.node() {
            0 => Ok(pid.aliased(self.alias, 0)),
            n => Err(format!("pid of node alias {n}, never announced")),
        }
    }

    fn map_arrived(&self, message: &mut [u8]) -> Result<(), String> {
        crate::wire::map_pids(message, |p, at| match p.node() {
            0 => Ok(p.aliased(self.alias, 0)),
            _ => Err(crate::wire::WireError::UnknownNode(at)),
        })
        .map_err(|e| format!("bad message: {e}"))
    }

    fn busy(&self, pid: Pid) {
        self.busy.lock().push(pid);
    }
}

/// A process that keeps every message it receives.
pub struct Inbox {
    got: Arc<(Mutex<Vec<Message>>, Condvar)>,
}

/// Starts an [`Inbox`] process; returns its pid and what it receives.
pub fn inbox(rt: &Runtime) -> (Pid, Received) {
    let got = Arc::new((Mutex::new(Vec::new()), Condvar::new()));
    let pid = rt.spawn(Box::new(Inbox { got: got.clone() })).expect("a process");
    (pid, Received(got))
}

impl Body for Inbox {
    fn resume(&mut self, _: &Runtime, me: &'static Process) -> Step {
        while let Some(m) = me.pop_message() {
            self.got.0.lock().push(m);
            self.got.1.notify_all();
        }
        Step::Blocked
    }
}

/// What an [`Inbox`] has received.
pub struct Received(Arc<(Mutex<Vec<Message>>, Condvar)>);

impl Received {
    /// Waits until `n` messages have come; returns them all.
    pub fn wait_for(&self, n: usize) -> Vec<Message> {
        let deadline = Instant::now() + LIMIT;
        let mut got = self.0 .0.lock();
        while got.len() < n {
            assert!(!self.0 .1.wait_until(&mut got, deadline).timed_out(), "{} of {n} messages came", got.len());
        }
        got.clone()
    }

    /// What has come so far.
    pub fn now(&self) -> Vec<Message> {
        self.0 .0.lock().clone()
    }
}

/// The first field of a message (a string), for telling messages apart.
pub fn first_str(m: &Message) -> Vec<u8> {
    let (mut r, _) = crate::wire::Reader::message(m).expect("a message");
    assert_eq!(r.tag().expect("a tag"), crate::wire::Tag::Str);
    r.bytes().expect("a string").to_vec()
}
