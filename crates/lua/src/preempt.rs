//! Preemption of Lua code. The core's watchdog signals a worker whose
//! process has overrun its time slice; the handler here arms a count hook on
//! the Lua thread that worker is running, and the hook, at the next VM
//! instruction, disarms itself and yields the process to the scheduler.
//! Setting a hook from a signal handler on the running thread is the
//! asynchronous use `lua_sethook` is made for (`lua.c` handles Ctrl-C so).
//!
//! Until a slice is overrun no hook is set, so Lua code runs at full speed.

use std::cell::Cell;
use std::sync::Once;

use mlua_sys as ffi;

use crate::ctx::{ctx, Pending};

/// The signal the watchdog sends (ignored by default, like Go's choice).
pub const SIGNAL: libc::c_int = libc::SIGURG;

/// Instructions to wait before retrying where a yield is not possible.
const RETRY: libc::c_int = 1000;

thread_local! {
    /// The Lua thread this worker is running (null between processes).
    static RUNNING: Cell<*mut ffi::lua_State> = const { Cell::new(std::ptr::null_mut()) };
    /// Set by the signal handler when it arms the hook on `RUNNING`.
    static ARMED: Cell<bool> = const { Cell::new(false) };
}

/// Installs the signal handler (once per OS process) and returns its signal.
pub fn install() -> libc::c_int {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(SIGNAL, &action, std::ptr::null_mut());
    });
    SIGNAL
}

/// Marks `L` as the Lua thread now running on this worker; returns the previous one.
pub(crate) fn enter(L: *mut ffi::lua_State) -> *mut ffi::lua_State {
    RUNNING.with(|r| r.replace(L))
}

/// Marks the end of a resume; true when a preemption hook was armed during
/// it (the caller clears it, so a late signal cannot fire in the next resume).
/// Asking this instead of `lua_gethook` spares a cold line of the state.
pub(crate) fn leave() -> bool {
    RUNNING.with(|r| r.set(std::ptr::null_mut()));
    ARMED.with(|a| a.replace(false))
}

extern "C" fn on_signal(_sig: libc::c_int) {
    let L = RUNNING.with(|r| r.get());
    if !L.is_null() {
        ARMED.with(|a| a.set(true));
        unsafe { ffi::lua_sethook(L, Some(preempt), ffi::LUA_MASKCOUNT, 1) };
    }
}

unsafe extern "C-unwind" fn preempt(L: *mut ffi::lua_State, _ar: *mut ffi::lua_Debug) {
    if ffi::lua_isyieldable(L) == 0 {
        ffi::lua_sethook(L, Some(preempt), ffi::LUA_MASKCOUNT, RETRY);
        return;
    }
    ffi::lua_sethook(L, None, 0, 0);
    ctx(L).pending = Pending::Preempt;
    ffi::lua_yield(L, 0);
}
