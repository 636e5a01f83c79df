//! What a blocked process waits for, in one place. Every blocking operation
//! (receive, receive_match, sleep, a channel's send and receive, a tuple
//! space's take and rd) blocks the same way:
//!
//! 1. it looks for what it wants; if it is there, it returns it;
//! 2. a store operation queues a waiter in its store, under a fresh ticket
//!    ([`begin`]); a mailbox wait queues nothing (messages come anyway);
//! 3. it yields to the scheduler, and its continuation polls when woken
//!    ([`poll`]): the completion a store delivered for the ticket, or, for
//!    a mailbox wait, the mailbox;
//! 4. a deadline that passes, or a caller that cannot wait any more (a
//!    coroutine resumed where it cannot yield), withdraws the wait
//!    ([`withdraw`]): the waiter leaves its store, and what was handed to it
//!    before is kept and returned, never lost and never given twice; after
//!    a withdrawal that got nothing, the operation fails where it blocked.
//!
//! Where the caller cannot yield at all, [`block`] withdraws at once and the
//! continuation runs straight away.

use std::any::Any;
use std::ffi::c_int;

use mlua_sys as ffi;
use synodic_core::process::WaitsOn;
use synodic_core::waiting::{Completion, Waiter};

use crate::vm::ctx::{ctx, Pending};
use crate::vm::util::{raise, yield_to_scheduler};

/// A store a process can be queued in, and what the operation needs to go
/// on when woken. Each blocking module has its own.
pub(crate) trait Queue: Any {
    /// Takes `waiter` out of the store.
    ///
    /// # Safety
    /// `L` is the state of the running process that owns the waiter.
    unsafe fn withdraw(&self, L: *mut ffi::lua_State, waiter: Waiter);
    fn as_any(self: Box<Self>) -> Box<dyn Any>;
}

/// The store wait in progress: the queue it is in (its ticket is the last
/// one the process issued: a process waits for one thing at a time).
pub(crate) type Blocked = Box<dyn Queue>;

/// What a continuation finds when it polls a store wait.
pub(crate) enum Poll {
    Done(Completion),
    /// Withdrawn with nothing handed: the operation fails.
    Withdrawn,
    Waiting,
}

/// Step 2: a fresh waiter for a store wait on `on`, recorded in the context.
pub(crate) unsafe fn begin(L: *mut ffi::lua_State, on: Box<dyn Queue>) -> Waiter {
    // SAFETY: `L` is the running process's state (lib.rs invariant 1), with
    // its context entered for this resume; nothing here calls into Lua.
    let c = unsafe { ctx(L) };
    c.tickets = c.tickets.wrapping_add(1);
    c.withdrawn = false;
    c.blocked = Some(on);
    Waiter { pid: c.proc().pid(), ticket: c.tickets.into() }
}

/// Ends the store wait in progress; gives back its queue if it is a `T`.
pub(crate) unsafe fn end<T: Queue>(L: *mut ffi::lua_State) -> Option<Box<T>> {
    // SAFETY: `L` is the running process's state (lib.rs invariant 1), with
    // a context; each borrow of it ends within its statement.
    unsafe {
        ctx(L).withdrawn = false;
        ctx(L).blocked.take()?.as_any().downcast().ok()
    }
}

/// Puts back a wait taken out with `end`, to go on waiting under the same ticket.
pub(crate) unsafe fn resume(L: *mut ffi::lua_State, on: Box<dyn Queue>) {
    // SAFETY: `L` is the running process's state (lib.rs invariant 1), with a context.
    unsafe { ctx(L) }.blocked = Some(on);
}

/// Step 3 for a store wait (the wait stays current until `end`).
pub(crate) unsafe fn poll(L: *mut ffi::lua_State) -> Poll {
    // SAFETY: `L` is the running process's state (lib.rs invariant 1), with
    // its context entered for this resume; nothing here calls into Lua.
    let c = unsafe { ctx(L) };
    if c.blocked.is_none() {
        return Poll::Withdrawn;
    }
    if let Some(done) = c.proc().take_completion(c.tickets.into()) {
        return Poll::Done(done);
    }
    if c.withdrawn {
        return Poll::Withdrawn;
    }
    Poll::Waiting
}

/// Whether the wait was withdrawn (and forgets it): for mailbox waits,
/// which poll their mailbox themselves.
pub(crate) unsafe fn take_withdrawn(L: *mut ffi::lua_State) -> bool {
    // SAFETY: `L` is the running process's state (lib.rs invariant 1), with a context.
    std::mem::replace(&mut unsafe { ctx(L) }.withdrawn, false)
}

