//! The per-process heap behind every Lua state. A state is hundreds of small
//! objects touched on every resume; keeping them together in a few chunks
//! owned by the process makes a cold process cheap to wake (fewer cache and
//! TLB misses) and small (no per-object header: Lua passes the old size on
//! every free and realloc, so the size class is always known).
//!
//! Small blocks (up to [`SMALL_MAX`] bytes) come from size-class free lists,
//! refilled by bumping through [`CHUNK`]-byte chunks; larger blocks go to
//! the global allocator. Only one thread touches a state at a time, so the
//! heap needs no locking. All chunks are returned when the process ends,
//! and after a full collection those it left empty ([`Heap::trim`]).

use std::ffi::c_void;
use std::ptr::null_mut;

use libmimalloc_sys::{mi_free, mi_malloc, mi_realloc};
use synodic_core::Process;

const SMALL_MAX: usize = 2048;
/// The first chunk holds an idle process whole (about 3.5 KB, its strings
/// and library code being the node's: see `shared`); later chunks are smaller.
pub(crate) const FIRST_CHUNK: usize = 4096;
const _: () = assert!(SMALL_MAX <= FIRST_CHUNK, "any small block fits the first chunk");
const CHUNK: usize = 2048;
/// Bytes at the start of a later chunk: the link to the next one, then
/// the chunk's length.
const LINK: usize = 16;
/// Size classes: (upper bound of the band, step within it).
const BANDS: [(usize, usize); 4] = [(128, 8), (256, 16), (1024, 64), (SMALL_MAX, 256)];
const CLASSES: usize = 128 / 8 + (256 - 128) / 16 + (1024 - 256) / 64 + (SMALL_MAX - 1024) / 256;

/// The size class of a small block (computed once, into [`CLASS_OF`]).
const fn compute_class_of(size: usize) -> usize {
    let (mut first, mut low, mut band) = (0, 0, 0);
    while band < BANDS.len() {
        let (high, step) = BANDS[band];
        if size <= high {
            let size = if size == 0 { 1 } else { size };
            return first + (size - low).div_ceil(step) - 1;
        }
        first += (high - low) / step;
        low = high;
        band += 1;
    }
    panic!("only small sizes have a class")
}

/// Class bounds are multiples of 8, so a size's class is its 8-byte group's.
const CLASS_OF: [u8; SMALL_MAX / 8 + 1] = {
    let mut table = [0u8; SMALL_MAX / 8 + 1];
    let mut group = 0;
    while group < table.len() {
        table[group] = compute_class_of(group * 8) as u8;
        group += 1;
    }
    table
};

const CLASS_SIZE: [u16; CLASSES] = {
    let mut table = [0u16; CLASSES];
    let mut size = 1;
    while size <= SMALL_MAX {
        table[compute_class_of(size)] = size as u16;  // the last, largest, stays
        size += 1;
    }
    table
};

#[inline]
fn class_of(size: usize) -> usize {
    CLASS_OF[size.div_ceil(8)] as usize
}

#[inline]
fn class_size(class: usize) -> usize {
    CLASS_SIZE[class] as usize
}

/// A memory limit on a heap (boxed: few processes have one).
pub(crate) struct Limit {
    max: u64,
    /// Bytes of large blocks (from the global allocator) in use.
    large_bytes: u64,
    /// The process: its queued messages count against the limit, and it
    /// learns how many bytes its mailbox may hold (set on its first resume).
    proc: Option<&'static Process>,
}

/// How the blocks of a heap lie in its first chunk, by offset, for a copy
/// of the chunk: the bytes in use, and each size class's first free block
/// (offset + 1; 0: none).
#[derive(PartialEq, Eq)]
pub(crate) struct Layout {
    pub used: usize,
    free: [u32; CLASSES],
}

