//! What each frame that arrives over a link does (step 3 of the module's
//! list): messages delivered, requests served, answers settled.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use synodic_core::future::FutureId;
use synodic_core::remote::{self, Carried, Remote};
use synodic_core::waiting::{Completion, Waiter};
use synodic_core::{linda_remote, Attachment, Message, Pid};

use crate::frame::{completion, Frame};
use crate::link::Link;
use crate::Error;

use super::*;

impl Cluster {
    /// One frame from an authenticated peer, with the buffers its message
    /// carries (a parcel's).
    pub(super) fn receive(&self, link: &Arc<Link>, frame: Frame, shared: Vec<Carried>) -> Result<(), Error> {
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
                // The lock is held from the check that notes it to the push:
                // a drain noticed meanwhile finds `to` told, and its Ready
                // follows this Busy. (A receiver keeping up costs no lock.)
                if rt.is_busy(to) {
                    let mut told = link.told_busy.lock();
                    if rt.busy(to) && told.insert(to) {
                        link.push(|out| Frame::Busy { pid: to }.encode(&mut out.bytes));
                    }
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
