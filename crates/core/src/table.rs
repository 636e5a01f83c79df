//! The process table: slots for processes, found by index in two steps
//! (chunk, slot) without hashing or locking. Slots are allocated in chunks
//! that are never freed: the first 1,024 slots in chunks that double (64,
//! 64, 128, 256, 512), so that a run of a few processes writes 12 KB of
//! slots and not 192 KB (a tenth of a short run's page faults), then in
//! chunks of 1,024; a slot whose process ended goes on a free list and
//! is reused with its generation bumped, until its generations are used up
//! (then it is retired: see `Process::vacate`). Because slots live for the
//! whole run, run queues, timers and channels hold plain `&'static Process`.

use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering::*};

use parking_lot::Mutex;

use crate::process::Process;
use crate::Pid;

const CHUNK_BITS: u32 = 10;
const CHUNK: usize = 1 << CHUNK_BITS;
/// The first chunk's size, in bits.
const FIRST_BITS: u32 = 6;
/// The small chunks, which together hold the first `CHUNK` slots.
const SMALL_CHUNKS: usize = (CHUNK_BITS - FIRST_BITS + 1) as usize;
const MAX_CHUNKS: usize = SMALL_CHUNKS + (Pid::MAX_INDEX as usize + 1) / CHUNK - 1;

/// Where slot `index` lives: its chunk, its place in that chunk, and that
/// chunk's length.
#[inline]
fn place(index: u32) -> (usize, usize, usize) {
    let index = index as usize;
    if index >= CHUNK {
        return (SMALL_CHUNKS - 1 + (index >> CHUNK_BITS), index & (CHUNK - 1), CHUNK);
    }
    let bits = usize::BITS - index.leading_zeros();
    if bits <= FIRST_BITS {
        return (0, index, 1 << FIRST_BITS);
    }
    let len = 1 << (bits - 1);
    ((bits - FIRST_BITS) as usize, index & (len - 1), len)
}

pub(crate) struct Table {
    node: u16,
    chunks: Box<[AtomicPtr<Process>]>,
    alloc: Mutex<Alloc>,
    /// Slots in use, for readers that want a rough count without the lock.
    occupied: AtomicUsize,
}

struct Alloc {
    free: Vec<u32>,
    next: u32,
}

impl Table {
    /// A table for the processes of this node (pids with node alias 0).
    pub(crate) fn new() -> Table {
        let node = 0;
        Table {
            node,
            // Zeroed by the allocator (null pointers are zeroes): pages the
            // table never reaches are never touched.
            chunks: zeroed_chunks(),
            // Index 0 is never handed out, so no pid is all zeroes but the tag.
            alloc: Mutex::new(Alloc { free: Vec::new(), next: 1 }),
            occupied: AtomicUsize::new(0),
        }
    }

    /// The slot a pid of this node points at (which may hold another generation).
    #[inline]
    pub(crate) fn lookup(&self, pid: Pid) -> Option<&'static Process> {
        if pid.node() != self.node {
            return None;
        }
        self.slot(pid.index())
    }

    /// The slot at `index`, if that chunk exists.
    #[inline]
    pub(crate) fn slot(&self, index: u32) -> Option<&'static Process> {
        let (c, offset, _) = place(index);
        let chunk = self.chunks.get(c)?.load(Acquire);
        if chunk.is_null() {
            return None;
        }
        // SAFETY: a chunk is a leaked array of the length `place` gives for
        // every index in it (offset < that length), never freed.
        Some(unsafe { &*chunk.add(offset) })
    }

    /// A free slot, or `None` when the table is full.
    pub(crate) fn acquire(&self) -> Option<&'static Process> {
        let mut alloc = self.alloc.lock();
        let index = match alloc.free.pop() {
            Some(i) => i,
            None => {
                let i = alloc.next;
                if i > Pid::MAX_INDEX {
                    return None;
                }
                let (c, offset, len) = place(i);
                if self.chunks[c].load(Acquire).is_null() {
                    let first = i - offset as u32;
                    let chunk: Box<[Process]> = (first..first + len as u32).map(|k| Process::vacant(self.node, k)).collect();
                    self.chunks[c].store(Box::leak(chunk).as_mut_ptr(), Release);
                }
                alloc.next += 1;
                i
            }
        };
        self.occupied.fetch_add(1, Relaxed);
        drop(alloc);
        self.slot(index)
    }

    /// Gives back the slot of an ended process; `reusable` is false for a
    /// retired slot, which no process will hold again.
    pub(crate) fn release(&self, proc: &'static Process, reusable: bool) {
        if reusable {
            self.alloc.lock().free.push(proc.index());
        }
        self.occupied.fetch_sub(1, Relaxed);
    }

    /// Every slot ever handed out (live or vacant), in index order.
    pub(crate) fn slots(&self) -> impl Iterator<Item = &'static Process> + '_ {
        let next = self.alloc.lock().next;
        (1..next).filter_map(|i| self.slot(i))
    }

    /// Slots in use right now (a snapshot).
    #[inline]
    pub(crate) fn occupied(&self) -> usize {
        self.occupied.load(Relaxed)
    }

}

/// `MAX_CHUNKS` null chunk pointers.
fn zeroed_chunks() -> Box<[AtomicPtr<Process>]> {
    let zeroed = Box::<[AtomicPtr<Process>]>::new_zeroed_slice(MAX_CHUNKS);
    // SAFETY: an AtomicPtr of all zero bits is a null pointer, a valid value.
    unsafe { zeroed.assume_init() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retired_slot_is_never_handed_out_again() {
        let table = Table::new();
        let a = table.acquire().unwrap();
        table.release(a, true);
        assert_eq!(table.acquire().unwrap().index(), a.index(), "a free slot is reused");
        table.release(a, false);
        let b = table.acquire().unwrap();
        assert_ne!(b.index(), a.index(), "a retired one is not");
        assert_eq!(table.occupied(), 1);
    }

    #[test]
    fn every_index_has_one_place_and_the_chunks_tile_the_indices() {
        let mut expected = (0, 0);
        for index in 0..=Pid::MAX_INDEX {
            let (c, offset, len) = place(index);
            if offset == 0 && index > 0 {
                expected = (expected.0 + 1, 0);
            }
            assert_eq!((c, offset), expected, "index {index}");
            assert!(offset < len, "index {index}");
            expected.1 += 1;
        }
        assert_eq!(expected.0, MAX_CHUNKS - 1, "the last chunk is the last one the table has room for");
        assert_eq!([place(0).2, place(64).2, place(128).2, place(512).2, place(1024).2], [64, 64, 128, 512, CHUNK]);
    }

    #[test]
    fn slots_across_the_small_chunks_keep_their_indices() {
        let table = Table::new();
        for want in 1..3000 {
            let slot = table.acquire().unwrap();
            assert_eq!(slot.index(), want);
            assert!(std::ptr::eq(table.slot(want).unwrap(), slot));
        }
        assert!(table.slot(3000).is_some(), "a chunk handed out whole");
        assert!(table.slot(4096).is_none());
    }
}
