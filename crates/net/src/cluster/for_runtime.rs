//! The runtime's `Transport` and `Netpoll` on top of the links: what a
//! service queues for another node becomes a frame on the link to it, and
//! the scheduler's threads read and write the links.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use synodic_core::dist::{Outgoing, Transport};
use synodic_core::netpoll::Netpoll;
use synodic_core::Pid;

use crate::frame::Frame;
use crate::link;

use super::*;

impl Netpoll for Cluster {
    fn poll(&self, wait: bool) -> bool {
        if !wait {
            match self.inner.reading_count.load(Relaxed) {
                0 => return false,
                // With one link its socket is the whole poll: read it
                // straight away. A spinning worker polls many times a
                // round trip, and bytes found so cost one system call
                // rather than an `epoll_wait` and then the read.
                1 => {
                    let only = self.inner.reading.lock().values().next().cloned();
                    if let Some(link) = only {
                        let (more, frames) = self.read_link_counting(&link);
                        if frames == 0 && !more {
                            self.unwatch_idle(&link);
                        }
                        return frames > 0;
                    }
                }
                _ => {}
            }
        }
        self.poll_links(wait)
    }

    fn poll_reported(&self) -> bool {
        // Through the links' poller, never straight to the one link: its
        // ready list is what the netpoller sees (see the trait).
        self.poll_links(false)
    }

    fn interrupt(&self) {
        self.inner.poller.interrupt();
    }

    fn flush(&self) {
        link::flush_dirty();
    }

    fn flush_left(&self) {
        let links: Vec<_> = self.inner.links.lock().values().cloned().collect();
        for link in links {
            link.flush();
        }
    }

    fn fd(&self) -> Option<std::os::fd::RawFd> {
        Some(self.inner.poller.fd())
    }

    fn writing_behind(&self) -> bool {
        link::writing_behind()
    }

    fn watch_all(&self) {
        self.rewatch();
    }
}

impl Cluster {
    /// Waits on the links' poller (with `wait`) and reads every link it
    /// reports; true when it reported any.
    fn poll_links(&self, wait: bool) -> bool {
        self.rewatch();
        // (No list of the links reported: a parked worker woken by a
        // message allocated one at every wake-up.)
        let mut any = false;
        self.inner.poller.wait_events(wait, &mut |token, _| {
            any = true;
            let link = self.inner.reading.lock().get(&token).cloned();
            if let Some(link) = link {
                self.read_link(&link);
            }
        });
        any
    }
}

/// The one link out of the poller while workers spin. A socket in an epoll
/// set costs every arrival a call into it from the sender's side (the
/// peer's `sendto` runs this socket's input on loopback, and wakes its
/// watchers): a bare C ping-pong went 4.97 -> 5.12 µs a round trip with
/// its socket in one, 5.23 with that one nested in another, as the
/// links' poller is in the netpoller's. While a single link is read
/// straight away at every spinning poll, nobody needs its readiness: it
/// leaves the poller at a spinning poll that finds nothing, and comes
/// back (two `epoll_ctl` a park) before anyone waits on the poller, or
/// polls through it (`poll_links`, the netpoller's `watch_all`). Its
/// level-triggered watch reports at once what came while it was out.
impl Cluster {
    /// Takes `link`, the only one, out of the poller, unless it is out
    /// already or has ended.
    fn unwatch_idle(&self, link: &Arc<Link>) {
        if self.inner.any_unwatched.load(Relaxed) {
            return;
        }
        let mut unwatched = self.inner.unwatched.lock();
        if unwatched.is_some() || link.ended.load(Relaxed) {
            return;
        }
        self.inner.poller.remove(link.fd());
        *unwatched = Some(link.clone());
        self.inner.any_unwatched.store(true, Relaxed);
    }

    /// Puts the link taken out back into the poller (one that has ended
    /// since stays out).
    pub(super) fn rewatch(&self) {
        if !self.inner.any_unwatched.load(Relaxed) {
            return;
        }
        let mut unwatched = self.inner.unwatched.lock();
        self.inner.any_unwatched.store(false, Relaxed);
        let Some(link) = unwatched.take() else { return };
        if !link.ended.load(Relaxed) {
            if let Err(e) = self.inner.poller.add(link.fd(), link.token) {
                eprintln!("synodic: link to node {} closed: cannot watch the connection: {e}", link.peer.name);
                drop(unwatched);
                self.end(&link);
            }
        }
    }
}

impl Transport for Cluster {
    fn push(&self, node: u16, frame: Outgoing) -> bool {
        let Some(link) = self.inner.links.lock().get(&node).cloned() else { return false };
        link.push_service(frame)
    }

    fn peers(&self) -> Vec<u16> {
        self.inner.links.lock().keys().copied().collect()
    }

    fn linked(&self, name: &str) -> Option<u16> {
        self.inner.links.lock().values().find(|l| &*l.peer.name == name).map(|l| l.alias)
    }

    fn nodes(&self) -> Vec<Arc<str>> {
        self.inner.live.lock().iter().cloned().collect()
    }

    fn traffic(&self) -> Vec<(Arc<str>, u64, u64)> {
        let links: Vec<_> = self.inner.links.lock().values().cloned().collect();
        links.iter().map(|l| {
            let (sent, received) = l.traffic();
            (l.peer.name.clone(), sent, received)
        }).collect()
    }

    fn membership(&self) -> Vec<(Arc<str>, bool, bool, bool)> {
        let (me, members) = {
            let membership = self.inner.membership.lock();
            let me = membership.me().name.clone();
            let members: std::collections::BTreeSet<Arc<str>> = membership.members().map(|m| m.name.clone()).chain([me.clone()]).collect();
            (me, members)
        };
        let live = self.inner.live.lock().clone();
        let linked: std::collections::BTreeSet<Arc<str>> = self.inner.links.lock().values().map(|l| l.peer.name.clone()).chain([me]).collect();
        let all: std::collections::BTreeSet<Arc<str>> = members.iter().chain(live.iter()).chain(linked.iter()).cloned().collect();
        all.into_iter().map(|n| (n.clone(), live.contains(&n), members.contains(&n), linked.contains(&n))).collect()
    }

    fn room_for(&self, to: Pid, sender: Pid) -> bool {
        // Asked after every send to another node: a link with no busy
        // receiver and room in its outbox answers without being cloned.
        let link = match self.inner.links.lock().get(&to.node()) {
            None => return true,
            Some(link) if !link.strained() => return true,
            Some(link) => link.clone(),
        };
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
}
