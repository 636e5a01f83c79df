//! A process's processor time, counted across its runs on whatever worker
//! threads they take place, for the processes that ask for it (the node's
//! pool workers: a skeleton reports how much of a task's time it
//! computed; a process calling `os.clock`, which counts its own time, not
//! the node's). Kept in the state's registry, not the context: few processes
//! need it, and every idle one would pay for a field.

use std::ffi::{c_int, CStr};

use mlua_sys as ffi;

use crate::vm::ctx::ctx;

/// Nanoseconds used in the process's runs so far; during a run, what to
/// add to the thread's clock.
const CPU_USED: &CStr = c"synodic.cpu_used";
const CPU_OFFSET: &CStr = c"synodic.cpu_offset";

fn thread_cpu_ns() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: writes the clock into `ts`.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

unsafe fn registry_int(L: *mut ffi::lua_State, key: &CStr) -> i64 {
    // SAFETY: `L` is a process's state (lib.rs invariant 1); the registry is
    // a plain table (no metamethods), and the value pushed is popped.
    unsafe {
        ffi::lua_getfield(L, ffi::LUA_REGISTRYINDEX, key.as_ptr());
        let n = ffi::lua_tointegerx(L, -1, std::ptr::null_mut());
        ffi::lua_pop(L, 1);
        n
    }
}

unsafe fn set_registry_int(L: *mut ffi::lua_State, key: &CStr, n: i64) {
    // SAFETY: `L` is a process's state (lib.rs invariant 1); the registry is
    // a plain table, and `lua_setfield` pops the integer pushed.
    unsafe {
        ffi::lua_pushinteger(L, n);
        ffi::lua_setfield(L, ffi::LUA_REGISTRYINDEX, key.as_ptr());
    }
}

/// The running process's time is counted from now on (its clock starts
/// during this run).
pub(crate) unsafe fn start_timing(L: *mut ffi::lua_State) {
    // SAFETY: `L` is a process's state (lib.rs invariant 1), with a context;
    // the borrow of it ends before `run_starts`.
    if !std::mem::replace(&mut unsafe { ctx(L) }.timed, true) {
        // SAFETY: as above.
        unsafe { run_starts(L) };
    }
}

/// A timed process's run begins (on whatever thread): its clock continues
/// from the time it has used.
pub(crate) unsafe fn run_starts(L: *mut ffi::lua_State) {
    // SAFETY: `L` is a process's state (lib.rs invariant 1).
    unsafe { set_registry_int(L, CPU_OFFSET, registry_int(L, CPU_USED) - thread_cpu_ns()) };
}

/// A timed process's run ends: the time it used is added up.
pub(crate) unsafe fn run_ends(L: *mut ffi::lua_State) {
    // SAFETY: `L` is a process's state (lib.rs invariant 1).
    unsafe { set_registry_int(L, CPU_USED, registry_int(L, CPU_OFFSET) + thread_cpu_ns()) };
}

/// `s._cpu_clock()`: the processor time this timed process has used, in
/// seconds, wherever its runs took place.
pub(crate) unsafe extern "C-unwind" fn cpu_clock(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1); nothing here owns memory.
    unsafe {
        let ns = registry_int(L, CPU_OFFSET) + thread_cpu_ns();
        ffi::lua_pushnumber(L, ns as f64 * 1e-9);
    }
    1
}

/// `os.clock()`: the processor time the calling process has used, in
/// seconds (counted from its first call: a difference of two calls is what
/// `lua`'s would be for a program alone).
pub(crate) unsafe extern "C-unwind" fn os_clock(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1), with a context.
    unsafe {
        start_timing(L);
        cpu_clock(L)
    }
}
