//! The distribution layer: what nodes do for each other, one service per
//! feature, over a transport that only moves frames.
//!
//! A service is a sans-IO state machine. It owns some frame kinds (the
//! byte on the wire that says what a frame is), the bookkeeping of what
//! processes here wait for from other nodes (per node alias), and the
//! functions the API layer calls (`rt.service::<Names>().claim(...)`).
//! It acts on the world through two narrow traits: [`Transport`] (queue a
//! frame for a node, which nodes are linked) and [`Peer`] (the link a frame
//! came over: its pid aliases, its flow control). The transport
//! (`synodic-net`: sockets, handshake, links, membership) knows frames as a
//! kind and bytes, hands each that arrives to [`Services::receive`], and
//! tells the services when a node is linked or lost. Tests drive services
//! with an in-memory transport (`dist::testing`).
//!
//! | service | frames | what |
//! |---|---|---|
//! | [`mail::Mail`] | Send | messages between processes |
//! | [`monitors::Monitors`] | Monitor, Demonitor | monitors of processes and of nodes |
//! | [`spawn::Spawns`] | Spawn | starting processes on other nodes |
//! | [`names::Names`] | Claim, Named, Unnamed | registered names, arbitrated cluster-wide |
//! | [`pool::Pools`] | Task, Load | tasks for other nodes' pools, load reports |
//! | [`futures::Results`] | Fetch, Fetched, Release | results computed on other nodes |
//! | [`spaces::Spaces`] | Linda, Complete | tuple spaces homed on other nodes |
//! | [`requests::Requests`] | (answers come as notices) | who waits for an answer from which node |
//!
//! How handles (futures, spaces) cross is [`carry`]; the runtime's notices
//! that answer a request (`"$reply"`, DOWN, `"nodedown"`) are [`notice`].
//! A new distributed feature is a new service file and one line in
//! [`Services::standard`]: no trait to grow, no central match.

pub mod carry;
pub mod futures;
pub mod links;
pub mod mail;
pub mod monitors;
pub mod names;
pub mod notice;
pub mod pool;
pub mod requests;
pub mod spaces;
pub mod spawn;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
#[cfg(test)]
mod tests;

use std::any::Any;
use std::sync::Arc;

use crate::{Attachment, Message, Pid, Runtime};

/// The longest message (bytes and buffers together) that crosses between nodes.
pub const MESSAGE_MAX: u64 = 1 << 30;
/// The most buffers one message may carry to another node.
pub const ATTACHMENTS_MAX: usize = 4096;
/// A process whose mailbox holds more than this many bytes when a message
/// from another node arrives is *busy* for that node: its senders there
/// wait in `send` until it has taken its messages down to [`BUSY_LOW`].
pub const BUSY_HIGH: u64 = 4 << 20;
pub const BUSY_LOW: u64 = 1 << 20;

/// What the services ask of the transport.
pub trait Transport: Send + Sync {
    /// Queues `frame` for the node `node` (an alias); false when that node
    /// is not linked, or the frame's message cannot cross.
    fn push(&self, node: u16, frame: Outgoing) -> bool;
    /// The aliases of the nodes linked now.
    fn peers(&self) -> Vec<u16>;
    /// The alias of the linked node called `name`.
    fn linked(&self, name: &str) -> Option<u16>;
    /// The names of the live nodes, this one included, sorted.
    fn nodes(&self) -> Vec<Arc<str>>;
    /// Whether the link to `to`'s node has room for more, and `to` takes
    /// messages as fast as they come; when not, `sender` (here) is woken
    /// once there is.
    fn room_for(&self, to: Pid, sender: Pid) -> bool;
    /// `pid`, of this node, which some node was told is busy, has taken
    /// its messages down to [`BUSY_LOW`] bytes (or ended).
    fn drained(&self, pid: Pid);
    /// Each linked node's name with the bytes written to it and read from
    /// it so far (for the dashboard).
    fn traffic(&self) -> Vec<(Arc<str>, u64, u64)> {
        Vec::new()
    }
    /// How this node sees each node it knows of, itself included: the
    /// name, and whether it is live (in `nodes()`), a member in the
    /// gossip's view, and linked (for the dashboard).
    fn membership(&self) -> Vec<(Arc<str>, bool, bool, bool)> {
        Vec::new()
    }
}

/// A frame on its way to another node: its kind, the fields before its
/// message, and the message (whose pids and attachments the transport
/// carries). `between`: the processes (from, to) whose order it keeps.
pub struct Outgoing {
    pub kind: u8,
    pub head: Head,
    pub message: Option<Message>,
    pub between: Option<(Pid, Pid)>,
}

impl Outgoing {
    /// A frame of fields only.
    pub fn fields(kind: u8, head: Head) -> Outgoing {
        Outgoing { kind, head, message: None, between: None }
    }

    /// A frame whose fields are followed by `message`.
    pub fn carrying(kind: u8, head: Head, message: Message) -> Outgoing {
        Outgoing { kind, head, message: Some(message), between: None }
    }
}

