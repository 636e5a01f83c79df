//! Preemption of Lua code. The core's monitor signals a worker whose process
//! has overrun its time slice; the handler here arms a count hook on the Lua
//! thread that worker is running (`csrc/preempt.c`), and the hook, at the
//! next VM instruction, puts the program's own hook back and yields the
//! process to the scheduler. Setting a hook from a signal handler on the
//! running thread is the asynchronous use `lua_sethook` is made for (`lua.c`
//! handles Ctrl-C so).
//!
//! Until a slice is overrun no hook is set, so Lua code runs at full speed.
//!
//! The program's own debug hook survives: arming saves it (per worker
//! thread: only the running Lua thread is ever armed), the preempting hook
//! passes the program's events on to it, and firing or disarming restores
//! it. Where the process cannot yield (inside a call from C that has no
//! continuation) the hook just restores and returns; the monitor signals
//! again a tick later.
//!
//! The handler touches only this thread's cells and the Lua thread's hook
//! fields, so it is async-signal-safe.

use std::cell::Cell;
use std::ffi::c_int;
use std::sync::Once;

use mlua_sys as ffi;

use crate::vm::ctx::{ctx, Pending};

/// The signal the monitor sends (ignored by default, like Go's choice).
pub const SIGNAL: libc::c_int = libc::SIGURG;

/// A Lua thread's hook as the program set it (`SynodicHook` in `csrc/preempt.c`).
#[repr(C)]
#[derive(Clone, Copy)]
struct Saved {
    hook: Option<ffi::lua_Hook>,
    mask: c_int,
    count: c_int,
}

extern "C" {
    fn synodic_hook_save(L: *mut ffi::lua_State, out: *mut Saved);
    fn synodic_preempt_arm(L: *mut ffi::lua_State, preempt: Option<ffi::lua_Hook>, program_mask: c_int) -> c_int;
    fn synodic_hook_restore(L: *mut ffi::lua_State, saved: *const Saved);
    fn synodic_preempt_resumed(L: *mut ffi::lua_State) -> c_int;
}

thread_local! {
    /// The Lua thread this worker is running (null between processes).
    static RUNNING: Cell<*mut ffi::lua_State> = const { Cell::new(std::ptr::null_mut()) };
    /// The armed thread and the hook it had, while the preempting hook is set.
    static ARMED: Cell<Option<(*mut ffi::lua_State, Saved)>> = const { Cell::new(None) };
    /// Set while the preempting hook restores a thread's hook, so that a
    /// signal arriving then does not save the half-restored state.
    static RESTORING: Cell<bool> = const { Cell::new(false) };
}

/// Installs the signal handler (once per OS process) and returns its signal.
pub fn install() -> libc::c_int {
    static ONCE: Once = Once::new();
    // SAFETY: `action` is zeroed (a valid `sigaction`) before its fields are
    // set; `on_signal` is async-signal-safe (see the module's notes).
    ONCE.call_once(|| unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(SIGNAL, &action, std::ptr::null_mut());
    });
    SIGNAL
}

/// Marks `L` as the Lua thread now running on this worker, about to be
/// resumed; returns the previous one, disarmed: only the running thread is
/// ever armed.
pub(crate) fn enter(L: *mut ffi::lua_State) -> *mut ffi::lua_State {
    // SAFETY: `L` is a thread of the process this worker runs.
    unsafe {
        if !L.is_null() && ctx(L).hook_yielded && synodic_preempt_resumed(L) != 0 {
            ctx(L).hook_yielded = false;
        }
    }
    let previous = RUNNING.with(|r| r.replace(L));
    // After the switch, so that a signal arriving now arms `L`, not `previous`.
    disarm(previous);
    previous
}

/// Marks the end of a resume of `L`: no Lua thread runs here any more, and
/// a preemption armed too late to fire is taken back, so it cannot fire in
/// the next resume.
pub(crate) fn leave(L: *mut ffi::lua_State) {
    RUNNING.with(|r| r.set(std::ptr::null_mut()));
    disarm(L);
}

/// `debug.gethook` (replacing the debug library's): disarms the thread it
/// asks about first, so that a program always sees its own hook.
pub(crate) unsafe extern "C-unwind" fn gethook(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1); the value at 1 was checked to be a thread.
    let thread = unsafe { if ffi::lua_type(L, 1) == ffi::LUA_TTHREAD { ffi::lua_tothread(L, 1) } else { L } };
    disarm(thread);
    // SAFETY: as above; the original `gethook` goes under the arguments and
    // is called with them all. Its errors unwind this frame, which owns nothing.
    unsafe {
        ffi::lua_pushcfunction(L, crate::vm::lazy::original("debug", b"gethook").expect("the debug library has gethook"));
        ffi::lua_rotate(L, 1, 1);
        ffi::lua_call(L, ffi::lua_gettop(L) - 1, ffi::LUA_MULTRET);
        ffi::lua_gettop(L)
    }
}

/// Puts `L`'s own hook back if `L` is armed (and still has the preempting
/// hook: a program that set its own meanwhile keeps it).
fn disarm(L: *mut ffi::lua_State) {
    let Some((armed, saved)) = ARMED.with(|a| a.get()) else { return };
    if armed != L || L.is_null() {
        return;
    }
    restore(L, saved);
}

