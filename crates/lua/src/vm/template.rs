//! Prebuilt Lua states that new processes start as copies of. Making a
//! state (its global state, registry, lazy library tables) and loading a
//! module into it are the same steps for every process that starts the same
//! way; a node does them once, into a template, and a new process's state
//! is a copy of the template's memory with its addresses moved. For an
//! entity, that is one copy of under 4 KB (a state with the entity's code
//! decoded: `prefix`) instead of hundreds of allocations.
//!
//! Building a template, step by step:
//!
//! 1. build the state twice, each in one zeroed chunk of its own heap (the
//!    two at different addresses), with the same steps: the steps are
//!    deterministic, so the two chunks hold the same bytes except where
//!    they hold an address within themselves;
//! 2. compare them word by word: a word that differs by exactly the
//!    distance between the chunks is an address to move in a copy; the
//!    allocator's user data and the context pointer are set anew in a
//!    copy; any other difference means the steps were not deterministic,
//!    and there is no template (states are then made the usual way);
//! 3. check what moving addresses cannot fix (`csrc/template.c`): a table
//!    key placed by its address, a state not at rest (values left on its
//!    stack are allowed: a copy starts with them, as `prefix`'s do).
//!
//! A copy then takes one chunk, copies the first build's bytes into it,
//! adds the distance from the first build to every address word, and sets
//! its heap's free lists, allocator and context (its lazy tables' record
//! moved by the same distance).

use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

use libmimalloc_sys::{mi_free, mi_good_size, mi_malloc, mi_usable_size};
use mlua_sys as ffi;

use crate::vm::ctx::{Boot, Ctx};
use crate::vm::heap::{self, Heap, Layout, FIRST_CHUNK};
use crate::vm::lazy::{self, LazyList};

extern "C" {
    fn synodic_state_movable(L: *mut ffi::lua_State, values: c_int, lo: *const u8, hi: *const u8) -> i32;
    fn synodic_alloc_ud_slot(L: *mut ffi::lua_State) -> *mut c_void;
}

/// The chunk a template is built in: anything that does not fit in it
/// gets no template.
const BUILD_CHUNK: usize = 32 << 10;
/// Bytes a copy has free in its first chunk beyond the template's at
/// least (the chunk fills the allocator's size class): an entity's start
/// takes 256, its call records. Each of the allocator's classes is a
/// quarter larger than the last: an entity's copy (3,768 bytes, with
/// `bench/entities`' code) with this room fits in 4 KB, with 512 it
/// would take 5 (`tests/lua/entity_memory.lua`).
const ROOM: usize = 320;
const WORD: usize = std::mem::size_of::<usize>();

/// A state to copy: its memory as built at `origin`, and what a copy changes.
pub(crate) struct Template {
    image: Box<[u8]>,
    origin: usize,
    /// Indices of the words of `image` that hold addresses within it.
    addresses: Box<[u32]>,
    layout: Layout,
    /// Where the `lua_State` is, from the chunk's start.
    state_at: usize,
    /// The bytes of a copy's first chunk.
    chunk_bytes: usize,
    /// The context's record of the state's lazy tables, as built.
    lazy: lazy::Built,
    pid_meta: bool,
    /// Where the first copy that blocked did, and its hot lines (see `hot`).
    hot: OnceLock<(usize, [u64; 2])>,
}

// SAFETY: a template is read, never written, once built (`hot` is a
// `OnceLock`); its raw pointers (lazy tables' addresses, of a build that is
// gone) are only compared and moved as numbers, never dereferenced.
unsafe impl Send for Template {}
unsafe impl Sync for Template {}

/// The template of a new process's state, if this node could build one.
pub(crate) fn base() -> Option<&'static Template> {
    static BASE: OnceLock<Option<Template>> = OnceLock::new();
    // SAFETY: `|_| true` runs nothing in the states it is given.
    BASE.get_or_init(|| unsafe { Template::build(|_| true) }).as_ref()
}