/// The link a frame arrived over, as a service sees it.
pub trait Peer {
    /// The sending node's alias here.
    fn alias(&self) -> u16;
    /// A pid named in a frame's fields, in our aliases.
    fn ours(&self, pid: Pid) -> Result<Pid, String>;
    /// Maps the pids of a message that arrived (its copy, in place) to
    /// our aliases.
    fn map_arrived(&self, message: &mut [u8]) -> Result<(), String>;
    /// `pid`, a process here, takes messages slower than they come from
    /// this peer: its senders there are told to wait (once).
    fn busy(&self, pid: Pid);
}

/// One distributed feature.
pub trait Service: Any + Send + Sync {
    /// The frame kinds it owns.
    fn kinds(&self) -> &'static [u8];
    /// A frame of one of its kinds: `body` is what follows the kind byte,
    /// `shared` the attachments its message carries, already arrived.
    fn receive(&self, rt: &Runtime, peer: &dyn Peer, kind: u8, body: &[u8], shared: Vec<Attachment>) -> Result<(), String>;
    /// A link to `node` is up.
    fn linked(&self, _rt: &Runtime, _node: u16) {}
    /// The link to `node` (called `name`) is gone: whoever waited for an
    /// answer over it is told.
    fn lost(&self, _rt: &Runtime, _node: u16, _name: &str) {}
    /// The node `node` is about to leave the live nodes: what must be
    /// forgotten before any process can see it gone (a name it held, free
    /// for the taking as soon as `s.nodes()` no longer lists it). State
    /// only: nobody is told yet.
    fn leaving(&self, _rt: &Runtime, _node: u16) {}
    /// The node `node` is gone as well (no incarnation of it is linked,
    /// and it has left the live nodes): what it held is forgotten, and
    /// whoever watched it told (a nodedown comes after `s.nodes()` changed).
    fn gone(&self, _rt: &Runtime, _node: u16, _name: &str) {}
    /// Twice a second: what waits for time to pass is done.
    fn tick(&self, _rt: &Runtime) {}
}

/// The node's services, and which owns each frame kind.
pub struct Services {
    list: Vec<Arc<dyn Service>>,
    by_kind: [Option<u8>; 256],
}

impl Services {
    /// Every service, once: the one list to extend.
    pub fn standard() -> Services {
        Services::new(vec![
            Arc::new(mail::Mail),
            Arc::new(monitors::Monitors::default()),
            Arc::new(links::Links::default()),
            Arc::new(spawn::Spawns::default()),
            Arc::new(names::Names::default()),
            Arc::new(pool::Pools::default()),
            Arc::new(futures::Results),
            Arc::new(spaces::Spaces::default()),
            Arc::new(requests::Requests::default()),
        ])
    }

    /// `list`, whose kinds must not overlap.
    pub fn new(list: Vec<Arc<dyn Service>>) -> Services {
        let mut by_kind = [None; 256];
        for (i, s) in list.iter().enumerate() {
            for &k in s.kinds() {
                assert!(by_kind[k as usize].is_none(), "frame kind {k} owned twice");
                assert!(!kind::transport::ALL.contains(&k), "frame kind {k} is the transport's");
                by_kind[k as usize] = Some(i as u8);
            }
        }
        Services { list, by_kind }
    }

    /// The service of type `T`.
    pub fn get<T: Service>(&self) -> &T {
        self.list.iter().find_map(|s| (&**s as &dyn Any).downcast_ref::<T>()).expect("every service is in Services::standard")
    }

    /// Whether some service owns frames of `kind`.
    pub fn owns(&self, kind: u8) -> bool {
        self.by_kind[kind as usize].is_some()
    }

    /// Hands a frame that arrived to the service that owns its kind.
    pub fn receive(&self, rt: &Runtime, peer: &dyn Peer, kind: u8, body: &[u8], shared: Vec<Attachment>) -> Result<(), String> {
        match self.by_kind[kind as usize] {
            Some(i) => self.list[i as usize].receive(rt, peer, kind, body, shared).map_err(|e| format!("a frame of kind {kind}: {e}")),
            None => Err(format!("unknown frame kind {kind}")),
        }
    }

    /// A link to `node` is up: each service says what it must.
    pub fn linked(&self, rt: &Runtime, node: u16) {
        self.list.iter().for_each(|s| s.linked(rt, node));
    }

    /// The link to `node` is gone: each service tells its waiters.
    pub fn lost(&self, rt: &Runtime, node: u16, name: &str) {
        self.list.iter().for_each(|s| s.lost(rt, node, name));
    }

    /// The node `node` is about to leave the live nodes (see `Service::leaving`).
    pub fn leaving(&self, rt: &Runtime, node: u16) {
        self.list.iter().for_each(|s| s.leaving(rt, node));
    }

