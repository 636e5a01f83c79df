//! `synodic.socket.raw`: the native half of `synodic.socket` (SPEC §10).
//! Sockets are non-blocking system calls on a userdata that owns the
//! descriptor; a call that would block says so (`false`), and the process
//! then waits for its socket with `wait` (`wait.rs`), which parks only the
//! process: the node's netpoller (`synodic_core::io`) wakes it. LuaSocket's
//! API (patterns, buffering, timeouts) is Lua, in `lualib/socket.lua`,
//! over these calls (`calls.rs`).
//!
//! A socket belongs to the process that made it: the userdata holds the
//! node's cell for it (`synodic_core::io::SocketCell`), closed when the
//! process's state closes (its finalizer) or by `close`. Sent to another
//! process of the node, a connection is handed over (the receiver takes
//! its descriptor; the sender's handle is closed from then on) and a
//! listener is shared (it closes with its last holder); sent to another
//! node, it is refused: `cannot send value of type socket`.

mod calls;
mod resolve;
mod select;
mod tls;
mod wait;

use std::ffi::{c_int, CStr};
use std::os::fd::RawFd;
use std::sync::Arc;

use mlua_sys as ffi;
use socket2::{SockRef, Socket};
use synodic_core::io::{Open, SocketCell};
use synodic_core::Attachment;

use crate::vm::codec::Sendable;
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
    (c"dup", calls::dup),
    (c"select", select::select),
    (c"state", state),
    (c"warn", warn),
    (c"tls", tls::tls),
    // For the sockets' classes (`tcp_class`, `udp_class` in synodic.socket.core).
    (c"finalize", gc),
    (c"release", close_handle),
    (c"tostring", tostring),
    (c"handshake", tls::handshake),
];

/// The metatables of TCP and UDP sockets: `tcp_class` and `udp_class` of
/// `synodic.socket.core`, tables every process of the node shares as they
/// are (a socket costs a process its userdata alone), by address.
struct Classes {
    tcp: usize,
    udp: usize,
}

fn classes() -> Option<&'static Classes> {
    static CLASSES: std::sync::OnceLock<Option<Classes>> = std::sync::OnceLock::new();
    CLASSES
        .get_or_init(|| {
            let class = |field: &[u8]| crate::vm::shared::frozen_table(b"synodic.socket.core", field);
            Some(Classes { tcp: class(b"tcp_class")?, udp: class(b"udp_class")? })
        })
        .as_ref()
}

/// Why no socket can be made: the classes are missing (a unit test of
/// `vm::shared` checks every frozen module is frozen).
const NO_CLASSES: &str = "sockets are unavailable: synodic.socket.core could not be shared";

/// A socket userdata: this process's hold on the node's cell (none once
/// this handle is closed).
pub(crate) struct Sock {
    cell: Option<Arc<SocketCell>>,
}

impl Sock {
    fn fd(&self) -> Option<RawFd> {
        self.cell.as_ref()?.raw_fd()
    }

    /// Runs a system call on the socket, if it is open.
    fn with<R>(&self, f: impl FnOnce(&Socket) -> R) -> Option<R> {
        self.cell.as_ref()?.with_fd(|fd| f(&SockRef::from(&fd)))
    }

    fn udp(&self) -> bool {
        self.cell.as_ref().is_some_and(|c| c.udp)
    }

    /// Closes this handle: a connection is closed for good; a listener
    /// when its last holder lets go.
    fn close(&mut self) {
        if let Some(cell) = self.cell.take() {
            if !cell.is_listening() {
                cell.with_layer(tls::close);
                cell.close();
            }
        }
    }
}

/// A socket in a message, within the node (wire kind 4; variant 0).
pub(crate) static SENDABLE: Sendable = Sendable { kind: 4, share, rebuild };

unsafe fn share(L: *mut ffi::lua_State, idx: c_int) -> Option<(u8, Attachment)> {
    // SAFETY: `L` is a process's state and `idx` a stack index (the
    // encoder's contract); `sock` checks the userdata is a socket.
    let s = unsafe { sock(L, idx, "send") }.ok()?;
    let cell: Attachment = s.cell.clone()?;
    Some((0, cell))
}

