//! The cluster transport: this node's connections to the others, on the
//! I/O thread. It listens on one address for TCP (links) and UDP
//! (membership datagrams), runs the handshake on every connection, keeps one
//! link per peer node, and drives [`Membership`] with real sockets and
//! timers. It is the runtime's [`Transport`](synodic_core::dist::Transport):
//! the distributed services (`synodic_core::dist`) queue their frames on
//! its links, and it hands them what arrives. It knows a service's frame
//! only as a kind and bytes.
//!
//! A link, step by step:
//!
//! 1. The dialer connects; both sides run the handshake (`handshake`)
//!    within 3 s, the accepting side holding one of a few places for
//!    connections not yet proven (`gate`). A failure is one line on stderr
//!    naming the address. From then on every byte is in sealed records.
//! 2. The link is entered under the peer's node alias and its socket given
//!    to the poller: from then on the scheduler's threads read it (see
//!    `synodic_core::netpoll`) and hand its frames to `Cluster::receive`
//!    (a service's frame on to `Services::receive`), and write what processes send (see `link`), many frames per system
//!    call. If the two nodes dialed each other at once, both keep the same
//!    one of the two links (see `link::Rank`); the other writes what it
//!    holds and closes (what processes wait for is the services', by node).
//! 3. A frame that does not parse ends the link with one line on stderr.
//! 4. When the link ends (its peer closed it, or membership declared the
//!    peer down), every service tells at once whatever waited on the peer
//!    (`Services::lost`, then `Services::gone` once no incarnation of the
//!    node is linked): monitors get DOWN `"noconnection"`, node monitors
//!    `"nodedown"`, a spawn waiting for its pid an error.
//! 5. If membership still lists the peer, the node with the smaller name
//!    dials it again, after pauses that double, until the link is back or
//!    membership lets the peer go.
//!
//! Every 500 ms each link carries this node's load (`dist::pool`);
//! `spawn_on("any")` picks the node that reported the least, counting the
//! processes it has started there since.
//!
//! Between nodes a pid's node alias is the sender's: before the first frame
//! that carries a pid of some node, the sender sends `Node` saying which
//! node that alias means, and the receiver rewrites aliases as frames
//! arrive (`wire::map_pids`).
//!
//! In files: this one holds the cluster's state and its public face
//! (start, join, leave); `connect.rs` a link's life (accept, dial,
//! handshake, read, retire, end, redial); `receive.rs` the transport's own
//! frames and the hand-off of the others to the services; `gossip.rs` load
//! reports and membership; `for_runtime.rs` the runtime's `Transport` and
//! `Netpoll` on top of the links.

mod connect;
mod for_runtime;
mod gossip;
mod receive;

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use synodic_core::dist::pool::Pools;
use synodic_core::dist::spawn::Spawns;
use synodic_core::hash::FastBuild;
use synodic_core::{NodeId, Runtime};
use tokio::net::{TcpListener, UdpSocket};
use tokio::sync::Notify;

use crate::gate::Gate;
use crate::link::Link;
use crate::membership::{Member, Membership};
use synodic_core::io::poller::Poller;
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

pub use synodic_core::dist::spawn::Spawner;

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
    /// The same socket, for sending: tokio's `try_send_to` drops a datagram
    /// without trying while its poller has not yet seen the socket writable
    /// (just after binding, or after a full buffer), and a lost announce
    /// was a join that never happened. This one always asks the kernel.
    udp_out: std::net::UdpSocket,
    membership: Mutex<Membership>,
    /// (Looked up at every send to another node: the fast hasher.)
    links: Mutex<HashMap<u16, Arc<Link>, FastBuild>>,
    /// This node and the nodes it has a link to.
    live: Mutex<BTreeSet<Arc<str>>>,
    /// Woken whenever a node comes up (for `join`).
    changed: Notify,
    /// The links' sockets, for the scheduler's threads to read.
    poller: Poller,
    /// Every link the poller watches, by its token.
    reading: Mutex<HashMap<u64, Arc<Link>, FastBuild>>,
    reading_count: AtomicUsize,
    /// The one link, taken out of the poller while workers spin reading it
    /// straight away (see `Cluster::unwatch_idle`), and whether there is one.
    unwatched: Mutex<Option<Arc<Link>>>,
    any_unwatched: AtomicBool,
    next_token: AtomicU64,
    /// Each proven peer, by the address it listens at (for `join`: a seed
    /// that dialed this node while this node dialed it is joined through
    /// whichever link both keep).
    proven: Mutex<HashMap<String, crate::handshake::Peer>>,
}