    /// Twice a second (see `Service::tick`).
    pub fn tick(&self, rt: &Runtime) {
        self.list.iter().for_each(|s| s.tick(rt));
    }

    /// The node `node` is gone: each service forgets what it held.
    pub fn gone(&self, rt: &Runtime, node: u16, name: &str) {
        self.list.iter().for_each(|s| s.gone(rt, node, name));
    }
}

/// The frame kinds on the wire (`docs/cluster-protocol.md`), every one of
/// them: the services' here, the transport's and the handshake's in
/// [`kind::transport`], which `synodic-net` uses. One list, so that no
/// number is given twice (`Services::new` refuses a service that owns a
/// kind already owned, or the transport's).
pub mod kind {
    /// The kinds the transport and its handshake read themselves; no
    /// service may own them.
    pub mod transport {
        pub const HELLO: u8 = 1;
        pub const WELCOME: u8 = 2;
        pub const NODE: u8 = 3;
        pub const PART: u8 = 5;
        pub const CHALLENGE: u8 = 19;
        pub const REFUSED: u8 = 20;
        pub const BUSY: u8 = 21;
        pub const READY: u8 = 22;
        pub const ALL: [u8; 8] = [HELLO, WELCOME, NODE, PART, CHALLENGE, REFUSED, BUSY, READY];
    }
    pub const SEND: u8 = 4;
    pub const MONITOR: u8 = 6;
    pub const SPAWN: u8 = 7;
    pub const LOAD: u8 = 8;
    pub const CLAIM: u8 = 9;
    pub const NAMED: u8 = 10;
    pub const UNNAMED: u8 = 11;
    pub const TASK: u8 = 12;
    pub const FETCH: u8 = 13;
    pub const FETCHED: u8 = 14;
    pub const RELEASE: u8 = 15;
    pub const LINDA: u8 = 16;
    pub const COMPLETE: u8 = 17;
    pub const DEMONITOR: u8 = 18;
    pub const LINK: u8 = 23;
    pub const UNLINK: u8 = 24;
    pub const EXIT: u8 = 25;
    pub const KILL: u8 = 26;
}

/// A pid of this node, from a frame that names it with the sender's alias for us.
pub fn here(pid: Pid) -> Pid {
    pid.aliased(0, 0)
}

/// Reads a pid from a frame's fields.
pub(crate) fn read_pid(r: &mut crate::wire::Reader) -> Result<Pid, String> {
    let at = r.position();
    let raw = r.u64().map_err(|e| e.to_string())?;
    Pid::from_raw(raw).ok_or_else(|| crate::wire::WireError::BadPid(at).to_string())
}

/// The rest of a frame's body after its fields, as a message from `peer`
/// carrying `shared`: copied out (a short one inline, with no allocation)
/// and its pids mapped.
pub(crate) fn rest_message(peer: &dyn Peer, r: &mut crate::wire::Reader, shared: Vec<Attachment>) -> Result<Message, String> {
    let rest = r.bytes_raw(r.remaining()).map_err(|e| e.to_string())?;
    let mut message = Message::from_slice(rest);
    peer.map_arrived(message.bytes_mut())?;
    Ok(message.attach(shared))
}

/// A frame's fields must end where its body ends.
pub(crate) fn fields_end(r: &crate::wire::Reader, kind: u8) -> Result<(), String> {
    match r.remaining() {
        0 => Ok(()),
        n => Err(format!("{n} bytes after a frame of kind {kind}")),
    }
}

/// A frame's fields (the pids and numbers before its message): inline up
/// to 32 bytes, as nearly every frame's are. A message sent to another
/// node allocated and freed its two pids' 16 bytes on the way.
pub type Head = smallvec::SmallVec<[u8; 32]>;

/// A frame's fields, written by `write`.
pub(crate) fn fields(write: impl FnOnce(&mut crate::wire::Writer)) -> Head {
    thread_local! {
        static SCRATCH: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
    }
    let mut w = crate::wire::Writer::fields_after(SCRATCH.take());
    write(&mut w);
    let mut bytes = w.finish_small();
    let head = Head::from_slice(&bytes);
    if bytes.capacity() <= 256 {
        bytes.clear();
        SCRATCH.set(bytes);
    }
    head
}

/// What processes here wait for from each other node, by node alias.
pub(crate) struct PerNode<T>(parking_lot::Mutex<std::collections::HashMap<u16, T>>);

impl<T: Default> PerNode<T> {
    /// Runs `f` on what is kept for `node`.
    pub(crate) fn with<R>(&self, node: u16, f: impl FnOnce(&mut T) -> R) -> R {
        f(self.0.lock().entry(node).or_default())
    }

    /// What was kept for `node`, taken out (the node is lost).
    pub(crate) fn take(&self, node: u16) -> T {
        self.0.lock().remove(&node).unwrap_or_default()
    }
}

impl<T> Default for PerNode<T> {
    fn default() -> Self {
        PerNode(Default::default())
    }
}
