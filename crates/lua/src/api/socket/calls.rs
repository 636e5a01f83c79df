//! The system calls of `synodic.socket.raw`, each non-blocking: `false`
//! when it would block (the caller waits, `wait.rs`, and calls again),
//! `nil, err` with LuaSocket's wording of the error otherwise. Addresses
//! are numeric here (`resolve.rs` turns names into them).

use std::cell::UnsafeCell;
use std::ffi::c_int;
use std::io::{self, ErrorKind};
use std::mem::MaybeUninit;
use std::net::{IpAddr, SocketAddr};

use mlua_sys as ffi;
use socket2::{Domain, Protocol, SockAddr, SockRef, Socket, Type};

use super::{open_sock, push_sock};
use crate::vm::util::*;

/// Bytes one `recv` takes at most.
const RECV_MAX: usize = 64 << 10;

/// How a call ends.
enum Ends {
    /// This many results are on the stack.
    Values(c_int),
    /// It would block: `false`.
    WouldBlock,
    /// A TLS session would block, and must wait to read (`true`) or to
    /// write: `false, "r" | "w"`.
    WaitFor(bool),
    /// `nil, err`.
    Failed(String),
    /// A bad argument: raised.
    Raise(String),
}

use Ends::*;

/// How a TLS session's call ended.
fn tls_ends(result: Result<usize, (io::Error, super::tls::Wants)>) -> Result<usize, Ends> {
    match result {
        Ok(n) => Ok(n),
        Err((e, super::tls::Wants(read))) if e.kind() == ErrorKind::WouldBlock => Err(WaitFor(read)),
        Err((e, _)) => Err(e.into()),
    }
}

impl From<io::Error> for Ends {
    fn from(e: io::Error) -> Ends {
        if e.kind() == ErrorKind::WouldBlock || e.raw_os_error() == Some(libc::EINPROGRESS) {
            return WouldBlock;
        }
        Failed(wording(&e))
    }
}

/// LuaSocket's words for the errors programs test for.
pub(crate) fn wording(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ECONNREFUSED) => "connection refused".into(),
        Some(libc::ECONNRESET | libc::ECONNABORTED | libc::EPIPE | libc::ENOTCONN) => "closed".into(),
        Some(libc::ETIMEDOUT) => "timeout".into(),
        Some(libc::EADDRINUSE) => "address already in use".into(),
        Some(libc::EADDRNOTAVAIL) => "address not available".into(),
        Some(libc::EACCES | libc::EPERM) => "permission denied".into(),
        Some(libc::EISCONN) => "already connected".into(),
        Some(libc::EMFILE | libc::ENFILE) => "too many open files".into(),
        Some(libc::ENETUNREACH) => "network is unreachable".into(),
        Some(libc::EHOSTUNREACH) => "host is unreachable".into(),
        // A TLS session's error (rustls's words, as they are).
        _ if e.kind() == ErrorKind::InvalidData => e.to_string(),
        _ => {
            let text = e.to_string();
            // "Connection refused (os error 111)" -> "connection refused"
            let text = text.split(" (os error").next().unwrap_or(&text);
            text.to_lowercase()
        }
    }
}

/// The error of a call on a socket closed meanwhile.
fn closed() -> io::Error {
    io::Error::from_raw_os_error(libc::ENOTCONN)
}

/// Runs `body` and turns how it ended into the function's results.
unsafe fn call(L: *mut ffi::lua_State, body: impl FnOnce() -> Ends) -> c_int {
    let ends = body();
    // SAFETY: `L` is the running state in a native function (lib.rs
    // invariant 1); `ends` is consumed, so nothing owned is left when
    // `raise` unwinds (it drops its message first).
    unsafe {
        match ends {
            Values(n) => n,
            WouldBlock => {
                ffi::lua_pushboolean(L, 0);
                1
            }
            WaitFor(read) => {
                ffi::lua_pushboolean(L, 0);
                ffi::lua_pushstring(L, if read { c"r".as_ptr() } else { c"w".as_ptr() });
                2
            }
            Failed(why) => {
                ffi::lua_pushnil(L);
                push_bytes(L, why.as_bytes());
                2
            }
            Raise(why) => raise(L, why),
        }
    }
}

