//! The cluster transport: this node's connections to the others, on the
//! I/O thread. It listens on one address for TCP (links) and UDP
//! (membership datagrams), runs the handshake on every connection, keeps one
//! link per peer node, and drives [`Membership`] with real sockets and
//! timers. It is the runtime's [`Remote`]: sends and monitors that `route`
//! finds elsewhere come here.
//!
//! A link, step by step:
//!
//! 1. The dialer connects; both sides run the handshake (`handshake`)
//!    within 3 s, the accepting side holding one of a few places for
//!    connections not yet proven (`gate`). A failure is one line on stderr
//!    naming the address. From then on every byte is in sealed records.
//! 2. The link is entered under the peer's node alias and its socket given
//!    to the poller: from then on the scheduler's threads read it (see
//!    `synodic_core::netpoll`) and hand its frames to `Cluster::receive`,
//!    and write what processes send (see `link`), many frames per system
//!    call. If the two nodes dialed each other at once, both keep the same
//!    one of the two links (see `link::Rank`); the other writes what it
//!    holds and closes, and what waited on it moves to the kept one.
//! 3. A frame that does not parse ends the link with one line on stderr.
//! 4. When the link ends (its peer closed it, or membership declared the
//!    peer down), whatever waited on the peer is told at once: monitors get
//!    DOWN `"noconnection"`, node monitors `"nodedown"`, a spawn waiting
//!    for its pid an error.
//! 5. If membership still lists the peer, the node with the smaller name
//!    dials it again, after pauses that double, until the link is back or
//!    membership lets the peer go.
//!
//! Every 500 ms each link carries this node's load (`Runtime::load`);
//! `spawn_on("any")` picks the node that reported the least, counting the
//! processes it has started there since.
//!
//! Between nodes a pid's node alias is the sender's: before the first frame
//! that carries a pid of some node, the sender sends `Node` saying which
//! node that alias means, and the receiver rewrites aliases as frames
//! arrive (`wire::map_pids`).

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use synodic_core::netpoll::Netpoll;
use synodic_core::future::FutureId;
use synodic_core::remote::{self, Carried, Remote};
use synodic_core::waiting::{Completion, Waiter};
use synodic_core::{linda_remote, Attachment, ExitReason, Message, NodeId, Pid, Runtime};
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::sync::Notify;

use crate::frame::{completion, Frame};
use crate::gate::{self, Gate};
use crate::handshake::{self, Handshake, Peer, Purpose, Role};
use crate::link::{self, Drained, Link};
use crate::membership::{self, Event, Member, Membership, Output};
use crate::poller::Poller;
use crate::{Error, Io};

const LOAD_EVERY: Duration = Duration::from_millis(500);
/// Connections to the node port that may be in their handshake at once.
const UNPROVEN: usize = 32;

/// How a node takes part in a cluster.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// Where to listen (host:port; port 0 picks one).
    pub listen: String,
    /// Where other nodes are told to reach this one, if not there (a proxy
    /// or a NAT in between).
    pub advertise: Option<String>,
    pub cookie: Vec<u8>,
    /// `--no-encryption`: links to peers that say the same are
    /// authenticated but not encrypted.
    pub plain: bool,
}

/// Starts the process a spawn message (function, then arguments) describes:
/// what a `Spawn` frame from another node asks for. The runtime's bodies
/// are the Lua layer's, which the transport does not know.
pub type Spawner = Arc<dyn Fn(Message) -> Result<Pid, String> + Send + Sync>;

/// This node's place in a cluster.
#[derive(Clone)]
pub struct Cluster {
    inner: Arc<Inner>,
}

struct Inner {
    rt: Runtime,
    io: tokio::runtime::Handle,
    cookie: Vec<u8>,
    plain: bool,
    /// Node-port connections not yet proven.
    unproven: Arc<Gate>,
    me: NodeId,
    listen: SocketAddr,
    /// Where other nodes are told to reach this one.
    announced: SocketAddr,
    udp: Arc<UdpSocket>,
    membership: Mutex<Membership>,
    links: Mutex<HashMap<u16, Arc<Link>>>,
    /// This node and the nodes it has a link to.
    live: Mutex<BTreeSet<Arc<str>>>,
    /// Woken whenever a node comes up (for `join`).
    changed: Notify,
    spawner: Spawner,
    /// Processes here that monitor a node (`monitor_node`).
    node_watchers: Mutex<HashMap<Arc<str>, Vec<Pid>>>,
    /// The links' sockets, for the scheduler's threads to read.
    poller: Poller,
    /// Every link the poller watches, by its token.
    reading: Mutex<HashMap<u64, Arc<Link>>>,
    reading_count: AtomicUsize,
    next_token: AtomicU64,
}

