//! Model checks of the run-state protocol (see the module doc of
//! `process` and `sync`): loom runs each model under every interleaving
//! of the run state's and the mailbox's atomic operations and lock, and
//! each check states what must hold in all of them. They run only in a
//! loom build: `scripts/loom`.
//!
//! The protocol: a sender puts a message in the mailbox (under its lock)
//! and then notifies the process; the running process looks at its mailbox
//! without the lock (an empty one costs no locked instruction) and, finding
//! nothing, parks. Neither side may lose the message (the process idle, the
//! message unseen), and the process is queued by one of them at most.

use std::sync::Arc;

use loom::thread;

use super::*;

/// A body that only waits (never resumed here: no worker runs in a model).
struct Waits;

impl Body for Waits {
    fn resume(&mut self, _rt: &crate::Runtime, _me: &'static Process) -> Step {
        Step::Blocked
    }
}

/// A slot whose tenant is running: occupied, its body taken as a worker
/// takes it.
fn running() -> (Arc<Process>, Pid) {
    let p = Arc::new(Process::vacant(0, 1));
    let pid = p.occupy(Box::new(Waits), None);
    // SAFETY: no worker exists in the model: this thread is the tenant's only runner.
    let body = unsafe { p.take_body() };
    assert!(body.is_some());
    (p, pid)
}

fn message() -> Message {
    Message::from_slice(b"hello")
}

/// A sender delivers a message to `p` and notifies it while its worker
/// runs it (`start` first, on the worker's side): it looks at its mailbox
/// and, finding nothing, blocks. The message must be seen, now or by a run
/// that one side, and only one, queued.
fn deliver_during_a_run(p: Arc<Process>, pid: Pid, start: impl FnOnce(&Process)) {
    let sender = {
        let p = p.clone();
        thread::spawn(move || {
            p.deliver(pid, message()).expect("the tenant is alive");
            p.notify()
        })
    };
    start(&p);
    let got = p.pop_message().is_some();
    let requeued = !got && p.park();
    let queued_by_sender = sender.join().expect("the sender ends");
    assert!(!(requeued && queued_by_sender), "queued twice");
    if !got {
        assert!(requeued || queued_by_sender, "idle, with a message it never saw");
        assert!(p.pop_message().is_some(), "its next run finds the message");
    }
}

#[test]
fn loom_a_message_sent_as_its_receiver_goes_idle_is_never_left_unseen() {
    loom::model(|| {
        let (p, pid) = running();
        deliver_during_a_run(p, pid, |_| {});
    });
}

#[test]
fn loom_a_message_sent_as_its_queued_receiver_starts_its_run_is_never_left_unseen() {
    loom::model(|| {
        // Queued (as a process woken, preempted or new is), not running yet:
        // the worker that takes it from its queue starts its run as the
        // message comes.
        let p = Arc::new(Process::vacant(0, 1));
        let pid = p.occupy(Box::new(Waits), None);
        // SAFETY: no worker exists in the model: this thread is its only runner.
        deliver_during_a_run(p, pid, |p| assert!(unsafe { p.take_body() }.is_some()));
    });
}

#[test]
fn loom_two_wakers_of_an_idle_process_queue_it_once() {
    loom::model(|| {
        let (p, _) = running();
        assert!(!p.park(), "nothing notified it: it goes idle");
        let wakers: Vec<_> = (0..2)
            .map(|_| {
                let p = p.clone();
                thread::spawn(move || p.notify())
            })
            .collect();
        let queued = wakers.into_iter().map(|w| w.join().expect("a waker ends") as usize).sum::<usize>();
        assert_eq!(queued, 1);
    });
}

#[test]
fn loom_a_waker_never_queues_a_process_its_worker_queues_after_preempting_it() {
    loom::model(|| {
        let (p, _) = running();
        let waker = {
            let p = p.clone();
            thread::spawn(move || p.notify())
        };
        // The run used up its slice: its worker queues it again (`run_process`).
        p.requeue();
        assert!(!waker.join().expect("the waker ends"), "the worker queues it; the waker must not");
    });
}

#[test]
fn loom_a_message_for_an_ending_process_is_never_left_for_the_next_tenant() {
    loom::model(|| {
        let (p, old) = running();
        let sender = {
            let p = p.clone();
            thread::spawn(move || {
                let _ = p.deliver(old, message());
            })
        };
        assert!(p.vacate(), "the slot may take a new tenant");
        let new = p.occupy(Box::new(Waits), None);
        sender.join().expect("the sender ends");
        assert_ne!(new, old);
        assert!(p.pop_message().is_none(), "the old tenant's message reached the new one");
    });
}
