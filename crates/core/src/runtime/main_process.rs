//! The main process of a run, and the run's end: when the main process
//! ends, or when a process halts the run ([`Runtime::halt`]).
//!
//! Two ways to run it:
//!
//! - [`Runtime::run_main`] starts it and blocks the calling thread until the
//!   run ends, then returns how it ended;
//! - [`Runtime::run_main_here`] makes the calling thread the node's first
//!   worker, which runs the main process at once: no thread started for it,
//!   none woken (a thread takes ~250 µs here from its creation to its first
//!   instruction, where `lua -e ''` takes a millisecond in all). The run's
//!   end is then handed to a callback on whichever thread sees it first,
//!   and that callback ends the OS process. Where the first worker started
//!   already (the workers read a cluster's network, and a dashboard is a
//!   process), the calling thread waits for the end instead, as
//!   `run_main` does, and calls the callback itself.

use super::*;

impl Runtime {
    /// Runs `body` as the main process and blocks until the run ends: when
    /// that process ends, or when some process calls [`Runtime::halt`].
    pub fn run_main(&self, body: Box<dyn Body>) -> RunEnd {
        if let Err(end) = self.start_main(body) {
            return end;
        }
        self.wait_for_end()
    }

    /// Runs `body` as the main process on this thread, which becomes the
    /// node's first worker if no worker has started yet (see the module's
    /// notes), and never returns: `end` gets the run's end, once, on
    /// whichever thread sees it (what that thread queued for other nodes
    /// written first), and must end the OS process.
    pub fn run_main_here(&self, body: Box<dyn Body>, end: impl Fn(RunEnd) + Send + Sync + 'static) -> ! {
        // Claimed before the spawn, whose first process would start a
        // worker thread otherwise.
        let here = self.shared.first_worker.set(Ok(())).is_ok();
        if here {
            let _ = self.shared.on_end.set(Box::new(end));
            self.arm_lasting();
            if let Err(ended) = self.start_main(body) {
                self.end_run(ended);
            }
            match self.scheduler().claim_slot() {
                Some(index) => Scheduler::work(self, index),
                None => self.end_run(RunEnd::Exited(ExitReason::Error("no worker slot for the main thread".into()))),
            }
        } else {
            let ended = match self.start_main(body) {
                Ok(()) => self.wait_for_end(),
                Err(ended) => ended,
            };
            end(ended);
        }
        // Only a stopped runtime gets here (or an `end` that returned).
        loop {
            std::thread::park();
        }
    }

    /// Spawns the main process; the run's end if it could not start.
    fn start_main(&self, body: Box<dyn Body>) -> Result<(), RunEnd> {
        // Locked across the spawn: the pid is known before its end is.
        let mut main = self.shared.main.lock();
        match self.spawn(body) {
            Ok(pid) => {
                main.pid = Some(pid);
                Ok(())
            }
            Err(e) => Err(RunEnd::Exited(ExitReason::Error(e.to_string()))),
        }
    }

    fn wait_for_end(&self) -> RunEnd {
        let mut main = self.shared.main.lock();
        loop {
            if let Some(end) = &main.end {
                return end.clone();
            }
            self.shared.main_ended.wait(&mut main);
        }
    }

    /// The main process of the run, once `run_main` has started it.
    pub fn main_pid(&self) -> Option<Pid> {
        self.shared.main.lock().pid
    }

    /// Ends the run with `status`, whatever the main process is doing.
    pub fn halt(&self, status: i32) {
        self.end_run(RunEnd::Halted(status));
    }

    /// The run ends with `end`, unless it has ended already: the waiter is
    /// told, or the end callback runs here (`run_main_here`).
    pub(super) fn end_run(&self, end: RunEnd) {
        {
            let mut main = self.shared.main.lock();
            if main.end.is_some() {
                return;
            }
            main.end = Some(end.clone());
            self.shared.main_ended.notify_all();
        }
        if let Some(on_end) = self.shared.on_end.get() {
            // What this thread queued for other nodes goes out first (a
            // worker writes it after the run, which this call ends).
            self.scheduler().flush_queued();
            on_end(end);
        }
    }
}