pub(crate) struct Heap {
    /// When non-zero, growing any block beyond this many bytes fails (see `limit_blocks`).
    /// (u32 with `chunk_bytes`: two words less in every process record.)
    block_cap: u32,
    /// Blocks from the global allocator not yet freed (in the padding
    /// after `block_cap`): only a heap with none can be dropped whole.
    large: u32,
    free: [*mut u8; CLASSES],
    bump: *mut u8,
    end: *mut u8,
    /// Chunks after the first, linked through their first word.
    chunks: *mut u8,
    chunk_bytes: u32,
    /// The first chunk: where the state itself and the objects an idle
    /// process touches live. It has no link word (it is freed on its own),
    /// so the state's first block starts the chunk, and the fields of
    /// `lua_State` that every resume touches share its first cache line.
    first: *mut u8,
    limit: Option<Box<Limit>>,
}

impl Heap {
    pub(crate) const fn new() -> Heap {
        Heap { block_cap: 0, large: 0, free: [null_mut(); CLASSES], bump: null_mut(), end: null_mut(), chunks: null_mut(), chunk_bytes: 0, first: null_mut(), limit: None }
    }

    /// A heap limited to `max` bytes (see `attach`).
    pub(crate) fn limited(max: u64) -> Heap {
        Heap { limit: Some(Box::new(Limit { max, large_bytes: 0, proc: None })), ..Heap::new() }
    }

    /// The limit's process, known on its first resume: its queued messages
    /// count against the limit (an allocation over it fails as a memory
    /// error), and it learns how many bytes its mailbox may hold. A heap
    /// made without a limit takes `default`, if there is one.
    pub(crate) fn attach(&mut self, proc: &'static Process, default: Option<u64>) {
        if self.limit.is_none() {
            let Some(max) = default else { return };
            *self = Heap::limited(max);
        }
        if let Some(l) = &mut self.limit {
            l.proc = Some(proc);
        }
        self.publish();
    }

    /// Whether the heap has a memory limit.
    pub(crate) fn is_limited(&self) -> bool {
        self.limit.is_some()
    }

    /// Whether `more` bytes fit under the limit.
    #[inline]
    fn fits(&self, more: usize) -> bool {
        let Some(l) = &self.limit else { return true };
        let queued = l.proc.map_or(0, Process::queued_bytes);
        self.chunk_bytes as u64 + l.large_bytes + more as u64 + queued <= l.max
    }

    /// Tells the process how many bytes its mailbox may hold now.
    fn publish(&self) {
        if let Some(Limit { max, large_bytes, proc: Some(proc) }) = self.limit.as_deref() {
            proc.set_mailbox_allowance(*max, self.chunk_bytes as u64 + large_bytes);
        }
    }

    /// Counts a change of `delta` bytes in large blocks.
    fn large_changed(&mut self, delta: i64) {
        if let Some(l) = &mut self.limit {
            l.large_bytes = l.large_bytes.saturating_add_signed(delta);
            self.publish();
        }
    }

    /// Caps the size of any one block (0: no cap) and returns the previous cap.
    /// Loading untrusted function code runs under a cap derived from its
    /// length, so sizes forged in the code fail as a memory error instead of
    /// allocating gigabytes.
    pub(crate) fn limit_blocks(&mut self, cap: usize) -> usize {
        std::mem::replace(&mut self.block_cap, cap.min(u32::MAX as usize) as u32) as usize
    }

    /// The start of the cache line where the first chunk begins (null
    /// before the first allocation). Not an aligned allocation: asking
    /// mimalloc for one would move the chunk to the next size class, 1 KB
    /// more per process.
    pub(crate) fn first_chunk_line(&self) -> *const u8 {
        (self.first as usize & !63) as *const u8
    }

