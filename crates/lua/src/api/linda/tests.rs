//! The linda module's unit tests, one file per part of the module:
//! `pattern.rs` (Lua values as fields, templates and tuples; `where`
//! predicates), `place.rs` (where a handle's space lives, and what a
//! method does with a handle that is lost or not a handle), `local.rs` (the
//! methods on a space of this node, probing and blocking). The helpers
//! here run Lua code and the module's Rust functions on one state.

mod local;
mod pattern;
mod place;

use std::ffi::c_int;

use mlua_sys as ffi;

use crate::vm::codec::tests::TestState;

/// Leaves on `L`'s stack (emptied first), from slot 1, the values that Lua
/// `code` returns; returns how many. `linda` is the module, as a global.
fn values(L: *mut ffi::lua_State, code: &str) -> c_int {
    let code = format!("linda = require('synodic.linda') {code}");
    // SAFETY: `L` is a test's live state; the chunk runs protected.
    unsafe {
        ffi::lua_settop(L, 0);
        assert_eq!(ffi::luaL_loadbufferx(L, code.as_ptr().cast(), code.len(), c"=values".as_ptr(), c"t".as_ptr()), ffi::LUA_OK, "{code}");
        if ffi::lua_pcall(L, 0, ffi::LUA_MULTRET, 0) != ffi::LUA_OK {
            panic!("{}\nin: {code}", crate::vm::util::pop_error(L));
        }
        ffi::lua_gettop(L)
    }
}

/// A process-less state (no runtime) with the linda module loaded.
fn state() -> TestState {
    let st = TestState::new();
    values(st.L, "return true");
    st
}
