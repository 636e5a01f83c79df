//! A link's life: accepting and dialling, the handshake, entering the
//! link, reading it, giving way to another link to the same peer, its end,
//! and dialling again (steps 1, 2, 4 and 5 of the module's list).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use synodic_core::NodeId;
use tokio::net::{TcpListener, TcpStream};

use crate::gate::{self};
use crate::handshake::{self, Handshake, Peer, Purpose, Role};
use crate::inbound::Drained;
use crate::link::Link;
use crate::Error;

use super::*;

impl Cluster {
    pub(super) async fn accept(self, tcp: TcpListener) {
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
    pub(super) async fn dial(self, addr: &str) -> Result<Peer, Error> {
        let unreachable = |why: String| Error::Unreachable { addr: addr.to_string(), why };
        let stream = tokio::time::timeout(handshake::DRIVE_LIMIT, TcpStream::connect(addr)).await.map_err(|_| unreachable("no answer".into()))?.map_err(|e| unreachable(e.to_string()))?;
        self.connect(stream, Role::Dialer, None).await.map_err(|e| Error::Join { addr: addr.to_string(), why: e.to_string() })
    }

    /// Steps 1 and 2 of a link: the handshake (the accepting side holding
    /// `place` meanwhile), then its reader and writer.
    pub(super) async fn connect(self, mut stream: TcpStream, role: Role, place: Option<gate::Place>) -> Result<Peer, Error> {
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
                // A dialer speaks first: a server of another kind often says
                // nothing back (an HTTP server waits for a whole request).
                let silent = || Error::Protocol(format!("no handshake within {} s (is this the port of a Synodic node? it answered nothing a node would)", handshake::DRIVE_LIMIT.as_secs()));
                tokio::time::timeout(handshake::DRIVE_LIMIT, handshake::over_tokio(&mut stream, hs, None, &mut vet)).await.map_err(|_| silent())??
            }
            Role::Acceptor => {
                let (hs, challenge) = Handshake::acceptor(config)?;
                let place = place.expect("an accepted connection holds a place");
                place.hold(handshake::over_tokio(&mut stream, hs, Some(challenge), &mut vet)).await?
            }
        };
        {
            let mut proven = self.inner.proven.lock();
            // Bounded: only peers that proved the cookie come here.
            if proven.len() >= 4096 {
                proven.clear();
            }
            proven.insert(peer.listen.clone(), peer.clone());
        }
        let rank = match role {
            Role::Dialer => (self.inner.me.name < peer.node.name, peer.dialer_nonce),
            Role::Acceptor => (peer.node.name < self.inner.me.name, peer.dialer_nonce),
        };
        let socket = stream.into_std().map_err(|e| Error::Protocol(e.to_string()))?;
        let token = self.inner.next_token.fetch_add(1, Relaxed);
        let link = Link::start(self.inner.rt.clone(), peer.node.clone(), alias, rank, token, socket, session).map_err(|e| Error::Protocol(e.to_string()))?;
        // Step 2: of two links to one peer, both nodes keep the same one;
        // the other carries what it already holds, then closes (senders
        // it slowed look again). What processes wait for from the peer is
        // the services', by node, so it stays with the kept link.
        let retired = {
            let mut links = self.inner.links.lock();
            match links.get(&alias) {
                Some(kept) if kept.rank > link.rank => Some(link.clone()),
                _ => links.insert(alias, link.clone()),
            }
        };
        if let Some(retired) = retired {
            retired.retire();
        }
        if !link.outbox.lock().draining {
            // The kept link: the services say what a new peer must hear
            // first (the names held here), before any other frame.
            self.inner.rt.services().linked(&self.inner.rt, alias);
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
        self.read_link(&link);
        Ok(peer)
    }

    /// Reads what has arrived on `link`, up to a budget, and delivers it.
    /// True when the budget ended the read (more may wait; the poller
    /// reports the link again at its next wait).
    pub(super) fn read_link(&self, link: &Arc<Link>) -> bool {
        self.read_link_counting(link).0
    }

    /// [`Self::read_link`], and how many frames it delivered.
    pub(super) fn read_link_counting(&self, link: &Arc<Link>) -> (bool, usize) {
        let mut frames = 0;
        let drained = link.drain(&mut |frame, shared| {
            frames += 1;
            self.receive(link, frame, shared)
        });
        let more = matches!(drained, Ok(Drained::Budget));
        match drained {
            Ok(Drained::Open | Drained::Budget) => {}
            Ok(Drained::Closed) => self.end(link),
            Err(e) => {
                eprintln!("synodic: link to node {} closed: {e}", link.peer.name);
                self.end(link);
            }
        }
        (more, frames)
    }

    /// Step 4: the link is over; whoever waited on its peer is told.
    pub(super) fn end(&self, link: &Arc<Link>) {
        if link.ended.swap(true, Relaxed) {
            return;
        }
        let rt = &self.inner.rt;
        link.close();
        if self.inner.reading.lock().remove(&link.token).is_some() {
            self.inner.reading_count.fetch_sub(1, Relaxed);
        }
        {
            // (Under the lock `rewatch` adds under: it never puts an ended
            // link back.)
            let mut unwatched = self.inner.unwatched.lock();
            if unwatched.as_ref().is_some_and(|l| Arc::ptr_eq(l, link)) {
                *unwatched = None;
                self.inner.any_unwatched.store(false, Relaxed);
            }
            self.inner.poller.remove(link.fd());
        }
        link.shutdown();
        let (kept, still_linked) = {
            let mut links = self.inner.links.lock();
            let kept = links.get(&link.alias).is_some_and(|l| Arc::ptr_eq(l, link));
            if kept {
                links.remove(&link.alias);
            }
            (kept, links.values().any(|l| l.peer.name == link.peer.name))
        };
        // A retired link's waiters are the kept one's: told when it ends.
        if kept {
            rt.services().lost(rt, link.alias, &link.peer.name);
        }
        if still_linked {
            return;
        }
        // What the node held is forgotten before it leaves the live nodes,
        // and whoever watched it is told after.
        rt.services().leaving(rt, link.alias);
        self.inner.live.lock().remove(&link.peer.name);
        self.tell_load();
        rt.services().gone(rt, link.alias, &link.peer.name);
        self.redial(link.peer.clone());
    }

    /// Step 5: a link that ended while membership still lists its peer (a
    /// connection cut, a junk frame) is dialed again by the node with the
    /// smaller name, after pauses that double, until the peer is linked
    /// again or membership lets it go.
    pub(super) fn redial(&self, peer: NodeId) {
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
}