impl Cluster {
    /// Listens where `settings` say (TCP and UDP, the same port) and
    /// installs itself as the runtime's [`Transport`](synodic_core::dist::Transport).
    pub fn start(io: &Io, rt: Runtime, settings: Settings, spawner: Spawner) -> Result<Cluster, Error> {
        let Settings { listen: addr, advertise, cookie, plain } = settings;
        let addr = addr.as_str();
        let addr_owned = addr.to_string();
        let (tcp, (udp, udp_out)) = io
            .run(async move {
                let tcp = TcpListener::bind(&addr_owned).await?;
                let bound = tcp.local_addr()?;
                let udp = std::net::UdpSocket::bind(bound)?;
                udp.set_nonblocking(true)?;
                let udp_out = udp.try_clone()?;
                Ok::<_, std::io::Error>((tcp, (UdpSocket::from_std(udp)?, udp_out)))
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
            udp_out,
            membership: Mutex::new(Membership::new(member, 16, me.incarnation)),
            links: Mutex::new(HashMap::default()),
            live: Mutex::new(BTreeSet::from([me.name.clone()])),
            changed: Notify::new(),
            poller,
            reading: Mutex::new(HashMap::default()),
            reading_count: AtomicUsize::new(0),
            unwatched: Mutex::new(None),
            any_unwatched: AtomicBool::new(false),
            next_token: AtomicU64::new(0),
            proven: Mutex::new(HashMap::new()),
        });
        let cluster = Cluster { inner };
        rt.service::<Spawns>().set_spawner(spawner);
        let weak = Arc::downgrade(&cluster.inner);
        rt.service::<Pools>().on_report(Arc::new(move || {
            if let Some(inner) = weak.upgrade() {
                inner.changed.notify_waiters();
            }
        }));
        rt.set_transport(Arc::new(cluster.clone()));
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
            let hello = match cluster.clone().dial(&addr).await {
                Ok(hello) => hello,
                // Two nodes joining each other at once: the seed's link to
                // this node may win, and ours be given way before its
                // handshake ended here. Joined through the seed's, then.
                Err(e) => {
                    let seen = || cluster.inner.proven.lock().get(&addr).cloned();
                    let _ = cluster.until(Duration::from_secs(2), || seen().is_some_and(|p| cluster.linked(&p.node.name))).await;
                    seen().filter(|p| cluster.linked(&p.node.name)).ok_or(e)?
                }
            };
            let hello = (hello.node, hello.listen);
            let seed = Member { name: hello.0.name.clone(), incarnation: hello.0.incarnation, addr: parse_addr(&hello.1, &addr)?, renewal: 0 };
            // Joined: linked to the seed, and a member of its membership
            // (so that, for one, leaving reaches it). An announce is one
            // datagram: it is sent again each second until it is answered.
            let joined = || cluster.inner.live.lock().contains(&hello.0.name) && cluster.inner.membership.lock().members().any(|m| m.name == hello.0.name);
            let mut answered = false;
            for _ in 0..10 {
                let out = {
                    let mut m = cluster.inner.membership.lock();
                    m.announce(seed.clone());
                    m.drain()
                };
                cluster.drive(out);
                answered = cluster.until(Duration::from_secs(1), joined).await.is_ok();
                if answered {
                    break;
                }
            }
            if !answered {
                return Err(Error::Join { addr: addr.clone(), why: "no answer from its membership".into() });
            }
            // Then until this node sees every node its peers say they see,
            // so that a program that joins starts with the whole cluster in
            // s.nodes() (bounded: membership may be moving meanwhile).
            let _ = cluster
                .until(Duration::from_secs(5), || {
                    let live = cluster.inner.live.lock().len();
                    let links = cluster.inner.links.lock();
                    let pools = cluster.inner.rt.service::<Pools>();
                    links.keys().any(|&n| pools.sees(n) > 0) && links.keys().all(|&n| pools.sees(n) as usize <= live)
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
            let pools = cluster.inner.rt.service::<Pools>();
            let formed = || cluster.inner.live.lock().len() >= count && cluster.inner.links.lock().keys().all(|&n| pools.sees(n) as usize >= count);
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
}

fn parse_addr(listen: &str, dialed: &str) -> Result<SocketAddr, Error> {
    listen.parse().map_err(|_| Error::Join { addr: dialed.to_string(), why: format!("it gave a bad listen address '{listen}'") })
}
