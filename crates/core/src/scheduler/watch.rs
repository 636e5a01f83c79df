//! What the monitor sees of each worker: the run in progress, since when,
//! its thread (to signal it), and whether it was declared stuck.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering::*};
use std::sync::OnceLock;
use std::time::Duration;


use crate::process::Process;


/// A worker's current run, as the monitor sees it. Only the worker writes
/// `started_at` and `running`, so plain stores do (no locked instruction on
/// every run); the monitor only reads them.
#[derive(Default)]
pub(crate) struct Watch {
    started_at: AtomicU64,
    running: AtomicPtr<Process>,
    /// Set by the monitor when the run has lasted too long; cleared by the worker.
    pub(crate) stuck: AtomicBool,
    pub(super) thread: OnceLock<libc::pthread_t>,
    /// The thread's id in the kernel, for its statistics in /proc.
    pub(super) tid: OnceLock<libc::pid_t>,
}

impl Watch {
    #[inline]
    pub(crate) fn start_run(&self, epoch: u64, proc: &'static Process) {
        self.started_at.store(epoch, Relaxed);
        self.running.store(proc as *const Process as *mut Process, Release);
    }

    /// Ends a run; true when the monitor declared it stuck meanwhile.
    #[inline]
    pub(crate) fn end_run(&self) -> bool {
        self.running.store(std::ptr::null_mut(), Relaxed);
        self.stuck.load(Relaxed)
    }

    /// The process being run and the tick its run started at.
    pub(crate) fn current(&self) -> Option<(&'static Process, u64)> {
        let p = self.running.load(Acquire);
        // SAFETY: slots live for the whole run (see `Table`).
        let proc = unsafe { p.cast_const().as_ref() }?;
        Some((proc, self.started_at.load(Relaxed)))
    }

    /// The processor time the worker's thread has used.
    pub(crate) fn cpu_time(&self) -> Duration {
        let Some(&thread) = self.thread.get() else { return Duration::ZERO };
        // SAFETY: the thread is a live worker of this runtime; the calls only read its clock.
        unsafe {
            let mut clock: libc::clockid_t = 0;
            let mut ts: libc::timespec = std::mem::zeroed();
            if libc::pthread_getcpuclockid(thread, &mut clock) != 0 || libc::clock_gettime(clock, &mut ts) != 0 {
                return Duration::ZERO;
            }
            Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
        }
    }

    /// Whether the worker's thread is asleep in the kernel now (a system
    /// call that blocks), rather than running or waiting for a processor.
    pub(crate) fn asleep(&self) -> bool {
        let Some(tid) = self.tid.get() else { return false };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")) else { return false };
        // The state follows the command name, which is in parentheses.
        let state = stat.rfind(')').and_then(|i| stat[i + 1..].trim_start().chars().next());
        matches!(state, Some('S' | 'D'))
    }

    /// How long the worker's thread has waited for a processor (runnable,
    /// but another thread ran), from the kernel's scheduler statistics;
    /// zero where they cannot be read.
    pub(crate) fn run_queue_wait(&self) -> Duration {
        let Some(tid) = self.tid.get() else { return Duration::ZERO };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")) else { return Duration::ZERO };
        // "time on a processor, time waiting for one, timeslices", in ns.
        stat.split_whitespace().nth(1).and_then(|w| w.parse().ok()).map_or(Duration::ZERO, Duration::from_nanos)
    }

    /// Sends `signal` to the worker's thread.
    pub(crate) fn signal(&self, signal: libc::c_int) {
        if let Some(&t) = self.thread.get() {
            // SAFETY: the thread is a worker of this runtime; workers outlive the monitor's loop.
            unsafe { libc::pthread_kill(t, signal) };
        }
    }
}
