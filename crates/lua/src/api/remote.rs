//! Requests from Lua that another node answers: `spawn_on` a node elsewhere
//! (and, through it, `"any"` when the least loaded node is another;
//! `spawn_link_on` links once the pid is known), and `register` in a cluster (the node that arbitrates the name answers). The
//! request goes out through the runtime's `Remote`; the caller then waits,
//! like a `receive_match`, for the reply tagged with the request's tag
//! (`synodic_core::dist::notice::reply`), leaving every other message queued.
//! If the other node is lost meanwhile, the transport answers in its stead.

use std::ffi::c_int;

use mlua_sys as ffi;
use synodic_core::dist::names::Names;
use synodic_core::dist::notice::reply_tag;
use synodic_core::dist::spawn::Spawns;

use crate::vm::codec;
use crate::vm::ctx::ctx;
use crate::vm::wait::block_on_mailbox;
use crate::vm::util::*;
use crate::vm::wait;

/// `spawn_on(node, f, ...)` for a node other than this one; `f` is at
/// `first`. Returns what the Lua function returns (the pid), or raises.
pub(crate) unsafe fn spawn_on(L: *mut ffi::lua_State, node: std::sync::Arc<str>, first: c_int, link: bool) -> c_int {
    // SAFETY: `L` is the running process's state (lib.rs invariant 1), its
    // context entered, `f` and its arguments from `first`; the message
    // moves into the request; nothing here raises.
    let sent = (|| unsafe {
        // As a local spawn's, so that spawning alike is written from the
        // process's memo (`codec::memo`); the receiver finds the leading
        // values itself.
        let (msg, _) = codec::encode_spawn(L, first, ffi::lua_gettop(L)).map_err(|e| format!("spawn_on: {e}"))?;
        synodic_core::dist::carry::crossing(&msg).map_err(|e| format!("spawn_on: {e}"))?;
        let c = ctx(L);
        let rt = c.rt();
        let tag = rt.next_tag();
        rt.service::<Spawns>().spawn(rt, c.proc().pid(), tag, &node, msg).map_err(|e| format!("spawn_on: {e}"))?;
        Ok::<u64, String>(tag)
    })();
    // Nothing owned stays in this frame while it waits (a yield) or raises.
    drop(node);
    // SAFETY: as above; `e` moves into `raise`, which drops it first.
    unsafe {
        match sent {
            Ok(tag) if link => await_reply(L, tag, c"spawn_link_on"),
            Ok(tag) => await_reply(L, tag, c"spawn_on"),
            Err(e) => raise(L, e),
        }
    }
}

/// `register(name, pid)` in a cluster; `pid` must be of this node (its
/// node keeps the name's life: it is released when the process ends).
pub(crate) unsafe fn register(L: *mut ffi::lua_State, name: &[u8], pid: synodic_core::Pid) -> c_int {
    // SAFETY: `L` is the running process's state (lib.rs invariant 1), its
    // context entered; nothing here raises.
    let sent = (|| {
        let c = unsafe { ctx(L) };
        let rt = c.rt();
        if !rt.is_alive(pid) {
            return Err(match pid.node() {
                0 => format!("register: no such process {pid}"),
                _ => format!("register: {pid} is a process of another node; register it there"),
            });
        }
        match rt.whereis(name) {
            Some(holder) if holder == pid => return Ok(None),
            Some(_) => return Err(format!("register: name '{}' is already registered", String::from_utf8_lossy(name))),
            None => {}
        }
        let tag = rt.next_tag();
        rt.service::<Names>().claim(rt, c.proc().pid(), tag, name, pid).map_err(|e| format!("register: {e}"))?;
        Ok(Some(tag))
    })();
    // SAFETY: as above; `e` moves into `raise`, which drops it first.
    unsafe {
        match sent {
            Ok(Some(tag)) => await_reply(L, tag, c"register"),
            Ok(None) => {
                ffi::lua_pushboolean(L, 1);
                1
            }
            Err(e) => raise(L, e),
        }
    }
}

/// Waits for the reply tagged `tag`; `what` names the call in errors.
unsafe fn await_reply(L: *mut ffi::lua_State, tag: u64, what: &'static std::ffi::CStr) -> c_int {
    // SAFETY: `L` is the running process's thread in a native function
    // (lib.rs invariant 1); its stack becomes [tag, what] for `reply_k`,
    // which may block (this frame owns nothing).
    unsafe {
        ffi::lua_settop(L, 0);
        ffi::lua_pushinteger(L, tag as ffi::lua_Integer);
        ffi::lua_pushstring(L, what.as_ptr());
        reply_k(L, ffi::LUA_OK, 0)
    }
}

unsafe extern "C-unwind" fn reply_k(L: *mut ffi::lua_State, _status: c_int, cursor: ffi::lua_KContext) -> c_int {
    // SAFETY: Lua runs this continuation (or `await_reply` calls it) with
    // the process's running thread (lib.rs invariant 1), the stack [tag,
    // what] as `await_reply` left it.
    let tag = unsafe { ffi::lua_tointegerx(L, 1, std::ptr::null_mut()) } as u64;
    // Borrowed from the stack: nothing here may own memory across a raise.
    // SAFETY: as above; `what` (a string at 2) stays there for this call.
    let what = unsafe { to_bytes(L, 2) }.and_then(|b| std::str::from_utf8(b).ok()).unwrap_or("request");
    // SAFETY: as above (the context is entered for this resume).
    let found = unsafe { ctx(L) }.proc().take_first_match(cursor as usize, |m| reply_tag(m) == Some(tag));
    let decoded = match found {
        // SAFETY: as above. NOT KEPT: lib.rs invariant 2, the reply `msg`
        // is alive while it is decoded, and a memory error there unwinds
        // over it (in practice a leak).
        Ok(msg) => unsafe { codec::decode(L, &msg) },
        // SAFETY: as above; this arm owns nothing when it blocks or raises.
        Err(next) => unsafe {
            if wait::take_withdrawn(L) {
                return wait::cannot_block(L, what);
            }
            return block_on_mailbox(L, reply_k, next as ffi::lua_KContext, what);
        },
    };
    // "$reply", tag, value  or  "$reply", tag, nil, error [, holder]
    match decoded {
        // SAFETY: as above; the new pid is on top.
        Ok(3) if what == "spawn_link_on" => match unsafe { to_pid(L, -1) } {
            Some(pid) => unsafe { crate::api::kernel::links::link_to(L, pid, what, 1) },
            None => 1,
        },
        Ok(3) => 1,
        Ok(_) => {
            // SAFETY: as above; the error (at 6) is borrowed from the stack.
            unsafe {
                let why = to_bytes(L, 6).and_then(|b| std::str::from_utf8(b).ok()).unwrap_or("failed");
                raise(L, format!("{what}: {why}"))
            }
        }
        // SAFETY: as above; `raise_error` drops `e` before it raises.
        Err(e) => unsafe { raise_error(L, what, e) },
    }
}
