//! `wait(s, "r" | "w" [, timeout])`: parks the process until its socket is
//! ready to read (or accept) or to write (or its connection is made), as
//! every blocking operation waits (`vm::wait`): queued on the descriptor
//! in the node's netpoller, woken by whichever scheduler thread polls.
//! Returns `true`, or `nil, "timeout"`, or `nil, "closed"` when the socket
//! was closed meanwhile.

use std::ffi::c_int;
use std::os::fd::RawFd;

use mlua_sys as ffi;
use synodic_core::io::Interest;
use synodic_core::waiting::{Completion, Waiter};

use super::open_sock;
use crate::vm::ctx::ctx;
use crate::vm::util::*;
use crate::vm::wait::{self, Poll};

/// A process queued on a descriptor.
struct OnSocket(RawFd);

impl wait::Queue for OnSocket {
    unsafe fn withdraw(&self, L: *mut ffi::lua_State, waiter: Waiter) {
        // SAFETY: `L` is the running process's state (the trait's contract), with a context.
        unsafe { ctx(L) }.rt().sockets().withdraw(self.0, waiter);
    }
    fn as_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}

/// Pushes `nil, why`.
unsafe fn fail(L: *mut ffi::lua_State, why: &std::ffi::CStr) -> c_int {
    // SAFETY: `L` is the running state in a native function (room for 2).
    unsafe {
        ffi::lua_pushnil(L);
        ffi::lua_pushstring(L, why.as_ptr());
    }
    2
}

pub(super) unsafe extern "C-unwind" fn wait(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1): the socket at 1, "r" or "w" at 2, the timeout
    // at 3. Each error is raised with nothing owned in this frame.
    unsafe {
        let fd = match open_sock(L, 1, "wait") {
            Ok((_, fd)) => fd,
            Err(Some(e)) => return raise(L, e),
            Err(None) => return fail(L, c"closed"),
        };
        let interest = match to_bytes(L, 2) {
            Some(b"r") => Interest::Read,
            Some(b"w") => Interest::Write,
            _ => return raise(L, "bad argument #2 to 'wait' (\"r\" or \"w\" expected)".into()),
        };
        let timeout = match opt_seconds(L, 3, "wait") {
            Ok(t) => t,
            Err(e) => return raise(L, e),
        };
        if timeout.is_some_and(|t| t.is_zero()) {
            return fail(L, c"timeout");
        }
        start_deadline(L, timeout);
        let waiter = wait::begin(L, Box::new(OnSocket(fd)));
        if let Err(e) = ctx(L).rt().watch_socket(fd, interest, waiter) {
            wait::end::<OnSocket>(L);
            return raise(L, format!("wait: cannot watch the socket: {e}"));
        }
        wait::block(L, wait_k, "socket wait")
    }
}

unsafe extern "C-unwind" fn wait_k(L: *mut ffi::lua_State, _status: c_int, _k: ffi::lua_KContext) -> c_int {
    // SAFETY: Lua runs this continuation with the process's running state
    // (lib.rs invariant 1); nothing owned lives here when it blocks or raises.
    unsafe {
        ffi::lua_settop(L, 0);
        let expired = deadline_passed(L);
        let polled = match wait::poll(L) {
            Poll::Waiting if expired => wait::expire(L).map_or(Poll::Withdrawn, Poll::Done),
            p => p,
        };
        if !matches!(polled, Poll::Waiting) {
            wait::end::<OnSocket>(L);
            start_deadline(L, None);
        }
        match polled {
            Poll::Done(Completion::Deleted) => fail(L, c"closed"),
            Poll::Done(_) => {
                ffi::lua_pushboolean(L, 1);
                1
            }
            Poll::Withdrawn if expired => fail(L, c"timeout"),
            Poll::Withdrawn => wait::cannot_block(L, "socket wait"),
            Poll::Waiting => wait::block(L, wait_k, "socket wait"),
        }
    }
}
