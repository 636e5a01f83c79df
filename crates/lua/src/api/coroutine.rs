//! The coroutine library, made aware of the scheduler. A blocking call (or
//! preemption) inside a Lua coroutine yields that coroutine, not the
//! process. The replaced `resume` and `wrap` notice that the yield was meant
//! for the scheduler (the context's `pending` is set) and pass it up: the
//! enclosing thread yields too, and when the process is resumed the inner
//! coroutine is resumed where it stopped. To Lua code the coroutine simply
//! never yielded.
//!
//! Where the enclosing thread cannot yield (a coroutine resumed from a call
//! that cannot yield, such as a `table.sort` comparator), a preemption is
//! skipped and a blocking operation is withdrawn (`wait::withdraw`): the
//! coroutine is resumed at once and its operation completes with what was
//! handed to it meanwhile, or fails with a "cannot block here" error raised
//! inside the coroutine, where it blocked.
//!
//! Every process runs as a coroutine of the scheduler, but its main thread
//! is not a coroutine to Lua code: `isyieldable` and `yield` are replaced so
//! that, there, they behave as on the main thread of a plain Lua state.

use std::ffi::c_int;

use mlua_sys as ffi;

use crate::vm::ctx::{ctx, Pending};
use crate::vm::util::raise;

extern "C-unwind" {
    // Lua 5.4.6 and later (mlua-sys declares it only for its own build of Lua).
    fn lua_closethread(L: *mut ffi::lua_State, from: *mut ffi::lua_State) -> c_int;
}

/// The functions of the standard coroutine library replaced here (the
/// coroutine library's template takes them: see `lazy`).
pub(crate) const REPLACED: &[(&std::ffi::CStr, ffi::lua_CFunction)] =
    &[(c"resume", resume), (c"wrap", wrap), (c"yield", yield_), (c"isyieldable", isyieldable)];

/// Outcome of driving a coroutine: results moved to `L` (count), or its error on top of `L`.
enum Driven {
    Values(c_int),
    Error,
    /// `L` itself must yield to the scheduler; resume with `k`.
    PassUp,
}

/// Resumes `co` with `nargs` values already on its stack.
///
/// # Safety
/// `L` is the running thread of a process (lib.rs invariant 1) in a native
/// function, and `co` a coroutine of its state, kept alive by `L`'s stack
/// (at 1) or the function's upvalue. Nothing in this frame owns memory: it
/// may raise (an uncatchable error passed on, an `exit` ended here).
unsafe fn drive(L: *mut ffi::lua_State, co: *mut ffi::lua_State, mut nargs: c_int) -> Driven {
    loop {
        let mut nres = 0;
        let outer = crate::vm::preempt::enter(co);
        // SAFETY: the contract; `co` has its arguments on its stack
        // (`start`), and `lua_resume` catches what its run raises.
        let status = unsafe { ffi::lua_resume(co, L, nargs, &mut nres) };
        crate::vm::preempt::enter(outer);
        match status {
            // SAFETY: the contract (a read of the process's context).
            ffi::LUA_YIELD if unsafe { ctx(L) }.pending != Pending::None => {
                // SAFETY: the contract; `co` yielded `nres` values on top,
                // dropped. The context's borrow `c` ends before the calls
                // that reach it again.
                unsafe {
                    ffi::lua_settop(co, -nres - 1);
                    if ffi::lua_isyieldable(L) != 0 {
                        return Driven::PassUp;
                    }
                    let c = ctx(L);
                    match std::mem::replace(&mut c.pending, Pending::None) {
                        // Not now, then: go on.
                        Pending::Preempt | Pending::None => {}
                        // The process ends all the same, by unwinding `L`.
                        Pending::Exit => crate::api::kernel::end_process_here(L),
                        Pending::Block => crate::vm::wait::withdraw(L),
                    }
                }
                nargs = 0;
            }
            // SAFETY: the contract; `co`'s `nres` results move to `L` once
            // `L` has room for them (or are dropped for an error message).
            ffi::LUA_OK | ffi::LUA_YIELD => unsafe {
                if ffi::lua_checkstack(L, nres + 1) == 0 {
                    ffi::lua_settop(co, -nres - 1);
                    ffi::lua_pushstring(L, c"too many results to resume".as_ptr());
                    return Driven::Error;
                }
                ffi::lua_xmove(co, L, nres);
                return Driven::Values(nres);
            },
            // SAFETY: the contract; the error on `co`'s top moves to `L`
            // (a dead thread keeps its error there), and an uncatchable one
            // goes on unwinding `L` through this frame, which owns nothing.
            _ => unsafe {
                ffi::lua_xmove(co, L, 1);
                // A process ending through the coroutine goes on ending.
                if crate::vm::util::synodic_uncatchable(L, status) != 0 {
                    ffi::lua_error(L);
                }
                return Driven::Error;
            },
        }
    }
}

