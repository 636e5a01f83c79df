//! The cluster transport: this node's connections to the others, on the
//! I/O thread. It listens on one address for TCP (links) and UDP
//! (membership datagrams), runs the handshake on every connection, keeps one
//! link per peer node, and drives [`Membership`] with real sockets and
//! timers. It is the runtime's [`Remote`]: sends and monitors that `route`
//! finds elsewhere come here.
//!
//! A link, step by step:
//!
//! 1. The dialer connects; both sides run the handshake (`handshake`) with a
//!    5 s limit. A failure is one line on stderr naming the address.
//! 2. The link is entered under the peer's node alias; the one reader task
//!    decodes frames and hands them to [`Link::receive`]; the writer task
//!    writes whatever frames have queued since its last write in one system
//!    call, so a stream of small messages costs far less than a call each.
//! 3. A frame that does not parse ends the link with one line on stderr.
//!
//! Between nodes a pid's node alias is the sender's: before the first frame
//! that carries a pid of some node, the sender sends `Node` saying which
//! node that alias means, and the receiver rewrites aliases as frames
//! arrive (`wire::map_pids`).

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use synodic_core::remote::Remote;
use synodic_core::wire::{self, WireError};
use synodic_core::{Message, NodeId, Pid, Runtime};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::sync::Notify;

use crate::frame::{Decoder, Frame, Hello};
use crate::handshake::{self, Handshake, Role, Step};
use crate::membership::{self, Event, Member, Membership, Output};
use crate::{Error, Io};

const HANDSHAKE_TIME: Duration = Duration::from_secs(5);

/// This node's place in a cluster.
#[derive(Clone)]
pub struct Cluster {
    inner: Arc<Inner>,
}

struct Inner {
    rt: Runtime,
    io: tokio::runtime::Handle,
    cookie: Vec<u8>,
    me: NodeId,
    listen: SocketAddr,
    udp: Arc<UdpSocket>,
    membership: Mutex<Membership>,
    links: Mutex<HashMap<u16, Arc<Link>>>,
    live: Mutex<BTreeSet<Arc<str>>>,
    /// Woken whenever a node comes up (for `join`).
    changed: Notify,
}

/// One authenticated connection to a peer node.
struct Link {
    peer: NodeId,
    alias: u16,
    outbox: Mutex<Outbox>,
    wake: Notify,
    /// The peer's aliases, as it announced them, mapped to ours.
    theirs: Mutex<HashMap<u16, u16>>,
}

#[derive(Default)]
struct Outbox {
    bytes: Vec<u8>,
    /// Aliases of ours the peer has been told about.
    announced: BTreeSet<u16>,
    closed: bool,
}

