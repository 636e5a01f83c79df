//! The command's memory: mimalloc, tuned for a node, with transparent huge
//! pages only where they pay. A process's heap is small and scattered, and
//! where the kernel compacts memory to find huge pages on demand (its
//! `defrag` setting `madvise`, Debian's default) a node that allocates
//! while memory is fragmented stalls in the kernel: with mimalloc asking
//! for huge pages everywhere, a burst of entity forks took 40 µs each
//! instead of 15, and a million-process ring took 7.7 s to build instead of
//! 3.3 (bench/entities, bench/ring). A large block is the other way round:
//! a 64 MB buffer received from another node is written once, into fresh
//! memory, and 16,384 faults of 4 KiB pages made it arrive at 1 GB/s where
//! 32 faults of 2 MiB pages keep up with the link (first touch measured at
//! 1.6–2 GB/s in small pages, 6–10 GB/s in huge pages on this project's VMs).
//!
//! So mimalloc asks for none (built with its `no_thp` feature), the process turns them off except where asked
//! for (`PR_THP_DISABLE_EXCEPT_ADVISED`, Linux 6.18; older kernels turn them
//! off everywhere, as before), and the allocator asks for them on blocks of
//! [`HUGE_FROM`] bytes or more while they are allocated. `MIMALLOC_ALLOW_THP`
//! set to anything but `0` leaves the system's setting alone.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use mimalloc::MiMalloc;

/// Blocks at least this large are backed by huge pages where the kernel
/// allows it.
const HUGE_FROM: usize = 4 << 20;
const HUGE_PAGE: usize = 2 << 20;

/// mimalloc's `mi_option_purge_delay` and `mi_option_arena_reserve`
/// (`mimalloc.h`; the bindings do not name them).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
const MI_OPTION_ARENA_RESERVE: libmimalloc_sys::mi_option_t = 23;
/// The address space mimalloc reserves at a time, in KiB. Its default,
/// 1 GiB, has it write ~170 KB of bookkeeping as the first block is
/// allocated (38 of `synodic -e ''`'s ~330 page faults). The reservations
/// after the eighth double every eight, so a node that grows to gigabytes
/// still takes few (16 GB: about forty of mimalloc's 160).
const ARENA_RESERVE_KIB: libc::c_long = 128 << 10;
/// `prctl`'s flag for huge pages only where `MADV_HUGEPAGE` asked for them
/// (`linux/prctl.h` from 6.18; the libc crate does not name it yet).
const PR_THP_DISABLE_EXCEPT_ADVISED: libc::c_ulong = 1 << 1;

/// The huge pages the allocator asks for are granted (the process's
/// setting lets advised memory have them).
static ADVISED_HUGE: AtomicBool = AtomicBool::new(false);

/// mimalloc, and huge pages for large blocks.
pub struct Allocator;

// SAFETY: every block comes from and goes back to mimalloc with the layout
// it was asked with; the advice given on the way changes how the block's
// pages fault in, never what they hold.
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let block = unsafe { MiMalloc.alloc(layout) };
        advise(block, layout.size(), libc::MADV_HUGEPAGE);
        block
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let block = unsafe { MiMalloc.alloc_zeroed(layout) };
        advise(block, layout.size(), libc::MADV_HUGEPAGE);
        block
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        // Memory mimalloc reuses for small blocks must not keep the advice.
        advise(block, layout.size(), libc::MADV_NOHUGEPAGE);
        // SAFETY: the caller's contract, passed on.
        unsafe { MiMalloc.dealloc(block, layout) }
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        advise(block, layout.size(), libc::MADV_NOHUGEPAGE);
        // SAFETY: the caller's contract, passed on.
        let moved = unsafe { MiMalloc.realloc(block, layout, new_size) };
        match moved.is_null() {
            // The old block is still the caller's.
            true => advise(block, layout.size(), libc::MADV_HUGEPAGE),
            false => advise(moved, new_size, libc::MADV_HUGEPAGE),
        }
        moved
    }
}

/// Gives `advice` for the whole huge pages inside a block of `size` bytes at
/// `block`, when the block is large and the advice can matter.
fn advise(block: *mut u8, size: usize, advice: libc::c_int) {
    if size < HUGE_FROM || block.is_null() || !ADVISED_HUGE.load(Relaxed) {
        return;
    }
    let start = block as usize;
    let (from, to) = (start.next_multiple_of(HUGE_PAGE), (start + size) / HUGE_PAGE * HUGE_PAGE);
    if from < to {
        // SAFETY: the range lies inside one live block of this process, whose
        // owner is the caller; the advice never changes the memory's contents.
        unsafe { libc::madvise(from as *mut libc::c_void, to - from, advice) };
    }
}

/// Before Rust's runtime starts, which allocates: huge pages off (where the
/// system gives them to any memory, the kernel would clear a whole one for
/// its first allocation: a sixth of the time `synodic -e ''` took), and the
/// arena reservation set, unless `MIMALLOC_ARENA_RESERVE` is. Nothing here
/// allocates; `MIMALLOC_ALLOW_THP` is looked at in [`configure`].
#[used]
#[link_section = ".init_array"]
static EARLY: extern "C" fn() = {
    extern "C" fn early() {
        // SAFETY: a process-wide flag of the kernel; no memory is touched.
        unsafe {
            let except_advised = libc::prctl(libc::PR_SET_THP_DISABLE, 1, PR_THP_DISABLE_EXCEPT_ADVISED, 0, 0) == 0;
            if !except_advised {
                libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
            }
            ADVISED_HUGE.store(except_advised, Relaxed);
        }
        // SAFETY: getenv reads the environment, which nothing changes
        // before `main`; the names are NUL-terminated literals.
        let set_by_user = [c"MIMALLOC_ARENA_RESERVE", c"mimalloc_arena_reserve"].iter().any(|name| unsafe { !libc::getenv(name.as_ptr()).is_null() });
        if !set_by_user {
            // SAFETY: sets an option of the allocator, before any thread
            // starts and before its first block.
            unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_ARENA_RESERVE, ARENA_RESERVE_KIB) };
        }
    }
    early
};

/// The rest, in `main` before any thread starts: memory a node frees is kept
/// a second before it goes back to the kernel (mimalloc's default is 10 ms),
/// so the next message of the same size reuses it warm (on this kind of VM a
/// 250 KB message between nodes took 1.2 ms in fresh memory, 0.1 ms warm);
/// and `MIMALLOC_ALLOW_THP` set puts huge pages back as the system has them.
pub fn configure() {
    // SAFETY: sets an option of the allocator, before any thread starts.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 1000) };
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_some_and(|v| v != "0") {
        // SAFETY: a process-wide flag of the kernel; no memory is touched.
        unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 0, 0, 0, 0) };
        ADVISED_HUGE.store(false, Relaxed);
    }
}