    /// A heap whose first chunk, `bytes` long and zeroed, is taken now: a
    /// state built in it twice, at two addresses, differs only where it
    /// holds addresses (see `template`).
    pub(crate) fn zeroed(bytes: usize) -> Option<Heap> {
        // SAFETY: `mi_zalloc` takes any size and returns null (checked below) or a block of `bytes` bytes.
        let chunk = unsafe { libmimalloc_sys::mi_zalloc(bytes) } as *mut u8;
        if chunk.is_null() {
            return None;
        }
        let mut heap = Heap::new();
        // SAFETY: `chunk` is a live block of `bytes` bytes, so `chunk + bytes` is one past its end.
        (heap.first, heap.bump, heap.end, heap.chunk_bytes) = (chunk, chunk, unsafe { chunk.add(bytes) }, bytes as u32);
        Some(heap)
    }

    /// Where the heap's blocks are, when they all lie in its first chunk:
    /// that chunk and what of it is in use (see [`Layout`]).
    pub(crate) fn layout(&self) -> Option<(*const u8, Layout)> {
        // (With no later chunk, `chunk_bytes` is the first one's length; a
        // trim may have left the bump range in none, null.)
        let in_first = (self.first as usize..=self.first as usize + self.chunk_bytes as usize).contains(&(self.bump as usize));
        if self.first.is_null() || !self.chunks.is_null() || self.large != 0 || !in_first {
            return None;
        }
        let offset = |p: *mut u8| if p.is_null() { 0 } else { (p as usize - self.first as usize) as u32 + 1 };
        Some((self.first, Layout { used: self.bump as usize - self.first as usize, free: self.free.map(offset) }))
    }

    /// Takes `chunk`, `bytes` long, as the first chunk of this empty heap:
    /// it holds a copy of another heap's blocks, laid out as `layout` says.
    /// False (nothing taken) when it does not fit under the limit.
    ///
    /// # Safety
    /// `chunk` is a block of at least `bytes` bytes from mimalloc (the heap
    /// frees it with `mi_free`), 8-aligned, `bytes >= layout.used`, and its
    /// first `layout.used` bytes hold, before the heap next allocates, the
    /// blocks of the heap `layout` was taken from, free-list links included,
    /// moved to this address.
    pub(crate) unsafe fn adopt(&mut self, chunk: *mut u8, bytes: usize, layout: &Layout) -> bool {
        debug_assert!(self.first.is_null() && bytes >= layout.used);
        if !self.fits(bytes) {
            return false;
        }
        self.first = chunk;
        // SAFETY: `layout.used <= bytes` (the caller's contract), so both ends
        // are inside `chunk` or one past it; a free block's offset (`o - 1`)
        // is below `layout.used`, since `layout` (made only by
        // [`Heap::layout`]) lists blocks carved below its heap's bump.
        unsafe {
            self.bump = chunk.add(layout.used);
            self.end = chunk.add(bytes);
            self.chunk_bytes = bytes as u32;
            self.free = layout.free.map(|o| if o == 0 { null_mut() } else { chunk.add(o as usize - 1) });
        }
        self.publish();
        true
    }

    /// Bytes taken from chunks so far (including blocks now on free lists).
    #[cfg(test)]
    pub(crate) fn used(&self) -> usize {
        self.chunk_bytes as usize - ((self.end as usize) - (self.bump as usize))
    }

    /// A block of class `class`, from its free list or the current chunk.
    /// (Sound for any `class < CLASSES` given the heap's own invariants:
    /// free lists hold only free blocks of their class, and `bump..end`
    /// lies in one chunk.)
    #[inline]
    unsafe fn alloc_small(&mut self, class: usize) -> *mut u8 {
        let head = self.free[class];
        if !head.is_null() {
            // SAFETY: `head` is a free block of this class (at least 8 bytes,
            // 8-aligned: class sizes and chunk starts are multiples of 8) whose
            // first word `free_small` set to the next free block; in an adopted
            // chunk that word was copied from the template and moved with it.
            self.free[class] = unsafe { *(head as *mut *mut u8) };
            return head;
        }
        let size = class_size(class);
        // SAFETY: `add_chunk` has no precondition: it only writes the chunk it allocates.
        if (self.end as usize) - (self.bump as usize) < size && !unsafe { self.add_chunk(size) } {
            return null_mut();
        }
        let p = self.bump;
        // SAFETY: `end - bump >= size` here (checked above, or `add_chunk`
        // just made a chunk with room for `size` past `bump`), and both lie in
        // one chunk, so `p + size` is inside it or one past its end.
        self.bump = unsafe { p.add(size) };
        p
    }

