//! The `synodic.chan` module: named rendezvous channels (SPEC §4, luaproc's
//! semantics). The channel logic lives in `synodic_core::channel`; this file
//! maps it to Lua: `true` on success, `nil, "exists"`, `nil, "no such
//! channel"`, `nil, "deleted"`.

use std::ffi::{c_int, CStr};

use mlua_sys as ffi;
use synodic_core::channel::{Handed, ReceiveOutcome, SendOutcome};

use crate::codec;
use crate::ctx::{ctx, Pending};
use crate::util::*;

const FUNCTIONS: &[(&CStr, ffi::lua_CFunction)] = &[(c"new", new), (c"send", send), (c"receive", receive), (c"delete", delete)];

crate::lazy::lazy_module!(FUNCTIONS);

unsafe fn name<'a>(L: *mut ffi::lua_State, fname: &str) -> Result<&'a [u8], String> {
    match ffi::lua_type(L, 1) {
        ffi::LUA_TSTRING => Ok(to_bytes(L, 1).unwrap_or_default()),
        _ => Err(format!("bad argument #1 to '{fname}' (channel name expected, got {})", type_name(L, 1))),
    }
}

unsafe fn fail(L: *mut ffi::lua_State, why: &CStr) -> c_int {
    ffi::lua_pushnil(L);
    ffi::lua_pushstring(L, why.as_ptr());
    2
}

unsafe fn wake<'a>(L: *mut ffi::lua_State) -> impl Fn(&'static synodic_core::Process) + 'a {
    let rt: &'a synodic_core::Runtime = ctx(L).rt();
    move |p| rt.wake(p)
}

unsafe extern "C-unwind" fn new(L: *mut ffi::lua_State) -> c_int {
    let created = match name(L, "new") {
        Ok(n) => ctx(L).rt().channels().create(n),
        Err(e) => return raise(L, e),
    };
    if !created {
        return fail(L, c"exists");
    }
    ffi::lua_pushboolean(L, 1);
    1
}

enum Next {
    Done(c_int),
    Block,
    Fail(&'static CStr),
}

unsafe fn send_inner(L: *mut ffi::lua_State) -> Result<Next, String> {
    let n = name(L, "send")?;
    let top = ffi::lua_gettop(L);
    let msg = codec::encode(L, 2, top).map_err(|e| format!("send: {e}"))?;
    let c = ctx(L);
    match c.rt().channels().send(n, c.proc(), msg, wake(L)) {
        Ok(SendOutcome::Delivered) => Ok(Next::Done(0)),
        Ok(SendOutcome::Wait(h)) => {
            c.handoff = Some(h);
            Ok(Next::Block)
        }
        Err(_) => Ok(Next::Fail(c"no such channel")),
    }
}

/// When the caller cannot yield, a fresh hand-off is withdrawn at once: the
/// operation completes only if a partner already came.
unsafe fn unless_unyieldable(L: *mut ffi::lua_State, next: Result<Next, String>) -> Result<Next, String> {
    if !matches!(next, Ok(Next::Block)) || ffi::lua_isyieldable(L) != 0 {
        return next;
    }
    let c = ctx(L);
    let handed = match (c.handoff.take(), to_bytes(L, 1)) {
        (Some(h), Some(name)) => c.rt().channels().withdraw(name, &h),
        _ => Handed::Waiting,
    };
    match handed {
        Handed::Done(Some(m)) => codec::decode(L, &m).map(Next::Done).map_err(|e| format!("chan.receive: {e}")),
        Handed::Done(None) => Ok(Next::Done(0)),
        Handed::Deleted => Ok(Next::Fail(c"deleted")),
        Handed::Waiting => Err("chan: cannot block here (inside a call that cannot yield, such as a metamethod called from C)".into()),
    }
}

/// Ends a `send`: `true` once taken, or blocks (again) until it is.
unsafe fn finish_send(L: *mut ffi::lua_State, next: Result<Next, String>) -> c_int {
    match next {
        Ok(Next::Done(_)) => {
            ffi::lua_pushboolean(L, 1);
            1
        }
        Ok(Next::Block) => yield_to_scheduler(L, Pending::Block, send_k, "chan.send"),
        Ok(Next::Fail(why)) => fail(L, why),
        Err(e) => raise(L, e),
    }
}

unsafe extern "C-unwind" fn send(L: *mut ffi::lua_State) -> c_int {
    let next = send_inner(L);
    let next = unless_unyieldable(L, next);
    finish_send(L, next)
}

/// Looks at the pending hand-off: pushes a received message's values if any.
unsafe fn poll_handoff(L: *mut ffi::lua_State) -> Result<Next, String> {
    let c = ctx(L);
    let handed = c.handoff.as_ref().map_or(Handed::Deleted, |h| h.poll());
    match handed {
        Handed::Waiting => Ok(Next::Block),
        Handed::Deleted => {
            c.handoff = None;
            Ok(Next::Fail(c"deleted"))
        }
        Handed::Done(msg) => {
            c.handoff = None;
            match msg {
                Some(m) => codec::decode(L, &m).map(Next::Done).map_err(|e| format!("chan.receive: {e}")),
                None => Ok(Next::Done(0)),
            }
        }
    }
}

unsafe extern "C-unwind" fn send_k(L: *mut ffi::lua_State, _status: c_int, _k: ffi::lua_KContext) -> c_int {
    ffi::lua_settop(L, 0);
    let next = poll_handoff(L);
    finish_send(L, next)
}

unsafe fn receive_inner(L: *mut ffi::lua_State) -> Result<Next, String> {
    let n = name(L, "receive")?;
    let wait = ffi::lua_toboolean(L, 2) == 0;
    let c = ctx(L);
    let outcome = c.rt().channels().receive(n, c.proc(), wait, wake(L));
    match outcome {
        Ok(ReceiveOutcome::Got(msg)) => codec::decode(L, &msg).map(Next::Done).map_err(|e| format!("chan.receive: {e}")),
        Ok(ReceiveOutcome::Empty) => Ok(Next::Done(0)),
        Ok(ReceiveOutcome::Wait(h)) => {
            c.handoff = Some(h);
            Ok(Next::Block)
        }
        Err(_) => Ok(Next::Fail(c"no such channel")),
    }
}

unsafe fn finish_receive(L: *mut ffi::lua_State, next: Result<Next, String>) -> c_int {
    match next {
        Ok(Next::Done(n)) => n,
        Ok(Next::Block) => yield_to_scheduler(L, Pending::Block, receive_k, "chan.receive"),
        Ok(Next::Fail(why)) => fail(L, why),
        Err(e) => raise(L, e),
    }
}

unsafe extern "C-unwind" fn receive(L: *mut ffi::lua_State) -> c_int {
    let next = receive_inner(L);
    let next = unless_unyieldable(L, next);
    finish_receive(L, next)
}

unsafe extern "C-unwind" fn receive_k(L: *mut ffi::lua_State, _status: c_int, _k: ffi::lua_KContext) -> c_int {
    ffi::lua_settop(L, 0);
    let next = poll_handoff(L);
    finish_receive(L, next)
}

unsafe extern "C-unwind" fn delete(L: *mut ffi::lua_State) -> c_int {
    let result = match name(L, "delete") {
        Ok(n) => ctx(L).rt().channels().delete(n, wake(L)),
        Err(e) => return raise(L, e),
    };
    match result {
        Ok(()) => {
            ffi::lua_pushboolean(L, 1);
            1
        }
        Err(_) => fail(L, c"no such channel"),
    }
}
