//! Monitors, registered names, and the DOWN notices a process's end sends.



use crate::process::ExitReason;
use crate::wire::Writer;
use crate::{Error, Message, Pid};


use super::*;

impl Runtime {
    /// `watcher` gets `"DOWN", target, reason` when `target` ends, at once if it already has.
    pub fn monitor(&self, watcher: Pid, target: Pid) {
        let mut reason = ExitReason::Value(noproc());
        match self.route(target) {
            Route::Here(slot) => {
                let mut links = slot.links.lock();
                if !links.exited && slot.is(target) {
                    links.more().monitors.push(watcher);
                    return;
                }
                if let Some(last) = links.exit_of(target) {
                    reason = last;
                }
            }
            Route::Elsewhere(_) => match self.service::<crate::dist::monitors::Monitors>().monitor(self, watcher, target) {
                true => return,
                false => reason = ExitReason::Value(noconnection()),
            },
            Route::Nowhere => {}
        }
        self.send(watcher, down_message(target, &reason));
    }

    /// Removes one of `watcher`'s monitors of `target`. True when one was
    /// in place: no DOWN will come for it. False when none was: the DOWN
    /// of one `watcher` set is then already delivered or on its way.
    pub fn demonitor(&self, watcher: Pid, target: Pid) -> bool {
        match self.route(target) {
            Route::Here(slot) => {
                let mut links = slot.links.lock();
                if links.exited || !slot.is(target) {
                    return false;
                }
                let Some(more) = links.more.as_mut() else { return false };
                let found = more.monitors.iter().position(|&w| w == watcher);
                found.map(|i| more.monitors.swap_remove(i)).is_some()
            }
            Route::Elsewhere(_) => self.service::<crate::dist::monitors::Monitors>().demonitor(self, watcher, target),
            Route::Nowhere => false,
        }
    }

    pub fn register(&self, name: &[u8], pid: Pid) -> Result<(), Error> {
        let proc = self.live(pid).ok_or(Error::NoProcess(pid))?;
        self.shared.names.register(name, proc)
    }

    pub fn whereis(&self, name: &[u8]) -> Option<Pid> {
        self.shared.names.whereis(name)
    }

    /// Enters a name the cluster has given `pid`, a process of any node
    /// (see `names`). Refused when the name is held by another, or `pid`
    /// is of this node and has ended.
    pub fn enter_name(&self, name: &[u8], pid: Pid) -> Result<(), Error> {
        match self.route(pid) {
            Route::Here(_) => self.register(name, pid),
            Route::Elsewhere(_) => self.shared.names.enter_remote(name, pid),
            Route::Nowhere => Err(Error::NoProcess(pid)),
        }
    }

    /// Enters a name that another node says `pid`, one of its processes,
    /// holds, settling a clash with another holder (both sides of a healed
    /// partition gave the name): `prevails(pid, holder)` decides, the same
    /// way on every node; returns the holder the name was taken from.
    pub fn settle_name(&self, name: &[u8], pid: Pid, prevails: impl FnOnce(Pid, Pid) -> bool) -> Option<Pid> {
        self.shared.names.settle(name, pid, prevails)
    }

    /// Removes `name` if `pid` holds it (its process ended on another node).
    pub fn remove_name(&self, name: &[u8], pid: Pid) {
        self.shared.names.remove(name, pid)
    }

    /// Forgets the names held on the node with this alias (it was lost).
    pub fn drop_names_of(&self, alias: u16) {
        self.shared.names.drop_node(alias)
    }

    /// The names held by this node's processes.
    pub fn names_held_here(&self) -> Vec<(Box<[u8]>, Pid)> {
        self.shared.names.held_here()
    }
}

/// The reason given for a process that ended too long ago to remember how.
pub(crate) fn noproc() -> Vec<u8> {
    reason_text(b"noproc")
}

/// The reason of a DOWN for a process whose node was lost (SPEC §9).
pub fn noconnection() -> Vec<u8> {
    reason_text(b"noconnection")
}

pub(super) fn reason_text(text: &[u8]) -> Vec<u8> {
    let mut w = Writer::message(1);
    w.str(text);
    w.finish_small()
}

/// `"DOWN", pid, reason` as a message.
pub fn down_message(pid: Pid, reason: &ExitReason) -> Message {
    super::links::end_notice(b"DOWN", pid, reason)
}
