//! `synodic.socket.raw`: the native half of `synodic.socket` (SPEC §10).
//! Sockets are non-blocking system calls on a userdata that owns the
//! descriptor; a call that would block says so (`false`), and the process
//! then waits for its socket with `wait` (`wait.rs`), which parks only the
//! process: the node's netpoller (`synodic_core::io`) wakes it. LuaSocket's
//! API (patterns, buffering, timeouts) is Lua, in `lualib/socket.lua`,
//! over these calls (`calls.rs`).
//!
//! A socket belongs to the process that made it: it is closed when that
//! process's state closes (its finalizer), or by `close`; closing tells
//! whoever waits on it (`Runtime::forget_socket`).

mod calls;
mod resolve;
mod wait;

use std::ffi::{c_int, CStr};
use std::os::fd::{AsRawFd, RawFd};

use mlua_sys as ffi;
use socket2::Socket;
use synodic_core::Runtime;

use crate::vm::ctx::ctx;
use crate::vm::util::*;

pub(crate) const FUNCTIONS: &[(&CStr, ffi::lua_CFunction)] = &[
    (c"socket", calls::socket),
    (c"connect", calls::connect),
    (c"connected", calls::connected),
    (c"bind", calls::bind),
    (c"listen", calls::listen),
    (c"accept", calls::accept),
    (c"recv", calls::recv),
    (c"send", calls::send),
    (c"sendto", calls::sendto),
    (c"recvfrom", calls::recvfrom),
    (c"shutdown", calls::shutdown),
    (c"sockname", calls::sockname),
    (c"peername", calls::peername),
    (c"setoption", calls::setoption),
    (c"close", close),
    (c"isclosed", isclosed),
    (c"wait", wait::wait),
    (c"resolve", resolve::resolve),
    (c"gettime", calls::gettime),
];

/// The userdata's metatable.
const CLASS: &CStr = c"synodic.socket";

/// A socket userdata: the socket (none once closed) and the runtime whose
/// netpoller may have processes waiting on it.
pub(crate) struct Sock {
    socket: Option<Socket>,
    rt: Runtime,
    pub(crate) udp: bool,
}

impl Sock {
    fn fd(&self) -> Option<RawFd> {
        self.socket.as_ref().map(|s| s.as_raw_fd())
    }

    /// Closes the socket: its waiters are told first (a closed descriptor
    /// number may be reused at once).
    fn close(&mut self) {
        if let Some(socket) = self.socket.take() {
            self.rt.forget_socket(socket.as_raw_fd());
        }
    }
}

pub unsafe extern "C-unwind" fn open(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this opener with a process's running state `L`
    // (lib.rs invariant 1); the module table is at -2 while each field is
    // set in it.
    unsafe {
        ffi::lua_createtable(L, 0, FUNCTIONS.len() as c_int);
        for (name, f) in FUNCTIONS {
            ffi::lua_pushcfunction(L, *f);
            ffi::lua_setfield(L, -2, name.as_ptr());
        }
    }
    1
}

/// Pushes a new socket userdata owning `socket`.
pub(crate) unsafe fn push_sock(L: *mut ffi::lua_State, socket: Socket, udp: bool) {
    // SAFETY: `L` is the running process's state (lib.rs invariant 1) with
    // its context; the userdata's block is fresh, sized and aligned for a
    // `Sock` (Lua aligns userdata for any C type), and written before Lua
    // can see it; its finalizer drops it (`gc`).
    unsafe {
        let rt = ctx(L).rt().clone();
        let p = ffi::lua_newuserdatauv(L, std::mem::size_of::<Sock>(), 0) as *mut Sock;
        p.write(Sock { socket: Some(socket), rt, udp });
        set_class(L, CLASS, &[(c"__gc", gc), (c"__close", gc), (c"__tostring", tostring)], c"__index", &[]);
    }
}

/// The socket userdata at `idx`.
pub(crate) unsafe fn sock<'a>(L: *mut ffi::lua_State, idx: c_int, fname: &str) -> Result<&'a mut Sock, String> {
    // SAFETY: `L` is valid (lib.rs invariant 1); a userdata with this
    // class's metatable was made by `push_sock`, so it holds a `Sock`,
    // alive while the value is on the stack.
    unsafe {
        let p = ffi::luaL_testudata(L, idx, CLASS.as_ptr()) as *mut Sock;
        if p.is_null() {
            return Err(format!("bad argument #{idx} to '{fname}' (socket expected, got {})", type_name(L, idx)));
        }
        Ok(&mut *p)
    }
}

/// The open socket at `idx`, or `Err(None)` when it is closed.
pub(crate) unsafe fn open_sock<'a>(L: *mut ffi::lua_State, idx: c_int, fname: &str) -> Result<(&'a mut Sock, RawFd), Option<String>> {
    // SAFETY: as in `sock`.
    let s = unsafe { sock(L, idx, fname) }.map_err(Some)?;
    let fd = s.fd().ok_or(None)?;
    Ok((s, fd))
}

unsafe extern "C-unwind" fn gc(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls the finalizer (or `__close`) with the userdata at
    // 1; it holds a `Sock` until dropped here, once (the socket is taken).
    unsafe {
        if let Ok(s) = sock(L, 1, "__gc") {
            s.close();
        }
    }
    0
}

unsafe extern "C-unwind" fn close(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: as in `gc`; `raise` drops its message before unwinding.
    unsafe {
        match sock(L, 1, "close") {
            Ok(s) => s.close(),
            Err(e) => return raise(L, e),
        }
        ffi::lua_pushinteger(L, 1);
    }
    1
}

unsafe extern "C-unwind" fn isclosed(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: as in `gc`; `raise` drops its message before unwinding.
    unsafe {
        match sock(L, 1, "isclosed") {
            Ok(s) => ffi::lua_pushboolean(L, s.socket.is_none() as c_int),
            Err(e) => return raise(L, e),
        }
    }
    1
}

unsafe extern "C-unwind" fn tostring(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: as in `gc`; the string is copied by Lua.
    unsafe {
        let text = match sock(L, 1, "__tostring") {
            Ok(s) => match s.fd() {
                Some(fd) => format!("{} socket (fd {fd})", if s.udp { "udp" } else { "tcp" }),
                None => "closed socket".into(),
            },
            Err(e) => return raise(L, e),
        };
        push_bytes(L, text.as_bytes());
    }
    1
}
