//! A run that outlasts a short one. Some of what a node has is only worth
//! its start-up cost to a run that lasts: the command's signal thread (see
//! `Config::on_lasting`) took ~300 µs of `synodic -e ''`'s 2 ms, its
//! creation and then its teardown at the exit, which must wake it on
//! another processor to end it. So the runtime calls `on_lasting` once, as
//! soon as the run is no longer a short one:
//!
//! 1. when the runtime's other threads start (a second process, a network
//!    source, a kill, an interrupt: `start_threads`), before they do;
//! 2. when a process blocks (it may wait for long);
//! 3. when the main process has computed for [`LASTING_AFTER`] on the main
//!    thread: a timer sends that thread the preemption signal, and the
//!    preempted process's worker makes the call (its next preemption point
//!    may be later: inside a C function, at its return).
//!
//! The call runs on a worker, or on the thread starting the others, in
//! ordinary context (not in a signal handler).

use std::time::Duration;

use parking_lot::Mutex;

use super::Runtime;

/// How long the main process computes before the run counts as lasting.
const LASTING_AFTER: Duration = Duration::from_millis(10);

/// A POSIX timer of this OS process.
struct PosixTimer(libc::timer_t);

// SAFETY: a timer id is a plain handle of the process, valid on any of
// its threads until deleted (once, under the lock that holds it).
unsafe impl Send for PosixTimer {}

/// Whether the run lasts yet, and what then happens.
pub(super) struct Lasting {
    on: Option<fn()>,
    once: std::sync::Once,
    /// The timer of step 3 while it is armed, and whether the run lasts
    /// (under one lock: a timer is never armed once the run lasts).
    timer: Mutex<(Option<PosixTimer>, bool)>,
}

impl Lasting {
    pub(super) fn new(on: Option<fn()>) -> Lasting {
        Lasting { on, once: std::sync::Once::new(), timer: Mutex::new((None, false)) }
    }
}

impl Runtime {
    /// The run lasts (see the module): calls `Config::on_lasting`, once.
    #[inline]
    pub(crate) fn lasting(&self) {
        let lasting = &self.shared.lasting;
        if lasting.once.is_completed() {
            return;
        }
        lasting.once.call_once(|| {
            let mut timer = lasting.timer.lock();
            timer.1 = true;
            if let Some(PosixTimer(id)) = timer.0.take() {
                // SAFETY: `id` is a timer `arm_lasting` created, deleted once
                // (taken out of the cell under its lock).
                unsafe { libc::timer_delete(id) };
            }
            drop(timer);
            if let Some(on) = lasting.on {
                on();
            }
        });
    }

    /// Step 3 of the module: on the main thread as it becomes the first
    /// worker, a timer that sends this thread the preemption signal every
    /// [`LASTING_AFTER`] until the run lasts. Without a preemption signal
    /// or anything to call, nothing.
    pub(super) fn arm_lasting(&self) {
        let (Some(signal), Some(_)) = (self.shared.preempt_signal, self.shared.lasting.on) else { return };
        let mut timer = self.shared.lasting.timer.lock();
        if timer.1 {
            return;
        }
        let every = libc::timespec { tv_sec: 0, tv_nsec: LASTING_AFTER.as_nanos() as libc::c_long };
        // SAFETY: `event` is zeroed (a valid sigevent) before its fields are
        // set; the timer targets this thread, which lives as long as the
        // run; its id is kept under the lock and deleted once.
        unsafe {
            let mut event: libc::sigevent = std::mem::zeroed();
            event.sigev_notify = libc::SIGEV_THREAD_ID;
            event.sigev_signo = signal;
            event.sigev_notify_thread_id = libc::gettid();
            let mut id: libc::timer_t = std::ptr::null_mut();
            if libc::timer_create(libc::CLOCK_MONOTONIC, &mut event, &mut id) != 0 {
                return;
            }
            let spec = libc::itimerspec { it_interval: every, it_value: every };
            if libc::timer_settime(id, 0, &spec, std::ptr::null_mut()) != 0 {
                libc::timer_delete(id);
                return;
            }
            timer.0 = Some(PosixTimer(id));
        }
    }
}

#[cfg(test)]
mod tests {
    use parking_lot::{Condvar, Mutex};

    use crate::dist::testing::inbox;
    use crate::runtime::{Config, Runtime};
    use crate::Message;

    static CALLS: Mutex<usize> = Mutex::new(0);
    static CALLED: Condvar = Condvar::new();

    fn count() {
        *CALLS.lock() += 1;
        CALLED.notify_all();
    }

    #[test]
    fn a_run_lasts_once_a_process_blocks_and_is_told_so_once() {
        let rt = Runtime::start(Config { workers: 1, on_lasting: Some(count), ..Default::default() }).unwrap();
        assert_eq!(*CALLS.lock(), 0, "a runtime alone does not last");
        // A process that blocks at once, and again at each message.
        let (pid, got) = inbox(&rt);
        let mut calls = CALLS.lock();
        while *calls == 0 {
            assert!(!CALLED.wait_for(&mut calls, std::time::Duration::from_secs(20)).timed_out(), "a blocked process makes the run last");
        }
        drop(calls);
        rt.send(pid, Message::no_values());
        got.wait_for(1);
        assert_eq!(*CALLS.lock(), 1, "once");
        rt.shutdown();
    }
}
