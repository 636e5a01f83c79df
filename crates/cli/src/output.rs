//! What processes on the nodes a run starts print (`run --nodes N`, and
//! `launch` over ssh): each node's standard output is a pipe to the run, which writes it to its own
//! standard output, whatever that is (terminal, pipe, file), a whole line
//! at a time through the same C stream the run's own processes print to,
//! so lines of different nodes never cut into each other and each
//! process's lines stay in order. Before the run exits it leaves the
//! cluster (its nodes then end, flushing what they hold) and waits, for a
//! bounded time, until every node's pipe has closed: nothing printed before
//! the run ended is lost (SPEC §8).

use std::io::{BufRead, BufReader};
use std::process::ChildStdout;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long the run waits for its nodes' last output.
const DRAIN_LIMIT: Duration = Duration::from_secs(5);

/// Pipes still open.
static OPEN: Mutex<usize> = Mutex::new(0);
static CLOSED: Condvar = Condvar::new();

extern "C" {
    static stdout: *mut libc::FILE;
}

/// Writes what `pipe` brings to this process's standard output until it closes.
pub fn forward(pipe: ChildStdout) {
    *OPEN.lock().unwrap_or_else(|e| e.into_inner()) += 1;
    let copied = std::thread::Builder::new().name("synodic-output".into()).spawn(move || {
        let mut reader = BufReader::with_capacity(64 << 10, pipe);
        let mut line = Vec::new();
        while matches!(reader.read_until(b'\n', &mut line), Ok(n) if n > 0) {
            // SAFETY: `stdout` is the C library's stream, valid for the
            // whole process; one fwrite keeps a line whole under its lock.
            unsafe { libc::fwrite(line.as_ptr().cast(), 1, line.len(), stdout) };
            line.clear();
        }
        closed();
    });
    if copied.is_err() {
        closed();
    }
}

fn closed() {
    *OPEN.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
    CLOSED.notify_all();
}

/// Waits until every forwarded pipe has closed, or [`DRAIN_LIMIT`].
pub fn drain() {
    let deadline = Instant::now() + DRAIN_LIMIT;
    let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
    while *open > 0 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        open = CLOSED.wait_timeout(open, left).unwrap_or_else(|e| e.into_inner()).0;
    }
}