/// The string argument at `idx`.
unsafe fn string_arg<'a>(L: *mut ffi::lua_State, idx: c_int, fname: &str) -> Result<&'a [u8], Ends> {
    // SAFETY: `L` is valid; the bytes live while the value stays at `idx`.
    unsafe {
        match ffi::lua_type(L, idx) {
            ffi::LUA_TSTRING => Ok(to_bytes(L, idx).unwrap_or_default()),
            _ => Err(Raise(format!("bad argument #{idx} to '{fname}' (string expected, got {})", type_name(L, idx)))),
        }
    }
}

/// The integer argument at `idx`.
unsafe fn int_arg(L: *mut ffi::lua_State, idx: c_int, fname: &str) -> Result<i64, Ends> {
    let mut ok = 0;
    // SAFETY: `L` is valid; this only reads the value at `idx`.
    let n = unsafe { ffi::lua_tointegerx(L, idx, &mut ok) };
    if ok == 0 {
        // SAFETY: as above.
        return Err(Raise(format!("bad argument #{idx} to '{fname}' (integer expected, got {})", unsafe { type_name(L, idx) })));
    }
    Ok(n)
}

/// The numeric address at `idx` and port at `idx + 1`.
unsafe fn address(L: *mut ffi::lua_State, idx: c_int, fname: &str) -> Result<SocketAddr, Ends> {
    // SAFETY: as in `string_arg` and `int_arg`.
    let (host, port) = unsafe { (string_arg(L, idx, fname)?, int_arg(L, idx + 1, fname)?) };
    let ip: IpAddr = std::str::from_utf8(host).ok().and_then(|h| h.parse().ok()).ok_or_else(|| Failed(format!("'{}' is not a numeric address", String::from_utf8_lossy(host))))?;
    let port = u16::try_from(port).map_err(|_| Failed(format!("port {port} out of range")))?;
    Ok(SocketAddr::new(ip, port))
}

/// The open socket at 1; a closed one fails with "closed".
macro_rules! open_or_fail {
    ($L:expr, $fname:expr) => {
        // Used inside the callers' unsafe blocks: `L` is the running state
        // (lib.rs invariant 1), argument 1 checked by `open_sock`.
        match open_sock($L, 1, $fname) {
            Ok(s) => s,
            Err(Some(e)) => return Raise(e),
            Err(None) => return Failed("closed".into()),
        }
    };
}

/// `socket(kind, family)`: a new non-blocking socket, `"tcp"` or `"udp"`,
/// `"inet"` (the default) or `"inet6"`.
pub(super) unsafe extern "C-unwind" fn socket(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1); the arguments are read only.
    unsafe {
        call(L, || {
            let udp = match string_arg(L, 1, "socket") {
                Ok(b"tcp") => false,
                Ok(b"udp") => true,
                Ok(_) => return Raise("bad argument #1 to 'socket' (\"tcp\" or \"udp\" expected)".into()),
                Err(e) => return e,
            };
            let domain = match ffi::lua_type(L, 2) {
                ffi::LUA_TNONE | ffi::LUA_TNIL => Domain::IPV4,
                _ => match string_arg(L, 2, "socket") {
                    Ok(b"inet") => Domain::IPV4,
                    Ok(b"inet6") => Domain::IPV6,
                    Ok(_) => return Raise("bad argument #2 to 'socket' (\"inet\" or \"inet6\" expected)".into()),
                    Err(e) => return e,
                },
            };
            let made = if udp { Socket::new(domain, Type::DGRAM, Some(Protocol::UDP)) } else { Socket::new(domain, Type::STREAM, Some(Protocol::TCP)) };
            match made.and_then(|s| s.set_nonblocking(true).map(|_| s)) {
                Ok(s) => {
                    match push_sock(L, s, udp, None) {
                    Ok(()) => Values(1),
                    Err(e) => Raise(e),
                }
                }
                Err(e) => e.into(),
            }
        })
    }
}