/// Bundled modules whose functions start processes, which then start as a
/// copy of a template of their own: the entity loop (an entity starts with
/// pids' metatable made) and the HTTP server's connections, with the slots
/// their main thread's stack starts with: what the module's code needs (the
/// loop, in a method that calls a C function, uses 67 slots, Lua's own size
/// being 40; a connection answering a request needs more than 59). 75
/// slots and Lua's 5 spare fill the heap's 1,280-byte class exactly (80
/// took the 1,536-byte one). A stack that grows leaves the first one free
/// in the process's heap and its new one in a later chunk: an entity's
/// resident memory was ~0.95 KB larger, an idle HTTP connection's ~1.9 KB. A module
/// qualifies when its main chunk only defines things: it runs outside any
/// process. A frozen module (see `shared`) is not loaded into the
/// template: its functions arrive as the node's, and an entity's state
/// holds nothing of its loop.
const TEMPLATED: [(&[u8], c_int); 2] = [(b"synodic.entity.loop", 75), (b"synodic.http.core", 75)];

/// The template of a state for processes spawned with a function of module
/// `name`, if it is one of [`TEMPLATED`] and this node could build it.
pub(crate) fn of_module(name: &[u8]) -> Option<&'static Template> {
    static MODULES: [OnceLock<Option<Template>>; TEMPLATED.len()] = [const { OnceLock::new() }; TEMPLATED.len()];
    let i = TEMPLATED.iter().position(|(m, _)| *m == name)?;
    // SAFETY: `L` is a state `Build::new` just made on this thread, at rest.
    // `push_module` runs the module's loader protected; a module of
    // `TEMPLATED` only defines things, so it calls nothing that needs a
    // running process.
    let load = |L: *mut ffi::lua_State| unsafe {
        let module = TEMPLATED[i].0;
        let loaded = crate::vm::shared::is_frozen_module(module) || crate::vm::state::push_module(L, module).is_ok();
        ffi::lua_settop(L, 0);
        if loaded {
            crate::vm::util::hold_pids(L);
        }
        loaded
    };
    // SAFETY: `load` needs no running process (see it above).
    MODULES[i].get_or_init(|| unsafe { Template::build_with_stack(TEMPLATED[i].1, load) }).as_ref()
}

/// The slots the main thread's stack of a process spawned with a function
/// of module `name` starts with (0: Lua's own size).
pub(crate) fn stack_slots(name: Option<&[u8]>) -> c_int {
    name.and_then(|name| TEMPLATED.iter().find(|(m, _)| *m == name)).map_or(0, |(_, slots)| *slots)
}

thread_local! {
    /// The main stack's slots of the state being built on this thread (see
    /// `stack_init` in the vendored `lstate.c`).
    static MAIN_STACK: std::cell::Cell<c_int> = const { std::cell::Cell::new(0) };
}

/// Called by the vendored `lstate.c` ([Synodic]) when it makes a state.
#[no_mangle]
pub extern "C" fn synodic_main_stack() -> c_int {
    MAIN_STACK.with(|s| s.get())
}

/// Whether loading module `name` needs no process, so that a template may
/// hold it: the global table, `package`, the lazy tables (standard and
/// native libraries) and [`TEMPLATED`]. (Another module's main chunk may
/// call what only a running process can, or read files.)
pub(crate) fn loads_outside_a_process(name: &[u8]) -> bool {
    name == b"_G" || name == b"package" || crate::vm::lazy::is_lazy_module(name) || TEMPLATED.iter().any(|(m, _)| *m == name)
}

/// One build of a template's state, with the heap and context it uses.
struct Build {
    L: *mut ffi::lua_State,
    heap: Box<Heap>,
    ctx: Box<Ctx>,
}

