//! Creating the Lua state of a process, kept small while it is idle.
//!
//! Nothing is opened whole up front. The global table starts with `_G` and
//! `_VERSION` only; base functions, `print` and the standard libraries (and
//! `require`) appear the first time a global of that name is read, through an
//! `__index` on the global table. The string library is a lazily filled
//! table (see [`crate::lazy`]) behind the string metatable, so string methods
//! and string arithmetic work from the start. `require` also finds the
//! standard libraries and Synodic's modules through `package.preload`.
//!
//! Preemption is not set up here: see [`crate::preempt`].

use std::ffi::{c_char, c_int, c_void, CStr};

use mlua_sys as ffi;

use crate::ctx::Ctx;
use crate::heap::{self, Heap};
use crate::lazy;
use crate::util::{push_bytes, raise, to_bytes};

type Opener = ffi::lua_CFunction;

/// Libraries opened on first use: global name, opener.
const LAZY: &[(&CStr, Opener)] = &[
    (c"table", ffi::luaopen_table),
    (c"math", ffi::luaopen_math),
    (c"coroutine", crate::coroutine::open),
    (c"utf8", ffi::luaopen_utf8),
    (c"os", ffi::luaopen_os),
    (c"io", ffi::luaopen_io),
    (c"debug", ffi::luaopen_debug),
    (c"package", open_package),
];

/// Modules `require` finds without a search: Synodic's own.
const NATIVE: &[(&CStr, Opener)] =
    &[
        (c"synodic", crate::kernel::open),
        (c"synodic.chan", crate::chan::open),
        (c"synodic.linda", crate::linda::open),
        (c"synodic.buffer", crate::buffer::open),
        (c"synodic.control", crate::control::open),
    ];

unsafe extern "C-unwind" fn panic_handler(L: *mut ffi::lua_State) -> c_int {
    let msg = to_bytes(L, -1).map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or_default();
    eprintln!("synodic: unprotected Lua error: {msg}");
    std::process::abort()
}

/// A fresh state for a process whose context is `ctx`, allocating from
/// `heap` (both must outlive the state).
pub(crate) unsafe fn new_state(ctx: *mut Ctx, heap: *mut Heap) -> Option<*mut ffi::lua_State> {
    let L = ffi::lua_newstate(heap::lua_alloc, heap.cast());
    if L.is_null() {
        return None;
    }
    ffi::lua_gc(L, ffi::LUA_GCSTOP, 0);
    ffi::lua_atpanic(L, panic_handler);
    ffi::lua_setwarnf(L, Some(warn_off), L.cast());
    *(ffi::lua_getextraspace(L) as *mut *mut Ctx) = ctx;
    let templates = lazy::templates();
    // The global table: empty, filled on demand.
    ffi::lua_rawgeti(L, ffi::LUA_REGISTRYINDEX, ffi::LUA_RIDX_GLOBALS);
    ffi::lua_createtable(L, 0, 1);
    ffi::lua_pushcfunction(L, lazy_global);
    ffi::lua_setfield(L, -2, c"__index".as_ptr());
    ffi::lua_setmetatable(L, -2);
    ffi::luaL_getsubtable(L, ffi::LUA_REGISTRYINDEX, ffi::LUA_LOADED_TABLE);
    ffi::lua_pushvalue(L, -2);
    ffi::lua_setfield(L, -2, c"_G".as_ptr());
    // The string library, filled on demand, behind the string metatable.
    lazy::push_lazy(L, &templates.string);
    ffi::lua_pushvalue(L, -1);
    ffi::lua_setfield(L, -3, c"string".as_ptr());
    ffi::lua_createtable(L, 0, templates.string_meta_len() as c_int + 1);
    templates.string_meta.set_into(L, -1);
    ffi::lua_rotate(L, -2, 1);
    ffi::lua_setfield(L, -2, c"__index".as_ptr());
    push_bytes(L, b"");
    ffi::lua_rotate(L, -2, 1);
    ffi::lua_setmetatable(L, -2);
    ffi::lua_settop(L, 0);
    ffi::lua_gc(L, ffi::LUA_GCRESTART, 0);
    synodic_gc_allowance(L, GC_ALLOWANCE);
    Some(L)
}

