//! The `synodic.chan` module: named rendezvous channels (SPEC §4, luaproc's
//! semantics). The channel logic lives in `synodic_core::channel`; this file
//! maps it to Lua: `true` on success, `nil, "exists"`, `nil, "no such
//! channel"`, `nil, "deleted"`. A blocked send or receive waits as every
//! blocking operation does (`wait`).

use std::ffi::{c_int, CStr};

use mlua_sys as ffi;
use synodic_core::waiting::Completion;

use crate::vm::codec;
use crate::vm::ctx::ctx;
use crate::vm::util::*;
use crate::vm::wait::{self, Poll};

/// A send or receive queued on a channel.
struct Queued(Box<[u8]>);

impl wait::Queue for Queued {
    unsafe fn withdraw(&self, L: *mut ffi::lua_State, waiter: synodic_core::waiting::Waiter) {
        // SAFETY: `L` is the running process's state (the trait's contract), with a context.
        unsafe { ctx(L) }.rt().channels().withdraw(&self.0, waiter);
    }
    fn as_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}

pub(crate) const FUNCTIONS: &[(&CStr, ffi::lua_CFunction)] = &[(c"new", new), (c"send", send), (c"receive", receive), (c"delete", delete)];

crate::vm::lazy::lazy_module!(b"synodic.chan");

/// The channel name, argument 1 (its bytes live while it stays there).
unsafe fn name<'a>(L: *mut ffi::lua_State, fname: &str) -> Result<&'a [u8], String> {
    // SAFETY: `L` is the running state (lib.rs invariant 1); argument 1 is
    // read as bytes only once checked to be a string (no conversion).
    unsafe {
        match ffi::lua_type(L, 1) {
            ffi::LUA_TSTRING => Ok(to_bytes(L, 1).unwrap_or_default()),
            _ => Err(format!("bad argument #1 to '{fname}' (channel name expected, got {})", type_name(L, 1))),
        }
    }
}

unsafe fn fail(L: *mut ffi::lua_State, why: &CStr) -> c_int {
    // SAFETY: `L` is the running state (lib.rs invariant 1), in a native
    // function (room for its results).
    unsafe {
        ffi::lua_pushnil(L);
        ffi::lua_pushstring(L, why.as_ptr());
    }
    2
}

unsafe extern "C-unwind" fn new(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1), whose context is entered; `raise` drops `e`.
    let created = unsafe {
        match name(L, "new") {
            Ok(n) => ctx(L).rt().channels().create(n),
            Err(e) => return raise(L, e),
        }
    };
    // SAFETY: as above; nothing is owned here.
    unsafe {
        if !created {
            return fail(L, c"exists");
        }
        ffi::lua_pushboolean(L, 1);
    }
    1
}

/// What an operation comes to.
enum Next {
    /// Done: this many results are on the stack.
    Done(c_int),
    Block,
    Fail(&'static CStr),
}

unsafe fn send_inner(L: *mut ffi::lua_State) -> Result<Next, String> {
    // SAFETY: `L` is the running process's state (lib.rs invariant 1), in
    // `send`: the name at 1, the values from 2 to the top.
    let n = unsafe { name(L, "send")? };
    // SAFETY: as above.
    let msg = unsafe { codec::encode(L, 2, ffi::lua_gettop(L)) }.map_err(|e| format!("send: {e}"))?;
    // SAFETY: as above; the context (entered for this resume) keeps the wait.
    let (waiter, rt) = unsafe { (wait::begin(L, Box::new(Queued(n.into()))), ctx(L).rt()) };
    Ok(match rt.channels().send(n, waiter, msg, |d| rt.complete(d)) {
        // SAFETY: as above (the wait just begun is ended).
        Ok(true) => unsafe {
            wait::end::<Queued>(L);
            ffi::lua_pushboolean(L, 1);
            Next::Done(1)
        },
        Ok(false) => Next::Block,
        Err(_) => {
            // SAFETY: as above.
            unsafe { wait::end::<Queued>(L) };
            Next::Fail(c"no such channel")
        }
    })
}

unsafe fn finish(L: *mut ffi::lua_State, next: Result<Next, String>, k: unsafe extern "C-unwind" fn(*mut ffi::lua_State, c_int, ffi::lua_KContext) -> c_int, what: &str) -> c_int {
    // SAFETY: `L` is the running process's thread in a native function
    // (or its continuation `k`); `next` is consumed, so this frame owns
    // nothing when it blocks, and `raise` drops `e` before unwinding.
    unsafe {
        match next {
            Ok(Next::Done(n)) => n,
            Ok(Next::Block) => wait::block(L, k, what),
            Ok(Next::Fail(why)) => fail(L, why),
            Err(e) => raise(L, e),
        }
    }
}

unsafe extern "C-unwind" fn send(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1); the work is done (and its values dropped) in
    // `send_inner` before `finish` may raise or yield.
    unsafe {
        let next = send_inner(L);
        finish(L, next, send_k, "chan.send")
    }
}