unsafe fn rebuild(L: *mut ffi::lua_State, _variant: u8, shared: &Attachment) -> Result<(), String> {
    let cell = shared.clone().downcast::<SocketCell>().map_err(|_| "not a socket")?;
    let cell = if cell.is_listening() {
        cell
    } else {
        // SAFETY: `L` is the decoder's state (a process's), with a context.
        let rt = unsafe { ctx(L) }.rt();
        match cell.take() {
            Some(open) => Arc::new(SocketCell::new(rt, open, cell.udp)),
            // Closed before it arrived (or taken by an earlier copy of the message).
            None => cell,
        }
    };
    // SAFETY: as above, with room for a value.
    unsafe { push_cell(L, cell) }
}

crate::vm::lazy::lazy_module!(b"synodic.socket.raw");

/// Pushes a new socket userdata owning `socket` (and `layer`: TLS).
pub(crate) unsafe fn push_sock(L: *mut ffi::lua_State, socket: Socket, udp: bool, layer: synodic_core::io::Layer) -> Result<(), String> {
    // SAFETY: `L` is the running process's state (lib.rs invariant 1) with its context.
    unsafe {
        let cell = Arc::new(SocketCell::new(ctx(L).rt(), Open { fd: socket.into(), layer }, udp));
        push_cell(L, cell)
    }
}

/// Pushes a socket userdata holding `cell`, its metatable the node's
/// shared class.
unsafe fn push_cell(L: *mut ffi::lua_State, cell: Arc<SocketCell>) -> Result<(), String> {
    let classes = classes().ok_or(NO_CLASSES)?;
    let class = if cell.udp { classes.udp } else { classes.tcp };
    // NOT KEPT: a memory error in `lua_newuserdatauv` unwinds over `cell`
    // (a leak of one reference: the socket stays open). The class is only
    // set as a metatable (its `__metatable` field hides it), never given to
    // the program, so nothing writes it.
    // SAFETY: `L` is a process's state, room for two values checked; the
    // userdata's block is fresh, sized and aligned for a `Sock` (Lua aligns
    // userdata for any C type) and written before Lua sees it; `gc` drops it.
    unsafe {
        ffi::luaL_checkstack(L, 2, std::ptr::null());
        let p = ffi::lua_newuserdatauv(L, std::mem::size_of::<Sock>(), 1) as *mut Sock;
        p.write(Sock { cell: Some(cell) });
        crate::vm::shared::push_frozen_table(L, class);
        ffi::lua_setmetatable(L, -2);
    }
    Ok(())
}

/// The socket userdata at `idx`.
pub(crate) unsafe fn sock<'a>(L: *mut ffi::lua_State, idx: c_int, fname: &str) -> Result<&'a mut Sock, String> {
    // SAFETY: `L` is valid (lib.rs invariant 1); a userdata whose metatable
    // is a socket class was made by `push_cell`, so it holds a `Sock`,
    // alive while the value is on the stack.
    unsafe {
        let p = ffi::lua_touserdata(L, idx) as *mut Sock;
        if p.is_null() || !is_socket_class(L, idx) {
            return Err(format!("bad argument #{idx} to '{fname}' (socket expected, got {})", type_name(L, idx)));
        }
        Ok(&mut *p)
    }
}