/// `connect(s, ip, port)`: `true`, or `false` while the connection is
/// under way (wait for writing, then ask `connected`).
pub(super) unsafe extern "C-unwind" fn connect(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: as in `socket`.
    unsafe {
        call(L, || {
            let (s, _) = open_or_fail!(L, "connect");
            let addr = match address(L, 2, "connect") {
                Ok(a) => a,
                Err(e) => return e,
            };
            match s.with(|x| x.connect(&addr.into())) {
                Some(Ok(())) => {
                    ffi::lua_pushboolean(L, 1);
                    Values(1)
                }
                Some(Err(e)) => e.into(),
                None => Failed("closed".into()),
            }
        })
    }
}

/// `connected(s)`: whether a connection under way succeeded: `true` or `nil, err`.
pub(super) unsafe extern "C-unwind" fn connected(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: as in `socket`.
    unsafe {
        call(L, || {
            let (s, _) = open_or_fail!(L, "connected");
            let state = s.with(|socket| match socket.take_error() {
                Ok(None) => match socket.peer_addr() {
                    Ok(_) => Ok(true),
                    Err(e) if e.raw_os_error() == Some(libc::ENOTCONN) => Ok(false),
                    Err(e) => Err(e),
                },
                Ok(Some(e)) | Err(e) => Err(e),
            });
            match state {
                Some(Ok(true)) => {
                    ffi::lua_pushboolean(L, 1);
                    Values(1)
                }
                Some(Ok(false)) => WouldBlock,
                Some(Err(e)) => Failed(wording(&e)),
                None => Failed("closed".into()),
            }
        })
    }
}

/// `bind(s, ip, port)`: as LuaSocket, a TCP socket reuses its address.
pub(super) unsafe extern "C-unwind" fn bind(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: as in `socket`.
    unsafe {
        call(L, || {
            let (s, _) = open_or_fail!(L, "bind");
            let addr = match address(L, 2, "bind") {
                Ok(a) => a,
                Err(e) => return e,
            };
            let udp = s.udp();
            let bound = s.with(|socket| (if udp { Ok(()) } else { socket.set_reuse_address(true) }).and_then(|_| socket.bind(&addr.into())));
            match bound.unwrap_or_else(|| Err(closed())) {
                Ok(()) => {
                    ffi::lua_pushinteger(L, 1);
                    Values(1)
                }
                Err(e) => Failed(wording(&e)),
            }
        })
    }
}

/// `listen(s, backlog)`.
pub(super) unsafe extern "C-unwind" fn listen(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: as in `socket`.
    unsafe {
        call(L, || {
            let (s, _) = open_or_fail!(L, "listen");
            let backlog = match int_arg(L, 2, "listen") {
                Ok(n) => n.clamp(1, 65535) as i32,
                Err(e) => return e,
            };
            match s.with(|socket| socket.listen(backlog)).unwrap_or_else(|| Err(closed())) {
                Ok(()) => {
                    if let Some(cell) = &s.cell {
                        cell.set_listening();
                    }
                    ffi::lua_pushinteger(L, 1);
                    Values(1)
                }
                Err(e) => Failed(wording(&e)),
            }
        })
    }
}