impl Cluster {
    /// Listens where `settings` say (TCP and UDP, the same port) and
    /// installs itself as the runtime's [`Remote`].
    pub fn start(io: &Io, rt: Runtime, settings: Settings, spawner: Spawner) -> Result<Cluster, Error> {
        let Settings { listen: addr, advertise, cookie, plain } = settings;
        let addr = addr.as_str();
        let addr_owned = addr.to_string();
        let (tcp, udp) = io
            .run(async move {
                let tcp = TcpListener::bind(&addr_owned).await?;
                let bound = tcp.local_addr()?;
                let udp = UdpSocket::bind(bound).await?;
                Ok::<_, std::io::Error>((tcp, udp))
            })
            .map_err(|why| Error::Listen { addr: addr.to_string(), why })?;
        let listen = tcp.local_addr().map_err(|why| Error::Listen { addr: addr.to_string(), why })?;
        let announced = match advertise.as_deref() {
            Some(a) => a.parse().map_err(|_| Error::Listen { addr: a.to_string(), why: std::io::Error::other("not an address host:port") })?,
            None => listen,
        };
        let poller = Poller::new().map_err(Error::Start)?;
        let me = rt.nodes().me();
        let member = Member { name: me.name.clone(), incarnation: me.incarnation, addr: announced, renewal: 0 };
        let inner = Arc::new(Inner {
            rt: rt.clone(),
            io: io.handle().clone(),
            cookie,
            plain,
            unproven: Gate::new(UNPROVEN),
            me: me.clone(),
            listen,
            announced,
            udp: Arc::new(udp),
            membership: Mutex::new(Membership::new(member, 16, me.incarnation)),
            links: Mutex::new(HashMap::new()),
            live: Mutex::new(BTreeSet::from([me.name.clone()])),
            changed: Notify::new(),
            spawner,
            node_watchers: Mutex::new(HashMap::new()),
            poller,
            reading: Mutex::new(HashMap::new()),
            reading_count: AtomicUsize::new(0),
            next_token: AtomicU64::new(0),
        });
        let cluster = Cluster { inner };
        rt.set_remote(Arc::new(cluster.clone()));
        rt.set_netpoll(Arc::new(cluster.clone()));
        io.spawn(cluster.clone().accept(tcp));
        io.spawn(cluster.clone().datagrams());
        io.spawn(cluster.clone().report_load());
        Ok(cluster)
    }

    /// Where this node listens.
    pub fn addr(&self) -> SocketAddr {
        self.inner.listen
    }

    /// Joins the cluster through the node at `addr`: returns once that node
    /// is a member here, or says why it could not be.
    pub fn join(&self, io: &Io, addr: &str) -> Result<(), Error> {
        let cluster = self.clone();
        let addr = addr.to_string();
        io.run(async move {
            let hello = cluster.clone().dial(&addr).await?;
            let hello = (hello.node, hello.listen);
            let seed = Member { name: hello.0.name.clone(), incarnation: hello.0.incarnation, addr: parse_addr(&hello.1, &addr)?, renewal: 0 };
            let out = {
                let mut m = cluster.inner.membership.lock();
                m.announce(seed);
                m.drain()
            };
            cluster.drive(out);
            // Joined: linked to the seed, and a member of its membership
            // (so that, for one, leaving reaches it).
            let joined = cluster
                .until(Duration::from_secs(10), || {
                    cluster.inner.live.lock().contains(&hello.0.name) && cluster.inner.membership.lock().members().any(|m| m.name == hello.0.name)
                })
                .await;
            joined.map_err(|_| Error::Join { addr: addr.clone(), why: "no answer from its membership".into() })?;
            // Then until this node sees every node its peers say they see,
            // so that a program that joins starts with the whole cluster in
            // s.nodes() (bounded: membership may be moving meanwhile).
            let _ = cluster
                .until(Duration::from_secs(5), || {
                    let live = cluster.inner.live.lock().len();
                    let links = cluster.inner.links.lock();
                    links.values().any(|l| l.sees.load(Relaxed) > 0) && links.values().all(|l| l.sees.load(Relaxed) as usize <= live)
                })
                .await;
            Ok(())
        })
    }

    /// Waits until `count` nodes (this one included) are linked and each
    /// of them says it sees `count`, or says how many there were after `limit`.
    pub fn wait_for_nodes(&self, io: &Io, count: usize, limit: Duration) -> Result<(), Error> {
        let cluster = self.clone();
        io.run(async move {
            let formed = || cluster.inner.live.lock().len() >= count && cluster.inner.links.lock().values().all(|l| l.sees.load(Relaxed) as usize >= count);
            let waited = cluster.until(limit, formed).await;
            waited.map_err(|_| Error::Protocol(format!("only {} of {count} nodes formed a cluster within {} s", cluster.inner.live.lock().len(), limit.as_secs())))
        })
    }

    /// Leaves the cluster, as a node ends: what its processes sent is
    /// written first (2 s at most), and each link closed for writing, so
    /// that a program that ends right after sending loses nothing; then
    /// membership tells the others at once, so they neither suspect this
    /// node nor dial it again.
    pub fn leave(&self) {
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        let links: Vec<_> = self.inner.links.lock().values().cloned().collect();
        for link in links {
            link.finish_before(deadline);
        }
        let out = {
            let mut m = self.inner.membership.lock();
            m.leave();
            m.drain()
        };
        self.drive(out);
    }

    /// Blocks until the node `name` (NAME, or NAME@HOST) has been a member
    /// and is one no longer: a node launched for a program ends with it.
    pub fn wait_until_gone(&self, io: &Io, name: &str) {
        let cluster = self.clone();
        let name = name.to_string();
        io.run(async move {
            let present = || cluster.inner.live.lock().iter().any(|n| synodic_core::node::is_named(n, &name));
            for wanted in [true, false] {
                loop {
                    let notified = cluster.inner.changed.notified();
                    if present() == wanted {
                        break;
                    }
                    notified.await;
                }
            }
        })
    }