    /// Puts what is left of the current chunk on the free lists, as blocks
    /// of the largest classes that fit, when bumping moves to a new chunk:
    /// that space is used, and a chunk whose blocks are all freed is seen
    /// to be empty ([`Heap::trim`]).
    fn keep_rest(&mut self) {
        loop {
            let rest = ((self.end as usize) - (self.bump as usize)).min(SMALL_MAX);
            if rest < 8 {
                return;
            }
            // The largest class no larger than `rest`: the smallest that
            // holds it, or the one before (class sizes grow with the class;
            // the first is 8 bytes).
            let class = class_of(rest);
            let class = if class_size(class) <= rest { class } else { class - 1 };
            let p = self.bump;
            // SAFETY: `class_size(class) <= rest`, so the block lies in the
            // current chunk, 8-aligned (class sizes and chunk starts are
            // multiples of 8), carved once and never used: a free block of
            // its class.
            unsafe {
                self.bump = p.add(class_size(class));
                self.free_small(p, class);
            }
        }
    }

    /// Starts bumping through a new chunk with room for `size`; false when out of memory.
    #[inline(never)]
    unsafe fn add_chunk(&mut self, size: usize) -> bool {
        let first = self.first.is_null();
        let bytes = if first { FIRST_CHUNK } else { CHUNK.max(size + LINK) };
        if !self.fits(bytes) {
            return false;
        }
        // SAFETY: `mi_malloc` takes any size and returns null (checked below)
        // or a block of `bytes` bytes aligned for a pointer.
        let chunk = unsafe { mi_malloc(bytes) } as *mut u8;
        if chunk.is_null() {
            return false;
        }
        self.keep_rest();
        crate::vm::prefault::taken(chunk, bytes);
        if first {
            self.first = chunk;
            self.bump = chunk;
        } else {
            // SAFETY: a later chunk is `CHUNK.max(size + LINK)` bytes, so its
            // first `LINK` (16) bytes hold the link word and the length,
            // aligned, and `chunk + LINK` is inside it.
            unsafe {
                *(chunk as *mut *mut u8) = self.chunks;
                *(chunk as *mut usize).add(1) = bytes;
                self.chunks = chunk;
                self.bump = chunk.add(LINK);
            }
        }
        self.chunk_bytes = self.chunk_bytes.saturating_add(bytes as u32);
        // SAFETY: `chunk` is a live block of `bytes` bytes: its end is one past it.
        self.end = unsafe { chunk.add(bytes) };
        self.publish();
        true
    }