/// What a woken (or withdrawn) operation finds.
unsafe fn polled(L: *mut ffi::lua_State) -> Result<Next, String> {
    // SAFETY: `L` is the running process's state (lib.rs invariant 1), in a continuation.
    let polled = unsafe { wait::poll(L) };
    if !matches!(polled, Poll::Waiting) {
        // SAFETY: as above.
        unsafe { wait::end::<Queued>(L) };
    }
    Ok(match polled {
        // SAFETY: as above. NOT KEPT: lib.rs invariant 2, the message `m`
        // is alive while it is decoded, and a memory error there unwinds
        // over it (in practice a leak).
        Poll::Done(Completion::Value(m)) => Next::Done(unsafe { codec::decode(L, &m) }.map_err(|e| format!("chan.receive: {e}"))?),
        Poll::Done(Completion::Taken) => {
            // SAFETY: as above.
            unsafe { ffi::lua_pushboolean(L, 1) };
            Next::Done(1)
        }
        Poll::Done(Completion::Deleted | Completion::Notified | Completion::Nothing | Completion::Count(_) | Completion::Full | Completion::Moved) => Next::Fail(c"deleted"),
        Poll::Withdrawn => return Err("chan: cannot block here (inside a call that cannot yield, such as a metamethod called from C)".into()),
        Poll::Waiting => Next::Block,
    })
}

unsafe extern "C-unwind" fn send_k(L: *mut ffi::lua_State, _status: c_int, _k: ffi::lua_KContext) -> c_int {
    // SAFETY: Lua runs this continuation with the process's running state
    // `L` (lib.rs invariant 1); as in `send`.
    unsafe {
        ffi::lua_settop(L, 0);
        let next = polled(L);
        finish(L, next, send_k, "chan.send")
    }
}

unsafe fn receive_inner(L: *mut ffi::lua_State) -> Result<Next, String> {
    // SAFETY: `L` is the running process's state (lib.rs invariant 1), in
    // `receive`: the name at 1, the flag at 2.
    let n = unsafe { name(L, "receive")? };
    // SAFETY: as above.
    let wait = unsafe { ffi::lua_toboolean(L, 2) } == 0;
    // SAFETY: as above; the context (entered for this resume) keeps the wait.
    let (waiter, rt) = unsafe { (wait::begin(L, Box::new(Queued(n.into()))), ctx(L).rt()) };
    let got = rt.channels().receive(n, waiter, wait, |d| rt.complete(d));
    if !matches!(got, Ok(None)) || !wait {
        // SAFETY: as above.
        unsafe { wait::end::<Queued>(L) };
    }
    Ok(match got {
        // SAFETY: as above. NOT KEPT: lib.rs invariant 2, the message `msg`
        // is alive while it is decoded, and a memory error there unwinds
        // over it (in practice a leak).
        Ok(Some(msg)) => Next::Done(unsafe { codec::decode(L, &msg) }.map_err(|e| format!("chan.receive: {e}"))?),
        Ok(None) if wait => Next::Block,
        Ok(None) => Next::Done(0),
        Err(_) => Next::Fail(c"no such channel"),
    })
}

unsafe extern "C-unwind" fn receive(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: as in `send`.
    unsafe {
        let next = receive_inner(L);
        finish(L, next, receive_k, "chan.receive")
    }
}

unsafe extern "C-unwind" fn receive_k(L: *mut ffi::lua_State, _status: c_int, _k: ffi::lua_KContext) -> c_int {
    // SAFETY: as in `send_k`.
    unsafe {
        ffi::lua_settop(L, 0);
        let next = polled(L);
        finish(L, next, receive_k, "chan.receive")
    }
}

unsafe extern "C-unwind" fn delete(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1), whose context is entered; `raise` drops `e`.
    let result = unsafe {
        match name(L, "delete") {
            Ok(n) => {
                let rt = ctx(L).rt();
                rt.channels().delete(n, |d| rt.complete(d))
            }
            Err(e) => return raise(L, e),
        }
    };
    // SAFETY: as above; `result` holds no allocation (its error is always
    // `NoSuchChannel`), so an error in `fail` skips nothing that frees.
    unsafe {
        match result {
            Ok(()) => {
                ffi::lua_pushboolean(L, 1);
                1
            }
            Err(_) => fail(L, c"no such channel"),
        }
    }
}