/// `accept(s)`: the next connection, a new socket; `false` if none waits.
/// A connection the peer abandoned before it was taken counts as none.
pub(super) unsafe extern "C-unwind" fn accept(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: as in `socket`.
    unsafe {
        call(L, || {
            let (s, _) = open_or_fail!(L, "accept");
            let accepted = s.cell.as_ref().and_then(|cell| {
                cell.with_layer(|fd, listener| {
                    let (c, _) = SockRef::from(&fd).accept()?;
                    c.set_nonblocking(true)?;
                    Ok((c, super::tls::accepted_layer(listener)?))
                })
            });
            match accepted.unwrap_or_else(|| Err(closed())) {
                Ok((c, layer)) => {
                    match push_sock(L, c, false, layer) {
                    Ok(()) => Values(1),
                    Err(e) => Raise(e),
                }
                }
                Err(e) if e.raw_os_error() == Some(libc::ECONNABORTED) => WouldBlock,
                Err(e) => e.into(),
            }
        })
    }
}

thread_local! {
    /// Where `recv` reads before the bytes become a Lua string. Reached by
    /// raw pointer, never borrowed across a call into Lua: a memory error
    /// raised while pushing must leave nothing marked in use.
    static RECEIVED: UnsafeCell<Vec<MaybeUninit<u8>>> = UnsafeCell::new(vec![MaybeUninit::uninit(); RECV_MAX]);
}

/// Receives up to `max` bytes (at most 64 KiB) into the thread's buffer
/// and pushes them; `from`: also where they came from. The socket's lock
/// is held for the system call only, not while Lua allocates.
unsafe fn receive_into_string(L: *mut ffi::lua_State, s: &super::Sock, max: usize, from: bool) -> Ends {
    let room = RECEIVED.with(|buf| buf.get());
    let len = max.clamp(1, RECV_MAX);
    // SAFETY: the thread's buffer is RECV_MAX long and used by this thread
    // only, one call at a time (nothing below re-enters `recv`).
    let room = unsafe { &mut (&mut *room)[..len] };
    let got = s.cell.as_ref().and_then(|cell| {
        cell.with_layer(|fd, layer| {
            if !from {
                // SAFETY: `MaybeUninit<u8>` has the layout of `u8`; rustls
                // only writes into the slice (its bytes are not read first).
                let plain = unsafe { &mut *(room as *mut [MaybeUninit<u8>] as *mut [u8]) };
                if let Some(result) = super::tls::recv(fd, layer, plain) {
                    return tls_ends(result).map(|n| (n, None));
                }
            }
            let socket = SockRef::from(&fd);
            let got = if from { socket.recv_from(room).map(|(n, a)| (n, a.as_socket())) } else { socket.recv(room).map(|n| (n, None)) };
            got.map_err(Ends::from)
        })
    });
    match got {
        None => Failed("closed".into()),
        Some(Ok((0, _))) if !from => Failed("closed".into()),
        Some(Ok((n, addr))) => {
            // SAFETY: the kernel wrote the first `n` bytes; `L` is the
            // running state with room for 3 results, and Lua copies the
            // bytes before it can collect (and run a finalizer).
            unsafe {
                push_bytes(L, std::slice::from_raw_parts(room.as_ptr() as *const u8, n));
                if let Some(addr) = addr {
                    push_bytes(L, addr.ip().to_string().as_bytes());
                    ffi::lua_pushinteger(L, addr.port() as ffi::lua_Integer);
                    return Values(3);
                }
            }
            Values(1)
        }
        Some(Err(ends)) => ends,
    }
}

/// `recv(s, max)`: what has arrived, up to `max` bytes; `nil, "closed"`
/// at the end of the stream.
pub(super) unsafe extern "C-unwind" fn recv(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: as in `socket`.
    unsafe {
        call(L, || {
            let (s, _) = open_or_fail!(L, "recv");
            let max = match int_arg(L, 2, "recv") {
                Ok(n) => n.max(1) as usize,
                Err(e) => return e,
            };
            receive_into_string(L, s, max, false)
        })
    }
}

/// `recvfrom(s, max)`: a datagram and its sender's address and port.
pub(super) unsafe extern "C-unwind" fn recvfrom(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: as in `socket`.
    unsafe {
        call(L, || {
            let (s, _) = open_or_fail!(L, "recvfrom");
            let max = match int_arg(L, 2, "recvfrom") {
                Ok(n) => n.max(1) as usize,
                Err(e) => return e,
            };
            receive_into_string(L, s, max, true)
        })
    }
}

