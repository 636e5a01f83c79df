//! Messages sent later from Lua (SPEC §11): `send_after(seconds, dest,
//! v1, ...)` hands the message to the core's timer store and returns its
//! reference (an integer); `cancel_timer(ref)` takes it back. A name is
//! looked up when the message is due, as Erlang does. Functions of this
//! file follow the contract of `kernel.rs`.

use std::ffi::c_int;
use std::time::{Duration, Instant};

use mlua_sys as ffi;
use synodic_core::timer::{Dest, Later};

use crate::vm::codec;
use crate::vm::ctx::ctx;
use crate::vm::util::*;

/// `send_after(seconds, dest, v1, ...)`.
pub(super) unsafe extern "C-unwind" fn send_after(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: the contract; the values are dropped before `raise` unwinds.
    let armed = (|| unsafe {
        let after = opt_seconds(L, 1, "send_after")?.ok_or("bad argument #1 to 'send_after' (number expected, got no value)")?;
        let to = match to_pid(L, 2) {
            Some(pid) => Dest::Pid(pid),
            None if ffi::lua_type(L, 2) == ffi::LUA_TSTRING => Dest::Name(to_bytes(L, 2).unwrap_or_default().into()),
            None => return Err(format!("bad argument #2 to 'send_after' (pid or name expected, got {})", type_name(L, 2))),
        };
        let top = ffi::lua_gettop(L);
        if top < 3 {
            return Err("send_after: nothing to send (give at least one value)".into());
        }
        let message = codec::encode(L, 3, top).map_err(|e| format!("send_after: {e}"))?;
        if matches!(to, Dest::Pid(pid) if pid.node() != 0) {
            synodic_core::dist::carry::crossing(&message).map_err(|e| format!("send_after: {e}"))?;
        }
        let c = ctx(L);
        let at = Instant::now() + after.min(Duration::from_secs(100 * 365 * 86400));
        Ok::<_, String>(c.rt().send_at(at, Later { from: c.proc().pid(), to, message }))
    })();
    // SAFETY: the contract.
    unsafe {
        match armed {
            Ok(id) => {
                ffi::lua_pushinteger(L, id as ffi::lua_Integer);
                1
            }
            Err(e) => raise(L, e),
        }
    }
}

/// `cancel_timer(ref)`: true if the message had not been sent.
pub(super) unsafe extern "C-unwind" fn cancel_timer(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: the contract.
    unsafe {
        let mut is_int = 0;
        let id = ffi::lua_tointegerx(L, 1, &mut is_int);
        if is_int == 0 {
            return raise(L, format!("bad argument #1 to 'cancel_timer' (timer reference expected, got {})", type_name(L, 1)));
        }
        let cancelled = ctx(L).rt().cancel_timer(id as u64);
        ffi::lua_pushboolean(L, cancelled as c_int);
        1
    }
}
