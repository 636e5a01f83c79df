//! The runtime's `Remote` and `Netpoll` on top of the links: what a
//! process asks of another node becomes a frame on the link to it.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use synodic_core::netpoll::Netpoll;
use synodic_core::future::FutureId;
use synodic_core::remote::{self, Remote};
use synodic_core::waiting::{Completion, Waiter};
use synodic_core::{Message, Pid};

use crate::frame::{completion, Frame};
use crate::link::{self};

use super::*;

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