/// `send(s, data, from)`: sends `data` from byte `from` (1-based) on;
/// returns how many bytes went (as many as the kernel took), `false` if none could.
pub(super) unsafe extern "C-unwind" fn send(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: as in `socket`.
    unsafe {
        call(L, || {
            let (s, _) = open_or_fail!(L, "send");
            let (data, from) = match (string_arg(L, 2, "send"), int_arg(L, 3, "send")) {
                (Ok(d), Ok(f)) => (d, f.max(1) as usize - 1),
                (Err(e), _) | (_, Err(e)) => return e,
            };
            let rest = data.get(from..).unwrap_or_default();
            let sent = s.cell.as_ref().and_then(|cell| {
                cell.with_layer(|fd, layer| match super::tls::send(fd, layer, rest) {
                    Some(result) => tls_ends(result),
                    // MSG_NOSIGNAL: a peer gone away must not kill the node (SIGPIPE).
                    None => SockRef::from(&fd).send_with_flags(rest, libc::MSG_NOSIGNAL).map_err(Ends::from),
                })
            });
            match sent.unwrap_or_else(|| Err(Failed("closed".into()))) {
                Ok(n) => {
                    ffi::lua_pushinteger(L, n as ffi::lua_Integer);
                    Values(1)
                }
                Err(ends) => ends,
            }
        })
    }
}

/// `sendto(s, data, ip, port)`: one datagram.
pub(super) unsafe extern "C-unwind" fn sendto(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: as in `socket`.
    unsafe {
        call(L, || {
            let (s, _) = open_or_fail!(L, "sendto");
            let (data, addr) = match (string_arg(L, 2, "sendto"), address(L, 3, "sendto")) {
                (Ok(d), Ok(a)) => (d, a),
                (Err(e), _) | (_, Err(e)) => return e,
            };
            match s.with(|socket| socket.send_to(data, &addr.into())).unwrap_or_else(|| Err(closed())) {
                Ok(n) => {
                    ffi::lua_pushinteger(L, n as ffi::lua_Integer);
                    Values(1)
                }
                Err(e) => e.into(),
            }
        })
    }
}

/// `dup(s)`: a second handle on the same connection, with a descriptor of
/// its own (dup(2)), so that one process may read while another writes
/// (a chat server's reader and writer of a client). A TLS session cannot
/// be shared: refused.
pub(super) unsafe extern "C-unwind" fn dup(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: as in `socket`.
    unsafe {
        call(L, || {
            let (s, _) = open_or_fail!(L, "dup");
            let udp = s.udp();
            let copy = s.cell.as_ref().and_then(|cell| {
                cell.with_layer(|fd, layer| match layer {
                    Some(_) => Err(Failed("a TLS connection cannot be duplicated".into())),
                    None => SockRef::from(&fd).try_clone().map_err(Ends::from),
                })
            });
            match copy.unwrap_or_else(|| Err(Failed("closed".into()))) {
                Ok(c) => {
                    match push_sock(L, c, udp, None) {
                    Ok(()) => Values(1),
                    Err(e) => Raise(e),
                }
                }
                Err(ends) => ends,
            }
        })
    }
}

/// `shutdown(s, how)`: `"both"` (the default), `"send"` or `"receive"`.
pub(super) unsafe extern "C-unwind" fn shutdown(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: as in `socket`.
    unsafe {
        call(L, || {
            let (s, _) = open_or_fail!(L, "shutdown");
            let how = match ffi::lua_type(L, 2) {
                ffi::LUA_TNONE | ffi::LUA_TNIL => std::net::Shutdown::Both,
                _ => match string_arg(L, 2, "shutdown") {
                    Ok(b"both") => std::net::Shutdown::Both,
                    Ok(b"send") => std::net::Shutdown::Write,
                    Ok(b"receive") => std::net::Shutdown::Read,
                    Ok(_) => return Raise("bad argument #2 to 'shutdown' (\"both\", \"send\" or \"receive\" expected)".into()),
                    Err(e) => return e,
                },
            };
            // Already shut (the peer reset): nothing left to do.
            let _ = s.with(|socket| socket.shutdown(how));
            ffi::lua_pushinteger(L, 1);
            Values(1)
        })
    }
}

