//! The Lua modules bundled into the binary from `lualib/`: policy written in
//! Lua on top of the native primitives. `require` finds them through
//! `package.preload`; their chunk names point at their source files, so
//! tracebacks read naturally. A module is compiled once per node: the
//! first process to load it keeps its bytecode (with line information,
//! but see `BUNDLED`) for the others, which load that instead of parsing
//! the source (about 75 µs a module otherwise, in every new process that
//! uses an entity or agent).

use std::ffi::{c_int, CStr};
use std::sync::OnceLock;

use mlua_sys as ffi;

use crate::util::{push_bytes, raise, to_bytes};

/// (module name, chunk name, source, whether its bytecode drops debug
/// information). Only the entity loop is stripped: every entity's state
/// holds it, and without names and line numbers it takes 7 KB there
/// instead of 12 (its frames are cut from the tracebacks it reports).
const BUNDLED: &[(&CStr, &CStr, &str, bool)] = &[
    (c"synodic.alua", c"@lualib/alua.lua", include_str!("../../../lualib/alua.lua"), false),
    (c"synodic.console", c"@lualib/console.lua", include_str!("../../../lualib/console.lua"), false),
    (c"synodic.entity", c"@lualib/entity.lua", include_str!("../../../lualib/entity.lua"), false),
    (c"synodic.entity.loop", c"@lualib/entity_loop.lua", include_str!("../../../lualib/entity_loop.lua"), true),
    (c"synodic.future", c"@lualib/future.lua", include_str!("../../../lualib/future.lua"), false),
    (c"synodic.skel", c"@lualib/skel.lua", include_str!("../../../lualib/skel.lua"), false),
];

/// The bytecode of each bundled module, once compiled.
static COMPILED: [OnceLock<Vec<u8>>; BUNDLED.len()] = [const { OnceLock::new() }; BUNDLED.len()];

/// Adds a loader for every bundled module to the `package.preload` table at `preload`.
pub(crate) unsafe fn register_preloads(L: *mut ffi::lua_State, preload: c_int) {
    for (name, _, _, _) in BUNDLED {
        push_loader(L, name.to_bytes());
        ffi::lua_setfield(L, preload, name.as_ptr());
    }
}

/// Pushes the loader of the bundled module `name`; false (nothing pushed)
/// if there is none.
pub(crate) unsafe fn push_loader(L: *mut ffi::lua_State, name: &[u8]) -> bool {
    let Some(i) = BUNDLED.iter().position(|(n, _, _, _)| n.to_bytes() == name) else { return false };
    ffi::lua_pushinteger(L, i as ffi::lua_Integer);
    ffi::lua_pushcclosure(L, load_bundled, 1);
    true
}

/// A `package.preload` loader: runs the bundled source, passing the module name.
unsafe extern "C-unwind" fn load_bundled(L: *mut ffi::lua_State) -> c_int {
    let i = ffi::lua_tointegerx(L, ffi::lua_upvalueindex(1), std::ptr::null_mut()) as usize;
    let (name, chunk, source, strip) = BUNDLED[i];
    if let Some(code) = COMPILED[i].get() {
        if ffi::luaL_loadbufferx(L, code.as_ptr().cast(), code.len(), chunk.as_ptr(), c"b".as_ptr()) == ffi::LUA_OK {
            push_bytes(L, name.to_bytes());
            ffi::lua_call(L, 1, 1);
            return 1;
        }
        ffi::lua_settop(L, -2);
    }
    if ffi::luaL_loadbufferx(L, source.as_ptr().cast(), source.len(), chunk.as_ptr(), c"t".as_ptr()) != ffi::LUA_OK {
        let why = to_bytes(L, -1).map(String::from_utf8_lossy).unwrap_or_default();
        let msg = format!("bundled module {}: {why}", name.to_string_lossy());
        drop(why);
        return raise(L, msg);
    }
    let mut code = Vec::new();
    if ffi::lua_dump(L, crate::dumps::writer, (&mut code as *mut Vec<u8>).cast(), strip as c_int) == 0 {
        let _ = COMPILED[i].set(code);
    }
    push_bytes(L, name.to_bytes());
    ffi::lua_call(L, 1, 1);
    1
}