impl Build {
    /// # Safety
    /// As [`Template::build`]'s: `prepare` needs no running process.
    unsafe fn new(stack_slots: c_int, prepare: &impl Fn(*mut ffi::lua_State) -> bool) -> Option<Build> {
        let mut heap = Box::new(Heap::zeroed(BUILD_CHUNK)?);
        let mut ctx = Box::new(Ctx::new(Boot::Spawned(None)));
        MAIN_STACK.with(|s| s.set(stack_slots));
        // SAFETY: `ctx` and `heap` are boxed (they do not move) and kept in
        // the `Build` with the state, whose `Drop` closes it before they drop.
        let L = unsafe { crate::vm::state::fresh_state(&mut *ctx, &mut *heap) };
        MAIN_STACK.with(|s| s.set(0));
        let L = L?;
        let build = Build { L, heap, ctx };
        prepare(L).then_some(build)
    }
}

impl Drop for Build {
    fn drop(&mut self) {
        // SAFETY: `L` was made over `heap` by `Build::new` and is not used
        // again: the build is being dropped (its heap and context after this).
        unsafe { crate::vm::state::close_state(self.L, &mut self.heap) }
    }
}

impl Template {
    /// Builds the template of a fresh state after `prepare` (steps 1 to 3).
    ///
    /// # Safety
    /// `prepare` runs nothing that needs a running process: the states it
    /// is given have a context with no runtime or process.
    pub(crate) unsafe fn build(prepare: impl Fn(*mut ffi::lua_State) -> bool) -> Option<Template> {
        // SAFETY: this function's contract, passed on.
        unsafe { Template::build_with_stack(0, prepare) }
    }

    /// Runs `prepare` in a state made as a build of a template is (with
    /// `stack_slots` slots on its main stack), then drops it: whether it
    /// held.
    ///
    /// # Safety
    /// As [`Template::build`]'s.
    pub(crate) unsafe fn dry_run(stack_slots: c_int, prepare: impl Fn(*mut ffi::lua_State) -> bool) -> bool {
        // SAFETY: the contract, passed on.
        unsafe { Build::new(stack_slots, &prepare) }.is_some()
    }

    /// [`Template::build`], the state's main stack starting with
    /// `stack_slots` slots if more than Lua's own size.
    ///
    /// # Safety
    /// As [`Template::build`]'s.
    ///
    /// Bounds: `Heap::layout` answers only when every live block of a build
    /// lies in its first chunk (no later chunk, no large block), so its
    /// `lua_State` and global state lie in `[lo, lo + used)`, inside the
    /// `BUILD_CHUNK`-byte zeroed chunk; the two builds' layouts are equal, so
    /// both chunks have `used` bytes in use. Both builds live to the end of
    /// this function.
    pub(crate) unsafe fn build_with_stack(stack_slots: c_int, prepare: impl Fn(*mut ffi::lua_State) -> bool) -> Option<Template> {
        // SAFETY: `prepare` keeps to this function's contract.
        let (a, b) = unsafe { (Build::new(stack_slots, &prepare)?, Build::new(stack_slots, &prepare)?) };
        let ((first, layout), (b_first, b_layout)) = (a.heap.layout()?, b.heap.layout()?);
        // SAFETY: `a.L` and `b.L` are live states of this thread, at rest.
        let values = unsafe { ffi::lua_gettop(a.L) };
        // SAFETY: as above.
        if layout != b_layout || a.ctx.lazy.len() != b.ctx.lazy.len() || unsafe { ffi::lua_gettop(b.L) } != values {
            return None;
        }
        let (lo, hi) = (first as usize, first as usize + layout.used);
        let delta = (b_first as usize).wrapping_sub(lo);
        // SAFETY: `a.L` is a live state; both slots (`G(L)->ud`, the bytes
        // before `L`) lie in its state block, inside `[lo, hi)` (see the
        // bounds above), so `p - lo` does not wrap.
        let set_anew = unsafe { [synodic_alloc_ud_slot(a.L) as usize, ffi::lua_getextraspace(a.L) as usize] }.map(|p| (p - lo) / WORD);
        let (wa, wb) = (first as *const usize, b_first as *const usize);
        let mut addresses = Vec::new();
        for i in 0..layout.used / WORD {
            // SAFETY: `i < used / WORD`, so word `i` lies in the part in use
            // of both chunks (see the bounds above), live and initialised
            // (zeroed, then written), and aligned (mimalloc blocks are).
            let (x, y) = unsafe { (*wa.add(i), *wb.add(i)) };
            if x == y || set_anew.contains(&i) {
                continue;
            }
            if y.wrapping_sub(x) != delta || !(lo..=hi).contains(&x) {
                return None;
            }
            addresses.push(i as u32);
        }
        let lazy_moves = a.ctx.lazy.iter().zip(b.ctx.lazy.iter()).all(|(x, y)| (lo..hi).contains(&x.address()) && x.moved(delta) == y);
        // SAFETY: `a.L` is a live state at rest on this thread; `first + used`
        // is the end of its chunk's part in use, inside the chunk.
        if !lazy_moves || unsafe { synodic_state_movable(a.L, values, first, first.add(layout.used)) } == 0 {
            return None;
        }
        Some(Template {
            // SAFETY: the `used` bytes in use of `a`'s chunk, live (and not
            // written) until `a` drops at the end of this function; copied.
            image: unsafe { std::slice::from_raw_parts(first, layout.used) }.into(),
            origin: lo,
            addresses: addresses.into(),
            state_at: a.L as usize - lo,
            // SAFETY: `mi_good_size` only computes a size.
            chunk_bytes: unsafe { mi_good_size(FIRST_CHUNK.max(layout.used + ROOM)) },
            layout,
            lazy: a.ctx.lazy.built(),
            pid_meta: a.ctx.pid_meta,
            hot: OnceLock::new(),
        })
    }