/// Pushes `addr` as LuaSocket does: address, port, family.
unsafe fn push_address(L: *mut ffi::lua_State, addr: io::Result<SockAddr>) -> Ends {
    match addr.map(|a| a.as_socket()) {
        Ok(Some(a)) => {
            // SAFETY: `L` is the running state with room for 3 results.
            unsafe {
                push_bytes(L, a.ip().to_string().as_bytes());
                ffi::lua_pushinteger(L, a.port() as ffi::lua_Integer);
                push_bytes(L, if a.is_ipv4() { b"inet" } else { b"inet6" });
            }
            Values(3)
        }
        Ok(None) => Failed("not an internet address".into()),
        Err(e) => Failed(wording(&e)),
    }
}

pub(super) unsafe extern "C-unwind" fn sockname(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: as in `socket`.
    unsafe {
        call(L, || {
            let (s, _) = open_or_fail!(L, "getsockname");
            push_address(L, s.with(|socket| socket.local_addr()).unwrap_or_else(|| Err(closed())))
        })
    }
}

pub(super) unsafe extern "C-unwind" fn peername(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: as in `socket`.
    unsafe {
        call(L, || {
            let (s, _) = open_or_fail!(L, "getpeername");
            push_address(L, s.with(|socket| socket.peer_addr()).unwrap_or_else(|| Err(closed())))
        })
    }
}

/// `setoption(s, name, value)`: LuaSocket's options.
pub(super) unsafe extern "C-unwind" fn setoption(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: as in `socket`; the value at 3 is only read.
    unsafe {
        call(L, || {
            let (s, _) = open_or_fail!(L, "setoption");
            let name = match string_arg(L, 2, "setoption") {
                Ok(n) => n,
                Err(e) => return e,
            };
            let on = ffi::lua_toboolean(L, 3) != 0;
            let linger = if name == b"linger" {
                // { on = true, timeout = seconds }, as LuaSocket.
                ffi::lua_getfield(L, 3, c"on".as_ptr());
                let on = ffi::lua_toboolean(L, -1) != 0;
                ffi::lua_getfield(L, 3, c"timeout".as_ptr());
                let secs = ffi::lua_tointegerx(L, -1, std::ptr::null_mut()).max(0) as u64;
                ffi::lua_settop(L, 3);
                on.then(|| std::time::Duration::from_secs(secs))
            } else {
                None
            };
            let set = s.with(|socket| match name {
                b"tcp-nodelay" => socket.set_tcp_nodelay(on),
                b"keepalive" => socket.set_keepalive(on),
                b"reuseaddr" => socket.set_reuse_address(on),
                b"reuseport" => socket.set_reuse_port(on),
                b"broadcast" => socket.set_broadcast(on),
                b"ipv6-v6only" => socket.set_only_v6(on),
                b"linger" => socket.set_linger(linger),
                _ => Err(io::Error::new(ErrorKind::Unsupported, format!("unsupported option '{}'", String::from_utf8_lossy(name)))),
            });
            match set.unwrap_or_else(|| Err(closed())) {
                Ok(()) => {
                    ffi::lua_pushinteger(L, 1);
                    Values(1)
                }
                Err(e) => Failed(wording(&e)),
            }
        })
    }
}

/// `gettime()`: seconds since the epoch, as LuaSocket.
pub(super) unsafe extern "C-unwind" fn gettime(L: *mut ffi::lua_State) -> c_int {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
    // SAFETY: `L` is the running state with room for a result.
    unsafe { ffi::lua_pushnumber(L, now) };
    1
}