impl Cluster {
    /// Listens on `addr` (TCP and UDP, the same port) and installs itself
    /// as the runtime's [`Remote`].
    pub fn start(io: &Io, rt: Runtime, addr: &str, cookie: Vec<u8>) -> Result<Cluster, Error> {
        let addr_owned = addr.to_string();
        let (tcp, udp) = io
            .run(async move {
                let tcp = TcpListener::bind(&addr_owned).await?;
                let bound = tcp.local_addr()?;
                let udp = UdpSocket::bind(bound).await?;
                Ok::<_, std::io::Error>((tcp, udp))
            })
            .map_err(|source| Error::Listen { addr: addr.to_string(), source })?;
        let listen = tcp.local_addr().map_err(|source| Error::Listen { addr: addr.to_string(), source })?;
        let me = rt.nodes().me();
        let member = Member { name: me.name.clone(), incarnation: me.incarnation, addr: listen, renewal: 0 };
        let inner = Arc::new(Inner {
            rt: rt.clone(),
            io: io.handle().clone(),
            cookie,
            me: me.clone(),
            listen,
            udp: Arc::new(udp),
            membership: Mutex::new(Membership::new(member, 16, me.incarnation)),
            links: Mutex::new(HashMap::new()),
            live: Mutex::new(BTreeSet::from([me.name.clone()])),
            changed: Notify::new(),
        });
        let cluster = Cluster { inner };
        rt.set_remote(Arc::new(cluster.clone()));
        io.spawn(cluster.clone().accept(tcp));
        io.spawn(cluster.clone().datagrams());
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
            let seed = Member { name: hello.node.name.clone(), incarnation: hello.node.incarnation, addr: parse_addr(&hello.listen, &addr)?, renewal: 0 };
            let out = {
                let mut m = cluster.inner.membership.lock();
                m.announce(seed);
                m.drain()
            };
            cluster.drive(out);
            let wait = async {
                loop {
                    let notified = cluster.inner.changed.notified();
                    if cluster.inner.live.lock().contains(&hello.node.name) {
                        return;
                    }
                    notified.await;
                }
            };
            tokio::time::timeout(Duration::from_secs(10), wait).await.map_err(|_| Error::Join { addr: addr.clone(), why: "no answer from its membership".into() })
        })
    }

    async fn accept(self, tcp: TcpListener) {
        loop {
            let Ok((stream, from)) = tcp.accept().await else { continue };
            let cluster = self.clone();
            tokio::spawn(async move {
                if let Err(e) = cluster.connect(stream, Role::Acceptor).await {
                    eprintln!("synodic: node connection from {from} refused: {e}");
                }
            });
        }
    }

    /// Dials `addr` and runs the link; returns the peer's hello once it has
    /// authenticated.
    async fn dial(self, addr: &str) -> Result<Hello, Error> {
        let stream = TcpStream::connect(addr).await.map_err(|e| Error::Join { addr: addr.to_string(), why: e.to_string() })?;
        self.connect(stream, Role::Dialer).await.map_err(|e| Error::Join { addr: addr.to_string(), why: e.to_string() })
    }

    /// Steps 1 and 2 of a link: the handshake, then its reader and writer.
    async fn connect(self, mut stream: TcpStream, role: Role) -> Result<Hello, Error> {
        let _ = stream.set_nodelay(true);
        let mine = Hello { node: self.inner.me.clone(), listen: self.inner.listen.to_string(), nonce: handshake::nonce().map_err(|e| Error::Protocol(format!("no random source: {e}")))? };
        let mut decoder = Decoder::new();
        let peer = tokio::time::timeout(HANDSHAKE_TIME, shake(&mut stream, &mut decoder, role, &self.inner.cookie, mine))
            .await
            .map_err(|_| Error::Protocol("no handshake within 5 s".into()))??;
        if peer.node.name == self.inner.me.name {
            return Err(Error::Protocol(format!("a node named {} is this node", peer.node.name)));
        }
        decoder.authenticated();
        let alias = self.inner.rt.nodes().alias(&peer.node).ok_or_else(|| Error::Protocol("the node table is full".into()))?;
        let link = Arc::new(Link { peer: peer.node.clone(), alias, outbox: Mutex::new(Outbox::default()), wake: Notify::new(), theirs: Mutex::new(HashMap::new()) });
        if let Some(old) = self.inner.links.lock().insert(alias, link.clone()) {
            old.close();
        }
        let (reader, writer) = stream.into_split();
        tokio::spawn(link.clone().write(writer));
        tokio::spawn(self.clone().read(link, reader, decoder));
        Ok(peer)
    }

    async fn read(self, link: Arc<Link>, mut reader: tokio::net::tcp::OwnedReadHalf, mut decoder: Decoder) {
        let end = loop {
            match decoder.next_frame() {
                Ok(Some(frame)) => match self.receive(&link, frame) {
                    Ok(()) => continue,
                    Err(e) => break Some(e),
                },
                Ok(None) => {}
                Err(e) => break Some(e),
            }
            let buf = decoder.space(64 << 10);
            match reader.read_buf(buf).await {
                Ok(0) => break None,
                Ok(_) => {}
                Err(e) => break Some(Error::Protocol(e.to_string())),
            }
        };
        if let Some(e) = end {
            eprintln!("synodic: link to node {} closed: {e}", link.peer.name);
        }
        link.close();
        let mut links = self.inner.links.lock();
        if links.get(&link.alias).is_some_and(|l| Arc::ptr_eq(l, &link)) {
            links.remove(&link.alias);
        }
    }

    /// One frame from an authenticated peer.
    fn receive(&self, link: &Link, frame: Frame) -> Result<(), Error> {
        match frame {
            Frame::Node { alias, node } => {
                let ours = self.inner.rt.nodes().alias(&node).ok_or_else(|| Error::Protocol("the node table is full".into()))?;
                link.theirs.lock().insert(alias, ours);
            }
            Frame::Send { to, message, .. } => {
                let mut message = message;
                let theirs = link.theirs.lock();
                wire::map_pids(&mut message, |p, at| {
                    let node = if p.node() == 0 { link.alias } else { *theirs.get(&p.node()).ok_or(WireError::UnknownNode(at))? };
                    Ok(Pid::new(node, p.index(), p.generation()))
                })
                .map_err(|e| Error::Protocol(format!("bad message: {e}")))?;
                drop(theirs);
                self.inner.rt.send(Pid::new(0, to.index(), to.generation()), Message::from_vec(message));
            }
            other => return Err(Error::Protocol(format!("unexpected frame {other:?}").chars().take(80).collect())),
        }
        Ok(())
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
                    self.inner.live.lock().insert(member.name.clone());
                    self.inner.changed.notify_waiters();
                    let dial = self.inner.me.name < member.name && !self.linked(&member.name);
                    if dial {
                        let cluster = self.clone();
                        self.inner.io.spawn(async move {
                            if let Err(e) = cluster.dial(&member.addr.to_string()).await {
                                eprintln!("synodic: {e}");
                            }
                        });
                    }
                }
                Output::Event(Event::Down(member)) => {
                    self.inner.live.lock().remove(&member.name);
                    let gone: Vec<_> = self.inner.links.lock().values().filter(|l| l.peer.name == member.name).cloned().collect();
                    for link in gone {
                        link.close();
                    }
                }
            }
        }
    }

    fn linked(&self, name: &str) -> bool {
        self.inner.links.lock().values().any(|l| &*l.peer.name == name)
    }
}

