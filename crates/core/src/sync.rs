//! The atomics and the lock of the one lock-free protocol of this crate
//! that is model-checked: a process's run state (`Process::state`, with
//! its flags) and its mailbox's count and lock, which together guarantee
//! that a message is never left unseen by a process going idle, and that a
//! process is never queued twice (`process/loom_checks.rs`).
//!
//! In every build they are std's atomics and parking_lot's raw lock, as
//! before. Only in a `loom` test build (`scripts/loom`: `RUSTFLAGS="--cfg
//! loom" cargo test --lib loom`) are they loom's (and a lock made of a loom
//! atomic), so that loom explores every interleaving of their operations;
//! in that build only the loom checks can run (loom's atomics refuse to
//! work outside a model).

#[cfg(not(all(loom, test)))]
pub(crate) use std::sync::atomic::{AtomicU32, AtomicU8};
#[cfg(all(loom, test))]
pub(crate) use loom::sync::atomic::{AtomicU32, AtomicU8};

#[cfg(not(all(loom, test)))]
pub(crate) use parking_lot::RawMutex;

/// A new, unlocked raw lock.
#[cfg(not(all(loom, test)))]
pub(crate) const fn raw_mutex() -> RawMutex {
    <RawMutex as parking_lot::lock_api::RawMutex>::INIT
}

/// A lock loom sees: a flag taken by compare-and-swap, waited for by
/// yielding to loom's scheduler (parking_lot's would block loom's thread).
#[cfg(all(loom, test))]
pub(crate) struct RawMutex(loom::sync::atomic::AtomicBool);

#[cfg(all(loom, test))]
impl RawMutex {
    pub(crate) fn lock(&self) {
        use std::sync::atomic::Ordering::*;
        while self.0.compare_exchange(false, true, Acquire, Relaxed).is_err() {
            loom::thread::yield_now();
        }
    }

    /// # Safety
    /// The caller holds the lock (as for parking_lot's `unlock`).
    pub(crate) unsafe fn unlock(&self) {
        self.0.store(false, std::sync::atomic::Ordering::Release);
    }
}

#[cfg(all(loom, test))]
pub(crate) fn raw_mutex() -> RawMutex {
    RawMutex(loom::sync::atomic::AtomicBool::new(false))
}
