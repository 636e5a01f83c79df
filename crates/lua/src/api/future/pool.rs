//! The pool workers' side of futures (`lualib/future.lua` runs them):
//! `_pool_take` waits for the node's next task, `_resolve` stores a
//! result where it was computed, `_store` counts what is held there and
//! `_pool_load` says how many tasks the node has in hand. The contract of
//! `future`'s functions holds here.

use super::*;

/// The pool waiting for a task.
struct Taking;

impl wait::Queue for Taking {
    unsafe fn withdraw(&self, L: *mut ffi::lua_State, waiter: Waiter) {
        // SAFETY: `L` is the running process's state (the trait's contract), with a context.
        unsafe { ctx(L) }.rt().with_pool(|p| p.cancel(waiter));
    }
    fn as_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}

/// `s._pool_take()`: the next task of the node's pool: whether its result
/// is still wanted, then its id, weight, watcher, note, function and
/// arguments. Blocks until there is one.
pub(crate) unsafe extern "C-unwind" fn pool_take(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1), its context entered; a task moves into
    // `task_values`, and this frame owns nothing when it blocks.
    unsafe {
        let waiter = wait::begin(L, Box::new(Taking));
        match ctx(L).rt().with_pool(|p| p.take_or_wait(waiter)) {
            Some(task) => {
                wait::end::<Taking>(L);
                task_values(L, task)
            }
            None => wait::block(L, pool_take_k, "_pool_take"),
        }
    }
}

unsafe extern "C-unwind" fn pool_take_k(L: *mut ffi::lua_State, _status: c_int, _k: ffi::lua_KContext) -> c_int {
    // SAFETY: Lua runs this continuation with the process's running thread
    // (lib.rs invariant 1); as in `pool_take`.
    unsafe {
        match wait::poll(L) {
            Poll::Done(Completion::Value(task)) => {
                wait::end::<Taking>(L);
                task_values(L, task)
            }
            Poll::Waiting => wait::block(L, pool_take_k, "_pool_take"),
            _ => {
                wait::end::<Taking>(L);
                wait::cannot_block(L, "_pool_take")
            }
        }
    }
}

/// Grants the task's future its weight (see `synodic_core::future`) and
/// pushes whether it is still wanted, then the task's values.
unsafe fn task_values(L: *mut ffi::lua_State, task: synodic_core::Message) -> c_int {
    // NOT KEPT: lib.rs invariant 2, `task` is alive while the timing starts (a
    // registry field is set) and while it is decoded, and a memory error there
    // unwinds over it.
    // SAFETY: `L` is the running process's thread in `_pool_take` (lib.rs
    // invariant 1), its context entered (borrowed per statement); the stack is
    // emptied for the results.
    let decoded = unsafe {
        ffi::lua_settop(L, 0);
        ctx(L).pool_worker = true;
        crate::vm::cputime::start_timing(L);
        let wanted = match synodic_core::future::task_head(&task) {
            Some((id, weight)) => ctx(L).rt().futures().with(|st| st.grant(id, weight)),
            None => false,
        };
        ffi::lua_pushboolean(L, wanted as c_int);
        codec::decode(L, &task)
    };
    drop(task);
    match decoded {
        Ok(n) => n + 1,
        // SAFETY: as above; `raise_error` drops `e` before it raises.
        Err(e) => unsafe { raise_error(L, "_pool_take", e) },
    }
}

/// `s._resolve(origin, seq, ok, ...)`: the results of the task computing
/// that future here. Results that cannot be sent make it fail instead.
pub(crate) unsafe extern "C-unwind" fn resolve(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1), its context entered: the id at 1 and 2, the
    // results from 3. Nothing owned is alive while they are encoded.
    unsafe {
        let int = |i| ffi::lua_tointegerx(L, i, std::ptr::null_mut()) as u64;
        let id = FutureId { origin: int(1), seq: int(2) };
        let value = codec::encode(L, 3, ffi::lua_gettop(L)).unwrap_or_else(|e| synodic_core::future::failure(&format!("the results cannot be sent: {e}")));
        ctx(L).rt().future_resolve(id, value);
    }
    0
}

/// `s._store(...)`: a future of this node whose results are the values
/// given (the skeletons keep the parts of a split this way, where they were
/// made).
pub(crate) unsafe extern "C-unwind" fn store(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1); `true` goes under the values, all encoded.
    let value = unsafe {
        ffi::lua_pushboolean(L, 1);
        ffi::lua_insert(L, 1);
        match codec::encode(L, 1, ffi::lua_gettop(L)) {
            Ok(v) => v,
            // `raise_error` drops `e` before it raises.
            Err(e) => return raise_error(L, "_store", e),
        }
    };
    // SAFETY: as above (the context is entered for this resume).
    let rt = unsafe { ctx(L) }.rt();
    let (id, weight) = rt.new_future();
    let ticket = rt.ticket(id, 0, weight);
    rt.futures().with(|st| st.grant(id, weight));
    rt.future_resolve(id, value);
    // SAFETY: as above; `ticket` moves into the handle.
    unsafe { push_handle(L, ticket) };
    1
}

/// `s._pool_load()`: the node's tasks in hand (waiting and running).
pub(crate) unsafe extern "C-unwind" fn pool_load(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1), its context entered.
    unsafe {
        let load = ctx(L).rt().with_pool(|p| p.load());
        ffi::lua_pushinteger(L, load as ffi::lua_Integer);
    }
    1
}