    /// Gives back the later chunks that hold no block in use (all of
    /// theirs are on free lists): after a full collection, what a peak
    /// left. Returns how many bytes were given back. Costs a walk of the
    /// free lists, so it is for idle moments, not every collection.
    pub(crate) fn trim(&mut self) -> usize {
        // Each later chunk: (start, length, free bytes in it).
        let mut chunks = Vec::new();
        let mut c = self.chunks;
        while !c.is_null() {
            // SAFETY: `chunks` links the later chunks through their first
            // word, their length in the second (`add_chunk`).
            unsafe {
                chunks.push((c as usize, *(c as *const usize).add(1), 0usize));
                c = *(c as *mut *mut u8);
            }
        }
        if chunks.is_empty() {
            return 0;
        }
        chunks.sort_unstable();
        let chunk_of = |chunks: &[(usize, usize, usize)], p: usize| {
            let i = chunks.partition_point(|&(start, _, _)| start <= p).checked_sub(1)?;
            (p < chunks[i].0 + chunks[i].1).then_some(i)
        };
        if let Some(i) = chunk_of(&chunks, self.bump as usize) {
            chunks[i].2 += self.end as usize - self.bump as usize;
        }
        for class in 0..CLASSES {
            let mut p = self.free[class];
            while !p.is_null() {
                if let Some(i) = chunk_of(&chunks, p as usize) {
                    chunks[i].2 += class_size(class);
                }
                // SAFETY: a free block's first word links to the next (`free_small`).
                p = unsafe { *(p as *mut *mut u8) };
            }
        }
        let empty = |chunks: &[(usize, usize, usize)], p: usize| chunk_of(chunks, p).is_some_and(|i| chunks[i].2 == chunks[i].1 - LINK);
        if !chunks.iter().any(|&(_, len, free)| free == len - LINK) {
            return 0;
        }
        // The free lists, without the blocks of empty chunks.
        for class in 0..CLASSES {
            let mut link: *mut *mut u8 = &mut self.free[class];
            // SAFETY: as above; `link` is the list's head or a kept block's
            // first word, rewritten to skip the blocks of empty chunks.
            unsafe {
                while !(*link).is_null() {
                    let p = *link;
                    if empty(&chunks, p as usize) {
                        *link = *(p as *mut *mut u8);
                    } else {
                        link = p as *mut *mut u8;
                    }
                }
            }
        }
        if empty(&chunks, self.bump as usize) {
            (self.bump, self.end) = (null_mut(), null_mut());
        }
        let mut given = 0;
        let mut link: *mut *mut u8 = &mut self.chunks;
        // SAFETY: as above; an empty chunk holds no block in use and none
        // on a free list any more, nor the bump range: it is unlinked, then
        // freed once (a block from `mi_malloc`).
        unsafe {
            while !(*link).is_null() {
                let c = *link;
                if empty(&chunks, c as usize) {
                    *link = *(c as *mut *mut u8);
                    given += *(c as *const usize).add(1);
                    mi_free(c.cast());
                } else {
                    link = c as *mut *mut u8;
                }
            }
        }
        self.chunk_bytes -= given as u32;
        self.publish();
        given
    }

    #[inline]
    unsafe fn alloc(&mut self, size: usize) -> *mut u8 {
        if size <= SMALL_MAX {
            // SAFETY: `size <= SMALL_MAX`, so its class is below `CLASSES`.
            return unsafe { self.alloc_small(class_of(size)) };
        }
        if !self.fits(size) || size > synodic_core::cache::largest_block() {
            return null_mut();
        }
        // SAFETY: `mi_malloc` takes any size and returns null (checked below) or a block of `size` bytes.
        let p = unsafe { mi_malloc(size) }.cast::<u8>();
        if !p.is_null() {
            self.large += 1;
            self.large_changed(size as i64);
        }
        p
    }

    /// Whether every block lives in the heap's chunks, so that dropping the
    /// heap frees them all.
    pub(crate) fn holds_every_block(&self) -> bool {
        self.large == 0
    }

    /// Puts `p`, a block of class `class` from this heap that is no longer
    /// used, on its class's free list.
    unsafe fn free_small(&mut self, p: *mut u8, class: usize) {
        // SAFETY: `p` is a block of this heap (the caller's contract): at
        // least 8 bytes, 8-aligned, and no longer used, so its first word may
        // hold the link.
        unsafe { *(p as *mut *mut u8) = self.free[class] };
        self.free[class] = p;
    }

