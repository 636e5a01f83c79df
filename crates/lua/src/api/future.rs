//! Futures in Lua (SPEC §6): `s.async(f, ...)`, `s.async_on(node, f, ...)`
//! and the handles they return, whose `get` waits for the results. A task
//! goes to the pool of its node (`synodic_core::pool`) as one message: the
//! future's id and weight, who to tell when it is done and what, then `f`
//! and its arguments. The pool's workers (`lualib/future.lua`) take tasks
//! with `_pool_take` and store the results with `_resolve`, on their node:
//! results stay where they are computed until someone asks.
//!
//! A handle holds this node's ticket for its future
//! (`synodic_core::future`): handles in messages share it, and one going to
//! another node takes the future's id and half the ticket's weight along.
//!
//! The native surface, in one place: `async`, `async_on`, `_submit`,
//! `_pool_take`, `_resolve`, `_pool_load`, `_is_future`, `_fetched`,
//! `_futures_held`, `_store`, `_cpu_clock`, `_isatty` in the `synodic`
//! table; `get`,
//! `ready`, `node` on handles.

use std::ffi::{c_int, CStr};
use std::sync::Arc;

use mlua_sys as ffi;
use synodic_core::future::{FutureId, Read, Ticket};
use synodic_core::waiting::{Completion, Waiter};
use synodic_core::Attachment;

use crate::vm::codec::{self, Sendable};
use crate::vm::ctx::ctx;
use crate::vm::util::*;
use crate::vm::wait::{self, Poll};

mod pool;
#[cfg(test)]
mod tests;

pub(crate) use pool::{pool_load, pool_take, resolve, store};

const FUTURE: &CStr = c"synodic.future";

const METHODS: &[(&CStr, ffi::lua_CFunction)] = &[(c"get", get), (c"ready", ready), (c"node", node)];


struct Handle {
    ticket: Arc<Ticket>,
}

/// A handle crosses as its ticket, shared (see `codec::Sendable`).
pub(crate) static SENDABLE: Sendable = Sendable { kind: 3, share, rebuild };

unsafe fn share(L: *mut ffi::lua_State, idx: c_int) -> Option<(u8, Attachment)> {
    // SAFETY: `L` is a process's state and `idx` a stack index (the
    // encoder's contract). A userdata with the future metatable holds a
    // `Handle` written by `push_handle` and not dropped (`handle_gc` takes
    // the metatable off when it drops it).
    let h = unsafe { (ffi::luaL_testudata(L, idx, FUTURE.as_ptr()) as *mut Handle).as_ref()? };
    Some((0, h.ticket.clone() as Attachment))
}

unsafe fn rebuild(L: *mut ffi::lua_State, variant: u8, shared: &Attachment) -> Result<(), String> {
    if variant == synodic_core::wire::shared::DEFERRED_BUFFER {
        // SAFETY: `L` is the decoder's state (a process's), with room for a value.
        return unsafe { crate::api::deferred::rebuild(L, shared) };
    }
    let ticket = shared.clone().downcast::<Ticket>().map_err(|_| "not a future")?;
    // SAFETY: as above.
    unsafe { push_handle(L, ticket) };
    Ok(())
}

/// What a handle counts for with the collector, in KiB: little in the Lua
/// heap, it may hold a large result on some node, which is freed only once
/// the handle is collected (see `vm::util::collect_dropped`).
const HANDLE_KIB: u32 = 64;

unsafe fn push_handle(L: *mut ffi::lua_State, ticket: Arc<Ticket>) {
    // SAFETY: `L` is a process's state (lib.rs invariant 1), with a context
    // (borrowed for these two lines only).
    let c = unsafe { ctx(L) };
    c.payload_kib = c.payload_kib.saturating_add(HANDLE_KIB);
    // NOT KEPT: lib.rs invariant 2, `ticket` is alive through the allocation,
    // and the handle has no `__gc` until `set_class` sets the metatable: a
    // memory error in either leaks the ticket (its weight never goes back to
    // the future's home).
    // SAFETY: as above. The userdata is `size_of::<Handle>()` bytes, aligned
    // by Lua for any C type (enough for an `Arc`), written whole before
    // anything reads it; its metatable gives it `__gc`, which drops it.
    unsafe {
        (ffi::lua_newuserdatauv(L, std::mem::size_of::<Handle>(), 0) as *mut Handle).write(Handle { ticket });
        set_class(L, FUTURE, &[(c"__gc", handle_gc as ffi::lua_CFunction), (c"__eq", handle_eq), (c"__tostring", handle_tostring)], c"__index", METHODS);
    }
}

