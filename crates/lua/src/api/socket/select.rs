//! `select(readers, writers [, timeout])`: LuaSocket's `socket.select` on
//! the node's netpoller. The two arguments are arrays of sockets; the
//! results are the positions (1-based) of those ready to read and of those
//! ready to write, as two arrays, and `"timeout"` when none is
//! (`lualib/socket.lua` turns them into LuaSocket's tables).
//!
//! 1. The descriptors are asked at once (`poll(2)` without waiting).
//! 2. If none is ready, the process is queued on every one of them under
//!    one ticket and blocks (as `wait.rs`); the first that becomes ready
//!    wakes it, or its deadline does.
//! 3. Woken, it leaves every queue and asks the descriptors again.

use std::ffi::c_int;
use std::os::fd::RawFd;

use mlua_sys as ffi;
use synodic_core::io::Interest;
use synodic_core::waiting::Waiter;

use super::sock;
use crate::vm::ctx::ctx;
use crate::vm::util::*;
use crate::vm::wait::{self, Poll};

/// A process queued on several descriptors.
struct OnSockets(Vec<RawFd>);

impl wait::Queue for OnSockets {
    unsafe fn withdraw(&self, L: *mut ffi::lua_State, waiter: Waiter) {
        // SAFETY: `L` is the running process's state (the trait's contract), with a context.
        let rt = unsafe { ctx(L) }.rt();
        for &fd in &self.0 {
            rt.sockets().withdraw(fd, waiter);
        }
    }
    fn as_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}

/// The descriptors of the sockets in the array at `idx` (-1 for a closed
/// one, which is never ready); an error for what is not a socket.
unsafe fn descriptors(L: *mut ffi::lua_State, idx: c_int) -> Result<Vec<RawFd>, String> {
    // SAFETY: `L` is the running state (lib.rs invariant 1); each element
    // is pushed, read and popped in turn.
    unsafe {
        match ffi::lua_type(L, idx) {
            ffi::LUA_TNIL | ffi::LUA_TNONE => return Ok(Vec::new()),
            ffi::LUA_TTABLE => {}
            _ => return Err(format!("bad argument #{idx} to 'select' (table expected, got {})", type_name(L, idx))),
        }
        let n = ffi::lua_rawlen(L, idx);
        let mut fds = Vec::with_capacity(n);
        for i in 1..=n {
            ffi::lua_rawgeti(L, idx, i as ffi::lua_Integer);
            let fd = sock(L, -1, "select").map(|s| s.fd().unwrap_or(-1));
            ffi::lua_pop(L, 1);
            fds.push(fd?);
        }
        Ok(fds)
    }
}

/// Step 1 (and 3): the positions of the descriptors ready to read and to write.
fn ready(readers: &[RawFd], writers: &[RawFd]) -> (Vec<usize>, Vec<usize>) {
    let mut polls: Vec<libc::pollfd> = readers
        .iter()
        .map(|&fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 })
        .chain(writers.iter().map(|&fd| libc::pollfd { fd, events: libc::POLLOUT, revents: 0 }))
        .collect();
    // SAFETY: `polls` is valid for its length; a negative descriptor is ignored by poll(2).
    unsafe { libc::poll(polls.as_mut_ptr(), polls.len() as libc::nfds_t, 0) };
    let is_ready = |p: &libc::pollfd| p.fd >= 0 && p.revents != 0;
    let (r, w) = polls.split_at(readers.len());
    (r.iter().enumerate().filter(|(_, p)| is_ready(p)).map(|(i, _)| i + 1).collect(), w.iter().enumerate().filter(|(_, p)| is_ready(p)).map(|(i, _)| i + 1).collect())
}

/// Pushes the two arrays of positions, and `"timeout"` when both are empty.
unsafe fn results(L: *mut ffi::lua_State, (r, w): (Vec<usize>, Vec<usize>)) -> c_int {
    let none = r.is_empty() && w.is_empty();
    // SAFETY: `L` is the running state with room for three results; the
    // vectors are plain numbers (a memory error would leak them, no more).
    unsafe {
        for list in [r, w] {
            ffi::lua_createtable(L, list.len() as c_int, 0);
            for (k, i) in list.into_iter().enumerate() {
                ffi::lua_pushinteger(L, i as ffi::lua_Integer);
                ffi::lua_rawseti(L, -2, k as ffi::lua_Integer + 1);
            }
        }
        if none {
            ffi::lua_pushstring(L, c"timeout".as_ptr());
            return 3;
        }
    }
    2
}

pub(super) unsafe extern "C-unwind" fn select(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1): the arrays at 1 and 2, the timeout at 3. What
    // is owned is dropped before a raise or the yield.
    unsafe {
        let (readers, writers, timeout) = match (descriptors(L, 1), descriptors(L, 2), opt_seconds(L, 3, "select")) {
            (Ok(r), Ok(w), Ok(t)) => (r, w, t),
            (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => return raise(L, e),
        };
        let found = ready(&readers, &writers);
        if !found.0.is_empty() || !found.1.is_empty() || timeout.is_some_and(|t| t.is_zero()) {
            return results(L, found);
        }
        start_deadline(L, timeout);
        let all: Vec<RawFd> = readers.iter().chain(&writers).copied().filter(|&fd| fd >= 0).collect();
        let waiter = wait::begin(L, Box::new(OnSockets(all)));
        let rt = ctx(L).rt();
        let watched = readers.iter().filter(|&&fd| fd >= 0).map(|&fd| (fd, Interest::Read)).chain(writers.iter().filter(|&&fd| fd >= 0).map(|&fd| (fd, Interest::Write))).try_for_each(|(fd, interest)| rt.watch_socket(fd, interest, waiter));
        drop((readers, writers));
        if let Err(e) = watched {
            wait::withdraw(L);
            wait::end::<OnSockets>(L);
            start_deadline(L, None);
            return raise(L, format!("select: cannot watch a socket: {e}"));
        }
        wait::block(L, select_k, "select")
    }
}

unsafe extern "C-unwind" fn select_k(L: *mut ffi::lua_State, _status: c_int, _k: ffi::lua_KContext) -> c_int {
    // SAFETY: Lua runs this continuation with the process's running state
    // (lib.rs invariant 1), the arguments still at 1 and 2; nothing owned
    // lives here when it blocks or raises.
    unsafe {
        let expired = deadline_passed(L);
        let polled = wait::poll(L);
        if matches!(polled, Poll::Waiting) && !expired {
            return wait::block(L, select_k, "select");
        }
        // Step 3: out of every queue, then the descriptors asked again.
        wait::withdraw(L);
        wait::end::<OnSockets>(L);
        start_deadline(L, None);
        if matches!(polled, Poll::Withdrawn) && !expired {
            return wait::cannot_block(L, "select");
        }
        let found = match (descriptors(L, 1), descriptors(L, 2)) {
            (Ok(r), Ok(w)) => ready(&r, &w),
            (Err(e), _) | (_, Err(e)) => return raise(L, e),
        };
        ffi::lua_settop(L, 3);
        results(L, found)
    }
}