    /// The `lua_Alloc` contract: free when `nsize == 0`, else (re)allocate.
    ///
    /// # Safety
    /// `ptr` is null or a live block this heap returned, `osize` bytes long
    /// (as Lua passes it: the size it asked for).
    pub(crate) unsafe fn realloc(&mut self, ptr: *mut u8, osize: usize, nsize: usize) -> *mut u8 {
        let old_small = !ptr.is_null() && osize <= SMALL_MAX;
        if nsize == 0 {
            if old_small {
                // SAFETY: `ptr` is a block of this heap of `osize <= SMALL_MAX`
                // bytes (the contract), so it was carved from a chunk in that class.
                unsafe { self.free_small(ptr, class_of(osize)) };
            } else if !ptr.is_null() {
                // SAFETY: a block over `SMALL_MAX` bytes came from `mi_malloc`
                // or `mi_realloc` (`alloc`, below), and Lua frees it once.
                unsafe { mi_free(ptr.cast()) };
                self.large -= 1;
                self.large_changed(-(osize as i64));
            }
            return null_mut();
        }
        if self.block_cap != 0 && nsize > self.block_cap as usize && nsize > osize {
            return null_mut();
        }
        if ptr.is_null() {
            // SAFETY: `alloc` has no precondition beyond the heap's own invariants.
            return unsafe { self.alloc(nsize) };
        }
        match (old_small, nsize <= SMALL_MAX) {
            (true, true) if class_of(osize) == class_of(nsize) => ptr,
            (false, false) => {
                if nsize > osize && (!self.fits(nsize - osize) || nsize > synodic_core::cache::largest_block()) {
                    return null_mut();
                }
                // SAFETY: both sizes are over `SMALL_MAX`, so `ptr` is a live
                // block from `mi_malloc`/`mi_realloc` (see `alloc`).
                let p = unsafe { mi_realloc(ptr.cast(), nsize) }.cast::<u8>();
                if !p.is_null() {
                    self.large_changed(nsize as i64 - osize as i64);
                }
                p
            }
            _ => {
                // SAFETY: `alloc` has no precondition beyond the heap's own invariants.
                let new = unsafe { self.alloc(nsize) };
                if !new.is_null() {
                    // SAFETY: `ptr` holds `osize` bytes (the contract) and `new`
                    // at least `nsize`; `new` is a different live block (`ptr` is
                    // still in use), so they do not overlap. Then `ptr` is freed
                    // once, with its size, as the contract asks.
                    unsafe {
                        std::ptr::copy_nonoverlapping(ptr, new, osize.min(nsize));
                        self.realloc(ptr, osize, 0);
                    }
                }
                new
            }
        }
    }
}

impl Drop for Heap {
    fn drop(&mut self) {
        let mut c = self.chunks;
        while !c.is_null() {
            // SAFETY: `chunks` links the later chunks through their first
            // word (set in `add_chunk`; the last holds the null it was linked
            // to), each a live block from `mi_malloc`, freed only here.
            unsafe {
                let next = *(c as *mut *mut u8);
                mi_free(c.cast());
                c = next;
            }
        }
        if !self.first.is_null() {
            // SAFETY: the first chunk is a live block from mimalloc
            // (`mi_malloc` in `add_chunk` or a template's copy, `mi_zalloc` in
            // `zeroed`), freed only here.
            unsafe { mi_free(self.first.cast()) };
        }
    }
}

/// Counts `delta` bytes held outside the heap (a buffer's payload) against
/// the memory limit of `L`'s process; false, and nothing counted, when
/// they do not fit: the process is then over its limit and ends (its core
/// slot is told; the caller raises an error meanwhile).
pub(crate) fn charge(L: *mut mlua_sys::lua_State, delta: i64) -> bool {
    let Some(heap) = of_state(L) else { return true };
    if heap.limit.is_none() {
        return true;
    }
    if delta > 0 && !heap.fits(delta as usize) {
        if let Some(proc) = heap.limit.as_ref().and_then(|l| l.proc) {
            proc.exceed_memory_limit();
        }
        return false;
    }
    heap.large_changed(delta);
    true
}