    /// Waits until `done` holds (checked whenever the set of nodes or what
    /// they report changes); `Err` after `limit`.
    async fn until(&self, limit: Duration, done: impl Fn() -> bool) -> Result<(), tokio::time::error::Elapsed> {
        let wait = async {
            loop {
                let notified = self.inner.changed.notified();
                if done() {
                    return;
                }
                notified.await;
            }
        };
        tokio::time::timeout(limit, wait).await
    }

    async fn accept(self, tcp: TcpListener) {
        loop {
            let Ok((stream, from)) = tcp.accept().await else { continue };
            let cluster = self.clone();
            let place = self.inner.unproven.enter();
            tokio::spawn(async move {
                if let Err(e) = cluster.connect(stream, Role::Acceptor, Some(place)).await {
                    eprintln!("synodic: node connection from {from} refused: {e}");
                }
            });
        }
    }

    /// Dials `addr` and runs the link; returns the peer once it has
    /// authenticated.
    async fn dial(self, addr: &str) -> Result<Peer, Error> {
        let unreachable = |why: String| Error::Unreachable { addr: addr.to_string(), why };
        let stream = tokio::time::timeout(handshake::DRIVE_LIMIT, TcpStream::connect(addr)).await.map_err(|_| unreachable("no answer".into()))?.map_err(|e| unreachable(e.to_string()))?;
        self.connect(stream, Role::Dialer, None).await.map_err(|e| Error::Join { addr: addr.to_string(), why: e.to_string() })
    }

    /// Steps 1 and 2 of a link: the handshake (the accepting side holding
    /// `place` meanwhile), then its reader and writer.
    async fn connect(self, mut stream: TcpStream, role: Role, place: Option<gate::Place>) -> Result<Peer, Error> {
        let _ = stream.set_nodelay(true);
        let config = handshake::Config { cookie: self.inner.cookie.clone(), purpose: Purpose::Node, node: self.inner.me.clone(), listen: self.inner.announced.to_string(), plain: self.inner.plain };
        // A proven peer is refused, with the reason, if it cannot be linked.
        let mut alias = 0;
        let mut vet = |peer: &Peer| {
            if peer.node.name == self.inner.me.name {
                return Err(Error::Refused(format!("a node named {} is this node", peer.node.name)));
            }
            alias = self.inner.rt.nodes().alias(&peer.node).ok_or_else(|| Error::Refused(format!("the node table of {} is full", self.inner.me.name)))?;
            Ok(())
        };
        let (peer, session) = match role {
            Role::Dialer => {
                let hs = Handshake::dialer(config)?;
                tokio::time::timeout(handshake::DRIVE_LIMIT, handshake::over_tokio(&mut stream, hs, None, &mut vet)).await.map_err(|_| Error::Protocol(format!("no handshake within {} s", handshake::DRIVE_LIMIT.as_secs())))??
            }
            Role::Acceptor => {
                let (hs, challenge) = Handshake::acceptor(config)?;
                let place = place.expect("an accepted connection holds a place");
                place.hold(handshake::over_tokio(&mut stream, hs, Some(challenge), &mut vet)).await?
            }
        };
        let rank = match role {
            Role::Dialer => (self.inner.me.name < peer.node.name, peer.dialer_nonce),
            Role::Acceptor => (peer.node.name < self.inner.me.name, peer.dialer_nonce),
        };
        let socket = stream.into_std().map_err(|e| Error::Protocol(e.to_string()))?;
        let token = self.inner.next_token.fetch_add(1, Relaxed);
        let link = Link::start(self.inner.rt.clone(), peer.node.clone(), alias, rank, token, socket, session).map_err(|e| Error::Protocol(e.to_string()))?;
        for (name, pid) in self.inner.rt.names_held_here() {
            link.push_message(self.inner.rt.nodes(), Message::from_vec(remote::name_message(&name, pid)), None, |message| Frame::Named { message });
        }
        // Step 2: of two links to one peer, both nodes keep the same one;
        // the other carries what it already holds, then closes.
        let retired = {
            let mut links = self.inner.links.lock();
            match links.get(&alias) {
                Some(kept) if kept.rank > link.rank => Some((link.clone(), kept.clone())),
                _ => links.insert(alias, link.clone()).map(|old| (old, link.clone())),
            }
        };
        if let Some((retired, kept)) = retired {
            self.retire(&retired, &kept);
        }
        if !link.outbox.lock().draining {
            self.inner.live.lock().insert(peer.node.name.clone());
            self.tell_load();
        }
        // Entered everywhere: now its frames may be read, by any thread.
        self.inner.reading.lock().insert(token, link.clone());
        self.inner.reading_count.fetch_add(1, Relaxed);
        if let Err(e) = self.inner.poller.add(link.fd(), token) {
            self.end(&link);
            return Err(Error::Protocol(format!("cannot watch the connection: {e}")));
        }
        // What arrived with the handshake's last bytes is read now: the
        // poller reports only what arrives from here on.
        self.read_link(&link, false);
        Ok(peer)
    }

