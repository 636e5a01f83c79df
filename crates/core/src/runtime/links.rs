//! Links, exit signals and kill (SPEC §11), as Erlang has them. A link is
//! kept on both sides: each process lists the other in its links. When a
//! process ends, each process it lists gets an *exit signal*: a process
//! that traps exits receives `"EXIT", pid, reason`; one that does not ends
//! with the same reason, unless the reason is `"normal"`. A signal from a
//! process the receiver no longer lists (it unlinked) is dropped, so
//! `unlink` promises no signal after it returns. `kill` ends a process
//! whatever it traps: it is flagged, woken, and ends before it next runs
//! (a computing process at its next preemption, within a time slice).
//! Links to processes of other nodes go through `dist::links`, which
//! gives every local end of a link to a lost node the reason
//! `"noconnection"`.

use crate::dist::links::Links;
use crate::process::ExitReason;
use crate::wire::{Reader, Tag, Writer};
use crate::{Message, Pid};

use super::*;

/// What linking to a process found.
#[derive(Debug, PartialEq)]
pub enum Linked {
    /// Linked (or the caller traps exits and was sent `"EXIT"` for a
    /// process that had already ended).
    Yes,
    /// The process had already ended with this reason, and the caller,
    /// which does not trap exits, must end with it too.
    EndWith(ExitReason),
    /// No such process, and its end is not known.
    NoProcess,
}

impl Runtime {
    /// Links `me` (a live process here) and `other`, of any node.
    pub fn link(&self, me: Pid, other: Pid) -> Linked {
        if me == other {
            return Linked::Yes;
        }
        let Some(mine) = self.live(me) else { return Linked::Yes };
        {
            let mut links = mine.links.lock();
            let linked = &mut links.more().linked;
            if linked.contains(&other) {
                return Linked::Yes;
            }
            linked.push(other);
        }
        let ended = match self.route(other) {
            Route::Here(slot) => {
                let mut links = slot.links.lock();
                if !links.exited && slot.is(other) {
                    links.more().linked.push(me);
                    return Linked::Yes;
                }
                links.exit_of(other)
            }
            Route::Elsewhere(node) => match self.service::<Links>().link(self, node, me, other) {
                true => return Linked::Yes,
                false => Some(ExitReason::Value(noconnection())),
            },
            Route::Nowhere => None,
        };
        // `other` has ended: as if it ended just after the link was made.
        let traps = self.drop_link(me, other).unwrap_or(false);
        match (ended, traps) {
            (Some(reason), true) => {
                self.send(me, exit_message(other, &reason));
                Linked::Yes
            }
            (Some(ExitReason::Normal), false) => Linked::Yes,
            (Some(reason), false) => Linked::EndWith(reason),
            (None, true) => {
                self.send(me, exit_message(other, &ExitReason::Value(noproc())));
                Linked::Yes
            }
            (None, false) => Linked::NoProcess,
        }
    }

    /// Removes the link between `me` (here) and `other`, if there is one.
    pub fn unlink(&self, me: Pid, other: Pid) {
        self.drop_link(me, other);
        match self.route(other) {
            Route::Here(_) => drop(self.drop_link(other, me)),
            Route::Elsewhere(node) => self.service::<Links>().unlink(self, node, me, other),
            Route::Nowhere => {}
        }
    }

    /// Sets whether `me` traps exits; returns what it was.
    pub fn trap_exit(&self, me: Pid, on: bool) -> bool {
        let Some(slot) = self.live(me) else { return false };
        let mut links = slot.links.lock();
        std::mem::replace(&mut links.more().trap_exit, on)
    }

    /// Ends `target`, of any node, with `reason`, whatever it is doing
    /// (see the module's note). False when there is no such process.
    pub fn kill(&self, target: Pid, reason: ExitReason) -> bool {
        match self.route(target) {
            Route::Here(slot) => {
                if !slot.kill(target, reason) {
                    return false;
                }
                self.wake(slot);
                // A run in C code ends at its next preemption: the monitor
                // may be resting beside it (see `Scheduler::quiet`).
                self.rouse_monitor();
                true
            }
            Route::Elsewhere(node) => self.service::<Links>().kill(self, node, target, &reason),
            Route::Nowhere => false,
        }
    }

