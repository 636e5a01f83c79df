//! The memory of the node's shared code (`vm::shared`): one region, handed
//! out from its start, never given back. The shared state is built once per
//! OS process, on the path of every run's start (`synodic -e ''` included),
//! frozen, and never freed; its ~90 KB are thousands of small blocks
//! (prototypes, their code and constants, strings) that a general
//! allocator served from fresh pages one by one, through its slow path.
//!
//! Here the region is mapped at once, its first part made resident in one
//! system call (`MADV_POPULATE_WRITE`, no fault per page), and a block is
//! the next bytes of it. Blocks the state frees or grows are left where
//! they are (the build frees little: a string table's old array, a few
//! buffers), except the latest block, which grows or shrinks in place. Past
//! the region, blocks come from mimalloc, and go back to it when freed.

use std::cell::Cell;
use std::ffi::c_void;

/// The region's size: room to grow for the bundled modules (the node's
/// shared state takes ~90 KB today: the standard libraries and every
/// bundled string); what is never touched costs nothing.
const SIZE: usize = 2 << 20;
/// The part made resident up front, a little more than the node's state
/// takes (89.5 KB: a page made resident and not used costs as much as a
/// fault). A loader state (`vm::loader`) takes its pages as it goes.
const POPULATE: usize = 96 << 10;
/// Lua's blocks need this alignment (`LUAI_MAXALIGN`: a double, a pointer,
/// a 64-bit integer).
const ALIGN: usize = 16;

/// A region and how far it is used. One state allocates from it, on one
/// thread at a time (Lua's allocator is called only by the state's thread).
pub(crate) struct Arena {
    /// The region's start, or 0 if it could not be mapped (then every
    /// block comes from mimalloc).
    base: usize,
    size: usize,
    next: Cell<usize>,
    /// The latest block's start (0: none to grow in place).
    latest: Cell<usize>,
}

impl Arena {
    /// An arena of [`SIZE`] bytes, its first [`POPULATE`] made resident
    /// if `populate`, for a state that lives as long as the OS process.
    pub(crate) fn for_good(populate: bool) -> &'static Arena {
        Box::leak(Box::new(Arena::new(SIZE, if populate { POPULATE } else { 0 })))
    }

    fn new(size: usize, populate: usize) -> Arena {
        // SAFETY: a fresh private anonymous mapping, owned by the arena and
        // never unmapped (its blocks may live as long as the OS process);
        // the advice only makes its first pages resident (a kernel without
        // it refuses harmlessly).
        let base = unsafe {
            let p = libc::mmap(std::ptr::null_mut(), size, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE, -1, 0);
            if p == libc::MAP_FAILED {
                0
            } else {
                if populate > 0 {
                    libc::madvise(p, populate.min(size), libc::MADV_POPULATE_WRITE);
                }
                p as usize
            }
        };
        Arena { base, size, next: Cell::new(base), latest: Cell::new(0) }
    }

    fn holds(&self, p: *mut c_void) -> bool {
        self.base != 0 && (self.base..self.base + self.size).contains(&(p as usize))
    }

    /// A block of `size` bytes from the region, or null when it is full.
    fn take(&self, size: usize) -> *mut c_void {
        let at = self.next.get();
        if self.base == 0 || at + size > self.base + self.size {
            return std::ptr::null_mut();
        }
        self.next.set((at + size).next_multiple_of(ALIGN));
        self.latest.set(at);
        at as *mut c_void
    }

    /// Lua's allocator contract (see `lua_Alloc`), over this arena.
    fn realloc(&self, ptr: *mut c_void, osize: usize, nsize: usize) -> *mut c_void {
        if !ptr.is_null() && !self.holds(ptr) {
            // SAFETY: a block not in the region came from mimalloc below, and
            // Lua uses it no more once it moves or is freed.
            return unsafe {
                match nsize {
                    0 => {
                        libmimalloc_sys::mi_free(ptr);
                        std::ptr::null_mut()
                    }
                    _ => libmimalloc_sys::mi_realloc(ptr, nsize),
                }
            };
        }
        let latest = !ptr.is_null() && ptr as usize == self.latest.get();
        if nsize == 0 {
            if latest {
                self.next.set(ptr as usize);
                self.latest.set(0);
            }
            return std::ptr::null_mut();
        }
        if latest && ptr as usize + nsize <= self.base + self.size {
            self.next.set((ptr as usize + nsize).next_multiple_of(ALIGN));
            return ptr;
        }
        let mut block = self.take(nsize);
        if block.is_null() {
            // SAFETY: a new block from mimalloc, of a nonzero size.
            block = unsafe { libmimalloc_sys::mi_malloc(nsize) };
        }
        if !ptr.is_null() && !block.is_null() {
            // SAFETY: `ptr` holds `osize` bytes (Lua's contract) and `block`
            // at least `nsize`; they are distinct blocks, so the ranges do
            // not overlap.
            unsafe { std::ptr::copy_nonoverlapping(ptr.cast::<u8>(), block.cast::<u8>(), osize.min(nsize)) };
        }
        block
    }
}

/// `lua_Alloc` over the [`Arena`] given as the state's user data.
pub(crate) unsafe extern "C" fn alloc(ud: *mut c_void, ptr: *mut c_void, osize: usize, nsize: usize) -> *mut c_void {
    // SAFETY: the state was made with a `&'static Arena` as its user data
    // (`state::arena_state`), and one thread at a time uses the state (the
    // node's while it is built, the loader's under its lock).
    let arena = unsafe { &*(ud as *const Arena) };
    arena.realloc(ptr, osize, nsize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_come_in_order_and_the_latest_grows_or_goes_in_place() {
        let arena = Arena::new(64 << 10, 4096);
        let a = arena.realloc(std::ptr::null_mut(), 0, 24);
        let b = arena.realloc(std::ptr::null_mut(), 0, 8);
        assert!(arena.holds(a) && arena.holds(b));
        assert_eq!(b as usize, a as usize + 32, "aligned to 16, one after the other");
        assert_eq!(arena.realloc(b, 8, 100), b, "the latest block grows in place");
        // SAFETY: `a` holds 24 bytes of the arena.
        unsafe { std::ptr::write_bytes(a.cast::<u8>(), 7, 24) };
        let moved = arena.realloc(a, 24, 40);
        assert!(moved as usize > b as usize, "an earlier block moves past the latest");
        // SAFETY: `moved` holds at least 40 bytes, the first 24 copied.
        assert!(unsafe { std::slice::from_raw_parts(moved.cast::<u8>(), 24) }.iter().all(|&x| x == 7));
        let top = arena.next.get();
        assert!(arena.realloc(moved, 40, 0).is_null());
        assert!(arena.next.get() < top, "freeing the latest block gives its room back");
    }

    #[test]
    fn past_the_region_blocks_come_from_the_heap_and_go_back_to_it() {
        let arena = Arena::new(4096, 4096);
        let big = arena.realloc(std::ptr::null_mut(), 0, 8192);
        assert!(!big.is_null() && !arena.holds(big));
        let bigger = arena.realloc(big, 8192, 16384);
        assert!(!bigger.is_null() && !arena.holds(bigger));
        assert!(arena.realloc(bigger, 16384, 0).is_null());
    }
}