/// The heap of a state created with [`lua_alloc`], if it was.
/// (A safe function over a raw `L`: its callers pass the running state.)
pub(crate) fn of_state<'a>(L: *mut mlua_sys::lua_State) -> Option<&'a mut Heap> {
    let mut ud = null_mut();
    // SAFETY: not checked here: the callers (`charge`, from native
    // functions, and `synodic_uncatchable`) pass a live state they run in.
    let f = unsafe { mlua_sys::lua_getallocf(L, &mut ud) };
    // SAFETY: a state whose allocator is `lua_alloc` was given a `Heap` as
    // its user data (`fresh_state`, `Template::copy`), which outlives it;
    // the heap is otherwise touched only inside the allocator's calls or by
    // its owner between resumes, so no other reference is in use.
    (f as usize == lua_alloc as mlua_sys::lua_Alloc as usize && !ud.is_null()).then(|| unsafe { &mut *(ud as *mut Heap) })
}

/// Called by the vendored `lgc.c` ([Synodic]) after each full collection
/// (`collectgarbage()`, or one to free memory when an allocation failed):
/// the heap gives back the chunks it left empty ([`Heap::trim`]).
#[no_mangle]
pub extern "C" fn synodic_after_fullgc(L: *mut mlua_sys::lua_State) {
    if let Some(heap) = of_state(L) {
        heap.trim();
    }
}

/// `lua_Alloc` over a [`Heap`] passed as `ud`.
pub(crate) unsafe extern "C" fn lua_alloc(ud: *mut c_void, ptr: *mut c_void, osize: usize, nsize: usize) -> *mut c_void {
    // SAFETY: Lua calls its allocator with the user data it was given, a
    // live `Heap` (see `of_state`), and with `ptr`/`osize` as `realloc` asks.
    unsafe { (*(ud as *mut Heap)).realloc(ptr.cast(), osize, nsize).cast() }
}

