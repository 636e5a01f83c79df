//! Small helpers over the raw Lua C API shared by the native modules.
//!
//! A rule for every native function here: `lua_error` and `lua_yieldk`
//! unwind with `longjmp`, which skips Rust destructors. So a function first
//! does its Rust work in an inner function that returns a `Result`, drops
//! everything that owns memory, and only then raises or yields.

use std::ffi::{c_int, c_void, CStr};
use std::time::Duration;

use mlua_sys as ffi;
use synodic_core::Pid;

use crate::vm::ctx::{ctx, Pending};
use crate::vm::peek::{peek, Plain};

pub(crate) unsafe fn push_bytes(L: *mut ffi::lua_State, b: &[u8]) {
    ffi::lua_pushlstring(L, b.as_ptr().cast(), b.len());
}

/// The bytes of a string (or number, converted in place) at `idx`.
pub(crate) unsafe fn to_bytes<'a>(L: *mut ffi::lua_State, idx: c_int) -> Option<&'a [u8]> {
    let mut len = 0;
    let p = ffi::lua_tolstring(L, idx, &mut len);
    (!p.is_null()).then(|| std::slice::from_raw_parts(p.cast(), len))
}

/// A copy of `b`, or an error when there is no memory for it (a size a
/// program chose must never abort the node).
pub(crate) fn try_copy(b: &[u8]) -> Result<Box<[u8]>, String> {
    let mut v = try_vec(b.len())?;
    v.extend_from_slice(b);
    Ok(v.into_boxed_slice())
}

/// An empty vector with room for `bytes`, or an error when there is no
/// memory for them, or they are more than the machine has.
pub(crate) fn try_vec(bytes: usize) -> Result<Vec<u8>, String> {
    if bytes > synodic_core::cache::largest_block() {
        return Err(format!("not enough memory for {bytes} bytes"));
    }
    synodic_core::payload::with_capacity(bytes).map_err(|_| format!("not enough memory for {bytes} bytes"))
}

/// Calls the function below `nargs` arguments on the stack, catching its
/// errors: the one way this crate calls Lua code from Rust (a module's
/// `__index`, a `where` predicate, a `receive_match` filter, a module
/// loader). An error that must not be caught (the process is ending: see
/// [`synodic_uncatchable`]) goes on unwinding, as through `pcall`; any
/// other is left on top of the stack, and `Err` says so.
pub(crate) unsafe fn protected(L: *mut ffi::lua_State, nargs: c_int, nresults: c_int) -> Result<(), ()> {
    let status = ffi::lua_pcall(L, nargs, nresults, 0);
    if status == ffi::LUA_OK {
        return Ok(());
    }
    if synodic_uncatchable(L, status) != 0 {
        ffi::lua_error(L);
    }
    Err(())
}

/// The error on top of the stack as text, popped.
pub(crate) unsafe fn pop_error(L: *mut ffi::lua_State) -> String {
    let text = match ffi::lua_type(L, -1) {
        ffi::LUA_TSTRING | ffi::LUA_TNUMBER => to_bytes(L, -1).map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or_default(),
        _ => format!("(error object is a {} value)", type_name(L, -1)),
    };
    ffi::lua_settop(L, -2);
    text
}

/// Raises `msg` as a Lua error. The message is copied onto the Lua stack and
/// dropped before unwinding.
pub(crate) unsafe fn raise(L: *mut ffi::lua_State, msg: String) -> c_int {
    push_bytes(L, msg.as_bytes());
    drop(msg);
    ffi::lua_error(L)
}

pub(crate) unsafe fn type_name(L: *mut ffi::lua_State, idx: c_int) -> &'static str {
    let p = ffi::lua_typename(L, ffi::lua_type(L, idx));
    CStr::from_ptr(p).to_str().unwrap_or("?")
}

pub(crate) unsafe fn push_pid(L: *mut ffi::lua_State, pid: Pid) {
    ffi::lua_pushlightuserdata(L, pid.raw() as usize as *mut c_void);
    give_pids_their_metatable(L);
}

