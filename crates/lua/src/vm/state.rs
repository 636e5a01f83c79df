//! Creating the Lua state of a process, kept small while it is idle.
//!
//! Nothing is opened whole up front: the global table, `package.loaded`, the
//! standard libraries and Synodic's modules are lazy tables (see
//! `crate::vm::lazy`), whose entries are made the first time they are used,
//! in a way no program can observe. `require` is made cheap for what is
//! built in: a standard library or one of Synodic's modules is made on the
//! spot, and only other modules open the package library and search for
//! them, as `require` does.
//!
//! Preemption is not set up here: see [`crate::vm::preempt`].

use std::ffi::{c_char, c_int, c_void, CStr};

use mlua_sys as ffi;

use crate::vm::ctx::Ctx;
use crate::vm::heap::{self, Heap};
use crate::vm::lazy;
use crate::vm::template::Template;
use crate::vm::util::{push_bytes, raise, to_bytes};

unsafe extern "C-unwind" fn panic_handler(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls its panic function with the state and the error on
    // top; the node aborts right after, so nothing unwinds.
    let msg = unsafe { to_bytes(L, -1) }.map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or_default();
    eprintln!("synodic: unprotected Lua error: {msg}");
    std::process::abort()
}

/// `lua_Alloc` over mimalloc, for the node's own states.
unsafe extern "C" fn node_alloc(_ud: *mut c_void, ptr: *mut c_void, _osize: usize, nsize: usize) -> *mut c_void {
    // SAFETY: Lua's allocator contract: `ptr` is null or a block this
    // function returned (from mimalloc), freed once.
    unsafe {
        if nsize == 0 {
            libmimalloc_sys::mi_free(ptr);
            std::ptr::null_mut()
        } else {
            libmimalloc_sys::mi_realloc(ptr, nsize)
        }
    }
}

/// A state for the node's own work, not a process's (the code every
/// process shares, the libraries' templates), or null when out of memory.
/// Its memory comes from mimalloc, as the rest of the node's:
/// `luaL_newstate` takes the C library's allocator, which set up an arena
/// for the thread at start-up (~90 page faults and ~80 system calls). An
/// error outside a protected call aborts with its message.
pub(crate) fn node_state() -> *mut ffi::lua_State {
    state_over(node_alloc, std::ptr::null_mut())
}

/// The node's shared state (`vm::shared`), over memory of its own
/// (`vm::arena`), or null when out of memory.
pub(crate) fn shared_state() -> *mut ffi::lua_State {
    arena_state(true)
}

/// The state later modules are compiled in (`vm::loader`), over memory of
/// its own, or null when out of memory.
pub(crate) fn loader_state() -> *mut ffi::lua_State {
    arena_state(false)
}

fn arena_state(populate: bool) -> *mut ffi::lua_State {
    let arena: &'static crate::vm::arena::Arena = crate::vm::arena::Arena::for_good(populate);
    state_over(crate::vm::arena::alloc, (arena as *const crate::vm::arena::Arena).cast_mut().cast())
}

/// A state over `alloc`, given `ud`, as `lua_Alloc`'s contract has it
/// (`node_alloc` takes none; `arena::alloc` takes an arena that lives for
/// good).
fn state_over(alloc: ffi::lua_Alloc, ud: *mut c_void) -> *mut ffi::lua_State {
    // SAFETY: both allocators follow Lua's allocator contract, with the
    // user data each needs; the panic function is set on the state just
    // made.
    unsafe {
        let L = ffi::lua_newstate(alloc, ud);
        if !L.is_null() {
            ffi::lua_atpanic(L, panic_handler);
        }
        L
    }
}

