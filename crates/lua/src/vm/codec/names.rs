//! The names that modules and their functions travel by: reverse maps
//! {module table = name} and {function = "module\0field"}, built on demand
//! in the registry of the state that encodes.

use std::ffi::{c_int, c_void};

use mlua_sys as ffi;

use crate::vm::util::{push_bytes, to_bytes};

use super::*;

/// loaded module, if it is one.
/// The name under which the table at `idx` (whose address is `p`) is a
pub(super) unsafe fn module_name(L: *mut ffi::lua_State, idx: c_int, p: *const c_void) -> Option<Vec<u8>> {
    if let Some(module) = crate::vm::lazy::module_of(L, p) {
        return Some(module.as_bytes().to_vec());
    }
    library_name(L, idx, &MODULE_NAMES, false)
}

/// `module\0field` for a C function that is a field of a loaded module.
pub(super) unsafe fn function_name(L: *mut ffi::lua_State, idx: c_int) -> Option<Vec<u8>> {
    let plain = ffi::lua_getupvalue(L, idx, 1).is_null() || {
        ffi::lua_settop(L, -2);
        false
    };
    if let Some((module, field)) = ffi::lua_tocfunction(L, idx).filter(|_| plain).and_then(crate::vm::lazy::function_name) {
        return Some([module.as_bytes(), b"\0", field].concat());
    }
    library_name(L, idx, &FUNCTION_NAMES, true)
}

pub(super) unsafe fn library_name(L: *mut ffi::lua_State, idx: c_int, map: &'static u8, functions: bool) -> Option<Vec<u8>> {
    reverse_map(L, map, functions);
    ffi::lua_pushvalue(L, idx);
    ffi::lua_rawget(L, -2);
    let name = to_bytes(L, -1).map(<[u8]>::to_vec);
    ffi::lua_settop(L, -3);
    name
}

/// Pushes the reverse map stored under `key`, building it from the loaded
/// modules if needed (the library tables' own entries are known without it:
/// see `lazy`). A module loaded since drops both maps (`ctx.modules_changed`).
/// The walk leaves lazy tables' entries unmade.
pub(super) unsafe fn reverse_map(L: *mut ffi::lua_State, key: &'static u8, functions: bool) {
    if std::mem::take(&mut crate::vm::ctx::ctx(L).modules_changed) {
        for k in [&MODULE_NAMES, &FUNCTION_NAMES] {
            ffi::lua_pushnil(L);
            ffi::lua_rawsetp(L, ffi::LUA_REGISTRYINDEX, key_of(k));
        }
    }
    if ffi::lua_rawgetp(L, ffi::LUA_REGISTRYINDEX, key_of(key)) == ffi::LUA_TTABLE {
        return;
    }
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

