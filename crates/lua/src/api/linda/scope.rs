//! The tuple scope's hold, on the process's side (the gate itself is the
//! node's: `synodic_core::scope::Gate`). Before a method runs (`call`):
//!
//! 1. the gate is open: one relaxed load, and the method runs;
//! 2. stopped: the method is held; the process waits on its mailbox (the
//!    dashboard's step or continue nudges it; a message wakes it too, and
//!    it asks again) and runs the method once let through;
//! 3. a break condition is set: it is evaluated here, in the calling
//!    process, as a Lua expression over `op` (the method's name), `space`
//!    (its name, or "private space"), `t` (the tuple's fields, or the
//!    template's with formals as tables; no timeout) and `pid`; one
//!    that holds (true, no error) stops the node's gate on this method.

use std::ffi::c_int;

use mlua_sys as ffi;
use synodic_core::scope::{Entry, Held};
use synodic_core::Pid;

use super::{dispatch, handle, METHODS};
use crate::vm::ctx::ctx;
use crate::vm::util::{push_bytes, push_pid};

/// Steps 1 to 3 for method `m`: `Some` when the method was held (the
/// process now waits), `None` when it runs now.
pub(super) unsafe fn gate(L: *mut ffi::lua_State, m: usize) -> Option<c_int> {
    // SAFETY: `L` is the running state of a method call (lib.rs invariant
    // 1), its handle at 1 and its arguments above; each borrow of the
    // context ends within its statement.
    unsafe {
        if !ctx(L).rt().scope().engaged() {
            return None;
        }
        let rt = ctx(L).rt().clone();
        let pid = ctx(L).proc().pid();
        match rt.scope().enter(pid) {
            Entry::Go => None,
            Entry::Hold => {
                rt.scope().hold(held(L, m, pid));
                Some(wait(L, m))
            }
            Entry::Test(condition) => {
                if !meets(L, m, pid, &condition) {
                    return None;
                }
                rt.scope().hit(held(L, m, pid));
                Some(wait(L, m))
            }
        }
    }
}

/// The held method as the dashboard shows it.
unsafe fn held(L: *mut ffi::lua_State, m: usize, pid: Pid) -> Held {
    // SAFETY: as in `gate`; the template reader pushes and pops only.
    let args = match unsafe { super::template(L, first_field(m), METHODS[m].name) } {
        Ok((patterns, _)) => synodic_core::linda::shown(&patterns),
        Err(_) => "(...)".into(),
    };
    // SAFETY: as in `gate` (the handle at 1 is borrowed for the call).
    let space = unsafe { space_label(L) };
    Held { pid, op: METHODS[m].name.into(), space, args }
}

/// The space's name, or "private space".
unsafe fn space_label(L: *mut ffi::lua_State) -> String {
    // SAFETY: the handle at 1 is borrowed for this statement (see `gate`).
    match unsafe { handle(L, 1) }.and_then(|h| h.space.name.clone()) {
        Some(name) => String::from_utf8_lossy(&name).into_owned(),
        None => "private space".into(),
    }
}

/// The stack index of the method's first tuple or template field (the
/// `_within` methods take a timeout first).
fn first_field(m: usize) -> c_int {
    if METHODS[m].name.ends_with("_within") { 3 } else { 2 }
}

/// Step 2: waits until the gate lets the method through.
unsafe fn wait(L: *mut ffi::lua_State, m: usize) -> c_int {
    // SAFETY: as in `gate`; the yield unwinds this frame, which owns nothing.
    unsafe { crate::vm::wait::block_on_mailbox(L, held_k, m as ffi::lua_KContext, METHODS[m].name) }
}

unsafe extern "C-unwind" fn held_k(L: *mut ffi::lua_State, _status: c_int, k: ffi::lua_KContext) -> c_int {
    let m = k as usize;
    // SAFETY: Lua runs this continuation with the process's running thread
    // (lib.rs invariant 1), the method's stack as it was held.
    unsafe {
        let c = ctx(L);
        if c.rt().scope().still_held(c.proc().pid()) {
            return wait(L, m);
        }
        dispatch(L, m)
    }
}

/// Step 3: whether the break condition holds for this method call.
unsafe fn meets(L: *mut ffi::lua_State, m: usize, pid: Pid, condition: &str) -> bool {
    let code = format!("return ({condition})");
    // NOT KEPT: lib.rs invariant 2, `code` is alive through the allocating
    // calls before the protected call (a memory error there would leak it).
    // SAFETY: as in `gate`. Everything pushed here is above `top` and
    // popped before returning; the chunk runs in protected mode (an error,
    // or a yield it cannot make, is a false condition).
    unsafe {
        let top = ffi::lua_gettop(L);
        if ffi::luaL_loadbufferx(L, code.as_ptr().cast(), code.len(), c"=break condition".as_ptr(), c"t".as_ptr()) != ffi::LUA_OK {
            ffi::lua_settop(L, top);
            return false;
        }
        // Its environment: op, space, t and pid, over the process's globals.
        ffi::lua_createtable(L, 0, 4);
        push_bytes(L, METHODS[m].name.as_bytes());
        ffi::lua_setfield(L, -2, c"op".as_ptr());
        push_bytes(L, space_label(L).as_bytes());
        ffi::lua_setfield(L, -2, c"space".as_ptr());
        push_pid(L, pid);
        ffi::lua_setfield(L, -2, c"pid".as_ptr());
        ffi::lua_createtable(L, (top - 1).max(0), 0);
        for (i, idx) in (first_field(m)..=top).enumerate() {
            ffi::lua_pushvalue(L, idx);
            ffi::lua_rawseti(L, -2, i as ffi::lua_Integer + 1);
        }
        ffi::lua_setfield(L, -2, c"t".as_ptr());
        ffi::lua_createtable(L, 0, 1);
        ffi::lua_rawgeti(L, ffi::LUA_REGISTRYINDEX, ffi::LUA_RIDX_GLOBALS);
        ffi::lua_setfield(L, -2, c"__index".as_ptr());
        ffi::lua_setmetatable(L, -2);
        ffi::lua_setupvalue(L, -2, 1);
        let ok = ffi::lua_pcall(L, 0, 1, 0) == ffi::LUA_OK && ffi::lua_toboolean(L, -1) != 0;
        ffi::lua_settop(L, top);
        ok
    }
}
