//! Scheduler-aware `coroutine.resume` and `coroutine.wrap`. A blocking call
//! (or preemption) inside a Lua coroutine yields that coroutine, not the
//! process. These replacements notice that the yield was meant for the
//! scheduler (the context's `pending` is set) and pass it up: the enclosing
//! thread yields too, and when the process is resumed the inner coroutine is
//! resumed where it stopped. To Lua code the coroutine simply never yielded.

use std::ffi::c_int;

use mlua_sys as ffi;

use crate::ctx::{ctx, Pending};
use crate::util::raise;

/// Opens the standard coroutine library with `resume` and `wrap` replaced.
pub unsafe extern "C-unwind" fn open(L: *mut ffi::lua_State) -> c_int {
    ffi::luaopen_coroutine(L);
    ffi::lua_pushcfunction(L, resume);
    ffi::lua_setfield(L, -2, c"resume".as_ptr());
    ffi::lua_pushcfunction(L, wrap);
    ffi::lua_setfield(L, -2, c"wrap".as_ptr());
    1
}

/// Outcome of driving a coroutine: results moved to `L` (count), or its error on top of `L`.
enum Driven {
    Values(c_int),
    Error,
    /// `L` itself must yield to the scheduler; resume with `k`.
    PassUp,
}

/// Resumes `co` with `nargs` values already on its stack.
unsafe fn drive(L: *mut ffi::lua_State, co: *mut ffi::lua_State, mut nargs: c_int) -> Driven {
    loop {
        let mut nres = 0;
        let outer = crate::preempt::enter(co);
        let status = ffi::lua_resume(co, L, nargs, &mut nres);
        crate::preempt::enter(outer);
        match status {
            ffi::LUA_YIELD if ctx(L).pending != Pending::None => {
                ffi::lua_settop(co, -nres - 1);
                if ffi::lua_isyieldable(L) != 0 {
                    return Driven::PassUp;
                }
                let c = ctx(L);
                let why = std::mem::replace(&mut c.pending, Pending::None);
                if why == Pending::Preempt {
                    nargs = 0;
                    continue;
                }
                // The coroutine cannot wait here: withdraw what it waits on, so
                // nothing is handed to it later (a tuple already handed goes back).
                if let Some(b) = c.linda.take().map(|b| *b) {
                    let space = b.space();
                    if let Some(t) = crate::linda::withdraw(b) {
                        space.out(t, |p| c.rt().wake(p));
                    }
                }
                ffi::lua_pushstring(L, c"cannot block inside a coroutine resumed from a call that cannot yield".as_ptr());
                return Driven::Error;
            }
            ffi::LUA_OK | ffi::LUA_YIELD => {
                if ffi::lua_checkstack(L, nres + 1) == 0 {
                    ffi::lua_settop(co, -nres - 1);
                    ffi::lua_pushstring(L, c"too many results to resume".as_ptr());
                    return Driven::Error;
                }
                ffi::lua_xmove(co, L, nres);
                return Driven::Values(nres);
            }
            _ => {
                ffi::lua_xmove(co, L, 1);
                return Driven::Error;
            }
        }
    }
}

/// Checks that `co` can be resumed and moves `nargs` arguments from `L` onto it.
unsafe fn start(L: *mut ffi::lua_State, co: *mut ffi::lua_State, nargs: c_int) -> Result<(), &'static std::ffi::CStr> {
    if ffi::lua_checkstack(co, nargs) == 0 {
        return Err(c"too many arguments to resume");
    }
    let st = ffi::lua_status(co);
    if st == ffi::LUA_OK && ffi::lua_gettop(co) == 0 {
        return Err(c"cannot resume dead coroutine");
    }
    if st != ffi::LUA_OK && st != ffi::LUA_YIELD {
        return Err(c"cannot resume dead coroutine");
    }
    ffi::lua_xmove(L, co, nargs);
    Ok(())
}

unsafe fn resume_results(L: *mut ffi::lua_State, driven: Driven) -> c_int {
    match driven {
        Driven::Values(n) => {
            ffi::lua_pushboolean(L, 1);
            ffi::lua_rotate(L, -n - 1, 1);
            n + 1
        }
        Driven::Error => {
            ffi::lua_pushboolean(L, 0);
            ffi::lua_rotate(L, -2, 1);
            2
        }
        Driven::PassUp => ffi::lua_yieldk(L, 0, 0, Some(resume_k)),
    }
}

unsafe extern "C-unwind" fn resume(L: *mut ffi::lua_State) -> c_int {
    let co = ffi::lua_tothread(L, 1);
    if co.is_null() {
        return raise(L, format!("bad argument #1 to 'resume' (coroutine expected, got {})", crate::util::type_name(L, 1)));
    }
    let nargs = ffi::lua_gettop(L) - 1;
    if let Err(msg) = start(L, co, nargs) {
        ffi::lua_pushboolean(L, 0);
        ffi::lua_pushstring(L, msg.as_ptr());
        return 2;
    }
    let driven = drive(L, co, nargs);
    resume_results(L, driven)
}

unsafe extern "C-unwind" fn resume_k(L: *mut ffi::lua_State, _status: c_int, _k: ffi::lua_KContext) -> c_int {
    let co = ffi::lua_tothread(L, 1);
    ffi::lua_settop(L, 1);
    let driven = drive(L, co, 0);
    resume_results(L, driven)
}

unsafe extern "C-unwind" fn wrap(L: *mut ffi::lua_State) -> c_int {
    if ffi::lua_type(L, 1) != ffi::LUA_TFUNCTION {
        return raise(L, format!("bad argument #1 to 'wrap' (function expected, got {})", crate::util::type_name(L, 1)));
    }
    let co = ffi::lua_newthread(L);
    ffi::lua_pushvalue(L, 1);
    ffi::lua_xmove(L, co, 1);
    ffi::lua_pushcclosure(L, wrapped, 1);
    1
}

unsafe fn wrapped_results(L: *mut ffi::lua_State, driven: Driven) -> c_int {
    match driven {
        Driven::Values(n) => n,
        Driven::Error => {
            if ffi::lua_type(L, -1) == ffi::LUA_TSTRING {
                ffi::luaL_where(L, 1);
                ffi::lua_rotate(L, -2, 1);
                ffi::lua_concat(L, 2);
            }
            ffi::lua_error(L)
        }
        Driven::PassUp => ffi::lua_yieldk(L, 0, 0, Some(wrapped_k)),
    }
}

unsafe extern "C-unwind" fn wrapped(L: *mut ffi::lua_State) -> c_int {
    let co = ffi::lua_tothread(L, ffi::lua_upvalueindex(1));
    let nargs = ffi::lua_gettop(L);
    if let Err(msg) = start(L, co, nargs) {
        ffi::lua_pushstring(L, msg.as_ptr());
        return wrapped_results(L, Driven::Error);
    }
    let driven = drive(L, co, nargs);
    wrapped_results(L, driven)
}

unsafe extern "C-unwind" fn wrapped_k(L: *mut ffi::lua_State, _status: c_int, _k: ffi::lua_KContext) -> c_int {
    let co = ffi::lua_tothread(L, ffi::lua_upvalueindex(1));
    ffi::lua_settop(L, 0);
    let driven = drive(L, co, 0);
    wrapped_results(L, driven)
}