/// A new state for a process whose context is `ctx`, allocating from
/// `heap` (both must outlive the state): a copy of `template` if given,
/// else of the node's template of a fresh state (see [`crate::vm::template`]),
/// or, without one, made afresh.
///
/// # Safety
/// `ctx` and `heap` are valid, `heap` is empty (a copy adopts a chunk as
/// its first), and both outlive the state.
pub(crate) unsafe fn new_state(ctx: *mut Ctx, heap: *mut Heap, template: Option<&'static Template>) -> Option<*mut ffi::lua_State> {
    // SAFETY: this function's contract is `copy`'s.
    if let Some(L) = template.or_else(crate::vm::template::base).and_then(|t| unsafe { t.copy(ctx, heap) }) {
        return Some(L);
    }
    // SAFETY: as above (a failed copy leaves `heap` empty).
    unsafe { fresh_state(ctx, heap) }
}

/// A state made afresh, as [`new_state`]'s are.
///
/// # Safety
/// As [`new_state`]'s.
pub(crate) unsafe fn fresh_state(ctx: *mut Ctx, heap: *mut Heap) -> Option<*mut ffi::lua_State> {
    crate::vm::shared::ensure();
    // SAFETY: `heap` is a valid `Heap` that outlives the state (the
    // contract), as `lua_alloc` requires of its user data.
    let L = unsafe { ffi::lua_newstate(heap::lua_alloc, heap.cast()) };
    if L.is_null() {
        return None;
    }
    // SAFETY: `L` is the new state, on this thread. Its extra space gets the
    // context before anything reads it (`lazy::set_up` does); `ctx` is valid
    // (the contract). An error in these steps (memory) goes to the panic
    // handler, which aborts.
    unsafe {
        ffi::lua_gc(L, ffi::LUA_GCSTOP, 0);
        ffi::lua_atpanic(L, panic_handler);
        ffi::lua_setwarnf(L, Some(warn_off), L.cast());
        *(ffi::lua_getextraspace(L) as *mut *mut Ctx) = ctx;
        lazy::set_up(L);
        ffi::lua_settop(L, 0);
        ffi::lua_gc(L, ffi::LUA_GCRESTART, 0);
        synodic_gc_allowance(L, GC_ALLOWANCE);
    }
    Some(L)
}

/// `warn`, as `luaL_newstate` sets it up (and `lua` without `-W`): off until
/// `warn("@on")`; then each warning is a line on stderr, "Lua warning: "
/// and its pieces.
unsafe extern "C-unwind" fn warn_off(ud: *mut c_void, msg: *const c_char, tocont: c_int) {
    // SAFETY: Lua's warning-function contract, passed on (see `warn_control`).
    unsafe { warn_control(ud, msg, tocont) };
}

unsafe extern "C-unwind" fn warn_on(ud: *mut c_void, msg: *const c_char, tocont: c_int) {
    // SAFETY: Lua's warning-function contract, passed on (see `warn_control`).
    if unsafe { warn_control(ud, msg, tocont) } {
        return;
    }
    eprint!("Lua warning: ");
    // SAFETY: as above.
    unsafe { warn_more(ud, msg, tocont) };
}

unsafe extern "C-unwind" fn warn_more(ud: *mut c_void, msg: *const c_char, tocont: c_int) {
    let L = ud as *mut ffi::lua_State;
    // SAFETY: Lua passes a NUL-terminated piece of the warning as `msg`.
    eprint!("{}", unsafe { CStr::from_ptr(msg) }.to_string_lossy());
    // SAFETY: `ud` is the state the warning functions were set on
    // (`fresh_state` gives `L` itself); setting its warning function
    // allocates nothing.
    unsafe {
        if tocont != 0 {
            ffi::lua_setwarnf(L, Some(warn_more), ud);
        } else {
            eprintln!();
            ffi::lua_setwarnf(L, Some(warn_on), ud);
        }
    }
}

/// Handles "@on" and "@off"; true for a control message.
///
/// # Safety
/// As Lua calls a warning function: `msg` NUL-terminated, `ud` the state
/// it was set with (`fresh_state` sets `L` itself).
unsafe fn warn_control(ud: *mut c_void, msg: *const c_char, tocont: c_int) -> bool {
    // SAFETY: `msg` is NUL-terminated (the contract).
    let text = unsafe { CStr::from_ptr(msg) }.to_bytes();
    let Some(control) = text.strip_prefix(b"@").filter(|_| tocont == 0) else { return false };
    let L = ud as *mut ffi::lua_State;
    // SAFETY: `ud` is the state (the contract); setting its warning function allocates nothing.
    unsafe {
        match control {
            b"off" => ffi::lua_setwarnf(L, Some(warn_off), ud),
            b"on" => ffi::lua_setwarnf(L, Some(warn_on), ud),
            _ => {}
        }
    }
    true
}

