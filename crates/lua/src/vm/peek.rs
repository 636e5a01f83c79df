//! One-call reads of plain stack values (`csrc/peek.c`): the kind of the
//! value at an index and its contents, where Lua's API needs two or three
//! calls that each resolve the index again (and of tables and functions,
//! for the encoder: [`object`]). The codec's short path and the
//! argument checks on every send and receive use it; anything that is not a
//! plain value on the stack comes back as [`Plain::Other`] and is read
//! through the API as before.

use std::ffi::{c_int, c_void};

use mlua_sys as ffi;

/// Mirrors `SynodicValue` in `csrc/peek.c`.
#[repr(C)]
struct Raw {
    i: ffi::lua_Integer,
    n: ffi::lua_Number,
    p: *const c_void,
    len: usize,
}

extern "C" {
    fn synodic_peek(L: *mut ffi::lua_State, idx: c_int, out: *mut Raw) -> c_int;
    fn synodic_upvalue_count(L: *mut ffi::lua_State, idx: c_int) -> c_int;
    fn synodic_object(L: *mut ffi::lua_State, idx: c_int, p: *mut *const c_void) -> c_int;
}

/// How many upvalues the Lua function at stack index `idx` (not a
/// pseudo-index) has; 0 for anything else.
///
/// # Safety
/// `L` must be a valid state.
pub(crate) unsafe fn upvalue_count(L: *mut ffi::lua_State, idx: c_int) -> c_int {
    // SAFETY: `L` is valid (the contract); the C side checks `idx` is a stack slot.
    unsafe { synodic_upvalue_count(L, idx) }
}

/// A stack value as the short paths see it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Plain<'a> {
    /// A table, function, userdata, thread, or an index that is not a stack slot.
    Other,
    Nil,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(&'a [u8]),
    Light(*mut c_void),
}

/// The value at stack index `idx` (positive or negative; not a pseudo-index).
///
/// # Safety
/// `L` must be a valid state; a string's bytes live while it stays on the stack.
#[inline]
pub(crate) unsafe fn peek<'a>(L: *mut ffi::lua_State, idx: c_int) -> Plain<'a> {
    let mut raw = Raw { i: 0, n: 0.0, p: std::ptr::null(), len: 0 };
    // Keep in step with the kinds in `csrc/peek.c`.
    // SAFETY: `L` is valid (the contract); the C side checks `idx` is a
    // stack slot and writes only `raw`.
    match unsafe { synodic_peek(L, idx, &mut raw) } {
        1 => Plain::Nil,
        2 => Plain::Bool(false),
        3 => Plain::Bool(true),
        4 => Plain::Int(raw.i),
        5 => Plain::Float(raw.n),
        // SAFETY: kind 6 sets `p`/`len` to a string's bytes, which live
        // while it stays on the stack (the caller's part of the contract).
        6 => Plain::Str(unsafe { std::slice::from_raw_parts(raw.p.cast(), raw.len) }),
        7 => Plain::Light(raw.p.cast_mut()),
        _ => Plain::Other,
    }
}

/// A table or function on the stack as the encoder sees it, with its
/// address (what `lua_topointer` gives).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Object {
    /// Anything else, or an index that is not a stack slot.
    Other,
    Table(*const c_void),
    /// The state's global table.
    Globals,
    LuaFunction(*const c_void),
    /// A light C function or a C closure.
    CFunction,
}