    /// The hot-line hint its copies may share (see `hot`).
    pub(crate) fn hot_hint(&self) -> &OnceLock<(usize, [u64; 2])> {
        &self.hot
    }

    /// A copy of the template for a process whose context is `ctx`,
    /// allocating from `heap` (empty; both must outlive the state). None
    /// when there is no memory for it, or not under the heap's limit.
    ///
    /// # Safety
    /// `ctx` and `heap` are valid, `heap` is empty, and both outlive the
    /// state (as [`crate::vm::state::new_state`] asks).
    ///
    /// Bounds: the chunk holds `bytes >= chunk_bytes >= used + ROOM` bytes;
    /// the image is `used` bytes; `build` recorded only word indices below
    /// `used / WORD` and a state offset below `used`.
    pub(crate) unsafe fn copy(&'static self, ctx: *mut Ctx, heap: *mut Heap) -> Option<*mut ffi::lua_State> {
        // SAFETY: `mi_malloc` takes any size and returns null (checked below) or a block of that size.
        let chunk = unsafe { mi_malloc(self.chunk_bytes) } as *mut u8;
        if chunk.is_null() {
            return None;
        }
        // SAFETY: `chunk` is a live mimalloc block.
        let bytes = unsafe { mi_usable_size(chunk.cast()) }.min(u32::MAX as usize);
        crate::vm::prefault::taken(chunk, bytes);
        // SAFETY: `heap` is valid and empty (the contract); `chunk` is a
        // mimalloc block of `bytes >= used` bytes (see the bounds above),
        // 16-aligned, which gets the image, its links moved, just below.
        if !unsafe { (*heap).adopt(chunk, bytes, &self.layout) } {
            // SAFETY: `adopt` took nothing: `chunk` is still ours alone.
            unsafe { mi_free(chunk.cast()) };
            return None;
        }
        // SAFETY: the image's `used` bytes fit in `chunk` (the bounds above);
        // `chunk` is a fresh block, apart from the template's boxed image.
        unsafe { std::ptr::copy_nonoverlapping(self.image.as_ptr(), chunk, self.image.len()) };
        let delta = (chunk as usize).wrapping_sub(self.origin);
        let words = chunk as *mut usize;
        for &i in self.addresses.iter() {
            // SAFETY: `i < used / WORD`, so the word lies in the image just
            // copied into `chunk`, aligned (the chunk is). It held an address
            // in the build's `[origin, origin + used]`, now moved into `chunk`.
            unsafe {
                let w = words.add(i as usize);
                *w = (*w).wrapping_add(delta);
            }
        }
        // SAFETY: `state_at < used` (the build's state block lay in its
        // chunk), so `L` is inside `chunk`: the copied `lua_State`, whose
        // addresses all point into `chunk` now.
        let L = unsafe { chunk.add(self.state_at) } as *mut ffi::lua_State;
        // SAFETY: `L` is a whole state at rest (`synodic_state_movable` held
        // for the build); its allocator's user data and extra space, the
        // words the build left unmoved, are set anew here before any use;
        // `ctx` is valid (the contract).
        unsafe {
            ffi::lua_setallocf(L, heap::lua_alloc, heap.cast());
            *(ffi::lua_getextraspace(L) as *mut *mut Ctx) = ctx;
            (*ctx).lazy = LazyList::of_copy(&self.lazy, delta);
            (*ctx).pid_meta = self.pid_meta;
        }
        Some(L)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::sync::atomic::{AtomicI64, Ordering};

    /// Runs `code` in `L`; true when it ran without error and returned true.
    ///
    /// # Safety
    /// `L` is a live state at rest on this thread.
    pub(crate) unsafe fn run(L: *mut ffi::lua_State, code: &str) -> bool {
        // SAFETY: `L` is live and at rest (the contract); the code runs
        // protected, so nothing unwinds through this frame.
        unsafe {
            let ok = ffi::luaL_loadbufferx(L, code.as_ptr().cast(), code.len(), c"=test".as_ptr(), c"t".as_ptr()) == ffi::LUA_OK
                && ffi::lua_pcall(L, 0, 1, 0) == ffi::LUA_OK
                && ffi::lua_toboolean(L, -1) != 0;
            ffi::lua_settop(L, 0);
            ok
        }
    }

    /// A copy of a template, with its own context and heap.
    pub(crate) struct Copy {
        pub(crate) L: *mut ffi::lua_State,
        pub(crate) heap: Box<Heap>,
        pub(crate) ctx: Box<Ctx>,
    }

    impl Copy {
        pub(crate) fn of(t: &'static Template, heap: Heap) -> Option<Copy> {
            let mut ctx = Box::new(Ctx::new(Boot::Spawned(None)));
            let mut heap = Box::new(heap);
            // SAFETY: `ctx` and `heap` are boxed into the `Copy`, whose `Drop`
            // closes the state before they drop. Callers pass a new heap
            // (`Heap::new`, `Heap::limited`), so it is empty.
            let L = unsafe { t.copy(&mut *ctx, &mut *heap)? };
            Some(Copy { L, heap, ctx })
        }
    }

    impl Drop for Copy {
        fn drop(&mut self) {
            // SAFETY: `L` was made over `heap` by `Copy::of` and is not used again.
            unsafe { crate::vm::state::close_state(self.L, &mut self.heap) }
        }
    }

    #[test]
    fn copies_of_a_fresh_state_run_apart() {
        let t = base().expect("a node builds the template of a fresh state");
        let (a, b) = (Copy::of(t, Heap::new()).unwrap(), Copy::of(t, Heap::new()).unwrap());
        // SAFETY: `a.L` and `b.L` are live copies, at rest on this thread.
        unsafe {
            assert!(run(a.L, "x = string.rep('a', 3) .. table.concat({1, 2}) return x == 'aaa12'"), "libraries are made in a copy");
            assert!(run(b.L, "return x == nil and math.max(1, 2) == 2"), "a copy has nothing of another");
            assert!(run(a.L, "local t = {} for i = 1, 10000 do t[i] = {i} end collectgarbage() collectgarbage() return #t == 10000 and x == 'aaa12'"), "a copy grows and collects");
            assert!(run(b.L, "return select('#', pcall(error, {})) == 2 and coroutine.wrap(function() coroutine.yield(7) end)() == 7"), "errors and coroutines");
        }
    }

    #[test]
    fn the_entity_loop_template_holds_nothing_of_the_loop() {
        let t = of_module(b"synodic.entity.loop").expect("the loop's template");
        let c = Copy::of(t, Heap::new()).unwrap();
        // SAFETY: `c.L` is a live copy, at rest on this thread.
        unsafe { assert!(run(c.L, "return rawget(package.loaded, 'synodic.entity.loop') == nil")) };
        let larger_stack = (stack_slots(Some(b"synodic.entity.loop")) as usize - 40) * 16;
        assert!(t.image.len() < base().unwrap().image.len() + larger_stack + 400, "the loop's functions are the node's, not in the template");
        assert!(of_module(b"synodic.skel").is_none(), "only the modules listed have one");
        assert!(c.ctx.pid_meta && has_pid_metatable(c.L), "an entity starts with pids' metatable made");
        let bare = Copy::of(base().unwrap(), Heap::new()).unwrap();
        assert!(!bare.ctx.pid_meta && !has_pid_metatable(bare.L), "a bare process makes it at its first pid");
    }

    #[test]
    fn the_entity_loop_template_starts_with_the_stack_the_loop_uses() {
        // SAFETY: `c.L` is a live copy, at rest on this thread.
        let grows = |t: &'static Template| unsafe {
            let c = Copy::of(t, Heap::new()).unwrap();
            let before = c.heap.used();
            assert!(ffi::lua_checkstack(c.L, 70) != 0);
            c.heap.used() > before
        };
        assert!(grows(base().unwrap()), "a bare state's stack grows past 40 slots");
        assert!(!grows(of_module(b"synodic.entity.loop").unwrap()), "an entity's has room for the loop");
        assert_eq!(stack_slots(Some(b"synodic.skel")), 0, "only the modules listed");
    }