/// What a new state may allocate before its collector's first step (see
/// `csrc/gc.c`).
const GC_ALLOWANCE: usize = 8 << 10;

extern "C" {
    fn synodic_gc_allowance(L: *mut ffi::lua_State, bytes: usize);
    fn synodic_close_runs_code(L: *mut ffi::lua_State) -> c_int;
}

/// Ends a state made by [`new_state`] over `heap`, which the caller drops
/// right after. When closing would run no code (no finalizers, no pending
/// to-be-closed variables: `csrc/gc.c`) and every block is in the heap's
/// chunks, dropping the heap is all a close would do; otherwise the state
/// is closed, its small blocks left for the heap's drop.
///
/// # Safety
/// `L` must not be used again.
pub(crate) unsafe fn close_state(L: *mut ffi::lua_State, heap: &mut Heap) {
    // SAFETY: `L` is a live state at rest (the caller's), made over `heap`;
    // the check only reads it.
    if heap.holds_every_block() && unsafe { synodic_close_runs_code(L) } == 0 {
        return;
    }
    // SAFETY: as above; `heap` is the one the state allocates from, and
    // outlives the close (the caller drops it after).
    unsafe {
        ffi::lua_setallocf(L, crate::vm::heap::lua_alloc_closing, heap as *mut Heap as *mut std::ffi::c_void);
        ffi::lua_close(L)
    }
}

/// `require`, as the base library's global: a module already loaded (the
/// standard libraries count as loaded, as in `lua`) or one of Synodic's is
/// there at once; anything else goes to the package library's `require`,
/// which searches for it.
///
/// Its frames own nothing: the loaders it calls (Lua code, unprotected,
/// as `require` calls them) may raise through it.
pub(crate) unsafe extern "C-unwind" fn require(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1); `raise` drops its message before unwinding.
    unsafe {
        if ffi::lua_type(L, 1) != ffi::LUA_TSTRING && ffi::lua_type(L, 1) != ffi::LUA_TNUMBER {
            return raise(L, format!("bad argument #1 to 'require' (string expected, got {})", crate::vm::util::type_name(L, 1)));
        }
    }
    // SAFETY: as above; the stack is now [name, loaded, name] and
    // `package.loaded` (at 2) is a plain table.
    unsafe {
        ffi::lua_settop(L, 1);
        ffi::lua_getfield(L, ffi::LUA_REGISTRYINDEX, ffi::LUA_LOADED_TABLE);
        ffi::lua_pushvalue(L, 1);
        if ffi::lua_gettable(L, 2) != ffi::LUA_TNIL && ffi::lua_toboolean(L, 3) != 0 {
            return 1;
        }
        ffi::lua_settop(L, 2);
    }
    // SAFETY: as above; the name (at 1, a string checked above) stays on
    // the stack for as long as `name` is used.
    let name = unsafe { to_bytes(L, 1) }.unwrap_or_default();
    if let Some((_, open, _)) = crate::vm::module::native().find(|(n, _, _)| n.to_bytes() == name) {
        // SAFETY: as above.
        unsafe { ffi::lua_pushcfunction(L, open) };
    } else if !unsafe { crate::vm::bundled::push_loader(L, name) } {
        // The package library's own `require` searches for it.
        // SAFETY: as above; `package` (from `loaded`, at 2) and its
        // `require` (kept in the registry by `open_package`) are called
        // with the name; this frame owns nothing.
        unsafe {
            ffi::lua_getfield(L, 2, c"package".as_ptr());
            ffi::lua_getfield(L, ffi::LUA_REGISTRYINDEX, REQUIRE.as_ptr());
            ffi::lua_pushvalue(L, 1);
            ffi::lua_call(L, 1, 2);
        }
        return 2;
    }
    // As `require` loads from package.preload: loader(name, ":preload:").
    // SAFETY: as above; the loader is on top (at 3), and its result is
    // stored in `package.loaded` (at 2) under the name.
    unsafe {
        ffi::lua_pushvalue(L, 1);
        push_bytes(L, b":preload:");
        ffi::lua_call(L, 2, 1);
        if ffi::lua_isnil(L, -1) != 0 {
            ffi::lua_settop(L, -2);
            ffi::lua_pushboolean(L, 1);
        }
        ffi::lua_pushvalue(L, 1);
        ffi::lua_pushvalue(L, -2);
        ffi::lua_settable(L, 2);
        push_bytes(L, b":preload:");
    }
    2
}

