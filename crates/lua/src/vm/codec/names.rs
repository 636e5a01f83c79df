//! The names that modules and their functions travel by: reverse maps
//! {module table = name} and {function = "module\0field"}, built on demand
//! in the registry of the state that encodes.

use std::collections::HashSet;
use std::ffi::{c_int, c_void};

use mlua_sys as ffi;
use synodic_core::hash::FastBuild;

use crate::vm::util::{push_bytes, to_bytes};

use super::*;

/// A name a module or a module's function travels by: its module and its
/// field (empty for a module), as the names' owners keep them where they
/// can (no allocation on the way), or `module\0field` as a reverse map
/// holds it.
pub(super) enum Name {
    Parts(&'static [u8], &'static [u8]),
    Joined(Vec<u8>),
}

impl Name {
    /// The module's name and the field's.
    pub(super) fn parts(&self) -> (&[u8], &[u8]) {
        match self {
            Name::Parts(module, field) => (module, field),
            Name::Joined(name) => {
                let (module, field) = name.split_at(name.iter().position(|&b| b == 0).unwrap_or(name.len()));
                (module, field.get(1..).unwrap_or_default())
            }
        }
    }
}

/// The name under which the table at `idx` (whose address is `p`) is a
/// loaded module, if it is one.
///
/// Every function here is `unsafe` with the encoder's contract: `L` is a
/// process's state (lib.rs invariant 1) with room for a few values (the
/// encoder's `enter`), and `idx` an absolute stack index.
pub(super) unsafe fn module_name(L: *mut ffi::lua_State, idx: c_int, p: *const c_void) -> Option<Name> {
    if let Some(module) = crate::vm::lazy::module_of(L, p) {
        return Some(Name::Parts(module.as_bytes(), b""));
    }
    // SAFETY: the contract.
    if unsafe { in_no_map(L, p) } {
        return None;
    }
    // SAFETY: the contract.
    unsafe { library_name(L, idx, &MODULE_NAMES, false) }.map(Name::Joined)
}

/// Whether the table whose address is `p` is surely no module, lazy or
/// loaded (false: it may be one).
pub(super) unsafe fn surely_plain(L: *mut ffi::lua_State, p: *const c_void) -> bool {
    // SAFETY: the contract.
    crate::vm::lazy::module_of(L, p).is_none() && unsafe { in_no_map(L, p) }
}

/// Whether the table whose address is `p` is in no map of loaded modules.
/// Most tables sent are not modules: the addresses of the reverse map's
/// tables answer that without a lookup in the map (they are the map's keys,
/// so none of them can be collected and its address reused while the map
/// stands; both go when a module is loaded). False when the maps are not
/// made, or stale.
unsafe fn in_no_map(L: *mut ffi::lua_State, p: *const c_void) -> bool {
    // SAFETY: the contract: a process's state, with a context (borrowed
    // for the test only).
    let ctx = unsafe { crate::vm::ctx::ctx(L) };
    let tables = ctx.sent.as_ref().and_then(|s| s.module_tables.as_ref());
    !ctx.modules_changed && tables.is_some_and(|tables| !tables.contains(&p))
}

/// The name of a C function that is a field of a loaded module.
pub(super) unsafe fn function_name(L: *mut ffi::lua_State, idx: c_int) -> Option<Name> {
    // SAFETY: the contract; an upvalue pushed is popped at once.
    let plain = unsafe {
        ffi::lua_getupvalue(L, idx, 1).is_null() || {
            ffi::lua_settop(L, -2);
            false
        }
    };
    // SAFETY: the contract.
    if let Some((module, field)) = unsafe { ffi::lua_tocfunction(L, idx) }.filter(|_| plain).and_then(crate::vm::lazy::function_name) {
        return Some(Name::Parts(module.as_bytes(), field));
    }
    // SAFETY: the contract.
    unsafe { library_name(L, idx, &FUNCTION_NAMES, true) }.map(Name::Joined)
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
    let changed = {
        // SAFETY: the contract: a process's state, with a context (borrowed
        // for this block only).
        let ctx = unsafe { crate::vm::ctx::ctx(L) };
        if let Some(sent) = ctx.sent.as_mut().filter(|_| ctx.modules_changed) {
            sent.module_tables = None;
            // SAFETY: the contract.
            unsafe { super::memo::forget(L, &mut sent.spawns) };
        }
        std::mem::take(&mut ctx.modules_changed)
    };
    if changed {
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
    let mut tables: HashSet<*const c_void, FastBuild> = HashSet::default();
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
                    tables.insert(ffi::lua_topointer(L, v));
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
    if !functions {
        // SAFETY: as above (the context, for the statement only).
        unsafe { crate::vm::ctx::ctx(L) }.sent.get_or_insert_with(Default::default).module_tables = Some(tables);
    }
}