/// Checks that `co` can be resumed and moves `nargs` arguments from `L` onto it.
unsafe fn start(L: *mut ffi::lua_State, co: *mut ffi::lua_State, nargs: c_int) -> Result<(), &'static std::ffi::CStr> {
    // SAFETY: `L` is the running thread with `nargs` arguments on top and
    // `co` a thread of its state (the caller's); `co`'s stack is checked
    // for room before they move.
    unsafe {
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
    }
    Ok(())
}

unsafe fn resume_results(L: *mut ffi::lua_State, driven: Driven) -> c_int {
    // SAFETY: `L` is the running thread in `resume` (or its continuation)
    // with what `drive` left on top: `n` results or an error. The yield
    // unwinds this frame, which owns nothing; `resume_k` goes on.
    unsafe {
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
}

unsafe extern "C-unwind" fn resume(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1); `raise` drops its message before unwinding.
    let co = unsafe { ffi::lua_tothread(L, 1) };
    if co.is_null() {
        // SAFETY: as above.
        return unsafe { raise(L, format!("bad argument #1 to 'resume' (coroutine expected, got {})", crate::vm::util::type_name(L, 1))) };
    }
    // SAFETY: as above; `co` (at 1, which keeps it alive) is a thread of
    // `L`'s state, as `start` and `drive` ask.
    unsafe {
        let nargs = ffi::lua_gettop(L) - 1;
        if let Err(msg) = start(L, co, nargs) {
            ffi::lua_pushboolean(L, 0);
            ffi::lua_pushstring(L, msg.as_ptr());
            return 2;
        }
        let driven = drive(L, co, nargs);
        resume_results(L, driven)
    }
}

unsafe extern "C-unwind" fn resume_k(L: *mut ffi::lua_State, _status: c_int, _k: ffi::lua_KContext) -> c_int {
    // SAFETY: Lua runs this continuation of `resume` with the same thread
    // `L`, the coroutine still at 1 (its arguments moved to it before the
    // yield); as in `resume`.
    unsafe {
        let co = ffi::lua_tothread(L, 1);
        ffi::lua_settop(L, 1);
        let driven = drive(L, co, 0);
        resume_results(L, driven)
    }
}

unsafe extern "C-unwind" fn wrap(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1); the function at 1 is checked, moved onto a new
    // thread, which becomes the closure's upvalue (keeping it alive).
    unsafe {
        if ffi::lua_type(L, 1) != ffi::LUA_TFUNCTION {
            return raise(L, format!("bad argument #1 to 'wrap' (function expected, got {})", crate::vm::util::type_name(L, 1)));
        }
        let co = ffi::lua_newthread(L);
        ffi::lua_pushvalue(L, 1);
        ffi::lua_xmove(L, co, 1);
        ffi::lua_pushcclosure(L, wrapped, 1);
    }
    1
}