/// Registry key of the package library's `require` (its closure over the
/// package table, which `require` above hands unknown modules to).
const REQUIRE: &CStr = c"synodic.require";

/// Pushes the receiver's module `name` (as `require(name)` would, loading it
/// if needed). Errors come back as text, never raised.
pub(crate) unsafe fn push_module(L: *mut ffi::lua_State, name: &[u8]) -> Result<(), String> {
    // SAFETY: `L` is valid (lib.rs invariant 1); `require` runs protected
    // (lib.rs invariant 3), its error popped as text.
    unsafe {
        if name == b"_G" {
            ffi::lua_rawgeti(L, ffi::LUA_REGISTRYINDEX, ffi::LUA_RIDX_GLOBALS);
            return Ok(());
        }
        ffi::lua_pushcfunction(L, require);
        push_bytes(L, name);
        crate::vm::util::protected(L, 1, 1).map_err(|()| crate::vm::util::pop_error(L))
    }
}

/// Opens `package` and registers Synodic's modules in `package.preload`.
/// The search paths are Lua's own (`LUA_PATH_DEFAULT`, set to Debian's
/// lua5.4's by build.rs, and LUA_PATH/LUA_CPATH as `lua` reads them). (Its
/// own opener also sets the global `require` to the package library's.)
pub(crate) unsafe extern "C-unwind" fn open_package(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this opener with its running state `L` (lib.rs
    // invariant 1). `package` is the library's table; `preload` is a plain
    // table on top while loaders are set in it. Nothing here owns memory.
    unsafe {
        ffi::luaopen_package(L);
        let package = ffi::lua_gettop(L);
        ffi::lua_rawgeti(L, ffi::LUA_REGISTRYINDEX, ffi::LUA_RIDX_GLOBALS);
        ffi::lua_getfield(L, -1, c"require".as_ptr());
        ffi::lua_setfield(L, ffi::LUA_REGISTRYINDEX, REQUIRE.as_ptr());
        ffi::lua_settop(L, package);
        ffi::lua_getfield(L, package, c"preload".as_ptr());
        for (name, open, _) in crate::vm::module::native() {
            ffi::lua_pushcfunction(L, open);
            ffi::lua_setfield(L, -2, name.as_ptr());
        }
        crate::vm::bundled::register_preloads(L, ffi::lua_gettop(L));
        ffi::lua_settop(L, package);
    }
    1
}


extern "C" {
    static stdout: *mut libc::FILE;
}

/// `print`, writing each line with one call so lines of concurrent processes never interleave.
pub(crate) unsafe extern "C-unwind" fn print(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1); `__tostring` metamethods may raise through this
    // frame, which owns nothing. `line` borrows the string on top, which
    // stays there through the write; `stdout` is C's, always open.
    unsafe {
        let n = ffi::lua_gettop(L);
        for i in 1..=n {
            ffi::luaL_tolstring(L, i, std::ptr::null_mut());
            if i < n {
                push_bytes(L, b"\t");
            }
        }
        push_bytes(L, b"\n");
        ffi::lua_concat(L, ffi::lua_gettop(L) - n);
        let line = to_bytes(L, -1).unwrap_or_default();
        libc::fwrite(line.as_ptr().cast(), 1, line.len(), stdout);
    }
    0
}
