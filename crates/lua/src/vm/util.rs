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
    // SAFETY: `L` is valid (lib.rs invariant 1); Lua copies the `b.len()` bytes of `b`.
    unsafe { ffi::lua_pushlstring(L, b.as_ptr().cast(), b.len()) };
}

/// The bytes of a string (or number, converted in place) at `idx`. They
/// live while the string stays on the stack: `'a` must not outlast that.
pub(crate) unsafe fn to_bytes<'a>(L: *mut ffi::lua_State, idx: c_int) -> Option<&'a [u8]> {
    let mut len = 0;
    // SAFETY: `L` is valid and `idx` a valid index (lib.rs invariant 1).
    let p = unsafe { ffi::lua_tolstring(L, idx, &mut len) };
    // SAFETY: a non-null result points at the string's `len` bytes, kept
    // alive by the stack slot (the caller keeps it there for `'a`).
    (!p.is_null()).then(|| unsafe { std::slice::from_raw_parts(p.cast(), len) })
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
    // SAFETY: `L` is valid with a function and `nargs` arguments on top
    // (the caller's); `lua_pcall` catches what the call raises.
    let status = unsafe { ffi::lua_pcall(L, nargs, nresults, 0) };
    if status == ffi::LUA_OK {
        return Ok(());
    }
    // SAFETY: the error is on top; an uncatchable one goes on unwinding
    // through this frame, which owns nothing (the callers' frames keep
    // lib.rs invariant 2, as for any raising call).
    unsafe {
        if synodic_uncatchable(L, status) != 0 {
            ffi::lua_error(L);
        }
    }
    Err(())
}

/// The error on top of the stack as text, popped.
pub(crate) unsafe fn pop_error(L: *mut ffi::lua_State) -> String {
    // SAFETY: `L` is valid with the error on top (the caller's); reading its
    // type and bytes raises nothing (a number is converted in place, which
    // allocates: a memory error then would unwind before `text` exists).
    let text = match unsafe { ffi::lua_type(L, -1) } {
        ffi::LUA_TSTRING | ffi::LUA_TNUMBER => unsafe { to_bytes(L, -1) }.map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or_default(),
        // SAFETY: as above (a type's static name).
        _ => format!("(error object is a {} value)", unsafe { type_name(L, -1) }),
    };
    // SAFETY: pops the error; `lua_settop` with a lower top raises nothing.
    unsafe { ffi::lua_settop(L, -2) };
    text
}

/// Raises `what: e` as a Lua error, `e` dropped first: an error value
/// that owns memory must not be left in a frame the error skips (lib.rs
/// invariant 2).
///
/// # Safety
/// As [`raise`].
pub(crate) unsafe fn raise_error(L: *mut ffi::lua_State, what: &str, e: impl std::fmt::Display) -> c_int {
    let msg = format!("{what}: {e}");
    drop(e);
    // SAFETY: the contract; `msg` moves into `raise`, which drops it first.
    unsafe { raise(L, msg) }
}

/// Raises `msg` as a Lua error. The message is copied onto the Lua stack and
/// dropped before unwinding.
pub(crate) unsafe fn raise(L: *mut ffi::lua_State, msg: String) -> c_int {
    // SAFETY: `L` is valid (lib.rs invariant 1). NOT KEPT: lib.rs invariant
    // 2, if the push itself fails for memory, it unwinds over `msg` (in
    // practice a leak); `msg` is dropped before `lua_error` unwinds.
    unsafe { push_bytes(L, msg.as_bytes()) };
    drop(msg);
    // SAFETY: the message is on top; this frame owns nothing now.
    unsafe { ffi::lua_error(L) }
}

pub(crate) unsafe fn type_name(L: *mut ffi::lua_State, idx: c_int) -> &'static str {
    // SAFETY: `L` is valid (lib.rs invariant 1); `lua_typename` returns one
    // of Lua's static, NUL-terminated type names.
    unsafe {
        let p = ffi::lua_typename(L, ffi::lua_type(L, idx));
        CStr::from_ptr(p).to_str().unwrap_or("?")
    }
}

