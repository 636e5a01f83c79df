//! Fresh memory for new process states, made ready while workers have
//! nothing else to do. The kernel charges a thread's first touch of each
//! 4 KiB page (allocation, zeroing, accounting: ~1.3 µs a page on the
//! machines we measure, see bench/entities/fresh_memory.c); a new entity's
//! state spans about three, and they were 3 of the 9.5 µs its start cost
//! the spawner.
//!
//! The allocator hands out memory for new states mostly in address order,
//! so what the next states will take lies just past the chunk a new state
//! took. Each thread that makes states keeps windows of addresses, past
//! its latest chunks, that it has asked to be made ready:
//!
//! 1. a chunk that ends in a window's first half needs nothing;
//! 2. one that ends in its second half moves the window on: the part past
//!    the old window is asked for;
//! 3. one outside every window (the allocator moved elsewhere) starts a
//!    new window after itself, in place of the least recently used;
//! 4. workers spinning for processes (`synodic_core::idle`) make the asked
//!    range ready a few pages at a time with `MADV_POPULATE_WRITE`, which
//!    maps pages without touching their contents: safe on memory the
//!    allocator or a state already uses, and failing harmlessly where
//!    nothing is mapped. Only the latest range each thread asked for is
//!    kept: work left behind skips to where it makes states now.
//!
//! So the kernel's work moves off the spawning worker onto time a spinning
//! one would have wasted, and never competes with running processes (a
//! helper thread did: it slowed remote spawns, whose path crosses both
//! cores, by a third). At most a window per thread and class of chunk is
//! made resident and not used.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::{Mutex, Once};

/// Bytes made ready past the latest chunk: some hundred entity states.
/// (512 KB left a fork a page fault in about every other one: the
/// allocator's fresh pages of chunks often lay past the window.)
const WINDOW: usize = 1 << 20;
/// Pages made ready in one piece of idle work (~10 µs: a process arriving
/// meanwhile waits at most that; 4 pages kept up less with a burst of
/// entity forks, whose fork local was 6% slower in interleaved runs, the
/// remote lines unchanged).
const PIECE: usize = 8;
const PAGE: usize = 4096;

/// Addresses `[lo, hi)` a thread has asked to be made ready.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Window {
    lo: usize,
    hi: usize,
}

/// Steps 1 to 3: the window after a chunk `[start, end)` was taken from
/// `window`, and the range to ask for, if any.
fn moved(window: Window, start: usize, end: usize) -> (Window, Option<(usize, usize)>) {
    let inside = end >= window.lo && end <= window.hi;
    if inside && end + WINDOW / 2 <= window.hi {
        return (window, None);
    }
    let from = if inside { window.hi } else { end.next_multiple_of(PAGE) };
    let to = (end + WINDOW).next_multiple_of(PAGE);
    (Window { lo: start, hi: to }, Some((from, to)))
}

/// Step 4, in the calling thread: maps `[from, to)`'s pages; false when
/// some could not be (unmapped, read-only, or a kernel without it).
fn populate(from: usize, to: usize) -> bool {
    // SAFETY: populating neither reads nor changes memory; it only maps
    // pages, and fails on addresses without a writable mapping.
    unsafe { libc::madvise(from as *mut libc::c_void, to.saturating_sub(from), libc::MADV_POPULATE_WRITE) == 0 }
}

/// Windows a thread keeps: states' first chunks and their later, smaller
/// chunks come from different parts of the allocator, and each part gets
/// a window of its own.
const WINDOWS: usize = 4;

thread_local! {
    /// This thread's windows, the most recently used first.
    static WINDOWS_HERE: Cell<[Window; WINDOWS]> = const { Cell::new([Window { lo: 0, hi: 0 }; WINDOWS]) };
}

/// Steps 1 to 3 over a thread's windows: the one the chunk `[start, end)`
/// ends in moves, or the least recently used one starts anew.
fn moved_among(windows: &mut [Window; WINDOWS], start: usize, end: usize) -> Option<(usize, usize)> {
    let at = windows.iter().position(|w| end >= w.lo && end <= w.hi).unwrap_or(WINDOWS - 1);
    let (window, asked) = moved(windows[at], start, end);
    windows.copy_within(0..at, 1);
    windows[0] = window;
    asked
}

/// Threads whose requests are kept apart (more share slots).
const SLOTS: usize = 8;

