//! The Lua modules bundled into the binary from `lualib/` (listed in the
//! registry, `vm::module::bundled`): policy written in Lua on top of the
//! native primitives. `require` finds them through
//! `package.preload`; their chunk names point at their source files, so
//! tracebacks read naturally. A module is compiled once per node, into the
//! code every process shares (see [`crate::vm::shared`]): loading it in a
//! process makes a closure of its main chunk and runs it, with no parse
//! (about 75 µs a module) and no copy of its code; loading a frozen one
//! makes a table of the node's functions (see [`crate::vm::shared`]).

use std::ffi::c_int;

use mlua_sys as ffi;

use crate::vm::module::bundled;
use crate::vm::util::{push_bytes, raise};

/// The index among the bundled modules of the one called `name`, if bundled.
pub(crate) fn index_of(name: &[u8]) -> Option<usize> {
    bundled().iter().position(|b| b.name.to_bytes() == name)
}

/// Whether `name` is a bundled module's.
pub(crate) fn is_bundled(name: &[u8]) -> bool {
    index_of(name).is_some()
}

/// Adds a loader for every bundled module to the `package.preload` table at `preload`.
pub(crate) unsafe fn register_preloads(L: *mut ffi::lua_State, preload: c_int) {
    for b in bundled() {
        // SAFETY: `L` is a process's state (lib.rs invariant 1) and
        // `preload` the index of a table (the caller's); `push_loader`
        // pushes a loader for every bundled name, which `lua_setfield` pops.
        unsafe {
            push_loader(L, b.name.to_bytes());
            ffi::lua_setfield(L, preload, b.name.as_ptr());
        }
    }
}

/// Pushes the loader of the bundled module `name`; false (nothing pushed)
/// if there is none.
pub(crate) unsafe fn push_loader(L: *mut ffi::lua_State, name: &[u8]) -> bool {
    let Some(i) = index_of(name) else { return false };
    // SAFETY: `L` is a process's state (lib.rs invariant 1); the closure
    // takes the integer just pushed as its one upvalue.
    unsafe {
        ffi::lua_pushinteger(L, i as ffi::lua_Integer);
        ffi::lua_pushcclosure(L, load_bundled, 1);
    }
    true
}

/// A `package.preload` loader: runs the bundled module, passing its name
/// (or, for a frozen module, makes its table of the node's functions).
unsafe extern "C-unwind" fn load_bundled(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this closure (made by `push_loader`) with its
    // running state `L` (lib.rs invariant 1); upvalue 1 is the module's index.
    let i = unsafe { ffi::lua_tointegerx(L, ffi::lua_upvalueindex(1), std::ptr::null_mut()) } as usize;
    // SAFETY: as above; `i` is an index among the bundled modules (checked
    // again by the callee's indexing).
    if unsafe { crate::vm::shared::push_frozen_module(L, i) } {
        return 1;
    }
    let name = bundled()[i].name;
    // SAFETY: as above; `raise` drops the message it is given before
    // unwinding.
    if let Err(why) = unsafe { crate::vm::shared::push_module_chunk(L, i) } {
        return unsafe { raise(L, format!("bundled module {}: {why}", name.to_string_lossy())) };
    }
    // SAFETY: as above; the chunk is on top, and the call's errors unwind
    // through this frame, which owns nothing (`name` is static), as
    // `require` of the module would.
    unsafe {
        push_bytes(L, name.to_bytes());
        ffi::lua_call(L, 1, 1);
    }
    1
}
