//! A process's turn on a worker (its body resumed, what it asked for
//! done), probes for the console, and a process's end.

use crate::process::{Body, ExitReason, Process, Step};
use crate::wire::Writer;
use crate::{Message, Pid};


use super::*;

impl Runtime {
    /// Runs one scheduled process until it yields (called by workers).
    pub(crate) fn run_process(&self, proc: &'static Process) {
        // SAFETY: the process was popped from a run queue, so this worker is its only runner.
        let Some(mut body) = (unsafe { proc.take_body() }) else { return };
        if proc.has_requests() {
            if proc.is_over_limit() {
                drop(body);
                self.finish(proc, ExitReason::Error(MEMORY_LIMIT.into()));
                return;
            }
            if let Some(reason) = proc.take_kill() {
                drop(body);
                self.finish(proc, reason);
                return;
            }
            self.answer_probes(proc, &mut *body);
        }
        if self.wakes_cold() {
            // The peer's slot was asked for when this process was woken; its
            // lines now get a whole hop to arrive (see `Process::note_peer`).
            if let Some(peer) = self.peer_of(proc) {
                peer.prefetch_hot_lines();
            }
        }
        let step = body.resume(self, proc);
        if proc.drained(matches!(step, Step::Exited(_))) {
            if let Some(t) = self.transport() {
                t.drained(proc.pid());
            }
        }
        match step {
            Step::Preempted => {
                // The monitor's preemption, or the main thread's timer (see `lasting`).
                self.lasting();
                proc.note_slice();
                // SAFETY: this worker took the body above and is still the process's only runner.
                unsafe { proc.put_body(body) };
                proc.requeue();
                self.scheduler().schedule_preempted(proc);
            }
            Step::Blocked => {
                self.lasting();
                // SAFETY: as above; the process is not parked yet, so no one else can run it.
                unsafe { proc.put_body(body) };
                if proc.park() {
                    self.scheduler().schedule_back(proc);
                }
            }
            Step::Exited(reason) => {
                drop(body);
                self.finish(proc, reason);
            }
        }
    }

    /// Sends each asker `"probe", pid, description` (the body describes
    /// itself between two resumes; it is resumed afterwards as usual, which
    /// a blocked process takes as a spurious wake-up).
    pub(super) fn answer_probes(&self, proc: &'static Process, body: &mut dyn Body) {
        let askers = proc.take_probes();
        if askers.is_empty() {
            return;
        }
        let pid = proc.pid();
        let names = proc.names();
        let held = if names.is_empty() { String::new() } else { format!(", registered as {}", names.join(", ")) };
        let text = format!("process {pid}{held}, {} messages waiting\n{}", proc.mailbox_len(), body.describe());
        for asker in askers {
            let mut w = Writer::message(3);
            w.str(b"probe");
            w.pid(pid);
            w.str(text.as_bytes());
            if let Ok(bytes) = w.finish() {
                self.send(asker, Message::from_vec(bytes));
            }
        }
    }

    /// Asks `pid` to describe itself to `asker` (a message `"probe", pid,
    /// text`, when it next runs: at once if it waits); false when there is
    /// no such process.
    pub fn probe(&self, pid: Pid, asker: Pid) -> bool {
        let Some(slot) = self.live(pid) else { return false };
        if !slot.add_probe(pid, asker) {
            return false;
        }
        self.wake(slot);
        true
    }

    /// The live processes of this node that have a role for tools, with it.
    pub fn roles(&self) -> Vec<(Pid, crate::process::Role)> {
        self.shared
            .table
            .slots()
            .filter(|p| p.run_state() != "ended")
            .filter_map(|p| match p.role() {
                crate::process::Role::None => None,
                role => Some((p.pid(), role)),
            })
            .collect()
    }

    /// How many processes live on this node (a snapshot).
    pub fn process_count(&self) -> usize {
        self.shared.table.occupied()
    }

    /// The node's task pool: tasks queued, and pool workers idle.
    pub fn pool_counts(&self) -> (usize, usize) {
        self.shared.pool.lock().queued_and_idle()
    }

    /// The live processes of this node, in slot order.
    pub fn processes(&self) -> Vec<ProcessInfo> {
        self.shared
            .table
            .slots()
            .filter(|p| p.run_state() != "ended")
            .map(|p| {
                let (memory, slices) = (p.body_bytes() + p.queued_bytes(), p.slices());
                let state = p.run_state();
                let waits_on = if state == "waiting" { p.waits_on().name() } else { "" };
                ProcessInfo { pid: p.pid(), state, waits_on, mailbox: p.mailbox_len(), names: p.names(), memory, cpu: self.shared.time_slice * slices }
            })
            .collect()
    }

    pub(super) fn finish(&self, proc: &'static Process, reason: ExitReason) {
        let pid = proc.pid();
        let more = {
            let mut links = proc.links.lock();
            let more = links.more.take().map(|b| *b).unwrap_or_default();
            links.exited = true;
            links.last_pid = Some(pid);
            if reason != ExitReason::Normal {
                links.more().last_reason = Some(reason.clone());
            }
            more
        };
        let reusable = proc.vacate();
        self.shared.names.release(pid, &more.names);
        if self.transport().is_some() && !more.names.is_empty() {
            self.service::<crate::dist::names::Names>().released(self, pid, &more.names);
        }
        if !more.monitors.is_empty() {
            let down = down_message(pid, &reason);
            for watcher in more.monitors {
                self.send(watcher, down.clone());
            }
        }
        for other in more.linked {
            self.exit_signal(pid, other, &reason);
        }
        self.shared.table.release(proc, reusable);
        if self.shared.main.lock().pid == Some(pid) {
            self.end_run(RunEnd::Exited(reason));
        }
    }
}

/// A live process, as a listing shows it.
#[derive(Clone, Debug)]
pub struct ProcessInfo {
    pub pid: Pid,
    /// "running", "runnable" (queued) or "waiting" (blocked).
    pub state: &'static str,
    /// While "waiting": what on ("receive", "tuple", "socket", "future",
    /// "sleep", "channel", "other"); empty otherwise.
    pub waits_on: &'static str,
    /// Messages in its mailbox.
    pub mailbox: usize,
    /// The names it holds.
    pub names: Vec<String>,
    /// Bytes it holds: its body's after its last run, and its queued messages'.
    pub memory: u64,
    /// Processor time, counted in the time slices it ran to their end (a
    /// process that only ever blocks shows none).
    pub cpu: std::time::Duration,
}

/// The reason a process over its memory limit ends with.
pub const MEMORY_LIMIT: &str = "memory limit";

/// How a process starts (see [`Runtime::spawn_with`]).
#[derive(Default)]
pub struct Spawn {
    /// A message waiting in its mailbox before anything else can arrive
    /// (what a body boots from).
    pub first: Option<Message>,
    /// Its memory limit in bytes (default: the node's, if any): its body's
    /// memory and its queued messages together.
    pub max_memory: Option<u64>,
}