/// The ranges asked for and not yet made ready, a slot per thread.
struct Asked {
    ranges: Mutex<[Option<(usize, usize)>; SLOTS]>,
    /// Whether some slot holds a range (written under the lock): spinning
    /// workers look at it first, so that with nothing asked they only read.
    pending: AtomicBool,
}

impl Asked {
    const fn new() -> Asked {
        Asked { ranges: Mutex::new([None; SLOTS]), pending: AtomicBool::new(false) }
    }

    fn ask(&self, slot: usize, range: (usize, usize)) {
        let mut ranges = self.ranges.lock().unwrap_or_else(|e| e.into_inner());
        ranges[slot % SLOTS] = Some(range);
        self.pending.store(true, Relaxed);
    }

    /// Step 4: makes the next [`PIECE`] pages asked for ready; false when
    /// none were asked for (or another worker holds the requests).
    fn piece(&self) -> bool {
        if !self.pending.load(Relaxed) {
            return false;
        }
        let Ok(mut ranges) = self.ranges.try_lock() else {
            return false;
        };
        let Some((slot, (from, to))) = ranges.iter_mut().find_map(|s| s.map(|range| (s, range))) else {
            self.pending.store(false, Relaxed);
            return false;
        };
        let upto = to.min(from + PIECE * PAGE);
        *slot = (upto < to).then_some((upto, to));
        drop(ranges);
        populate(from, upto);
        true
    }
}

static ASKED: Asked = Asked::new();

thread_local! {
    /// This thread's slot in [`ASKED`].
    static SLOT: usize = {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        NEXT.fetch_add(1, Relaxed)
    };
}