/// `warn`, as `luaL_newstate` sets it up (and `lua` without `-W`): off until
/// `warn("@on")`; then each warning is a line on stderr, "Lua warning: "
/// and its pieces.
unsafe extern "C-unwind" fn warn_off(ud: *mut c_void, msg: *const c_char, tocont: c_int) {
    warn_control(ud, msg, tocont);
}

unsafe extern "C-unwind" fn warn_on(ud: *mut c_void, msg: *const c_char, tocont: c_int) {
    if warn_control(ud, msg, tocont) {
        return;
    }
    eprint!("Lua warning: ");
    warn_more(ud, msg, tocont);
}

unsafe extern "C-unwind" fn warn_more(ud: *mut c_void, msg: *const c_char, tocont: c_int) {
    let L = ud as *mut ffi::lua_State;
    eprint!("{}", CStr::from_ptr(msg).to_string_lossy());
    if tocont != 0 {
        ffi::lua_setwarnf(L, Some(warn_more), ud);
    } else {
        eprintln!();
        ffi::lua_setwarnf(L, Some(warn_on), ud);
    }
}

/// Handles "@on" and "@off"; true for a control message.
unsafe fn warn_control(ud: *mut c_void, msg: *const c_char, tocont: c_int) -> bool {
    let text = CStr::from_ptr(msg).to_bytes();
    let Some(control) = text.strip_prefix(b"@").filter(|_| tocont == 0) else { return false };
    let L = ud as *mut ffi::lua_State;
    match control {
        b"off" => ffi::lua_setwarnf(L, Some(warn_off), ud),
        b"on" => ffi::lua_setwarnf(L, Some(warn_on), ud),
        _ => {}
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
    if heap.holds_every_block() && synodic_close_runs_code(L) == 0 {
        return;
    }
    ffi::lua_setallocf(L, crate::heap::lua_alloc_closing, heap as *mut Heap as *mut std::ffi::c_void);
    ffi::lua_close(L)
}

/// `__index` of the global table: installs a base function or opens a
/// standard library on first use.
unsafe extern "C-unwind" fn lazy_global(L: *mut ffi::lua_State) -> c_int {
    if ffi::lua_type(L, 2) != ffi::LUA_TSTRING {
        return 0;
    }
    let Some(name) = to_bytes(L, 2) else { return 0 };
    let base = if name == b"print" { Some(print as ffi::lua_CFunction) } else { lazy::base_function(name) };
    if let Some(f) = base {
        ffi::lua_pushcfunction(L, f);
        ffi::lua_pushvalue(L, 2);
        ffi::lua_pushvalue(L, -2);
        ffi::lua_rawset(L, 1);
        return 1;
    }
    if name == b"_G" || name == b"_VERSION" {
        match name {
            b"_G" => ffi::lua_pushvalue(L, 1),
            _ => drop(ffi::lua_pushstring(L, c"Lua 5.4".as_ptr())),
        }
        ffi::lua_pushvalue(L, 2);
        ffi::lua_pushvalue(L, -2);
        ffi::lua_rawset(L, 1);
        return 1;
    }
    if name == b"string" {
        ffi::lua_getfield(L, ffi::LUA_REGISTRYINDEX, ffi::LUA_LOADED_TABLE);
        ffi::lua_getfield(L, -1, c"string".as_ptr());
        ffi::lua_pushvalue(L, 2);
        ffi::lua_pushvalue(L, -2);
        ffi::lua_rawset(L, 1);
        return 1;
    }
    if name == b"alua" {
        // The agents module, for the main script and every agent (SPEC §3).
        push_module(L, b"synodic.alua").map_or_else(|e| raise(L, e), |()| 1);
        return 1;
    }
    if name == b"require" {
        open_lazy(L, c"package");
        ffi::lua_settop(L, 2);
        ffi::lua_rawget(L, 1);
        return 1;
    }
    match LAZY.iter().find(|(n, _)| n.to_bytes() == name) {
        Some((n, _)) => {
            open_lazy(L, n);
            1
        }
        None => 0,
    }
}

/// Opens a lazily loaded library as a global and pushes it.
unsafe fn open_lazy(L: *mut ffi::lua_State, name: &CStr) {
    let (_, f) = LAZY.iter().find(|(n, _)| *n == name).expect("known lazy library");
    ffi::luaL_requiref(L, name.as_ptr(), *f, 1);
}

/// Pushes the receiver's module `name`: already loaded, a library opened now,
/// or the result of `require(name)`. Errors come back as text, never raised.
pub(crate) unsafe fn push_module(L: *mut ffi::lua_State, name: &[u8]) -> Result<(), String> {
    ffi::lua_getfield(L, ffi::LUA_REGISTRYINDEX, ffi::LUA_LOADED_TABLE);
    push_bytes(L, name);
    ffi::lua_rawget(L, -2);
    if ffi::lua_type(L, -1) == ffi::LUA_TTABLE {
        ffi::lua_rotate(L, -2, 1);
        ffi::lua_settop(L, -2);
        return Ok(());
    }
    ffi::lua_settop(L, -3);
    if name == b"_G" {
        ffi::lua_rawgeti(L, ffi::LUA_REGISTRYINDEX, ffi::LUA_RIDX_GLOBALS);
        return Ok(());
    }
    if let Some((n, _)) = LAZY.iter().find(|(n, _)| n.to_bytes() == name) {
        open_lazy(L, n);
        return Ok(());
    }
    if let Some((n, f)) = NATIVE.iter().find(|(n, _)| n.to_bytes() == name) {
        ffi::luaL_requiref(L, n.as_ptr(), *f, 0);
        return Ok(());
    }
    // Anything else goes through `require`, protected: loading may fail.
    ffi::lua_rawgeti(L, ffi::LUA_REGISTRYINDEX, ffi::LUA_RIDX_GLOBALS);
    ffi::lua_getfield(L, -1, c"require".as_ptr());
    ffi::lua_rotate(L, -2, 1);
    ffi::lua_settop(L, -2);
    push_bytes(L, name);
    if ffi::lua_pcall(L, 1, 1, 0) != ffi::LUA_OK {
        let msg = to_bytes(L, -1).map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or_default();
        ffi::lua_settop(L, -2);
        return Err(msg);
    }
    Ok(())
}

/// Opens `package`, registers Synodic's modules and the standard libraries in
/// `package.preload`, and adds Debian's module directories to the search paths.
unsafe extern "C-unwind" fn open_package(L: *mut ffi::lua_State) -> c_int {
    ffi::luaopen_package(L);
    let package = ffi::lua_gettop(L);
    ffi::lua_getfield(L, package, c"preload".as_ptr());
    for (name, f) in NATIVE.iter().chain(LAZY.iter().filter(|(n, _)| *n != c"package")) {
        ffi::lua_pushcfunction(L, *f);
        ffi::lua_setfield(L, -2, name.as_ptr());
    }
    crate::lualib::register_preloads(L, ffi::lua_gettop(L));
    ffi::lua_settop(L, package);
    let triple = format!("{}-linux-gnu", std::env::consts::ARCH);
    if std::env::var_os("LUA_PATH_5_4").is_none() && std::env::var_os("LUA_PATH").is_none() {
        append_path(L, package, c"path", "/usr/share/lua/5.4/?.lua;/usr/share/lua/5.4/?/init.lua".to_string());
    }
    if std::env::var_os("LUA_CPATH_5_4").is_none() && std::env::var_os("LUA_CPATH").is_none() {
        append_path(L, package, c"cpath", format!("/usr/lib/{triple}/lua/5.4/?.so;/usr/lib/lua/5.4/?.so"));
    }
    1
}

unsafe fn append_path(L: *mut ffi::lua_State, package: c_int, field: &CStr, extra: String) {
    ffi::lua_getfield(L, package, field.as_ptr());
    push_bytes(L, b";");
    push_bytes(L, extra.as_bytes());
    drop(extra);
    ffi::lua_concat(L, 3);
    ffi::lua_setfield(L, package, field.as_ptr());
}

extern "C" {
    static stdout: *mut libc::FILE;
}

/// `print`, writing each line with one call so lines of concurrent processes never interleave.
unsafe extern "C-unwind" fn print(L: *mut ffi::lua_State) -> c_int {
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
    0
}