impl Link {
    /// Queues a frame; false when the link has closed.
    fn push(&self, frame: impl FnOnce(&mut Outbox)) -> bool {
        let mut out = self.outbox.lock();
        if out.closed {
            return false;
        }
        let was_empty = out.bytes.is_empty();
        frame(&mut out);
        drop(out);
        if was_empty {
            self.wake.notify_one();
        }
        true
    }

    fn close(&self) {
        self.outbox.lock().closed = true;
        self.wake.notify_one();
    }

    /// The writer task: one write for everything queued since the last.
    async fn write(self: Arc<Link>, mut writer: tokio::net::tcp::OwnedWriteHalf) {
        let mut spare = Vec::new();
        loop {
            let batch = {
                let mut out = self.outbox.lock();
                if out.closed {
                    break;
                }
                std::mem::swap(&mut out.bytes, &mut spare);
                std::mem::take(&mut spare)
            };
            if batch.is_empty() {
                self.wake.notified().await;
                spare = batch;
                continue;
            }
            if writer.write_all(&batch).await.is_err() {
                break;
            }
            spare = batch;
            spare.clear();
        }
        self.close();
        let _ = writer.shutdown().await;
    }
}

/// Runs the handshake on a fresh connection.
async fn shake(stream: &mut TcpStream, decoder: &mut Decoder, role: Role, cookie: &[u8], mine: Hello) -> Result<Hello, Error> {
    let (mut hs, hello) = Handshake::start(role, cookie, mine);
    let mut out = Vec::new();
    hello.encode(&mut out);
    stream.write_all(&out).await.map_err(|e| Error::Protocol(e.to_string()))?;
    loop {
        while let Some(frame) = decoder.next_frame()? {
            match hs.receive(frame)? {
                Step::Send(frame) => {
                    out.clear();
                    frame.encode(&mut out);
                    stream.write_all(&out).await.map_err(|e| Error::Protocol(e.to_string()))?;
                }
                Step::Done(peer) => return Ok(peer),
            }
        }
        match stream.read_buf(decoder.space(1024)).await {
            Ok(0) => return Err(Error::Protocol("the peer closed the connection during the handshake (a wrong cookie?)".into())),
            Ok(_) => {}
            Err(e) => return Err(Error::Protocol(e.to_string())),
        }
    }
}

fn parse_addr(listen: &str, dialed: &str) -> Result<SocketAddr, Error> {
    listen.parse().map_err(|_| Error::Join { addr: dialed.to_string(), why: format!("it gave a bad listen address '{listen}'") })
}

impl Remote for Cluster {
    fn send(&self, from: Pid, to: Pid, msg: Message) -> bool {
        let Some(link) = self.inner.links.lock().get(&to.node()).cloned() else { return false };
        // The nodes its pids name; shared values (attachments) cannot cross yet.
        let mut bytes = msg.to_vec();
        let mut named = BTreeSet::new();
        let walked = wire::map_pids(&mut bytes, |p, _| {
            named.insert(p.node());
            Ok(p)
        });
        if walked.is_err() {
            return false;
        }
        named.remove(&0);
        let nodes = self.inner.rt.nodes();
        link.push(|out| {
            for alias in named {
                if out.announced.insert(alias) {
                    if let Some(node) = nodes.id(alias) {
                        Frame::Node { alias, node }.encode(&mut out.bytes);
                    }
                }
            }
            Frame::Send { to, from, message: bytes }.encode(&mut out.bytes);
        })
    }

    fn monitor(&self, _watcher: Pid, _target: Pid) -> bool {
        false
    }

    fn nodes(&self) -> Vec<Arc<str>> {
        self.inner.live.lock().iter().cloned().collect()
    }
}