/// [`lua_alloc`] for a state being closed, whose heap is dropped right
/// after: small blocks are not freed one by one (large ones, from the
/// global allocator, still are). Finalisers may still allocate.
pub(crate) unsafe extern "C" fn lua_alloc_closing(ud: *mut c_void, ptr: *mut c_void, osize: usize, nsize: usize) -> *mut c_void {
    if nsize == 0 && !ptr.is_null() && osize <= SMALL_MAX {
        return std::ptr::null_mut();
    }
    // SAFETY: Lua's allocator contract, passed on as is (see `lua_alloc`).
    unsafe { lua_alloc(ud, ptr, osize, nsize) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_cap_refuses_large_growth_only() {
        // SAFETY: every pointer given back to `realloc` is one it returned, with the size asked for.
        unsafe {
            let mut h = Heap::new();
            assert_eq!(h.limit_blocks(1000), 0);
            assert!(h.realloc(null_mut(), 0, 5000).is_null(), "over the cap");
            let p = h.realloc(null_mut(), 0, 800);
            assert!(!p.is_null(), "under the cap");
            assert!(!h.realloc(p, 800, 100).is_null(), "shrinking is always allowed");
            assert_eq!(h.limit_blocks(0), 1000);
            assert!(!h.realloc(null_mut(), 0, 5000).is_null(), "no cap, no limit");
        }
    }

    #[test]
    fn the_first_block_starts_the_first_chunk() {
        // SAFETY: only allocations (null pointers) are asked of `realloc`.
        unsafe {
            let mut h = Heap::new();
            let p = h.realloc(null_mut(), 0, 1200);
            assert_eq!(p, h.first, "no link word before the state's own block");
            for _ in 0..FIRST_CHUNK / SMALL_MAX {
                assert!(!h.realloc(null_mut(), 0, SMALL_MAX).is_null());
            }
            assert!(!h.chunks.is_null(), "later chunks are linked; dropping frees them and the first");
        }
    }

    #[test]
    fn classes_cover_every_small_size() {
        for size in 1..=SMALL_MAX {
            assert_eq!(class_of(size), compute_class_of(size), "the table agrees for size {size}");
            let c = class_of(size);
            assert!(c < CLASSES && class_size(c) >= size, "size {size} class {c}");
            assert!(c == 0 || class_size(c - 1) < size, "size {size} not in the smallest class");
        }
    }

    #[test]
    fn trim_gives_back_only_chunks_left_empty() {
        let size = |i: usize| 24 + i % 200;
        const KEPT: usize = 1001;
        // SAFETY: as in `blocks_are_reused_grown_and_shrunk`.
        unsafe {
            let mut h = Heap::new();
            let keep = h.realloc(null_mut(), 0, 100);
            // A peak: many blocks over many chunks, then all but one freed.
            let peak: Vec<_> = (0..2000).map(|i| h.realloc(null_mut(), 0, size(i))).collect();
            let survivor = peak[KEPT];
            std::ptr::write_bytes(survivor, 5, size(KEPT));
            let at_peak = h.chunk_bytes;
            for (i, p) in peak.iter().enumerate().filter(|&(i, _)| i != KEPT) {
                h.realloc(*p, size(i), 0);
            }
            let given = h.trim();
            assert!(given > 0 && h.chunk_bytes as usize == at_peak as usize - given, "empty chunks are given back");
            assert!((h.chunk_bytes as usize) < 3 * FIRST_CHUNK, "all but the first and the survivor's: {}", h.chunk_bytes);
            assert!((0..size(KEPT)).all(|i| *survivor.add(i) == 5), "a block in use stays where it is, untouched");
            assert_eq!(h.trim(), 0, "nothing more to give");
            // The heap goes on: free lists hold no block of a freed chunk.
            let again: Vec<_> = (0..2000).map(|i| h.realloc(null_mut(), 0, size(i))).collect();
            for (i, p) in again.iter().enumerate() {
                std::ptr::write_bytes(*p, (i % 251) as u8, size(i));
            }
            assert!(again.iter().enumerate().all(|(i, p)| *p.add(23) == (i % 251) as u8), "blocks never overlap after a trim");
            assert!((0..size(KEPT)).all(|i| *survivor.add(i) == 5));
            h.realloc(keep, 100, 0);
        }
    }

    #[test]
    fn blocks_are_reused_grown_and_shrunk() {
        // SAFETY: every pointer given back to `realloc` is one it returned,
        // with the size asked for; reads and writes stay within those sizes.
        unsafe {
            let mut h = Heap::new();
            let a = h.realloc(null_mut(), 0, 40);
            std::ptr::write_bytes(a, 7, 40);
            h.realloc(a, 40, 0);
            let b = h.realloc(null_mut(), 0, 39);
            assert_eq!(class_of(39), class_of(40));
            assert_eq!(a, b, "a freed block of the same class is reused");
            std::ptr::write_bytes(b, 9, 39);
            assert!(h.holds_every_block());
            let big = h.realloc(b, 39, 4000);
            assert!((0..39).all(|i| *big.add(i) == 9), "contents survive growing past the small limit");
            assert!(!h.holds_every_block(), "a large block lives outside the chunks");
            let big = h.realloc(big, 4000, 9000);
            assert!(!h.holds_every_block(), "still one, moved");
            let small = h.realloc(big, 9000, 24);
            assert!(h.holds_every_block(), "shrunk back into a chunk");
            assert!((0..24).all(|i| *small.add(i) == 9), "and shrinking back");
            let full = h.realloc(null_mut(), 0, SMALL_MAX);
            std::ptr::write_bytes(full, 1, SMALL_MAX);
            let after = h.realloc(null_mut(), 0, SMALL_MAX);
            std::ptr::write_bytes(after, 2, SMALL_MAX);
            assert!((0..SMALL_MAX).all(|i| *full.add(i) == 1), "blocks of the largest class never overlap");
            let many: Vec<_> = (0..1000).map(|i| h.realloc(null_mut(), 0, 16 + i % 400)).collect();
            assert!(many.iter().all(|p| !p.is_null() && (*p as usize).is_multiple_of(8)));
            assert!(h.used() > 0);
            for (i, p) in many.into_iter().enumerate() {
                h.realloc(p, 16 + i % 400, 0);
            }
        }
    }
}
