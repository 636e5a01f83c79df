//! Load reports on every link, membership datagrams, and what membership
//! decides (a member to link to, a member down).

use synodic_core::NodeId;

use synodic_core::dist::pool::Pools;

use crate::membership::{self, Event, Output};
use crate::Error;

use super::*;

impl Cluster {
    /// Tells every peer this node's load, now and then; and, alone, looks
    /// for the members it lost (see `Membership::rejoin`).
    pub(super) async fn report_load(self) {
        loop {
            tokio::time::sleep(LOAD_EVERY).await;
            self.tell_load();
            self.inner.rt.services().tick(&self.inner.rt);
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
    pub(super) fn tell_load(&self) {
        let nodes = self.inner.live.lock().len() as u32;
        self.inner.rt.service::<Pools>().tell(&self.inner.rt, nodes);
        self.inner.changed.notify_waiters();
    }

    pub(super) async fn datagrams(self) {
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
    pub(super) fn drive(&self, outputs: Vec<Output>) {
        if outputs.iter().any(|out| matches!(out, Output::Event(_))) {
            self.inner.changed.notify_waiters();
        }
        for out in outputs {
            match out {
                Output::Send(to, data) => {
                    let _ = self.inner.udp_out.send_to(&membership::seal(&self.inner.cookie, &data), to.addr);
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
                        while self.read_link(&link) {}
                        self.end(&link);
                    }
                    // Gone for good, as far as this node knows: its alias may
                    // go to a new node one day (it keeps it if it comes back first).
                    self.inner.rt.nodes().retire(&NodeId { name: member.name.clone(), incarnation: member.incarnation });
                }
            }
        }
    }

    pub(super) fn linked(&self, name: &str) -> bool {
        self.inner.links.lock().values().any(|l| &*l.peer.name == name)
    }

}