    /// Reads what has arrived on `link`, up to a budget, and delivers it;
    /// `rearm`: the caller was told by the poller, which must watch the
    /// link again. True when the budget ended the read (more may wait).
    fn read_link(&self, link: &Arc<Link>, rearm: bool) -> bool {
        let drained = link.drain(&mut |frame, shared| self.receive(link, frame, shared));
        let more = matches!(drained, Ok(Drained::Budget));
        match drained {
            Ok(Drained::Open | Drained::Budget) if rearm => self.inner.poller.rearm(link.fd(), link.token),
            Ok(Drained::Open | Drained::Budget) => {}
            Ok(Drained::Closed) => self.end(link),
            Err(e) => {
                eprintln!("synodic: link to node {} closed: {e}", link.peer.name);
                self.end(link);
            }
        }
        more
    }

    /// `retired` gives way to `kept`, a link to the same peer: what
    /// processes wait for moves over, senders it slowed look again, and it
    /// writes what it holds, then closes its side (the peer does the same;
    /// each reads the other's last frames until the connection ends).
    fn retire(&self, retired: &Arc<Link>, kept: &Arc<Link>) {
        let moved = std::mem::take(&mut *retired.awaited.lock());
        {
            let mut awaited = kept.awaited.lock();
            for (pair, n) in moved.monitors {
                *awaited.monitors.entry(pair).or_default() += n;
            }
            awaited.replies.extend(moved.replies);
            awaited.claims.extend(moved.claims);
            awaited.waits.extend(moved.waits);
        }
        retired.retire();
    }

    /// Step 4: the link is over; whoever waited on its peer is told.
    fn end(&self, link: &Arc<Link>) {
        if link.ended.swap(true, Relaxed) {
            return;
        }
        let rt = &self.inner.rt;
        link.close();
        if self.inner.reading.lock().remove(&link.token).is_some() {
            self.inner.reading_count.fetch_sub(1, Relaxed);
        }
        self.inner.poller.remove(link.fd());
        link.shutdown();
        let still_linked = {
            let mut links = self.inner.links.lock();
            if links.get(&link.alias).is_some_and(|l| Arc::ptr_eq(l, link)) {
                links.remove(&link.alias);
            }
            links.values().any(|l| l.peer.name == link.peer.name)
        };
        let awaited = std::mem::take(&mut *link.awaited.lock());
        let lost = ExitReason::Value(synodic_core::runtime::noconnection());
        for (watcher, target) in awaited.monitors.into_keys() {
            rt.send(watcher, synodic_core::runtime::down_message(target, &lost));
        }
        let why = format!("node lost: {}", link.peer.name);
        for (tag, caller) in awaited.replies {
            rt.send(caller, remote::reply(tag, Err(&why)));
        }
        for (pid, ticket) in awaited.waits {
            rt.complete((Waiter { pid, ticket }, Completion::Deleted));
        }
        if still_linked {
            return;
        }
        self.inner.live.lock().remove(&link.peer.name);
        self.tell_load();
        rt.drop_names_of(link.alias);
        rt.spaces().forget_node(link.alias);
        rt.future_home_lost(link.alias, &why);
        let watchers = self.inner.node_watchers.lock().remove(&link.peer.name).unwrap_or_default();
        for watcher in watchers {
            rt.send(watcher, remote::nodedown(link.peer.name.as_bytes()));
        }
        self.redial(link.peer.clone());
    }

    /// Step 5: a link that ended while membership still lists its peer (a
    /// connection cut, a junk frame) is dialed again by the node with the
    /// smaller name, after pauses that double, until the peer is linked
    /// again or membership lets it go.
    fn redial(&self, peer: NodeId) {
        if self.inner.me.name > peer.name {
            return;
        }
        let cluster = self.clone();
        self.inner.io.spawn(async move {
            let mut pause = Duration::from_millis(100);
            for _ in 0..8 {
                tokio::time::sleep(pause).await;
                pause *= 2;
                if cluster.linked(&peer.name) {
                    return;
                }
                let listed = cluster.inner.membership.lock().members().find(|m| m.name == peer.name && m.incarnation == peer.incarnation).map(|m| m.addr);
                let Some(addr) = listed else { return };
                if cluster.clone().dial(&addr.to_string()).await.is_ok() {
                    return;
                }
            }
        });
    }