pub(crate) unsafe fn push_pid(L: *mut ffi::lua_State, pid: Pid) {
    // SAFETY: `L` is a process's state (lib.rs invariant 1).
    unsafe {
        ffi::lua_pushlightuserdata(L, pid.raw() as usize as *mut c_void);
        give_pids_their_metatable(L);
    }
}

/// Sets the light-userdata metatable (pids' `__tostring`) the first time a
/// state holds a pid.
#[inline]
pub(crate) unsafe fn give_pids_their_metatable(L: *mut ffi::lua_State) {
    // SAFETY: `L` is a process's state (lib.rs invariant 1), with a context;
    // `c` is not used after `set_pid_metatable`.
    let c = unsafe { ctx(L) };
    if !c.pid_meta {
        c.pid_meta = true;
        // SAFETY: as above; the light userdata is on top.
        unsafe { set_pid_metatable(L) };
    }
}

/// Gives `L` pids' metatable now, as its first pid would: a template's
/// state does so for processes that hold pids from their start (an entity
/// its own and its parent's), whose copies then find it made. (Not the base
/// template's: there the table, placed among an idle process's hot objects,
/// made a ring's sends ~5% slower.)
pub(crate) unsafe fn hold_pids(L: *mut ffi::lua_State) {
    // SAFETY: `L` is a process's (or a template build's) state, with a
    // context (lib.rs invariant 1); the light userdata pushed is popped.
    unsafe {
        ffi::lua_pushlightuserdata(L, std::ptr::null_mut());
        give_pids_their_metatable(L);
        ffi::lua_settop(L, -2);
    }
}

/// All light userdata of a state share one metatable; pids are the only light userdata we make.
unsafe fn set_pid_metatable(L: *mut ffi::lua_State) {
    // SAFETY: `L` is valid with a light userdata on top (the caller's); the
    // new table is at -1 while its fields are set, then becomes the
    // metatable of the value under it.
    unsafe {
        ffi::lua_createtable(L, 0, 2);
        ffi::lua_pushcfunction(L, pid_tostring);
        ffi::lua_setfield(L, -2, c"__tostring".as_ptr());
        ffi::lua_pushstring(L, c"pid".as_ptr());
        ffi::lua_setfield(L, -2, c"__name".as_ptr());
        ffi::lua_setmetatable(L, -2);
    }
}