/// The future handle `self` (argument 1). The reference lives while the
/// userdata does; callers use it within the native call, `self` on the stack.
unsafe fn handle<'a>(L: *mut ffi::lua_State, fname: &str) -> Result<&'a Handle, String> {
    // SAFETY: `L` is the running state of a method (lib.rs invariant 1). A
    // userdata with the future metatable holds a `Handle` written by
    // `push_handle` and not dropped (see `handle_gc`).
    unsafe { (ffi::luaL_testudata(L, 1, FUTURE.as_ptr()) as *mut Handle).as_ref().ok_or_else(|| format!("bad self to '{fname}' (future expected, got {})", type_name(L, 1))) }
}

unsafe extern "C-unwind" fn handle_gc(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls `__gc` with the userdata at 1 (lib.rs invariant 1);
    // a handle found is dropped once: the metatable is taken off right
    // after, so a resurrected one is found no more.
    unsafe {
        if let Some(h) = (ffi::luaL_testudata(L, 1, FUTURE.as_ptr()) as *mut Handle).as_mut() {
            std::ptr::drop_in_place(h);
            // A second __gc (resurrection) must find nothing to drop.
            ffi::lua_pushnil(L);
            ffi::lua_setmetatable(L, 1);
        }
    }
    0
}

unsafe extern "C-unwind" fn handle_eq(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls `__eq` with the operands at 1 and 2 (lib.rs
    // invariant 1); a handle is read (shared) only when the metatable says
    // it is one (see `handle`).
    unsafe {
        let id = |i| (ffi::luaL_testudata(L, i, FUTURE.as_ptr()) as *mut Handle).as_ref().map(|h| h.ticket.id);
        ffi::lua_pushboolean(L, (id(1).is_some() && id(1) == id(2)) as c_int);
    }
    1
}

unsafe extern "C-unwind" fn handle_tostring(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls `__tostring` with the value at 1 (lib.rs invariant
    // 1); as in `handle_eq`. NOT KEPT: lib.rs invariant 2, a memory error
    // while pushing would unwind over `text` (in practice a leak).
    unsafe {
        let text = (ffi::luaL_testudata(L, 1, FUTURE.as_ptr()) as *mut Handle).as_ref().map_or_else(String::new, |h| format!("future: {}#{}", home_name(L, &h.ticket), h.ticket.id.seq));
        push_bytes(L, text.as_bytes());
    }
    1
}

/// The name of the node that computes the future.
unsafe fn home_name(L: *mut ffi::lua_State, ticket: &Ticket) -> Arc<str> {
    // SAFETY: `L` is the running process's state (lib.rs invariant 1), its
    // context entered.
    unsafe { ctx(L) }.rt().nodes().id(ticket.home).map_or_else(|| "?".into(), |n| n.name)
}

/// `s.async(f, ...)`: on the least loaded node.
pub(crate) unsafe extern "C-unwind" fn async_(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1), its context entered; two nils (watcher, note)
    // go under `f`; `node` moves into `submit`, which drops it before it
    // raises or pushes.
    unsafe {
        let node = ctx(L).rt().least_loaded_node();
        ffi::lua_pushnil(L);
        ffi::lua_pushnil(L);
        ffi::lua_rotate(L, 1, 2);
        submit(L, node, 1, "async")
    }
}

/// `s.async_on(node, f, ...)`: on `node` (a name, or `"any"`).
pub(crate) unsafe extern "C-unwind" fn async_on(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: as in `async_` (with `node` at 1); `raise` drops `e` first.
    unsafe {
        let node = match node_arg(L, "async_on") {
            Ok(node) => node,
            Err(e) => return raise(L, e),
        };
        ffi::lua_pushnil(L);
        ffi::lua_pushnil(L);
        ffi::lua_rotate(L, 2, 2);
        submit(L, node, 2, "async_on")
    }
}

/// `s._submit(node, watcher, note, f, ...)`: `async_on`, and when the task
/// is done the pool worker sends `watcher` a note (see `lualib/future.lua`).
/// Returns the future and how many bytes the task carried.
pub(crate) unsafe extern "C-unwind" fn submit_(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: as in `async_on`.
    unsafe {
        match node_arg(L, "_submit") {
            Ok(node) => submit(L, node, 2, "_submit"),
            Err(e) => raise(L, e),
        }
    }
}

unsafe fn node_arg(L: *mut ffi::lua_State, fname: &str) -> Result<Arc<str>, String> {
    // SAFETY: `L` is the running process's state (lib.rs invariant 1), its
    // context entered; argument 1 is read as bytes only once checked to be
    // a string, and copied while on the stack.
    unsafe {
        match (ffi::lua_type(L, 1) == ffi::LUA_TSTRING).then(|| to_bytes(L, 1)).flatten() {
            Some(b"any") => Ok(ctx(L).rt().least_loaded_node()),
            Some(name) => Ok(String::from_utf8_lossy(name).into()),
            None => Err(format!("bad argument #1 to '{fname}' (node name expected, got {})", type_name(L, 1))),
        }
    }
}

/// Sends the task whose watcher, note, `f` and arguments start at `first`
/// to the pool of `node`; pushes its future.
unsafe fn submit(L: *mut ffi::lua_State, node: Arc<str>, first: c_int, fname: &str) -> c_int {
    // SAFETY: `L` is the running process's state (lib.rs invariant 1), its
    // context entered, the task's values from `first`; the future's id and
    // weight (three integers) go under them. Nothing owned is alive while
    // the task is encoded (the ticket is made after).
    let sent = (|| unsafe {
        if ffi::lua_type(L, first + 2) != ffi::LUA_TFUNCTION {
            return Err(format!("bad argument #{} to '{fname}' (function expected, got {})", if fname == "async" { 1 } else { 2 }, type_name(L, first + 2)));
        }
        let rt = ctx(L).rt();
        let node = &*node;
        let here = node == &*rt.node_name();
        let home = match here {
            true => 0,
            false => rt.nodes().named(node).filter(|_| rt.live_nodes().iter().any(|n| &**n == node)).ok_or_else(|| format!("{fname}: no such node: {node}"))?,
        };
        let (id, weight) = rt.new_future();
        for v in [id.origin, id.seq, weight] {
            ffi::lua_pushinteger(L, v as ffi::lua_Integer);
        }
        ffi::lua_rotate(L, first, 3);
        // Paths in errors count from `f` (the first value the caller gave).
        let task = codec::encode_after(L, first, ffi::lua_gettop(L), 5).map_err(|e| format!("{fname}: {e}"))?;
        let ticket = rt.ticket(id, home, weight);
        let bytes = task.size();
        if here {
            rt.pool_push(task);
        } else {
            synodic_core::dist::carry::crossing(&task).map_err(|e| format!("{fname}: {e}"))?;
            rt.service::<synodic_core::dist::pool::Pools>().submit(rt, node, task).map_err(|e| format!("{fname}: {e}"))?;
        }
        Ok((ticket, bytes))
    })();
    drop(node);
    // SAFETY: as above; `ticket` moves into the handle, `e` into `raise`.
    unsafe {
        match sent {
            Ok((ticket, bytes)) => {
                push_handle(L, ticket);
                if fname != "_submit" {
                    return 1;
                }
                ffi::lua_pushinteger(L, bytes as ffi::lua_Integer);
                2
            }
            Err(e) => raise(L, e),
        }
    }
}

/// A `get` waiting in the store.
struct Getting {
    ticket: Arc<Ticket>,
    /// This wait made the node ask another node for the value: its bytes
    /// cross the network for this process.
    asked: bool,
}

impl wait::Queue for Getting {
    unsafe fn withdraw(&self, L: *mut ffi::lua_State, waiter: Waiter) {
        // SAFETY: `L` is the running process's state (the trait's contract), with a context.
        unsafe { ctx(L) }.rt().futures().with(|st| st.cancel(self.ticket.id, waiter));
    }
    fn as_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}

/// `fut:get([timeout])`: the results of `f`, when they are there; an error
/// `f` raised is raised again; on timeout, no values.
unsafe extern "C-unwind" fn get(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this method with its running state `L` (lib.rs
    // invariant 1), `self` at 1 and the timeout at 2.
    let prepared = unsafe { handle(L, "get") }.map(|h| h.ticket.clone()).and_then(|t| unsafe { opt_seconds(L, 2, "get") }.map(|timeout| (t, timeout)));
    let (ticket, timeout) = match prepared {
        Ok(p) => p,
        // SAFETY: as above; `raise` drops `e` before unwinding.
        Err(e) => return unsafe { raise(L, e) },
    };
    // SAFETY: as above; the context (entered for this resume) keeps the
    // wait, replaced whole when this wait asked another node.
    let (rt, read) = unsafe {
        start_deadline(L, timeout);
        let rt = ctx(L).rt();
        let waiter = wait::begin(L, Box::new(Getting { ticket: ticket.clone(), asked: false }));
        let read = rt.future_read(&ticket, waiter);
        if let Read::Wait { ask: Some(_) } = read {
            ctx(L).blocked = Some(Box::new(Getting { ticket: ticket.clone(), asked: true }));
        }
        (rt, read)
    };
    // Nothing owned may live across the yield below (it unwinds with longjmp).
    drop(ticket);
    // SAFETY: as above; `value` moves into `got`, and a `Wait` owns nothing.
    unsafe {
        match read {
            Read::Value(value) => got(L, value),
            Read::Wait { .. } if timeout.is_some_and(|t| t.is_zero()) => get_k(L, ffi::LUA_OK, 0),
            Read::Wait { .. } => {
                let c = ctx(L);
                if c.pool_worker {
                    c.pool_waiting = true;
                    rt.pool_worker_waits(true);
                }
                wait::block(L, get_k, "get")
            }
        }
    }
}

/// Ends the wait of a `get`: a pool worker counts again.
unsafe fn end_get(L: *mut ffi::lua_State) -> Option<Box<Getting>> {
    // SAFETY: `L` is the running process's state (lib.rs invariant 1), its
    // context entered; nothing here calls into Lua.
    unsafe {
        let g = wait::end::<Getting>(L);
        let c = ctx(L);
        if std::mem::take(&mut c.pool_waiting) {
            c.rt().pool_worker_waits(false);
        }
        g
    }
}

/// A `get` has its value: pushes its results (counting the bytes that
/// crossed the network for it).
unsafe fn got(L: *mut ffi::lua_State, value: synodic_core::Message) -> c_int {
    // SAFETY: `L` is the running process's thread in `get` (or its
    // continuation). NOT KEPT: lib.rs invariant 2, `value` is alive while
    // `add_fetched` sets a registry field, whose memory error would unwind
    // over it; then it moves into `results`.
    unsafe {
        if end_get(L).is_some_and(|g| g.asked) {
            crate::api::deferred::add_fetched(L, value.size() as i64);
        }
        results(L, value)
    }
}

unsafe extern "C-unwind" fn get_k(L: *mut ffi::lua_State, _status: c_int, _k: ffi::lua_KContext) -> c_int {
    // SAFETY: Lua runs this continuation of `get` with the process's
    // running thread (lib.rs invariant 1); in each arm the completion moves
    // into the call or holds nothing, so this frame owns nothing when it
    // blocks or raises.
    unsafe {
        let expired = deadline_passed(L);
        let polled = match wait::poll(L) {
            Poll::Waiting if expired => wait::expire(L).map_or(Poll::Withdrawn, Poll::Done),
            p => p,
        };
        match polled {
            Poll::Done(Completion::Value(value)) => got(L, value),
            Poll::Done(_) | Poll::Withdrawn => {
                end_get(L);
                if expired {
                    0
                } else {
                    wait::cannot_block(L, "get")
                }
            }
            Poll::Waiting => wait::block(L, get_k, "get"),
        }
    }
}

/// Pushes a task's results (`true, values...`), or raises its error
/// (`false, error`).
unsafe fn results(L: *mut ffi::lua_State, value: synodic_core::Message) -> c_int {
    // SAFETY: `L` is the running process's thread in `get` (lib.rs
    // invariant 1); its stack is emptied for the results. NOT KEPT: lib.rs
    // invariant 2, `value` is alive while it is decoded, and a memory
    // error there unwinds over it.
    let decoded = unsafe {
        ffi::lua_settop(L, 0);
        codec::decode(L, &value)
    };
    drop(value);
    // SAFETY: as above; the task's error (at 2) is raised again as it is;
    // `raise_error` drops a decoding error before it raises.
    unsafe {
        match decoded {
            Ok(n) if n >= 1 && ffi::lua_toboolean(L, 1) != 0 => n - 1,
            Ok(n) if n >= 2 => {
                ffi::lua_settop(L, 2);
                ffi::lua_error(L)
            }
            Ok(_) => raise(L, "get: the task ended without results".to_string()),
            Err(e) => raise_error(L, "get", e),
        }
    }
}

/// `fut:ready()`: whether `get` would return at once. For another node's
/// result this also asks for it, so that it comes.
unsafe extern "C-unwind" fn ready(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this method with its running state `L` (lib.rs
    // invariant 1), `self` at 1; `raise` drops `e` before unwinding.
    let ticket = unsafe {
        match handle(L, "ready") {
            Ok(h) => h.ticket.clone(),
            Err(e) => return raise(L, e),
        }
    };
    // SAFETY: as above (the context is entered for this resume).
    let rt = unsafe { ctx(L) }.rt();
    let is = rt.futures().with(|st| st.is_ready(ticket.id));
    if !is {
        rt.future_prefetch(&ticket);
    }
    // SAFETY: as above; pushing a boolean allocates nothing, so nothing
    // unwinds over `ticket`.
    unsafe { ffi::lua_pushboolean(L, is as c_int) };
    1
}

/// `fut:node()`: the node that computes it, where its result stays.
unsafe extern "C-unwind" fn node(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this method with its running state `L` (lib.rs
    // invariant 1), `self` at 1; `raise` drops `e` before unwinding. NOT
    // KEPT: lib.rs invariant 2, a memory error while pushing would unwind
    // over `name` (an `Arc<str>`; in practice a leak).
    unsafe {
        match handle(L, "node") {
            Ok(h) => {
                let name = home_name(L, &h.ticket);
                push_bytes(L, name.as_bytes());
                1
            }
            Err(e) => raise(L, e),
        }
    }
}

/// `s._isatty(fd)`: whether the descriptor is a terminal (progress bars
/// draw only on one).
pub(crate) unsafe extern "C-unwind" fn isatty(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1); `isatty` takes any descriptor number.
    unsafe {
        let fd = ffi::lua_tointegerx(L, 1, std::ptr::null_mut()) as c_int;
        ffi::lua_pushboolean(L, libc::isatty(fd));
    }
    1
}

/// `s._is_future(v)`: whether `v` is a future.
pub(crate) unsafe extern "C-unwind" fn is_future(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1).
    unsafe {
        let is = !ffi::luaL_testudata(L, 1, FUTURE.as_ptr()).is_null();
        ffi::lua_pushboolean(L, is as c_int);
    }
    1
}

/// `s._fetched()`: bytes of other nodes' results this process got since it
/// last asked.
pub(crate) unsafe extern "C-unwind" fn fetched(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1).
    unsafe {
        let n = crate::api::deferred::take_fetched(L);
        ffi::lua_pushinteger(L, n);
    }
    1
}

/// `s._futures_held()`: results and replicas the node's store holds.
pub(crate) unsafe extern "C-unwind" fn futures_held(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1), its context entered.
    unsafe {
        let n = ctx(L).rt().futures().with(|st| st.len());
        ffi::lua_pushinteger(L, n as ffi::lua_Integer);
    }
    1
}
