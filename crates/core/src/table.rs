//! The process table: slots for processes, found by index in two steps
//! (chunk, slot) without hashing or locking. Slots are allocated in chunks
//! that are never freed; a slot whose process ended goes on a free list and
//! is reused with its generation bumped, until its generations are used up
//! (then it is retired: see `Process::vacate`). Because slots live for the
//! whole run, run queues, timers and channels hold plain `&'static Process`.

use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering::*};

use parking_lot::Mutex;

use crate::process::Process;
use crate::Pid;

const CHUNK_BITS: u32 = 10;
const CHUNK: usize = 1 << CHUNK_BITS;
const MAX_CHUNKS: usize = (Pid::MAX_INDEX as usize + 1) / CHUNK;

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
        let chunk = self.chunks.get((index >> CHUNK_BITS) as usize)?.load(Acquire);
        if chunk.is_null() {
            return None;
        }
        // SAFETY: chunks are leaked arrays of CHUNK processes, never freed.
        Some(unsafe { &*chunk.add(index as usize & (CHUNK - 1)) })
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
                let c = (i >> CHUNK_BITS) as usize;
                if self.chunks[c].load(Acquire).is_null() {
                    let chunk: Box<[Process]> = (0..CHUNK as u32).map(|k| Process::vacant(self.node, (c as u32) << CHUNK_BITS | k)).collect();
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
}