/// Sets the light-userdata metatable (pids' `__tostring`) the first time a
/// state holds a pid.
#[inline]
pub(crate) unsafe fn give_pids_their_metatable(L: *mut ffi::lua_State) {
    let c = ctx(L);
    if !c.pid_meta {
        c.pid_meta = true;
        set_pid_metatable(L);
    }
}

/// Gives `L` pids' metatable now, as its first pid would: a template's
/// state does so for processes that hold pids from their start (an entity
/// its own and its parent's), whose copies then find it made. (Not the base
/// template's: there the table, placed among an idle process's hot objects,
/// made a ring's sends ~5% slower.)
pub(crate) unsafe fn hold_pids(L: *mut ffi::lua_State) {
    ffi::lua_pushlightuserdata(L, std::ptr::null_mut());
    give_pids_their_metatable(L);
    ffi::lua_settop(L, -2);
}

/// All light userdata of a state share one metatable; pids are the only light userdata we make.
unsafe fn set_pid_metatable(L: *mut ffi::lua_State) {
    ffi::lua_createtable(L, 0, 2);
    ffi::lua_pushcfunction(L, pid_tostring);
    ffi::lua_setfield(L, -2, c"__tostring".as_ptr());
    ffi::lua_pushstring(L, c"pid".as_ptr());
    ffi::lua_setfield(L, -2, c"__name".as_ptr());
    ffi::lua_setmetatable(L, -2);
}

unsafe extern "C-unwind" fn pid_tostring(L: *mut ffi::lua_State) -> c_int {
    match to_pid(L, 1) {
        Some(pid) => {
            let s = pid.to_string();
            push_bytes(L, s.as_bytes());
        }
        None => {
            let p = ffi::lua_touserdata(L, 1);
            let s = format!("userdata: {p:p}");
            push_bytes(L, s.as_bytes());
        }
    }
    1
}

/// The pid at stack index `idx` (not a pseudo-index), if that is one.
pub(crate) unsafe fn to_pid(L: *mut ffi::lua_State, idx: c_int) -> Option<Pid> {
    match peek(L, idx) {
        Plain::Light(p) => Pid::from_raw(p as usize as u64),
        _ => None,
    }
}

/// Argument `idx` of `fname`, a pid, or the error that says it is not one.
pub(crate) unsafe fn pid_arg(L: *mut ffi::lua_State, idx: c_int, fname: &str) -> Result<Pid, String> {
    to_pid(L, idx).ok_or_else(|| format!("bad argument #{idx} to '{fname}' (pid expected, got {})", type_name(L, idx)))
}

/// An optional timeout argument in seconds: `None` for nil/none.
#[inline]
pub(crate) unsafe fn opt_seconds(L: *mut ffi::lua_State, idx: c_int, fname: &str) -> Result<Option<Duration>, String> {
    // Most receives give no timeout: known from the top alone.
    if ffi::lua_gettop(L) < idx {
        return Ok(None);
    }
    given_seconds(L, idx, fname)
}

#[inline(never)]
unsafe fn given_seconds(L: *mut ffi::lua_State, idx: c_int, fname: &str) -> Result<Option<Duration>, String> {
    if peek(L, idx) == Plain::Nil {
        return Ok(None);
    }
    let mut ok = 0;
    let secs = ffi::lua_tonumberx(L, idx, &mut ok);
    if ok == 0 {
        return Err(format!("bad argument #{idx} to '{fname}' (number of seconds expected, got {})", type_name(L, idx)));
    }
    if secs.is_nan() {
        return Err(format!("bad argument #{idx} to '{fname}' (number of seconds expected, got NaN)"));
    }
    Ok(Some(Duration::from_secs_f64(secs.clamp(0.0, 1e9))))
}

/// Sets (and arms) the deadline of a blocking call that starts now.
#[inline]
pub(crate) unsafe fn start_deadline(L: *mut ffi::lua_State, timeout: Option<Duration>) {
    let c = ctx(L);
    c.deadline = None;
    if let Some(t) = timeout {
        let at = c.rt().uptime() + t;
        c.deadline = std::num::NonZeroU64::new((at.as_nanos() as u64).max(1));
        c.rt().arm_timer(c.proc(), c.rt().at_uptime(at));
    }
}