/// Notes that a state took a chunk, the `len` bytes at `p`, asking for the
/// memory after it to be made ready when it is not already.
pub(crate) fn taken(p: *const u8, len: usize) {
    let start = p as usize;
    let Ok(Some(range)) = WINDOWS_HERE.try_with(|cell| {
        let mut windows = cell.get();
        let asked = moved_among(&mut windows, start, start + len);
        cell.set(windows);
        asked
    }) else {
        return;
    };
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| synodic_core::idle::set_idle_work(|| ASKED.piece()));
    ASKED.ask(SLOT.try_with(|s| *s).unwrap_or(0), range);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_moves_on_only_past_its_middle() {
        let (w, asked) = moved(Window::default(), 0x10_0000, 0x10_2800);
        assert_eq!(asked, Some((0x10_3000, (0x10_2800 + WINDOW).next_multiple_of(PAGE))));
        // Well inside: nothing to ask.
        let (w2, asked) = moved(w, 0x10_2800, 0x10_5000);
        assert_eq!((w2, asked), (w, None));
        // Past the middle: only what lies beyond the old window is asked.
        let end = w.hi - WINDOW / 4;
        let (w3, asked) = moved(w, end - 0x2800, end);
        assert_eq!(asked, Some((w.hi, (end + WINDOW).next_multiple_of(PAGE))));
        assert_eq!(w3.hi, (end + WINDOW).next_multiple_of(PAGE));
        // Elsewhere (before it, or far after): a new window after the chunk.
        for start in [0x1000, w3.hi + 0x10_0000] {
            let (w4, asked) = moved(w3, start, start + 0x2800);
            assert_eq!(asked, Some(((start + 0x2800).next_multiple_of(PAGE), w4.hi)));
            assert_eq!(w4.lo, start);
        }
    }

    #[test]
    fn chunks_from_two_places_keep_a_window_each() {
        let mut windows = [Window::default(); WINDOWS];
        let (a, b) = (0x100_0000, 0x900_0000);
        assert!(moved_among(&mut windows, a, a + 0x2800).is_some());
        assert!(moved_among(&mut windows, b, b + 0x800).is_some());
        // Alternating between the two asks for nothing more.
        for i in 1..10 {
            assert_eq!(moved_among(&mut windows, a + i * 0x2800, a + (i + 1) * 0x2800), None);
            assert_eq!(moved_among(&mut windows, b + i * 0x800, b + (i + 1) * 0x800), None);
        }
        // A fifth place pushes out the least recently used.
        for (i, c) in [0x1000_0000, 0x2000_0000, 0x3000_0000].into_iter().enumerate() {
            assert!(moved_among(&mut windows, c, c + 0x800).is_some(), "place {i}");
        }
        assert!(moved_among(&mut windows, b + 0x1_0000, b + 0x1_0800).is_none(), "b was used last");
        assert!(moved_among(&mut windows, a + 0x2_0000, a + 0x2_2800).is_some(), "a was pushed out");
    }

    #[test]
    fn idle_pieces_make_an_asked_range_ready() {
        let len = 64 * PAGE;
        let p = mapping(len);
        if !populate(p as usize, p as usize + PAGE) {
            eprintln!("this kernel cannot populate (before 5.14): nothing to check");
            return;
        }
        // A chunk of 2 pages at the start: the window after it is asked for.
        let mut windows = [Window::default(); WINDOWS];
        let asked = Asked::new();
        asked.ask(3, moved_among(&mut windows, p as usize, p as usize + 2 * PAGE).expect("a first chunk asks"));
        let mut pieces = 0;
        while asked.piece() {
            pieces += 1;
        }
        assert_eq!(pieces, (WINDOW / PAGE).div_ceil(PIECE));
        // SAFETY: `p` is a mapping of `len = 64` pages: 2 pages in is inside it.
        let past = unsafe { p.cast::<u8>().add(2 * PAGE) };
        assert_eq!(resident(past.cast(), len - 2 * PAGE), 62, "the mapping's pages past the chunk are ready");
        // SAFETY: the test's own mapping, not used after.
        unsafe { libc::munmap(p, len) };
    }

    #[test]
    fn each_thread_keeps_its_own_request() {
        let len = 64 * PAGE;
        let p = mapping(len);
        let at = |page: usize| p as usize + page * PAGE;
        if !populate(at(0), at(1)) {
            return;
        }
        let asked = Asked::new();
        asked.ask(1, (at(2), at(10)));
        asked.ask(2, (at(20), at(30)));
        asked.ask(2, (at(40), at(44))); // the same thread asks again: its first range is dropped
        while asked.piece() {}
        let resident_in = |from: usize, to: usize| resident(at(from) as *mut libc::c_void, (to - from) * PAGE);
        assert_eq!((resident_in(2, 10), resident_in(20, 30), resident_in(40, 44)), (8, 0, 4));
        assert!(!asked.pending.load(Relaxed), "nothing is left pending");
        // SAFETY: the test's own mapping, not used after.
        unsafe { libc::munmap(p, len) };
    }

    /// A fresh private mapping of `len` bytes, none of them resident.
    fn mapping(len: usize) -> *mut libc::c_void {
        // SAFETY: a new anonymous mapping (no address asked, no file);
        // failure is checked below.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0) };
        assert_ne!(p, libc::MAP_FAILED);
        p
    }

    /// Pages of `len` bytes at `p` that are resident.
    fn resident(p: *mut libc::c_void, len: usize) -> usize {
        let mut pages = vec![0u8; len / PAGE];
        // SAFETY: `pages` has one byte per page of the `len` bytes at `p`
        // (a page-aligned mapping of the caller's).
        assert_eq!(unsafe { libc::mincore(p, len, pages.as_mut_ptr()) }, 0);
        pages.iter().filter(|&&b| b & 1 == 1).count()
    }

    #[test]
    fn populating_maps_pages_and_keeps_what_they_hold() {
        let len = 64 * PAGE;
        let p = mapping(len);
        let bytes = p as *mut u8;
        // SAFETY: byte 5 of the test's 64-page read-write mapping.
        unsafe { *bytes.add(5) = 42 };
        assert_eq!(resident(p, len), 1);
        if !populate(p as usize, p as usize + len) {
            eprintln!("this kernel cannot populate (before 5.14): nothing to check");
            return;
        }
        assert_eq!(resident(p, len), 64);
        // SAFETY: bytes inside the test's 64-page mapping (pages 0 and 10).
        assert_eq!(unsafe { *bytes.add(5) }, 42, "a page in use keeps its contents");
        // SAFETY: as above.
        assert_eq!(unsafe { *bytes.add(10 * PAGE) }, 0);
        // Past the mapping it fails, and harms nothing.
        // SAFETY: the mapping's second half (pages 32 to 63), not used after.
        unsafe { libc::munmap(bytes.add(32 * PAGE).cast(), 32 * PAGE) };
        assert!(!populate(p as usize + 30 * PAGE, p as usize + 40 * PAGE));
        // SAFETY: page 0 is still mapped (only the second half was unmapped).
        assert_eq!(unsafe { *bytes.add(5) }, 42);
        // SAFETY: the first half, the rest of the test's mapping, not used after.
        unsafe { libc::munmap(p, 32 * PAGE) };
    }
}