/// Whether the value at `idx` has a socket class as its metatable.
unsafe fn is_socket_class(L: *mut ffi::lua_State, idx: c_int) -> bool {
    let Some(classes) = classes() else { return false };
    // SAFETY: `L` is valid and `idx` a stack index (the caller's); the
    // metatable pushed, if any, is popped.
    unsafe {
        if ffi::lua_checkstack(L, 1) == 0 || ffi::lua_getmetatable(L, idx) == 0 {
            return false;
        }
        let mt = ffi::lua_topointer(L, -1) as usize;
        ffi::lua_settop(L, -2);
        mt == classes.tcp || mt == classes.udp
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
    // SAFETY: Lua calls the finalizer with the userdata at 1; a userdata
    // with this class holds a `Sock` until dropped here, once: the
    // metatable is taken off, so it is never found again (even if
    // another finalizer resurrects it).
    unsafe {
        let p = ffi::lua_touserdata(L, 1) as *mut Sock;
        if !p.is_null() && is_socket_class(L, 1) {
            // The hold is let go: the socket closes with its last holder
            // (a message in flight holds it too).
            std::ptr::drop_in_place(p);
            ffi::lua_pushnil(L);
            ffi::lua_setmetatable(L, 1);
        }
    }
    0
}

unsafe extern "C-unwind" fn close_handle(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls `__close` with the userdata at 1 (a `Sock`).
    unsafe {
        if let Ok(s) = sock(L, 1, "__close") {
            s.close();
        }
    }
    0
}

unsafe extern "C-unwind" fn close(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: as in `gc`; `raise` drops its message before unwinding.
    unsafe {
        match sock(L, 1, "close") {
            // `close(s, true)`: a listener closes for every holder too.
            Ok(s) if ffi::lua_toboolean(L, 2) != 0 => {
                if let Some(cell) = s.cell.take() {
                    cell.close();
                }
            }
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
            Ok(s) => ffi::lua_pushboolean(L, s.fd().is_none() as c_int),
            Err(e) => return raise(L, e),
        }
    }
    1
}

/// `warn(line)`: one line on the node's standard error.
unsafe extern "C-unwind" fn warn(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this with its running state; the bytes are copied
    // out before anything else runs.
    let line = unsafe { to_bytes(L, 1) }.map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or_default();
    eprintln!("{line}");
    0
}

/// `state(s)`: the table where the Lua side keeps this handle's state
/// (its class, timeout and unread bytes), made on first use: `server`
/// for a listener, `client` for a connection, `master` otherwise.
unsafe extern "C-unwind" fn state(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this with its running state, the socket at 1 (a
    // userdata with one user value); `raise` drops its message first.
    unsafe {
        let s = match sock(L, 1, "state") {
            Ok(s) => s,
            Err(e) => return raise(L, e),
        };
        // Made once: every method of a socket asks for it.
        if ffi::lua_getiuservalue(L, 1, 1) == ffi::LUA_TTABLE {
            return 1;
        }
        let class = match &s.cell {
            Some(c) if c.is_listening() => c"server",
            Some(c) if c.udp => c"unconnected",
            Some(_) if s.with(|x| x.peer_addr().is_ok()) == Some(true) => c"client",
            Some(_) => c"master",
            None => c"closed",
        };
        ffi::lua_pop(L, 1);
        ffi::lua_createtable(L, 0, 4);
        ffi::lua_pushstring(L, class.as_ptr());
        ffi::lua_setfield(L, -2, c"class".as_ptr());
        ffi::lua_pushstring(L, c"".as_ptr());
        ffi::lua_setfield(L, -2, c"buf".as_ptr());
        ffi::lua_pushvalue(L, -1);
        ffi::lua_setiuservalue(L, 1, 1);
    }
    1
}

/// `__tostring`: as LuaSocket's, `tcp{client}: ...`.
unsafe extern "C-unwind" fn tostring(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this with the socket at 1; `state` pushes its
    // table (or raises); the text is copied by Lua.
    unsafe {
        let udp = match sock(L, 1, "__tostring") {
            Ok(s) => s.udp(),
            Err(e) => return raise(L, e),
        };
        ffi::lua_settop(L, 1);
        state(L);
        ffi::lua_getfield(L, 2, c"class".as_ptr());
        let class = to_bytes(L, 3).map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or_default();
        let text = format!("{}{{{class}}}: {:p}", if udp { "udp" } else { "tcp" }, ffi::lua_topointer(L, 1));
        drop(class);
        push_bytes(L, text.as_bytes());
    }
    1
}