    /// Whether light userdata (pids) have a metatable in `L`.
    pub(crate) fn has_pid_metatable(L: *mut ffi::lua_State) -> bool {
        // SAFETY: not checked: callers pass a live copy's state, at rest on this thread.
        unsafe {
            ffi::lua_pushlightuserdata(L, std::ptr::null_mut());
            let has = ffi::lua_getmetatable(L, -1) != 0;
            ffi::lua_settop(L, 0);
            has
        }
    }

    #[test]
    fn states_that_cannot_move_get_no_template() {
        // SAFETY: every `prepare` given runs only plain Lua (protected, in
        // `run`) or the Lua API on the state it is given: none needs a process.
        unsafe {
            assert!(Template::build(|L| run(L, "t = {[{}] = 1} return true")).is_none(), "a key placed by its address");
            static BUILDS: AtomicI64 = AtomicI64::new(0);
            let differs = |L: *mut ffi::lua_State| {
                ffi::lua_pushinteger(L, BUILDS.fetch_add(1, Ordering::Relaxed));
                ffi::lua_setglobal(L, c"n".as_ptr());
                true
            };
            assert!(Template::build(differs).is_none(), "builds that differ");
            assert!(Template::build(|L| run(L, "t = {} for i = 1, 1000 do t[i] = i end return true")).is_none(), "a block outside the chunk");
            assert!(Template::build(|L| run(L, "t = {} for i = 1, 100 do t[i] = {i} end return true")).is_some(), "a state of 100 tables moves");
        }
    }

    #[test]
    fn a_copy_keeps_to_the_memory_limit() {
        let t = base().unwrap();
        assert!(Copy::of(t, Heap::limited(t.chunk_bytes as u64 - 1)).is_none(), "no copy over the limit");
        assert!(Copy::of(t, Heap::limited(64 << 10)).is_some());
    }
}
