//! Work a worker may do while it spins for processes (scheduler step 1):
//! time the worker would otherwise burn waiting, on a core nobody else
//! wants. The layer above registers one function; a call does one short,
//! bounded piece of its work (a few microseconds: a process arriving
//! meanwhile waits at most that long) and says whether it did any. Today
//! that is making fresh memory ready for new process states (the Lua
//! layer's `prefault`). A worker that finds idle work keeps spinning (see
//! `scheduler`), so such work must run out once nothing makes more.

use std::sync::OnceLock;

static IDLE_WORK: OnceLock<fn() -> bool> = OnceLock::new();

/// Registers `piece` as the work spinning workers do; the first
/// registration stays, later ones are ignored.
pub fn set_idle_work(piece: fn() -> bool) {
    let _ = IDLE_WORK.set(piece);
}

/// One piece of idle work; false when there was none.
pub(crate) fn piece() -> bool {
    IDLE_WORK.get().is_some_and(|piece| piece())
}