    /// One frame from an authenticated peer, with the buffers its message
    /// carries (a parcel's).
    fn receive(&self, link: &Arc<Link>, frame: Frame, shared: Vec<Carried>) -> Result<(), Error> {
        let rt = &self.inner.rt;
        let shared = shared
            .into_iter()
            .map(|c| match c {
                Carried::Bytes(bytes) => Some(bytes as Attachment),
                    Carried::Future(encoded) => remote::arrive_future(&encoded, rt),
                Carried::Space(encoded) => remote::arrive_space(&encoded, rt),
            })
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| Error::Protocol("a malformed future or space handle in a message".into()))?;
        let attach = |message: Vec<u8>| Message::with_attachments(message, shared);
        match frame {
            Frame::Node { alias, node } => {
                let ours = rt.nodes().alias(&node).ok_or_else(|| Error::Protocol("the node table is full".into()))?;
                link.announced(alias, ours);
            }
            Frame::Send { to, from, message } => {
                let message = link.arrived(message)?;
                if from == to {
                    // The runtime's own notices (DOWN, replies) answer something awaited.
                    match settle(link, to, &message) {
                        Settled::Granted(name, pid) => self.name_granted(&name, pid),
                        Settled::Answered => {}
                        Settled::Dropped => return Ok(()),
                    }
                }
                let to = here(to);
                rt.send(to, attach(message));
                // A process that takes messages slower than they come: its
                // senders over there wait, until it has taken them down.
                // The lock is held from the check to the push: a drain
                // noticed meanwhile finds `to` told, and its Ready follows
                // this Busy.
                let mut told = link.told_busy.lock();
                if rt.busy(to) && told.insert(to) {
                    link.push(|out| Frame::Busy { pid: to }.encode(&mut out.bytes));
                }
            }
            Frame::Monitor { watcher, target } => rt.monitor(link.ours(watcher)?, here(target)),
            Frame::Demonitor { watcher, target } => {
                rt.demonitor(link.ours(watcher)?, here(target));
            }
            Frame::Spawn { caller, tag, message } => {
                let caller = link.ours(caller)?;
                let message = link.arrived(message)?;
                let started = (self.inner.spawner)(attach(message));
                rt.send(caller, remote::reply(tag, started.as_ref().map(|p| Some(*p)).map_err(|e| e.as_str())));
            }
            Frame::Claim { caller, tag, message } => {
                let caller = link.ours(caller)?;
                let message = link.arrived(message)?;
                let (name, pid) = remote::name_of(&message).ok_or_else(|| Error::Protocol("malformed name claim".into()))?;
                rt.send(caller, self.arbitrate(tag, name, pid));
            }
            Frame::Named { message } => {
                let message = link.arrived(message)?;
                let (name, pid) = remote::name_of(&message).ok_or_else(|| Error::Protocol("malformed name".into()))?;
                if pid.node() == 0 {
                    if rt.enter_name(name, pid).is_err() && !rt.is_alive(pid) {
                        // Ours, and ended before the name reached us: the name goes with it.
                        self.released(pid, &[name.into()]);
                    }
                } else if let Some(lost) = rt.settle_name(name, pid, |new, old| self.prevails(new, old)) {
                    if lost.node() == 0 {
                        self.name_lost(name, lost, pid);
                    }
                }
            }
            Frame::Unnamed { message } => {
                let message = link.arrived(message)?;
                let (name, pid) = remote::name_of(&message).ok_or_else(|| Error::Protocol("malformed name".into()))?;
                rt.remove_name(name, pid);
            }
            Frame::Task { message } => rt.pool_push(attach(link.arrived(message)?)),
            Frame::Fetch { origin, seq } => rt.future_fetch(link.alias, FutureId { origin, seq }),
            Frame::Fetched { origin, seq, message } => rt.future_fill(FutureId { origin, seq }, attach(link.arrived(message)?)),
            Frame::Release { origin, seq, weight } => rt.future_release(link.alias, FutureId { origin, seq }, weight),
            Frame::Linda { caller, ticket, message } => {
                let caller = Waiter { pid: link.ours(caller)?, ticket };
                let request = attach(link.arrived(message)?);
                linda_remote::serve(rt, caller, &request).map_err(|e| Error::Protocol(format!("a malformed tuple-space request: {e}")))?;
            }
            Frame::Complete { to, ticket, kind, count, message } => {
                let to = here(to);
                link.awaited.lock().waits.remove(&(to, ticket));
                let answer = match kind {
                    completion::VALUE => Completion::Value(attach(link.arrived(message)?)),
                    completion::TAKEN => Completion::Taken,
                    completion::NOTIFIED => Completion::Notified,
                    completion::NOTHING => Completion::Nothing,
                    completion::COUNT => Completion::Count(count),
                    completion::FULL => Completion::Full,
                    completion::MOVED => Completion::Moved,
                    _ => Completion::Deleted,
                };
                rt.complete((Waiter { pid: to, ticket }, answer));
            }
            Frame::Busy { pid } => link.set_busy(link.ours(pid)?, true),
            Frame::Ready { pid } => link.set_busy(link.ours(pid)?, false),
            Frame::Load { load, nodes } => {
                link.load.store(load, Relaxed);
                link.sees.store(nodes, Relaxed);
                self.inner.changed.notify_waiters();
            }
            other => return Err(Error::Protocol(format!("unexpected frame {other:?}").chars().take(80).collect())),
        }
        Ok(())
    }

    /// Of two holders of one name (both sides of a healed partition gave
    /// it), whether `new` takes it from `old`: the one on the node whose
    /// name sorts first. Every node sees both claims (each holder's node
    /// tells every node it links to) and decides alike.
    fn prevails(&self, new: Pid, old: Pid) -> bool {
        let nodes = self.inner.rt.nodes();
        let name = |p: Pid| nodes.id(p.node()).map(|n| n.name);
        name(new) < name(old)
    }

    /// `loser`, of this node, lost `name` to `winner`: a space whose home
    /// this node was moves to the winner's node; a process gets the message
    /// `"name_lost", NAME` and keeps running. Every peer forgets this
    /// node's claim.
    fn name_lost(&self, name: &[u8], loser: Pid, winner: Pid) {
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
    fn name_granted(&self, name: &[u8], pid: Pid) {
        match self.inner.rt.enter_name(name, pid) {
            Ok(()) => self.broadcast(|| remote::name_message(name, pid), |message| Frame::Named { message }),
            Err(_) => self.released(pid, &[name.into()]),
        }
    }

    /// This node arbitrates `name`: gives it to `pid` if it is free, and
    /// answers the claim tagged `tag` (a refusal names the holder).
    fn arbitrate(&self, tag: u64, name: &[u8], pid: Pid) -> Message {
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
    fn broadcast(&self, message: impl Fn() -> Vec<u8>, frame: impl Fn(Vec<u8>) -> Frame) {
        let links: Vec<_> = self.inner.links.lock().values().cloned().collect();
        for link in links {
            link.push_message(self.inner.rt.nodes(), Message::from_vec(message()), None, &frame);
        }
    }

    /// The live node that arbitrates `name`: the one whose name hashed
    /// with it scores highest (rendezvous hashing), so that every node
    /// with the same view asks the same one, and a node leaving moves only
    /// its own names' arbiter.
    fn home_of(&self, name: &[u8]) -> Arc<str> {
        use std::hash::{Hash, Hasher};
        let score = |node: &str| {
            let mut h = std::hash::DefaultHasher::new();
            (name, node).hash(&mut h);
            h.finish()
        };
        let live = self.inner.live.lock();
        live.iter().max_by_key(|n| score(n)).cloned().unwrap_or_else(|| self.inner.me.name.clone())
    }

    /// Tells every peer this node's load, now and then; and, alone, looks
    /// for the members it lost (see `Membership::rejoin`).
    async fn report_load(self) {
        loop {
            tokio::time::sleep(LOAD_EVERY).await;
            self.tell_load();
            let out = {
                let mut m = self.inner.membership.lock();
                m.rejoin(std::time::Instant::now());
                m.drain()
            };
            self.drive(out);
        }
    }

    /// Tells every peer this node's load and how many nodes it sees (at
    /// once when that changes: `wait_for_nodes` waits for all to agree).
    fn tell_load(&self) {
        let (load, nodes) = (self.inner.rt.load(), self.inner.live.lock().len() as u32);
        let links: Vec<_> = self.inner.links.lock().values().cloned().collect();
        for link in links {
            link.push(|out| Frame::Load { load, nodes }.encode(&mut out.bytes));
        }
        self.inner.changed.notify_waiters();
    }

    async fn datagrams(self) {
        let mut buf = vec![0u8; 64 << 10];
        loop {
            let Ok((n, _)) = self.inner.udp.recv_from(&mut buf).await else { continue };
            let Some(data) = membership::open(&self.inner.cookie, &buf[..n]) else { continue };
            let (out, refused) = {
                let mut m = self.inner.membership.lock();
                m.datagram(data);
                (m.drain(), m.rejected())
            };
            for line in refused {
                eprintln!("synodic: {line}");
            }
            self.drive(out);
        }
    }

    /// Carries out what membership asked for.
    fn drive(&self, outputs: Vec<Output>) {
        if outputs.iter().any(|out| matches!(out, Output::Event(_))) {
            self.inner.changed.notify_waiters();
        }
        for out in outputs {
            match out {
                Output::Send(to, data) => {
                    let _ = self.inner.udp.try_send_to(&membership::seal(&self.inner.cookie, &data), to.addr);
                }
                Output::Timer(after, event) => {
                    let cluster = self.clone();
                    self.inner.io.spawn(async move {
                        tokio::time::sleep(after).await;
                        let out = {
                            let mut m = cluster.inner.membership.lock();
                            m.timer(event);
                            m.drain()
                        };
                        cluster.drive(out);
                    });
                }
                Output::Event(Event::Up(member)) => {
                    let dial = self.inner.me.name < member.name && !self.linked(&member.name);
                    if dial {
                        let cluster = self.clone();
                        self.inner.io.spawn(async move {
                            if let Err(e) = cluster.dial(&member.addr.to_string()).await {
                                let why = match e {
                                    Error::Join { why, .. } | Error::Unreachable { why, .. } => why,
                                    e => e.to_string(),
                                };
                                eprintln!("synodic: cannot link to node {} at {}: {why}", member.name, member.addr);
                            }
                        });
                    }
                }
                Output::Event(Event::Down(member)) => {
                    let gone: Vec<_> = self.inner.links.lock().values().filter(|l| l.peer.name == member.name).cloned().collect();
                    for link in gone {
                        // What it sent before it left, if it did, is read
                        // first: all of it, not one budget's worth.
                        while self.read_link(&link, false) {}
                        self.end(&link);
                    }
                    // Gone for good, as far as this node knows: its alias may
                    // go to a new node one day (it keeps it if it comes back first).
                    self.inner.rt.nodes().retire(&NodeId { name: member.name.clone(), incarnation: member.incarnation });
                }
            }
        }
    }

    fn linked(&self, name: &str) -> bool {
        self.inner.links.lock().values().any(|l| &*l.peer.name == name)
    }

    fn link_to(&self, name: &str) -> Option<Arc<Link>> {
        self.inner.links.lock().values().find(|l| &*l.peer.name == name).cloned()
    }
}

/// A pid of this node, from a frame that names it with the sender's alias for us.
fn here(pid: Pid) -> Pid {
    pid.aliased(0, 0)
}

/// What a runtime notice that arrived over a link did.
enum Settled {
    /// It answers something awaited: it is delivered.
    Answered,
    /// It grants a claimed name to a pid: it is delivered, and the name entered.
    Granted(Box<[u8]>, Pid),
    /// It is the DOWN of a monitor removed since it was sent: it is dropped.
    Dropped,
}

/// A notice for `to` has arrived over `link`: what it answers is no longer
/// awaited.
fn settle(link: &Link, to: Pid, message: &[u8]) -> Settled {
    let mut awaited = link.awaited.lock();
    if let Some((tag, granted)) = remote::reply_of(message) {
        awaited.replies.remove(&tag);
        return match awaited.claims.remove(&tag).filter(|_| granted) {
            Some((name, pid)) => Settled::Granted(name, pid),
            None => Settled::Answered,
        };
    } else if let Some(target) = remote::down_of(message) {
        if !awaited.forget_monitor(here(to), target) {
            return Settled::Dropped;
        }
    }
    Settled::Answered
}

fn parse_addr(listen: &str, dialed: &str) -> Result<SocketAddr, Error> {
    listen.parse().map_err(|_| Error::Join { addr: dialed.to_string(), why: format!("it gave a bad listen address '{listen}'") })
}

impl Netpoll for Cluster {
    fn poll(&self, wait: bool) -> bool {
        if !wait && self.inner.reading_count.load(Relaxed) == 0 {
            return false;
        }
        let mut ready = Vec::new();
        self.inner.poller.wait(wait, &mut ready);
        for token in &ready {
            let link = self.inner.reading.lock().get(token).cloned();
            if let Some(link) = link {
                self.read_link(&link, true);
            }
        }
        !ready.is_empty()
    }

    fn interrupt(&self) {
        self.inner.poller.interrupt();
    }

    fn flush(&self) {
        link::flush_dirty();
    }
}

impl Remote for Cluster {
    fn send(&self, from: Pid, to: Pid, msg: Message) -> bool {
        let Some(link) = self.inner.links.lock().get(&to.node()).cloned() else { return false };
        link.push_message(self.inner.rt.nodes(), msg, Some((from, to)), |message| Frame::Send { to, from, message })
    }

    fn monitor(&self, watcher: Pid, target: Pid) -> bool {
        let Some(link) = self.inner.links.lock().get(&target.node()).cloned() else { return false };
        *link.awaited.lock().monitors.entry((watcher, target)).or_default() += 1;
        // Told nothing yet, the peer has no alias for us to announce: the watcher is ours (alias 0).
        let sent = link.push(|out| Frame::Monitor { watcher, target }.encode(&mut out.bytes));
        if !sent {
            link.awaited.lock().monitors.remove(&(watcher, target));
        }
        sent
    }

    fn demonitor(&self, watcher: Pid, target: Pid) -> bool {
        let Some(link) = self.inner.links.lock().get(&target.node()).cloned() else { return false };
        if !link.awaited.lock().forget_monitor(watcher, target) {
            return false;
        }
        link.push(|out| Frame::Demonitor { watcher, target }.encode(&mut out.bytes));
        true
    }

    fn monitor_node(&self, watcher: Pid, node: &str) -> bool {
        let Some(link) = self.link_to(node) else { return false };
        self.inner.node_watchers.lock().entry(link.peer.name.clone()).or_default().push(watcher);
        // The link may have ended meanwhile, before the watcher was entered.
        if link.ended.load(Relaxed) && !self.linked(node) {
            self.inner.node_watchers.lock().remove(node);
            return false;
        }
        true
    }

    fn spawn(&self, caller: Pid, tag: u64, node: &str, body: Message) -> Result<(), String> {
        let link = self.link_to(node).ok_or_else(|| format!("no such node: {node}"))?;
        link.awaited.lock().replies.insert(tag, caller);
        if !link.push_message(self.inner.rt.nodes(), body, None, |message| Frame::Spawn { caller, tag, message }) {
            link.awaited.lock().replies.remove(&tag);
            return Err(format!("node lost: {node}"));
        }
        // Until the node reports again, count what was just started there.
        let step = 1000 / self.inner.rt.workers().max(1) as u32;
        let _ = link.load.fetch_update(Relaxed, Relaxed, |l| Some(l.saturating_add(step)));
        Ok(())
    }

    fn claim(&self, caller: Pid, tag: u64, name: &[u8], pid: Pid) -> Result<(), String> {
        let home = self.home_of(name);
        if home == self.inner.me.name {
            let answer = self.arbitrate(tag, name, pid);
            if remote::reply_of(&answer).is_some_and(|(_, granted)| granted) {
                self.broadcast(|| remote::name_message(name, pid), |message| Frame::Named { message });
            }
            self.inner.rt.send(caller, answer);
            return Ok(());
        }
        let link = self.link_to(&home).ok_or_else(|| format!("node {home}, which keeps this name, was lost"))?;
        {
            let mut awaited = link.awaited.lock();
            awaited.replies.insert(tag, caller);
            awaited.claims.insert(tag, (name.into(), pid));
        }
        if !link.push_message(self.inner.rt.nodes(), Message::from_vec(remote::name_message(name, pid)), None, |message| Frame::Claim { caller, tag, message }) {
            let mut awaited = link.awaited.lock();
            awaited.replies.remove(&tag);
            awaited.claims.remove(&tag);
            drop(awaited);
            return Err(format!("node {home}, which keeps this name, was lost"));
        }
        Ok(())
    }

    fn released(&self, pid: Pid, names: &[Box<[u8]>]) {
        for name in names {
            self.broadcast(|| remote::name_message(name, pid), |message| Frame::Unnamed { message });
        }
    }

    fn room_for(&self, to: Pid, sender: Pid) -> bool {
        let Some(link) = self.inner.links.lock().get(&to.node()).cloned() else { return true };
        link.room_for(to, sender)
    }

    fn drained(&self, pid: Pid) {
        let links: Vec<_> = self.inner.links.lock().values().cloned().collect();
        for link in links {
            if link.told_busy.lock().remove(&pid) {
                link.push(|out| Frame::Ready { pid }.encode(&mut out.bytes));
            }
        }
    }

    fn least_loaded(&self) -> Arc<str> {
        let mut best = (self.inner.rt.load(), self.inner.me.name.clone());
        for link in self.inner.links.lock().values() {
            let load = link.load.load(Relaxed);
            if load < best.0 || (load == best.0 && link.peer.name < best.1) {
                best = (load, link.peer.name.clone());
            }
        }
        best.1
    }

    fn nodes(&self) -> Vec<Arc<str>> {
        self.inner.live.lock().iter().cloned().collect()
    }

    fn submit(&self, node: &str, task: Message) -> Result<(), String> {
        let link = self.link_to(node).ok_or_else(|| format!("no such node: {node}"))?;
        match link.push_message(self.inner.rt.nodes(), task, None, |message| Frame::Task { message }) {
            true => Ok(()),
            false => Err(format!("node lost: {node}")),
        }
    }

    fn fetch(&self, home: u16, id: FutureId) {
        let link = self.inner.links.lock().get(&home).cloned();
        let asked = link.is_some_and(|l| l.push(|out| Frame::Fetch { origin: id.origin, seq: id.seq }.encode(&mut out.bytes)));
        if !asked {
            let name = self.inner.rt.nodes().id(home).map_or_else(|| "?".into(), |n| n.name);
            self.inner.rt.future_home_lost(home, &format!("node lost: {name}"));
        }
    }

    fn fetched(&self, to: u16, id: FutureId, value: Message) {
        if let Some(link) = self.inner.links.lock().get(&to).cloned() {
            link.push_message(self.inner.rt.nodes(), value, None, |message| Frame::Fetched { origin: id.origin, seq: id.seq, message });
        }
    }

    fn release(&self, home: u16, id: FutureId, weight: u64) {
        if let Some(link) = self.inner.links.lock().get(&home).cloned() {
            link.push(|out| Frame::Release { origin: id.origin, seq: id.seq, weight }.encode(&mut out.bytes));
        }
    }

    fn linda(&self, home: u16, caller: Waiter, request: Message, answered: bool) -> bool {
        let Some(link) = self.inner.links.lock().get(&home).cloned() else { return false };
        let key = (caller.pid, caller.ticket);
        if answered {
            link.awaited.lock().waits.insert(key);
        }
        // Held behind the caller's earlier requests to that node's spaces (an `out` of a long tuple).
        let sent = link.push_message(self.inner.rt.nodes(), request, Some((caller.pid, spaces_there())), |message| Frame::Linda { caller: caller.pid, ticket: caller.ticket, message });
        if !sent && answered {
            link.awaited.lock().waits.remove(&key);
        }
        sent
    }

    fn complete(&self, waiter: Waiter, answer: Completion) {
        let Some(link) = self.inner.links.lock().get(&waiter.pid.node()).cloned() else { return };
        let (kind, count, message) = match answer {
            Completion::Value(m) => (completion::VALUE, 0, m),
            Completion::Taken => (completion::TAKEN, 0, no_values()),
            Completion::Notified => (completion::NOTIFIED, 0, no_values()),
            Completion::Deleted => (completion::DELETED, 0, no_values()),
            Completion::Nothing => (completion::NOTHING, 0, no_values()),
            Completion::Count(n) => (completion::COUNT, n, no_values()),
            Completion::Full => (completion::FULL, 0, no_values()),
            Completion::Moved => (completion::MOVED, 0, no_values()),
        };
        let frame = |kind: u8| move |message| Frame::Complete { to: waiter.pid, ticket: waiter.ticket, kind, count, message };
        let between = Some((waiter.pid, waiter.pid));
        if !link.push_message(self.inner.rt.nodes(), message, between, frame(kind)) {
            // Values that cannot cross: the waiter is told rather than left waiting.
            link.push_message(self.inner.rt.nodes(), no_values(), between, frame(completion::DELETED));
        }
    }
}

/// What frames for another node's tuple spaces queue behind, per caller.
fn spaces_there() -> Pid {
    Pid::new(0, Pid::MAX_INDEX, Pid::GEN_MASK)
}

fn no_values() -> Message {
    Message::from_vec(synodic_core::wire::Writer::message(0).finish_small())
}