fn restore(L: *mut ffi::lua_State, saved: Saved) {
    RESTORING.with(|r| r.set(true));
    std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
    ARMED.with(|a| a.set(None));
    // SAFETY: `L` is the thread this worker runs or just ran; only this thread touches its hook.
    unsafe {
        if is_preempt(ffi::lua_gethook(L)) {
            synodic_hook_restore(L, &saved);
        }
    }
    std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
    RESTORING.with(|r| r.set(false));
}

extern "C" fn on_signal(_sig: libc::c_int) {
    synodic_core::on_preempt_signal();
    let L = RUNNING.with(|r| r.get());
    if L.is_null() || RESTORING.with(|r| r.get()) {
        return;
    }
    // SAFETY (this and the two blocks below): `L` is the thread running on
    // this worker (set by `enter`, cleared by `leave`); reading and storing
    // its hook fields is what a signal handler may do.
    let current = unsafe { ffi::lua_gethook(L) };
    let saved = match ARMED.with(|a| a.get()) {
        // Armed and not yet fired: arm again (the saved hook stays).
        Some((armed, saved)) if armed == L && is_preempt(current) => saved,
        // Another thread is armed: it cannot be, `enter` disarms it first.
        Some((armed, _)) if armed != L => return,
        // Not armed, or the program set its own hook since: save it.
        _ => {
            let mut saved = Saved { hook: None, mask: 0, count: 0 };
            // SAFETY: as above (the running thread's hook fields, into `saved`).
            unsafe { synodic_hook_save(L, &mut saved) };
            saved
        }
    };
    // SAFETY: as above (the running thread's hook fields).
    if unsafe { synodic_preempt_arm(L, Some(preempt), saved.mask & !ffi::LUA_MASKCOUNT) } != 0 {
        ARMED.with(|a| a.set(Some((L, saved))));
    }
}

fn is_preempt(hook: Option<ffi::lua_Hook>) -> bool {
    hook.is_some_and(|h| h as usize == preempt as ffi::lua_Hook as usize)
}

unsafe extern "C-unwind" fn preempt(L: *mut ffi::lua_State, ar: *mut ffi::lua_Debug) {
    let Some((armed, saved)) = ARMED.with(|a| a.get()).filter(|(armed, _)| *armed == L) else {
        // Left over from an arming this thread no longer knows: remove it.
        // SAFETY: Lua calls its hook with the running thread `L`.
        unsafe { ffi::lua_sethook(L, None, 0, 0) };
        return;
    };
    let _ = armed;
    // SAFETY: Lua calls its hook with a valid activation record `ar`.
    match unsafe { (*ar).event } {
        // With a line hook of the program's, preempt at its line event
        // instead: after a yield in the count hook, Lua would call the line
        // hook of the same instruction with the thread already suspended,
        // and after the resume it would not call it again.
        ffi::LUA_HOOKCOUNT if saved.mask & ffi::LUA_MASKLINE != 0 => return,
        ffi::LUA_HOOKCOUNT => {}
        event => {
            // One of the program's own events, which the mask kept for it:
            // its hook runs with everything as it set it (debug.gethook
            // inside it must see its own hook, mask and count).
            restore(L, saved);
            if let Some(hook) = saved.hook {
                // SAFETY: the program's own hook, called as Lua would have
                // called it, with this event's `L` and `ar`.
                unsafe { hook(L, ar) };
            }
            if event == ffi::LUA_HOOKLINE {
                // SAFETY: `L` is the running thread, inside its hook.
                return unsafe { preempt_now(L) };
            }
            // Armed again, unless the hook changed the hooks meanwhile.
            // SAFETY: `L` is the running thread, inside its hook.
            if ARMED.with(|a| a.get()).is_none() && unsafe { ffi::lua_gethook(L) }.map(|h| h as usize) == saved.hook.map(|h| h as usize) {
                // (Inside the hook call that runs us: arm directly.)
                // SAFETY: as above.
                unsafe { rearm(L, saved) };
            }
            return;
        }
    }
    restore(L, saved);
    // SAFETY: `L` is the running thread, inside its count hook.
    unsafe { preempt_now(L) }
}

/// Arms `L` again from inside a hook, where `synodic_preempt_arm` declines.
unsafe fn rearm(L: *mut ffi::lua_State, saved: Saved) {
    ARMED.with(|a| a.set(Some((L, saved))));
    // SAFETY: `L` is the running thread (the caller's); only this worker touches its hook.
    unsafe { synodic_hook_restore(L, &Saved { hook: Some(preempt), mask: saved.mask | ffi::LUA_MASKCOUNT, count: 1 }) };
}

/// Yields the process to the scheduler from the hook, if it can yield here.
unsafe fn preempt_now(L: *mut ffi::lua_State) {
    // SAFETY: `L` is a process's running thread, inside a hook (the
    // caller's), with a context. A hook's yield (`lua_yield` from a hook)
    // does not unwind: it returns, and Lua suspends the thread after the
    // hook; `c` is not used after it.
    unsafe {
        if ctx(L).proc().take_interrupt() {
            // As `lua`'s Ctrl-C: an error where the process computes.
            ffi::luaL_error(L, c"interrupted!".as_ptr());
        }
        if ffi::lua_isyieldable(L) == 0 {
            return;
        }
        let c = ctx(L);
        c.pending = Pending::Preempt;
        c.hook_yielded = true;
        ffi::lua_yield(L, 0);
    }
}
