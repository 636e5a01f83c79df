//! `synodic.http.raw`: the native half of `synodic.http` (SPEC §10): the
//! heads of HTTP/1.x requests and responses parsed by `httparse`, a
//! well-kept parser, so that the Lua side (`lualib/http.lua`: connections,
//! bodies, keep-alive, limits) never parses a head by pattern.
//!
//! `parse_request(buf, from)` and `parse_response(buf, from)` look at
//! `buf` from byte `from` (1-based; pipelined requests follow each other
//! in one buffer) and return:
//! - `nil` when the head is not complete yet;
//! - `false, why` when it is malformed (`why` names what), or has more
//!   than `MAX_HEADERS` header lines (`"too many headers"`);
//! - for a request: the index after the head, the method, the target
//!   (path and query as sent), the minor version (0 or 1), and a table of
//!   headers by lower-case name (repeated ones joined with `", "`);
//! - for a response: the index after the head, the status, the reason,
//!   the minor version and the headers.

use std::ffi::{c_int, CStr};

use mlua_sys as ffi;

use crate::vm::util::*;

/// Header lines a head may have (more: `"too many headers"`, a 431).
const MAX_HEADERS: usize = 100;

pub(crate) const FUNCTIONS: &[(&CStr, ffi::lua_CFunction)] = &[(c"parse_request", parse_request), (c"parse_response", parse_response)];

crate::vm::lazy::lazy_module!(b"synodic.http.raw");

/// The buffer at 1 from the index at 2 (1-based), with that offset (0-based),
/// or the error to raise.
unsafe fn input<'a>(L: *mut ffi::lua_State, fname: &str) -> Result<(&'a [u8], usize), String> {
    // SAFETY: `L` is the running state (lib.rs invariant 1); the bytes
    // live while the string stays at 1.
    unsafe {
        let Some(buf) = (ffi::lua_type(L, 1) == ffi::LUA_TSTRING).then(|| to_bytes(L, 1)).flatten() else {
            return Err(format!("bad argument #1 to '{fname}' (string expected, got {})", type_name(L, 1)));
        };
        let from = (ffi::luaL_optinteger(L, 2, 1).max(1) as usize - 1).min(buf.len());
        Ok((&buf[from..], from))
    }
}

/// Pushes the headers as a table by lower-case name.
unsafe fn push_headers(L: *mut ffi::lua_State, headers: &[httparse::Header<'_>]) {
    // SAFETY: `L` is the running state with room (the caller's); the table
    // is at -1 while each value is built above it. NOT KEPT: a memory
    // error unwinds over `lower` (a leak).
    unsafe {
        ffi::lua_createtable(L, 0, headers.len() as c_int);
        let mut lower = Vec::with_capacity(32);
        for h in headers {
            lower.clear();
            lower.extend(h.name.bytes().map(|b| b.to_ascii_lowercase()));
            ffi::lua_pushlstring(L, lower.as_ptr().cast(), lower.len());
            ffi::lua_pushvalue(L, -1);
            if ffi::lua_rawget(L, -3) == ffi::LUA_TSTRING {
                // Repeated: joined as HTTP allows.
                ffi::lua_pushstring(L, c", ".as_ptr());
                ffi::lua_pushlstring(L, h.value.as_ptr().cast(), h.value.len());
                ffi::lua_concat(L, 3);
            } else {
                ffi::lua_pop(L, 1);
                ffi::lua_pushlstring(L, h.value.as_ptr().cast(), h.value.len());
            }
            ffi::lua_rawset(L, -3);
        }
    }
}

/// Pushes `nil` (partial) or `false, why`.
unsafe fn not_parsed(L: *mut ffi::lua_State, e: Option<httparse::Error>) -> c_int {
    // SAFETY: `L` is the running state in a native function.
    unsafe {
        match e {
            None => {
                ffi::lua_pushnil(L);
                1
            }
            Some(e) => {
                ffi::lua_pushboolean(L, 0);
                let why = match e {
                    httparse::Error::TooManyHeaders => "too many headers".to_string(),
                    e => format!("malformed head: {e}"),
                };
                push_bytes(L, why.as_bytes());
                2
            }
        }
    }
}

/// Pushes what a parse came to: the index after the head and what
/// `push_head` pushes (4 values), or `nil` / `false, why`.
unsafe fn parsed(L: *mut ffi::lua_State, result: httparse::Result<usize>, from: usize, push_head: impl FnOnce()) -> c_int {
    // SAFETY: `L` is the running state in a native function, with room
    // for the results.
    unsafe {
        match result {
            Ok(httparse::Status::Complete(n)) => {
                ffi::lua_pushinteger(L, (from + n + 1) as ffi::lua_Integer);
                push_head();
                5
            }
            Ok(httparse::Status::Partial) => not_parsed(L, None),
            Err(e) => not_parsed(L, Some(e)),
        }
    }
}

unsafe extern "C-unwind" fn parse_request(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this with its running state; what is parsed
    // borrows the string at 1, which stays on the stack; nothing owned
    // lives here when `raise` unwinds.
    unsafe {
        let (buf, from) = match input(L, "parse_request") {
            Ok(b) => b,
            Err(e) => return raise(L, e),
        };
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut req = httparse::Request::new(&mut headers);
        let result = req.parse(buf);
        parsed(L, result, from, || {
            push_bytes(L, req.method.unwrap_or_default().as_bytes());
            push_bytes(L, req.path.unwrap_or_default().as_bytes());
            ffi::lua_pushinteger(L, req.version.unwrap_or(1) as ffi::lua_Integer);
            push_headers(L, req.headers);
        })
    }
}

unsafe extern "C-unwind" fn parse_response(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: as in `parse_request`.
    unsafe {
        let (buf, from) = match input(L, "parse_response") {
            Ok(b) => b,
            Err(e) => return raise(L, e),
        };
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut res = httparse::Response::new(&mut headers);
        let result = res.parse(buf);
        parsed(L, result, from, || {
            ffi::lua_pushinteger(L, res.code.unwrap_or(0) as ffi::lua_Integer);
            push_bytes(L, res.reason.unwrap_or_default().as_bytes());
            ffi::lua_pushinteger(L, res.version.unwrap_or(1) as ffi::lua_Integer);
            push_headers(L, res.headers);
        })
    }
}