    /// Asks `target`, a process here, to stop what it does: it raises
    /// "interrupted!" at its next preemption, or, if it waits for a
    /// message or the clock, when it wakes (it is woken). False when there
    /// is no such process here.
    pub fn interrupt(&self, target: Pid) -> bool {
        let Some(slot) = self.live(target).filter(|slot| slot.interrupt(target)) else { return false };
        self.wake(slot);
        self.rouse_monitor();
        true
    }

    /// Has the monitor deliver a kill or an interrupt to a process running
    /// in C code or Lua: starts it if it has not started (a process alone
    /// runs without one), and wakes it if it rests.
    fn rouse_monitor(&self) {
        if let Err(e) = self.start_threads(true) {
            eprintln!("synodic: {e}");
        }
        self.scheduler().rouse_monitor();
    }

    /// `from`, linked to `to`, ended with `reason`: `to` gets the exit
    /// signal (see the module's note).
    pub fn exit_signal(&self, from: Pid, to: Pid, reason: &ExitReason) {
        match self.route(to) {
            Route::Here(_) => match self.drop_link(to, from) {
                Some(true) => drop(self.send(to, exit_message(from, reason))),
                Some(false) if *reason != ExitReason::Normal => drop(self.kill(to, reason.clone())),
                _ => {}
            },
            Route::Elsewhere(node) => self.service::<Links>().signal(self, node, from, to, reason),
            Route::Nowhere => {}
        }
    }

    /// Answers a link asked for by `other` (another node's process) to
    /// `me` (here): false when `me` has ended, with how, if known.
    pub fn linked_from(&self, me: Pid, other: Pid) -> Result<(), Option<ExitReason>> {
        let Route::Here(slot) = self.route(me) else { return Err(None) };
        let mut links = slot.links.lock();
        if links.exited || !slot.is(me) {
            return Err(links.exit_of(me));
        }
        let linked = &mut links.more().linked;
        if !linked.contains(&other) {
            linked.push(other);
        }
        Ok(())
    }

    /// `other`, of another node, unlinked itself from `me` (here).
    pub fn unlinked(&self, me: Pid, other: Pid) {
        self.drop_link(me, other);
    }

    /// Removes `other` from the links of `me` (here): whether `me` traps
    /// exits, or `None` when it did not list `other` (or has ended).
    fn drop_link(&self, me: Pid, other: Pid) -> Option<bool> {
        let slot = self.live(me)?;
        let mut links = slot.links.lock();
        let more = links.more.as_mut()?;
        let at = more.linked.iter().position(|&p| p == other)?;
        more.linked.swap_remove(at);
        Some(more.trap_exit)
    }
}

/// `"EXIT", pid, reason` as a message.
pub fn exit_message(pid: Pid, reason: &ExitReason) -> Message {
    end_notice(b"EXIT", pid, reason)
}

/// A reason as a one-value message (for the wire).
pub fn reason_message(reason: &ExitReason) -> Vec<u8> {
    match reason {
        ExitReason::Normal => reason_text(b"normal"),
        ExitReason::Error(text) => reason_text(text.as_bytes()),
        ExitReason::Value(encoded) => encoded.clone(),
    }
}

/// A reason from a one-value message: `"normal"` is a normal end.
pub fn reason_of(message: Vec<u8>) -> ExitReason {
    let normal = Reader::message(&message).ok().filter(|(_, n)| *n == 1).is_some_and(|(mut r, _)| r.tag().ok() == Some(Tag::Str) && r.bytes().ok() == Some(b"normal"));
    match normal {
        true => ExitReason::Normal,
        false => ExitReason::Value(message),
    }
}

/// `word, pid, reason` as a message (a DOWN, an EXIT).
pub(super) fn end_notice(word: &[u8], pid: Pid, reason: &ExitReason) -> Message {
    let mut w = Writer::message(3);
    w.str(word);
    w.pid(pid);
    match reason {
        ExitReason::Normal => w.str(b"normal"),
        ExitReason::Error(msg) => w.str(msg.as_bytes()),
        // A one-value message: skip its version byte and its count (1, one byte).
        ExitReason::Value(encoded) => w.raw(&encoded[2..]),
    }
    Message::from_vec(w.finish_small())
}