/// As `auxwrap` in `lcorolib.c`: an error closes the coroutine's pending
/// to-be-closed variables (an error in a closing method replaces the
/// original), gets position information if it is a string, and propagates.
unsafe fn wrapped_results(L: *mut ffi::lua_State, co: *mut ffi::lua_State, driven: Driven) -> c_int {
    // SAFETY: `L` is the running thread in `wrapped` (or its continuation)
    // and `co` its coroutine (the closure's upvalue); an error is on `L`'s
    // top (or `co`'s, moved after closing it). The error and the yield
    // unwind this frame, which owns nothing.
    unsafe {
        match driven {
            Driven::Values(n) => n,
            Driven::Error => {
                let mut status = ffi::lua_status(co);
                if status != ffi::LUA_OK && status != ffi::LUA_YIELD {
                    status = lua_closethread(co, L);
                    ffi::lua_xmove(co, L, 1);
                }
                if status != ffi::LUA_ERRMEM && ffi::lua_type(L, -1) == ffi::LUA_TSTRING {
                    ffi::luaL_where(L, 1);
                    ffi::lua_rotate(L, -2, 1);
                    ffi::lua_concat(L, 2);
                }
                ffi::lua_error(L)
            }
            Driven::PassUp => ffi::lua_yieldk(L, 0, 0, Some(wrapped_k)),
        }
    }
}

unsafe extern "C-unwind" fn wrapped(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this closure (made by `wrap`) with its running
    // state `L` (lib.rs invariant 1); upvalue 1 is its coroutine, alive
    // with the closure.
    unsafe {
        let co = ffi::lua_tothread(L, ffi::lua_upvalueindex(1));
        let nargs = ffi::lua_gettop(L);
        if let Err(msg) = start(L, co, nargs) {
            ffi::lua_pushstring(L, msg.as_ptr());
            return wrapped_results(L, co, Driven::Error);
        }
        let driven = drive(L, co, nargs);
        wrapped_results(L, co, driven)
    }
}

unsafe extern "C-unwind" fn wrapped_k(L: *mut ffi::lua_State, _status: c_int, _k: ffi::lua_KContext) -> c_int {
    // SAFETY: Lua runs this continuation of `wrapped` in the same closure's
    // call (its upvalue still the coroutine); as in `wrapped`.
    unsafe {
        let co = ffi::lua_tothread(L, ffi::lua_upvalueindex(1));
        ffi::lua_settop(L, 0);
        let driven = drive(L, co, 0);
        wrapped_results(L, co, driven)
    }
}

/// Whether `co` is the main thread of its state: a process's main thread,
/// which Lua code must see as the main thread of a plain state.
unsafe fn is_main_thread(L: *mut ffi::lua_State, co: *mut ffi::lua_State) -> bool {
    // SAFETY: `L` is the running state (lib.rs invariant 1); the main
    // thread, pushed from the registry, is popped (only its address is kept).
    unsafe {
        ffi::lua_rawgeti(L, ffi::LUA_REGISTRYINDEX, ffi::LUA_RIDX_MAINTHREAD);
        let main = ffi::lua_tothread(L, -1);
        ffi::lua_settop(L, -2);
        main == co
    }
}

unsafe extern "C-unwind" fn isyieldable(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1); `co` is `L` or the thread at 1 (checked
    // non-null); `raise` drops its message before unwinding.
    unsafe {
        let co = if ffi::lua_isnone(L, 1) != 0 { L } else { ffi::lua_tothread(L, 1) };
        if co.is_null() {
            return raise(L, format!("bad argument #1 to 'isyieldable' (coroutine expected, got {})", crate::vm::util::type_name(L, 1)));
        }
        let yieldable = !is_main_thread(L, co) && ffi::lua_isyieldable(co) != 0;
        ffi::lua_pushboolean(L, yieldable as c_int);
    }
    1
}

unsafe extern "C-unwind" fn yield_(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1); the yield (of all its arguments) unwinds this
    // frame, which owns nothing.
    unsafe {
        if is_main_thread(L, L) {
            return raise(L, "attempt to yield from outside a coroutine".into());
        }
        ffi::lua_yield(L, ffi::lua_gettop(L))
    }
}
