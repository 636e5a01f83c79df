//! The preemption watchdog. Running processes are never interrupted on a
//! hot path: instead, a watchdog thread looks at every worker once per time
//! slice, and a worker that has been running the same process for a whole
//! slice is sent a signal. The body layer's handler for that signal makes the
//! running process yield at its next instruction (for Lua: it arms a count
//! hook, the asynchronous use Lua supports). So preemption costs nothing
//! until a process actually overruns its slice.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::OnceLock;
use std::time::Duration;

/// What the watchdog knows of one worker.
#[derive(Default)]
pub(crate) struct WorkerWatch {
    /// Bumped each time the worker starts running a process. Only the
    /// worker writes it, so a plain load and store do (no locked
    /// instruction on every run); the watchdog only reads it.
    runs: AtomicU64,
    busy: AtomicBool,
    thread: OnceLock<libc::pthread_t>,
}

impl WorkerWatch {
    /// Called by the worker thread itself, once.
    pub(crate) fn register_current_thread(&self) {
        let _ = self.thread.set(unsafe { libc::pthread_self() });
    }

    pub(crate) fn start_run(&self) {
        self.runs.store(self.runs.load(Relaxed).wrapping_add(1), Relaxed);
        self.busy.store(true, Relaxed);
    }

    pub(crate) fn end_run(&self) {
        self.busy.store(false, Relaxed);
    }
}

/// Signals every worker that has run one process for at least `slice`,
/// until `stopping` returns true.
pub(crate) fn watchdog(workers: &[WorkerWatch], signal: libc::c_int, slice: Duration, stopping: impl Fn() -> bool) {
    let mut last: Vec<u64> = vec![u64::MAX; workers.len()];
    while !stopping() {
        std::thread::sleep(slice);
        for (w, seen) in workers.iter().zip(last.iter_mut()) {
            let runs = w.runs.load(Relaxed);
            if w.busy.load(Relaxed) && runs == *seen {
                if let Some(&t) = w.thread.get() {
                    // SAFETY: the thread is a live worker of this runtime (workers outlive the watchdog loop).
                    unsafe { libc::pthread_kill(t, signal) };
                }
            }
            *seen = runs;
        }
    }
}