/// The table or function at stack index `idx` (not a pseudo-index).
///
/// # Safety
/// `L` must be a valid state.
#[inline]
pub(crate) unsafe fn object(L: *mut ffi::lua_State, idx: c_int) -> Object {
    let mut p = std::ptr::null();
    // Keep in step with the kinds in `csrc/peek.c`.
    // SAFETY: `L` is valid (the contract); the C side checks `idx` is a
    // stack slot and writes only `p`.
    match unsafe { synodic_object(L, idx, &mut p) } {
        1 => Object::Table(p),
        2 => Object::Globals,
        3 => Object::LuaFunction(p),
        4 => Object::CFunction,
        _ => Object::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_plain_kind_is_seen_as_the_api_sees_it() {
        // SAFETY: `L` is a state this test makes, uses on this thread and closes.
        unsafe {
            let L = ffi::luaL_newstate();
            ffi::lua_pushnil(L);
            ffi::lua_pushboolean(L, 0);
            ffi::lua_pushboolean(L, 1);
            ffi::lua_pushinteger(L, -7);
            ffi::lua_pushnumber(L, 7.0);
            ffi::lua_pushlstring(L, b"a\0b".as_ptr().cast(), 3);
            ffi::lua_pushlightuserdata(L, 0x1234 as *mut c_void);
            ffi::lua_createtable(L, 0, 0);
            let long = "x".repeat(100);
            ffi::lua_pushlstring(L, long.as_ptr().cast(), long.len());
            assert_eq!(peek(L, 1), Plain::Nil);
            assert_eq!(peek(L, 2), Plain::Bool(false));
            assert_eq!(peek(L, 3), Plain::Bool(true));
            assert_eq!(peek(L, 4), Plain::Int(-7));
            assert_eq!(peek(L, 5), Plain::Float(7.0), "a float stays a float");
            assert_eq!(peek(L, 6), Plain::Str(b"a\0b"));
            assert_eq!(peek(L, 7), Plain::Light(0x1234 as *mut c_void));
            assert_eq!(peek(L, 8), Plain::Other);
            assert_eq!(peek(L, 9), Plain::Str(long.as_bytes()), "long strings too");
            assert_eq!(peek(L, -1), peek(L, 9));
            assert_eq!(peek(L, -9), Plain::Nil);
            assert_eq!(peek(L, 10), Plain::Other, "above the top");
            assert_eq!(peek(L, -10), Plain::Other, "below the bottom");
            assert_eq!(peek(L, 0), Plain::Other);
            assert_eq!(peek(L, ffi::LUA_REGISTRYINDEX), Plain::Other, "pseudo-indices go through the API");
            ffi::lua_close(L);
        }
    }

    #[test]
    fn tables_and_functions_are_seen_with_their_addresses() {
        // SAFETY: `L` is a state this test makes, uses on this thread and closes.
        unsafe {
            let L = ffi::luaL_newstate();
            ffi::luaL_openlibs(L);
            ffi::lua_createtable(L, 0, 0);
            ffi::lua_rawgeti(L, ffi::LUA_REGISTRYINDEX, ffi::LUA_RIDX_GLOBALS);
            assert_eq!(ffi::luaL_loadstring(L, c"return 1".as_ptr()), 0);
            ffi::lua_getglobal(L, c"print".as_ptr());
            ffi::lua_pushinteger(L, 1);
            assert_eq!(object(L, 1), Object::Table(ffi::lua_topointer(L, 1)));
            assert_eq!(object(L, 2), Object::Globals);
            assert_eq!(object(L, 3), Object::LuaFunction(ffi::lua_topointer(L, 3)));
            assert_eq!(object(L, 4), Object::CFunction);
            assert_eq!(object(L, 5), Object::Other);
            assert_eq!(object(L, -5), object(L, 1));
            assert_eq!(object(L, 6), Object::Other, "above the top");
            assert_eq!(object(L, ffi::LUA_REGISTRYINDEX), Object::Other, "pseudo-indices go through the API");
            // Code with the debug library may take the globals out of the registry.
            for slot in [ffi::LUA_RIDX_GLOBALS, ffi::LUA_RIDX_MAINTHREAD] {
                ffi::lua_pushnil(L);
                ffi::lua_rawseti(L, ffi::LUA_REGISTRYINDEX, slot);
            }
            ffi::lua_gc(L, ffi::LUA_GCCOLLECT, 0);
            assert_eq!(object(L, 2), Object::Table(ffi::lua_topointer(L, 2)), "no longer the globals");
            ffi::lua_close(L);
        }
    }
}
