//! The `synodic.log.raw` module: the node's log as Lua sees it (the
//! records themselves are `synodic_core::log`'s; `lualib/log.lua` is the
//! `synodic.log` users require, which formats and checks the level first).
//!
//! | function | does |
//! |---|---|
//! | `write(level, text)` | one record from the calling process |
//! | `enabled(level)` | whether a record of `level` would be written |
//! | `level()` / `set_level(level)` | the node's level, by name |

use std::ffi::{c_int, CStr};

use mlua_sys as ffi;
use synodic_core::log::{self, Level};

use crate::vm::ctx::ctx;
use crate::vm::util::{push_bytes, raise, to_bytes, type_name};

pub(crate) const FUNCTIONS: &[(&CStr, ffi::lua_CFunction)] = &[(c"write", write), (c"enabled", enabled), (c"level", level), (c"set_level", set_level)];

crate::vm::lazy::lazy_module!(b"synodic.log.raw");

/// The level named at `idx`, or why not.
unsafe fn level_arg(L: *mut ffi::lua_State, idx: c_int, fname: &str) -> Result<Level, String> {
    // SAFETY: `L` is the running state (lib.rs invariant 1); a read.
    let name = unsafe { to_bytes(L, idx) }.and_then(|b| std::str::from_utf8(b).ok());
    match name.and_then(Level::parse) {
        Some(level) => Ok(level),
        // SAFETY: as above.
        None => Err(format!("bad argument #{idx} to '{fname}' (debug, info, warn, error or none expected, got {})", name.map_or_else(|| unsafe { type_name(L, idx) }.to_string(), |n| format!("'{n}'")))),
    }
}

unsafe extern "C-unwind" fn write(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1), whose context is entered; the text's bytes stay
    // on the stack while used; `raise` drops its message before unwinding.
    unsafe {
        let level = match level_arg(L, 1, "write") {
            Ok(level) => level,
            Err(e) => return raise(L, e),
        };
        let text = String::from_utf8_lossy(to_bytes(L, 2).unwrap_or_default());
        let c = ctx(L);
        log::write(level, &c.rt().node_name(), Some(c.proc().pid()), &text, None);
        0
    }
}

unsafe extern "C-unwind" fn enabled(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: as in `write`.
    unsafe {
        match level_arg(L, 1, "enabled") {
            Ok(level) => {
                ffi::lua_pushboolean(L, log::enabled(level) as c_int);
                1
            }
            Err(e) => raise(L, e),
        }
    }
}

unsafe extern "C-unwind" fn level(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: as in `write`.
    unsafe { push_bytes(L, log::level().name().as_bytes()) };
    1
}

unsafe extern "C-unwind" fn set_level(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: as in `write`.
    unsafe {
        match level_arg(L, 1, "set_level") {
            Ok(level) => {
                log::set_level(level);
                0
            }
            Err(e) => raise(L, e),
        }
    }
}
