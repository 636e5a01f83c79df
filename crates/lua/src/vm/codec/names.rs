//! The names that modules and their functions travel by: reverse maps
//! {module table = name} and {function = "module\0field"}, built on demand
//! in the registry of the state that encodes.

use std::ffi::{c_int, c_void};

use mlua_sys as ffi;

use crate::vm::util::{push_bytes, to_bytes};

use super::*;

/// loaded module, if it is one.
/// The name under which the table at `idx` (whose address is `p`) is a
///
/// Every function here is `unsafe` with the encoder's contract: `L` is a
/// process's state (lib.rs invariant 1) with room for a few values (the
/// encoder's `enter`), and `idx` an absolute stack index.
pub(super) unsafe fn module_name(L: *mut ffi::lua_State, idx: c_int, p: *const c_void) -> Option<Vec<u8>> {
    if let Some(module) = crate::vm::lazy::module_of(L, p) {
        return Some(module.as_bytes().to_vec());
    }
    // SAFETY: the contract.
    unsafe { library_name(L, idx, &MODULE_NAMES, false) }
}

/// `module\0field` for a C function that is a field of a loaded module.
pub(super) unsafe fn function_name(L: *mut ffi::lua_State, idx: c_int) -> Option<Vec<u8>> {
    // SAFETY: the contract; an upvalue pushed is popped at once.
    let plain = unsafe {
        ffi::lua_getupvalue(L, idx, 1).is_null() || {
            ffi::lua_settop(L, -2);
            false
        }
    };
    // SAFETY: the contract.
    if let Some((module, field)) = unsafe { ffi::lua_tocfunction(L, idx) }.filter(|_| plain).and_then(crate::vm::lazy::function_name) {
        return Some([module.as_bytes(), b"\0", field].concat());
    }
    // SAFETY: the contract.
    unsafe { library_name(L, idx, &FUNCTION_NAMES, true) }
}

pub(super) unsafe fn library_name(L: *mut ffi::lua_State, idx: c_int, map: &'static u8, functions: bool) -> Option<Vec<u8>> {
    // SAFETY: the contract; the map pushed (a plain table) is read raw, and
    // it and the name are popped after the name is copied.
    unsafe {
        reverse_map(L, map, functions);
        ffi::lua_pushvalue(L, idx);
        ffi::lua_rawget(L, -2);
        let name = to_bytes(L, -1).map(<[u8]>::to_vec);
        ffi::lua_settop(L, -3);
        name
    }
}

/// Pushes the reverse map stored under `key`, building it from the loaded
/// modules if needed (the library tables' own entries are known without it:
/// see `lazy`). A module loaded since drops both maps (`ctx.modules_changed`).
/// The walk leaves lazy tables' entries unmade.
pub(super) unsafe fn reverse_map(L: *mut ffi::lua_State, key: &'static u8, functions: bool) {
    // SAFETY: the contract: a process's state, with a context (borrowed for
    // the statement only).
    if std::mem::take(&mut unsafe { crate::vm::ctx::ctx(L) }.modules_changed) {
        for k in [&MODULE_NAMES, &FUNCTION_NAMES] {
            // SAFETY: the contract; the registry is a plain table.
            unsafe {
                ffi::lua_pushnil(L);
                ffi::lua_rawsetp(L, ffi::LUA_REGISTRYINDEX, key_of(k));
            }
        }
    }
    // SAFETY: the contract.
    if unsafe { ffi::lua_rawgetp(L, ffi::LUA_REGISTRYINDEX, key_of(key)) } == ffi::LUA_TTABLE {
        return;
    }
    // The map is built at `loaded - 1` from raw walks (`synodic_next_raw`
    // leaves lazy tables unmade) of `package.loaded` (at `loaded`) and, for
    // functions, of each module table (at `v`): a key at `k`/`fk` with its
    // value above, cut back to the key for the next step.
    // SAFETY: the contract; only string keys are read as bytes (no
    // conversion, so the walks go on), and every value concatenated is a
    // string. Then the map is stored and left pushed.
    unsafe {
        ffi::lua_settop(L, -2);
        ffi::lua_createtable(L, 0, 16);
        ffi::lua_getfield(L, ffi::LUA_REGISTRYINDEX, ffi::LUA_LOADED_TABLE);
        let loaded = ffi::lua_gettop(L);
        ffi::lua_pushnil(L);
        while crate::vm::lazy::synodic_next_raw(L, loaded) != 0 {
            let (k, v) = (loaded + 1, loaded + 2);
            if ffi::lua_type(L, k) == ffi::LUA_TSTRING && ffi::lua_type(L, v) == ffi::LUA_TTABLE {
                if functions {
                    let bundled = crate::vm::bundled::is_bundled(to_bytes(L, k).unwrap_or_default());
                    ffi::lua_pushnil(L);
                    while crate::vm::lazy::synodic_next_raw(L, v) != 0 {
                        let (fk, fv) = (v + 1, v + 2);
                        let named = ffi::lua_iscfunction(L, fv) != 0 || (bundled && crate::vm::shared::is_shared_function(L, fv));
                        if named && ffi::lua_type(L, fk) == ffi::LUA_TSTRING {
                            ffi::lua_pushvalue(L, fv);
                            ffi::lua_pushvalue(L, k);
                            push_bytes(L, b"\0");
                            ffi::lua_pushvalue(L, fk);
                            ffi::lua_concat(L, 3);
                            ffi::lua_rawset(L, loaded - 1);
                        }
                        ffi::lua_settop(L, fk);
                    }
                } else {
                    ffi::lua_pushvalue(L, v);
                    ffi::lua_pushvalue(L, k);
                    ffi::lua_rawset(L, loaded - 1);
                }
            }
            ffi::lua_settop(L, k);
        }
        ffi::lua_settop(L, loaded - 1);
        ffi::lua_pushvalue(L, -1);
        ffi::lua_rawsetp(L, ffi::LUA_REGISTRYINDEX, key_of(key));
    }
}

