//! What processes on the nodes a run starts print (`run --nodes N`, and
//! `launch` over ssh): each node's standard output is a pipe to the run, which writes it to its own
//! standard output, whatever that is (terminal, pipe, file), a whole line
//! at a time through the same C stream the run's own processes print to,
//! so lines of different nodes never cut into each other and each
//! process's lines stay in order. Before the run exits it ends the nodes
//! it started on this machine (SIGTERM: they flush what they hold, leave
//! the cluster and exit; nodes over ssh end by themselves once this one has
//! left) and waits, for a bounded time, until every node's pipe has
//! closed: nothing printed before the run ended is lost (SPEC §8). The
//! local nodes are not told to follow this node in the cluster's sense: a
//! node cut off from it for a while (a partition that heals) must not end.

use std::io::{BufRead, BufReader};
use std::process::ChildStdout;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long the run waits for its nodes' last output.
const DRAIN_LIMIT: Duration = Duration::from_secs(5);

/// Pipes still open.
static OPEN: Mutex<usize> = Mutex::new(0);
static CLOSED: Condvar = Condvar::new();
/// The local nodes to end with the run (OS process ids).
static ENDED_WITH_RUN: Mutex<Vec<u32>> = Mutex::new(Vec::new());

extern "C" {
    static stdout: *mut libc::FILE;
}

/// Writes what `pipe` brings to this process's standard output until it
/// closes; `pid`: the process writing it, a local node to end with the run.
pub fn forward(pipe: ChildStdout, pid: Option<u32>) {
    ENDED_WITH_RUN.lock().unwrap_or_else(|e| e.into_inner()).extend(pid);
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

/// Ends the local nodes, then waits until every forwarded pipe has
/// closed, or [`DRAIN_LIMIT`].
pub fn drain() {
    for pid in std::mem::take(&mut *ENDED_WITH_RUN.lock().unwrap_or_else(|e| e.into_inner())) {
        // SAFETY: a plain signal to a child this process started and has not
        // waited for, so its pid is still its own.
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
    }
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