unsafe extern "C-unwind" fn pid_tostring(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this `__tostring` with its running state `L` (lib.rs
    // invariant 1) and the value at 1. NOT KEPT: lib.rs invariant 2, a
    // memory error while pushing would unwind over `s` (in practice a leak).
    unsafe {
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
    }
    1
}

/// The pid at stack index `idx` (not a pseudo-index), if that is one.
pub(crate) unsafe fn to_pid(L: *mut ffi::lua_State, idx: c_int) -> Option<Pid> {
    // SAFETY: `L` is valid (lib.rs invariant 1); `peek` checks the index,
    // and a light userdata's value is only read as a number.
    match unsafe { peek(L, idx) } {
        Plain::Light(p) => Pid::from_raw(p as usize as u64),
        _ => None,
    }
}

/// Argument `idx` of `fname`, a pid, or the error that says it is not one.
pub(crate) unsafe fn pid_arg(L: *mut ffi::lua_State, idx: c_int, fname: &str) -> Result<Pid, String> {
    // SAFETY: `L` is valid (lib.rs invariant 1); both calls only read the value at `idx`.
    unsafe { to_pid(L, idx) }.ok_or_else(|| format!("bad argument #{idx} to '{fname}' (pid expected, got {})", unsafe { type_name(L, idx) }))
}

/// An optional timeout argument in seconds: `None` for nil/none.
#[inline]
pub(crate) unsafe fn opt_seconds(L: *mut ffi::lua_State, idx: c_int, fname: &str) -> Result<Option<Duration>, String> {
    // Most receives give no timeout: known from the top alone.
    // SAFETY: `L` is valid (lib.rs invariant 1).
    if unsafe { ffi::lua_gettop(L) } < idx {
        return Ok(None);
    }
    // SAFETY: as above; `idx` is at most the top, a stack slot.
    unsafe { given_seconds(L, idx, fname) }
}

#[inline(never)]
unsafe fn given_seconds(L: *mut ffi::lua_State, idx: c_int, fname: &str) -> Result<Option<Duration>, String> {
    // SAFETY: `L` is valid and `idx` a stack slot (the caller's); these
    // calls only read the value there.
    if unsafe { peek(L, idx) } == Plain::Nil {
        return Ok(None);
    }
    let mut ok = 0;
    // SAFETY: as above.
    let secs = unsafe { ffi::lua_tonumberx(L, idx, &mut ok) };
    if ok == 0 {
        // SAFETY: as above.
        return Err(format!("bad argument #{idx} to '{fname}' (number of seconds expected, got {})", unsafe { type_name(L, idx) }));
    }
    if secs.is_nan() {
        return Err(format!("bad argument #{idx} to '{fname}' (number of seconds expected, got NaN)"));
    }
    Ok(Some(Duration::from_secs_f64(secs.clamp(0.0, 1e9))))
}

/// Sets (and arms) the deadline of a blocking call that starts now.
#[inline]
pub(crate) unsafe fn start_deadline(L: *mut ffi::lua_State, timeout: Option<Duration>) {
    // SAFETY: `L` is a running process's state (lib.rs invariant 1), with a
    // context entered for this resume; nothing here calls into Lua.
    let c = unsafe { ctx(L) };
    c.deadline = None;
    if let Some(t) = timeout {
        let at = c.rt().uptime() + t;
        c.deadline = std::num::NonZeroU64::new((at.as_nanos() as u64).max(1));
        c.rt().arm_timer(c.proc(), c.rt().at_uptime(at));
    }
}

/// Bit of a context's `deadline` marking a timeout not started yet (the
/// rest of it, in nanoseconds): see [`defer_deadline`].
const DEFERRED: u64 = 1 << 63;

/// As [`start_deadline`], for a call that often finds what it waits for
/// without blocking (a receive): the clock is read and the timer armed only
/// when it first blocks ([`may_block`]). A call that a reply wakes (a
/// synchronous call's receive) then reads the clock once, not twice.
#[inline]
pub(crate) unsafe fn defer_deadline(L: *mut ffi::lua_State, timeout: Option<Duration>) {
    // SAFETY: `L` is a running process's state (lib.rs invariant 1), with a
    // context entered for this resume.
    let c = unsafe { ctx(L) };
    // At most 1e9 s (`opt_seconds`): the nanoseconds fit under the bit.
    c.deadline = timeout.and_then(|t| std::num::NonZeroU64::new(DEFERRED | (t.as_nanos() as u64).min(DEFERRED - 1)));
}

/// Before a call with a deadline blocks: false when the deadline has
/// passed (it must return instead); a deferred deadline starts now.
#[inline]
pub(crate) unsafe fn may_block(L: *mut ffi::lua_State) -> bool {
    // SAFETY: `L` is a running process's state (lib.rs invariant 1), with a context.
    let deadline = unsafe { ctx(L) }.deadline;
    match deadline.map(|d| d.get()) {
        Some(d) if d & DEFERRED != 0 => {
            let timeout = Duration::from_nanos(d & !DEFERRED);
            // SAFETY: as above.
            unsafe { start_deadline(L, (!timeout.is_zero()).then_some(timeout)) };
            !timeout.is_zero()
        }
        // SAFETY: as above.
        _ => !unsafe { deadline_passed(L) },
    }
}

pub(crate) unsafe fn deadline_passed(L: *mut ffi::lua_State) -> bool {
    // SAFETY: `L` is a running process's state (lib.rs invariant 1), with a context.
    let c = unsafe { ctx(L) };
    c.deadline.is_some_and(|d| c.rt().uptime().as_nanos() as u64 >= d.get())
}

/// Replaces the top `n` values with one list of them.
pub(crate) unsafe fn pack(L: *mut ffi::lua_State, n: c_int) {
    // SAFETY: `L` is valid with at least `n` values on top (the caller's);
    // the new table goes under them, and each `lua_rawseti` pops the top
    // into it, at -1 - k while k values are left above it.
    unsafe {
        ffi::lua_createtable(L, n, 0);
        ffi::lua_rotate(L, -n - 1, 1);
        for k in (1..=n).rev() {
            ffi::lua_rawseti(L, -1 - k, k as ffi::lua_Integer);
        }
    }
}

/// Yields the process to the scheduler; `k` runs when it is resumed.
/// Raises an error instead when this thread cannot yield.
pub(crate) unsafe fn yield_to_scheduler(L: *mut ffi::lua_State, why: Pending, k: ffi::lua_KFunction, what: &str) -> c_int {
    // SAFETY: `L` is the running thread of a process (lib.rs invariant 1).
    if unsafe { ffi::lua_isyieldable(L) } == 0 {
        let msg = format!("{what}: cannot block here (inside a call that cannot yield, such as a metamethod called from C)");
        // SAFETY: as above; `raise` drops `msg` before unwinding.
        return unsafe { raise(L, msg) };
    }
    // SAFETY: as above. The yield unwinds this frame, which owns nothing
    // (`why` and `what` are plain values and borrows); the caller's frames
    // keep lib.rs invariant 2.
    unsafe {
        if matches!(why, Pending::Block) {
            collect_dropped(L);
        }
        ctx(L).pending = why;
        ffi::lua_yieldk(L, 0, 0, Some(k))
    }
}

/// A table of C functions by name (a module's, or a class's methods).
pub(crate) type Functions = [(&'static CStr, ffi::lua_CFunction)];

/// Gives the userdata on top of the stack the metatable registered as
/// `name`, made on first use: the metamethods `meta`, and the `methods` in
/// a table at `methods_at` (`__index`, or a field an `__index` function
/// looks in).
pub(crate) unsafe fn set_class(L: *mut ffi::lua_State, name: &CStr, meta: &Functions, methods_at: &CStr, methods: &Functions) {
    // SAFETY: `L` is valid with the userdata on top (the caller's); the
    // metatable is at -1 while it is filled (the methods' table at -1, it
    // at -2, while that one is), then set on the userdata under it.
    unsafe {
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
        // SAFETY: a state over a `Heap` is a process's (or a template
        // build's), with a context; nothing else borrows it here.
        unsafe { ctx(L) }.exit = Some(Box::new(synodic_core::ExitReason::Error(synodic_core::MEMORY_LIMIT.into())));
    }
    // SAFETY: as above.
    unsafe { ctx(L) }.exit.is_some() as c_int
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
    // SAFETY: `L` is a process's state (lib.rs invariant 1), with a
    // context; `c` is not used after the collector runs (finalizers may
    // reach the context again).
    let c = unsafe { crate::vm::ctx::ctx(L) };
    if c.payload_kib < 1024 {
        return;
    }
    let kib = std::mem::take(&mut c.payload_kib);
    // SAFETY: as above; a collector step may run finalizers (Lua code),
    // whose errors Lua catches (5.4 makes them warnings).
    unsafe {
        if ffi::lua_gc(L, ffi::LUA_GCISRUNNING) != 0 {
            ffi::lua_gc(L, ffi::LUA_GCSTEP, kib.min(c_int::MAX as u32) as c_int);
        }
    }
}