/// Step 4: takes the process's waiter out of its store; anything delivered
/// before stays in the process's completion slot for `poll`.
pub(crate) unsafe fn withdraw(L: *mut ffi::lua_State) {
    // SAFETY: `L` is the running process's state (lib.rs invariant 1), with
    // its context entered for this resume.
    let c = unsafe { ctx(L) };
    c.withdrawn = true;
    if let Some(queue) = &c.blocked {
        // SAFETY: `L` is the state of the running process that owns the
        // waiter, as `Queue::withdraw` asks. (The queues' `withdraw` reach
        // the context again through `ctx(L)`, for its runtime, while
        // `queue` borrows it: reads only, but two references at once.)
        unsafe { queue.withdraw(L, Waiter { pid: c.proc().pid(), ticket: c.tickets.into() }) };
    }
}

/// A deadline passed: withdraws the wait and returns what was handed to it
/// before, if anything.
pub(crate) unsafe fn expire(L: *mut ffi::lua_State) -> Option<Completion> {
    // SAFETY: `L` is the running process's state (lib.rs invariant 1), with
    // a context; each borrow of it ends within its call.
    unsafe {
        withdraw(L);
        ctx(L).withdrawn = false;
    }
    // SAFETY: as above.
    match unsafe { poll(L) } {
        Poll::Done(c) => Some(c),
        _ => None,
    }
}

/// Step 3: yields until woken, then runs `k`; where the caller cannot
/// yield, withdraws the wait and runs `k` at once.
pub(crate) unsafe fn block(L: *mut ffi::lua_State, k: unsafe extern "C-unwind" fn(*mut ffi::lua_State, c_int, ffi::lua_KContext) -> c_int, what: &str) -> c_int {
    // SAFETY: `L` is the running thread of a process (lib.rs invariant 1),
    // in a native function whose continuation is `k`: running `k` at once
    // is what Lua would do on a resume (status OK, context 0, as `k`s
    // here expect). This frame owns nothing, for what `k` raises.
    unsafe {
        if ffi::lua_isyieldable(L) == 0 {
            withdraw(L);
            return k(L, ffi::LUA_OK, 0);
        }
    }
    // SAFETY: as above; the yield unwinds this frame, which owns nothing.
    unsafe {
        ctx(L).proc().set_waits_on(waits_on(what));
        yield_to_scheduler(L, Pending::Block, k, what)
    }
}

/// What a listing shows a process blocked in the operation `what` waiting on.
fn waits_on(what: &str) -> WaitsOn {
    match what {
        "receive" | "receive_match" | "send" => WaitsOn::Receive,
        "sleep" => WaitsOn::Sleep,
        "socket wait" | "select" | "resolve" => WaitsOn::Socket,
        "get" | "_pool_take" => WaitsOn::Future,
        "chan.send" | "chan.receive" => WaitsOn::Channel,
        "linda" | "out" | "take" | "rd" | "in" | "inp" | "rdp" | "take_within" | "rd_within" | "count" | "take_all" | "clear" => WaitsOn::Tuple,
        _ => WaitsOn::Other,
    }
}

/// The error of an operation withdrawn with nothing handed.
pub(crate) unsafe fn cannot_block(L: *mut ffi::lua_State, what: &str) -> c_int {
    // SAFETY: `L` is the running state (lib.rs invariant 1); `raise` drops
    // the message before unwinding.
    unsafe { raise(L, format!("{what}: cannot block here (inside a call that cannot yield, such as a metamethod called from C)")) }
}

/// Blocks on the mailbox (a message or the deadline wakes the process),
/// continuing in `k` with `cursor` as its context.
pub(crate) unsafe fn block_on_mailbox(L: *mut ffi::lua_State, k: unsafe extern "C-unwind" fn(*mut ffi::lua_State, c_int, ffi::lua_KContext) -> c_int, cursor: ffi::lua_KContext, what: &str) -> c_int {
    // SAFETY: `L` is the running thread of a process (lib.rs invariant 1),
    // with a context; the yield (or the error) unwinds this frame, which
    // owns nothing.
    unsafe {
        if ffi::lua_isyieldable(L) == 0 {
            return cannot_block(L, what);
        }
        if ctx(L).proc().take_interrupt() {
            // Ctrl-C at a prompt while the line waits, as while it computes.
            return raise(L, "interrupted!".into());
        }
        crate::vm::util::collect_dropped(L);
        ctx(L).proc().set_waits_on(waits_on(what));
        ctx(L).pending = Pending::Block;
        ffi::lua_yieldk(L, 0, cursor, Some(k))
    }
}