pub(crate) unsafe fn deadline_passed(L: *mut ffi::lua_State) -> bool {
    let c = ctx(L);
    c.deadline.is_some_and(|d| c.rt().uptime().as_nanos() as u64 >= d.get())
}

/// Replaces the top `n` values with one list of them.
pub(crate) unsafe fn pack(L: *mut ffi::lua_State, n: c_int) {
    ffi::lua_createtable(L, n, 0);
    ffi::lua_rotate(L, -n - 1, 1);
    for k in (1..=n).rev() {
        ffi::lua_rawseti(L, -1 - k, k as ffi::lua_Integer);
    }
}

/// Yields the process to the scheduler; `k` runs when it is resumed.
/// Raises an error instead when this thread cannot yield.
pub(crate) unsafe fn yield_to_scheduler(L: *mut ffi::lua_State, why: Pending, k: ffi::lua_KFunction, what: &str) -> c_int {
    if ffi::lua_isyieldable(L) == 0 {
        let msg = format!("{what}: cannot block here (inside a call that cannot yield, such as a metamethod called from C)");
        return raise(L, msg);
    }
    if matches!(why, Pending::Block) {
        collect_dropped(L);
    }
    ctx(L).pending = why;
    ffi::lua_yieldk(L, 0, 0, Some(k))
}

/// A table of C functions by name (a module's, or a class's methods).
pub(crate) type Functions = [(&'static CStr, ffi::lua_CFunction)];

/// Gives the userdata on top of the stack the metatable registered as
/// `name`, made on first use: the metamethods `meta`, and the `methods` in
/// a table at `methods_at` (`__index`, or a field an `__index` function
/// looks in).
pub(crate) unsafe fn set_class(L: *mut ffi::lua_State, name: &CStr, meta: &Functions, methods_at: &CStr, methods: &Functions) {
    if ffi::luaL_newmetatable(L, name.as_ptr()) != 0 {
        for (key, f) in meta {
            ffi::lua_pushcfunction(L, *f);
            ffi::lua_setfield(L, -2, key.as_ptr());
        }
        ffi::lua_createtable(L, 0, methods.len() as c_int);
        for (key, f) in methods {
            ffi::lua_pushcfunction(L, *f);
            ffi::lua_setfield(L, -2, key.as_ptr());
        }
        ffi::lua_setfield(L, -2, methods_at.as_ptr());
    }
    ffi::lua_setmetatable(L, -2);
}

/// Whether the error on top of `L`, being caught with `status` by `pcall`,
/// `xpcall` or a coroutine's resume, must go on unwinding instead: the
/// process is ending (an `exit`, or a memory error under a memory limit:
/// the process ends with reason "memory limit"). Called by the vendored
/// `lbaselib.c` ([Synodic]).
#[no_mangle]
pub unsafe extern "C-unwind" fn synodic_uncatchable(L: *mut ffi::lua_State, status: c_int) -> c_int {
    // Only states made for processes have a context.
    let Some(heap) = crate::vm::heap::of_state(L) else { return 0 };
    if status == ffi::LUA_ERRMEM && heap.is_limited() {
        ctx(L).exit = Some(Box::new(synodic_core::ExitReason::Error(synodic_core::MEMORY_LIMIT.into())));
    }
    ctx(L).exit.is_some() as c_int
}

/// Before a process that has made or received a megabyte or more of
/// buffers (or futures, which hold results elsewhere) blocks, its collector
/// does the work that much allocation would have asked for: a payload lives
/// outside the Lua heap, so without this a process that drops large buffers
/// keeps them (and their memory) until its heap grows by itself, and the
/// next large message finds no memory to reuse (`synodic_core::payload`).
/// Erlang's binary heap works the same way. A collector the program stopped
/// stays stopped.
pub(crate) unsafe fn collect_dropped(L: *mut ffi::lua_State) {
    let c = crate::vm::ctx::ctx(L);
    if c.payload_kib < 1024 {
        return;
    }
    let kib = std::mem::take(&mut c.payload_kib);
    if ffi::lua_gc(L, ffi::LUA_GCISRUNNING) != 0 {
        ffi::lua_gc(L, ffi::LUA_GCSTEP, kib.min(c_int::MAX as u32) as c_int);
    }
}
