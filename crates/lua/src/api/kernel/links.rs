//! Links, `trap_exit` and `kill` from Lua (SPEC §11; the rules are the
//! core's, `runtime/links.rs`): `link`, `unlink`, `spawn_link`,
//! `spawn_link_on`, `trap_exit`, `kill`. Functions of this file follow
//! the contract of `kernel.rs`.

use std::ffi::c_int;

use mlua_sys as ffi;
use synodic_core::runtime::Linked;
use synodic_core::{ExitReason, Pid};

use crate::vm::ctx::ctx;
use crate::vm::util::*;

/// `link(pid)`: links the caller and `pid`.
pub(super) unsafe extern "C-unwind" fn link(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: the contract; `raise` drops `e` before unwinding.
    unsafe {
        match pid_arg(L, 1, "link") {
            Ok(pid) => link_to(L, pid, "link", 0),
            Err(e) => raise(L, e),
        }
    }
}

/// Links the caller to `pid`, then returns `results` values from the top:
/// a process that had already ended abnormally ends the caller (unless it
/// traps exits), one that is unknown is an error.
pub(crate) unsafe fn link_to(L: *mut ffi::lua_State, pid: Pid, fname: &str, results: c_int) -> c_int {
    // SAFETY: the contract.
    let c = unsafe { ctx(L) };
    match c.rt().link(c.proc().pid(), pid) {
        Linked::Yes => results,
        // SAFETY: the contract; the reason moves into the context.
        Linked::EndWith(reason) => unsafe { super::end_with(L, reason) },
        // SAFETY: the contract; `raise` drops its message before unwinding.
        Linked::NoProcess => unsafe { raise(L, format!("{fname}: no such process {pid}")) },
    }
}

/// `unlink(pid)`: no signal passes between the caller and `pid` after it.
pub(super) unsafe extern "C-unwind" fn unlink(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: the contract; `raise` drops `e` before unwinding.
    unsafe {
        match pid_arg(L, 1, "unlink") {
            Ok(pid) => {
                let c = ctx(L);
                c.rt().unlink(c.proc().pid(), pid);
                0
            }
            Err(e) => raise(L, e),
        }
    }
}

/// `spawn_link(f, ...)`: `spawn`, linked to the caller before the new
/// process can end unseen.
pub(super) unsafe extern "C-unwind" fn spawn_link(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: the contract; `raise` drops `e` before unwinding.
    unsafe {
        if ffi::lua_type(L, 1) != ffi::LUA_TFUNCTION {
            return raise(L, format!("bad argument #1 to 'spawn_link' (function expected, got {})", type_name(L, 1)));
        }
        match super::spawn_encoded(L, 1, None, "spawn_link") {
            Ok(pid) => {
                push_pid(L, pid);
                link_to(L, pid, "spawn_link", 1)
            }
            Err(e) => raise(L, e),
        }
    }
}

/// `spawn_link_on(node, f, ...)`: `spawn_on`, then linked (a process that
/// ended before the link is made still gives its reason, while its node
/// remembers it).
pub(super) unsafe extern "C-unwind" fn spawn_link_on(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: the contract; the node name (at 1, checked to be a string)
    // stays on the stack while `asked` borrows it.
    unsafe {
        let Some(asked) = (ffi::lua_type(L, 1) == ffi::LUA_TSTRING).then(|| to_bytes(L, 1)).flatten() else {
            return raise(L, format!("bad argument #1 to 'spawn_link_on' (node name expected, got {})", type_name(L, 1)));
        };
        if ffi::lua_type(L, 2) != ffi::LUA_TFUNCTION {
            return raise(L, format!("bad argument #2 to 'spawn_link_on' (function expected, got {})", type_name(L, 2)));
        }
        super::spawn_somewhere(L, asked, 2, "spawn_link_on")
    }
}

/// `trap_exit(on)`: with `true`, a linked process's end comes as the
/// message `"EXIT", pid, reason`; returns the previous setting.
pub(super) unsafe extern "C-unwind" fn trap_exit(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: the contract.
    unsafe {
        let on = ffi::lua_toboolean(L, 1) != 0;
        let c = ctx(L);
        let was = c.rt().trap_exit(c.proc().pid(), on);
        ffi::lua_pushboolean(L, was as c_int);
        1
    }
}

/// `kill(pid [, reason])`: ends `pid` (default reason `"killed"`), on any
/// node, whatever it traps; true when there was such a process (for one
/// on another node: when the request went out).
pub(super) unsafe extern "C-unwind" fn kill(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: the contract; `raise` drops `e` before unwinding.
    unsafe {
        let asked = (|| {
            let pid = pid_arg(L, 1, "kill")?;
            let reason = match ffi::lua_isnoneornil(L, 2) != 0 {
                true => ExitReason::Error("killed".into()),
                false => super::exit_reason(L, 2, "kill")?,
            };
            Ok::<_, String>((pid, reason))
        })();
        match asked {
            Ok((pid, reason)) if pid == ctx(L).proc().pid() => super::end_with(L, reason),
            Ok((pid, reason)) => {
                let killed = ctx(L).rt().kill(pid, reason);
                ffi::lua_pushboolean(L, killed as c_int);
                1
            }
            Err(e) => raise(L, e),
        }
    }
}
