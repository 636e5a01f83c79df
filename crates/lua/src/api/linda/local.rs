//! The methods on a space of this node: `out`, the blocking and probing
//! reads and takes (a waiter left in the store, the process yielded),
//! `count`, `take_all`, `clear`, `eval`.

use std::ffi::c_int;
use std::sync::Arc;

use mlua_sys as ffi;
use synodic_core::linda::{Mode, Pattern, Tuple};
use synodic_core::spaces::{Refused, Space};
use synodic_core::waiting::{Completion, Waiter};

use crate::vm::ctx::ctx;
use crate::vm::util::*;
use crate::vm::wait::{self, Poll};

use super::*;
use super::pattern::*;

/// A `take`/`rd` that found nothing yet: what it looks for, kept across
/// yields (the `where` predicates stay on the stack, as the arguments).
pub(super) struct Query {
    space: Arc<Space>,
    patterns: Vec<Pattern>,
    wheres: Wheres,
    take: bool,
    /// The method and its arguments (to run it again elsewhere: `Moved`).
    fname: &'static str,
    args: c_int,
}

impl wait::Queue for Query {
    unsafe fn withdraw(&self, _L: *mut ffi::lua_State, waiter: Waiter) {
        self.space.with(|st| st.cancel(waiter));
    }
    fn as_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}

pub(super) enum Got {
    Tuple(Tuple),
    /// A waiter is queued in the store (the query is the current wait's).
    Wait,
    /// The space moved to another node: the method runs again there.
    Moved(&'static str, c_int),
}

/// One attempt: a tuple now, or a waiter left in the store.
///
/// The methods below are `unsafe` with one contract: `L` is the running
/// thread of a process in a tuple-space method (or its continuation), its
/// context entered, the handle at 1 and the method's arguments above (the
/// `where` formals among them, at the slots `wheres` names).
pub(super) unsafe fn attempt(L: *mut ffi::lua_State, q: Box<Query>) -> Result<Got, String> {
    let space = q.space.clone();
    let (patterns, wheres, take) = (q.patterns.clone(), q.wheres.clone(), q.take);
    let (fname, args) = (q.fname, q.args);
    if wheres.is_empty() {
        let mode = if take { Mode::Take } else { Mode::Read };
        // SAFETY: the contract; the context keeps the wait.
        let waiter = unsafe { wait::begin(L, q) };
        // Checked with the store locked: a moved space queues no one.
        return Ok(match space.with(|st| if st.is_moved() { Err(()) } else { Ok(st.find_or_wait(patterns, mode, waiter)) }) {
            Ok(Some(t)) => {
                // SAFETY: the contract (the wait just begun is ended).
                unsafe { wait::end::<Query>(L) };
                Got::Tuple(t)
            }
            Ok(None) => Got::Wait,
            Err(()) => {
                // SAFETY: as above.
                unsafe { wait::end::<Query>(L) };
                Got::Moved(fname, args)
            }
        });
    }
    // SAFETY: the contract. NOT KEPT: lib.rs invariant 2, `q`, `space`,
    // `patterns` and `wheres` are alive while the predicates run, and an
    // error `protected` lets through (an `exit` in a predicate) or a memory
    // error unwinds over them (in practice a leak).
    if let Some(t) = unsafe { find_where(L, &space, &patterns, &wheres, take)? } {
        return Ok(Got::Tuple(t));
    }
    // Register interest, then look once more: a tuple may have come in between.
    // SAFETY: the contract; the context keeps the wait.
    let waiter = unsafe { wait::begin(L, q) };
    let moved = space.with(|st| {
        if st.is_moved() {
            return true;
        }
        st.find_or_wait(patterns.clone(), Mode::Notify, waiter);
        false
    });
    if moved {
        // SAFETY: the contract.
        unsafe { wait::end::<Query>(L) };
        return Ok(Got::Moved(fname, args));
    }
    // SAFETY: the contract. NOT KEPT: as for the first look (`space`,
    // `patterns`, `wheres` are alive while the predicates run).
    if let Some(t) = unsafe { find_where(L, &space, &patterns, &wheres, take)? } {
        space.with(|st| st.cancel(waiter));
        // SAFETY: the contract.
        unsafe { wait::end::<Query>(L) };
        return Ok(Got::Tuple(t));
    }
    Ok(Got::Wait)
}

/// Returns a tuple's values (once the bytes of its buffers left on other
/// nodes are here).
pub(super) unsafe fn handed(L: *mut ffi::lua_State, values: synodic_core::Message) -> c_int {
    // SAFETY: the contract; `values` moves into `deliver`, so this frame
    // owns nothing when it blocks or raises.
    unsafe { crate::api::deferred::deliver(L, values, "take", Box::new(|L, values| crate::api::linda::remote::results(L, values, "take"))) }
}

/// Returns the tuple's values, or blocks with `blocking_k` as continuation.
pub(super) unsafe fn finish(L: *mut ffi::lua_State, got: Result<Got, String>) -> c_int {
    // SAFETY: the contract; `raise` drops `e` before unwinding. NOT KEPT:
    // lib.rs invariant 2, for a tuple only `t.values` moves into `handed`:
    // `t.fields` is dropped after it returns, so a block (a yield, for a
    // buffer left on another node) or an error there unwinds over it.
    unsafe {
        match got {
            Ok(Got::Tuple(t)) => handed(L, t.values),
            Ok(Got::Wait) => wait::block(L, blocking_k, "linda"),
            Ok(Got::Moved(fname, args)) => run_again(L, fname, args),
            Err(e) => {
                wait::end::<Query>(L);
                raise(L, e)
            }
        }
    }
}

pub(super) unsafe extern "C-unwind" fn blocking_k(L: *mut ffi::lua_State, _status: c_int, _k: ffi::lua_KContext) -> c_int {
    // SAFETY: Lua runs this continuation of a blocked `take`/`rd` with the
    // process's running thread (lib.rs invariant 1): the contract above.
    let expired = unsafe { deadline_passed(L) };
    // SAFETY: as above.
    let polled = match unsafe { wait::poll(L) } {
        // Withdraw, then look once more: a tuple handed meanwhile is kept.
        // SAFETY: as above.
        Poll::Waiting if expired => unsafe { wait::expire(L) }.map_or(Poll::Withdrawn, Poll::Done),
        p => p,
    };
    // SAFETY: as above; in each arm that returns, what `polled` held has
    // moved into the call (`values`, `q`) or is dropped before it.
    let got = unsafe {
        match polled {
            // A plain waiter is handed its tuple's values.
            Poll::Done(Completion::Value(values)) => {
                wait::end::<Query>(L);
                return handed(L, values);
            }
            // The space moved to another node: the method runs again there.
            Poll::Done(Completion::Moved) => {
                return match wait::end::<Query>(L) {
                    Some(q) => run_again(L, q.fname, q.args),
                    None => 0,
                };
            }
            // A `where` waiter was told something arrived: look again.
            Poll::Done(_) => match wait::end::<Query>(L) {
                Some(q) => attempt(L, q),
                None => return 0,
            },
            Poll::Withdrawn => {
                wait::end::<Query>(L);
                return if expired { 0 } else { wait::cannot_block(L, "linda") };
            }
            Poll::Waiting => return wait::block(L, blocking_k, "linda"),
        }
    };
    // A `where` waiter that looked again after its deadline does not wait again.
    if expired && matches!(got, Ok(Got::Wait)) {
        // SAFETY: as above. (The completion `expire` returns is alive
        // through the call below; for a `where` waiter it is a notice,
        // which owns no memory.)
        return unsafe {
            match wait::expire(L) {
                Some(_) => blocking_k(L, ffi::LUA_OK, 0),
                None => {
                    wait::end::<Query>(L);
                    0
                }
            }
        };
    }
    // SAFETY: as above.
    unsafe { finish(L, got) }
}

/// `take`/`rd` and their timed forms: the template starts at `first`.
pub(super) unsafe fn blocking(L: *mut ffi::lua_State, space: &Arc<Space>, take: bool, timed: bool, fname: &str) -> c_int {
    // SAFETY: the contract; the arguments are read, nothing raises.
    let prepared = (|| unsafe {
        let timeout = if timed { Some(seconds(L, fname)?) } else { None };
        let (patterns, wheres) = template(L, if timed { 3 } else { 2 }, fname)?;
        Ok::<_, String>((timeout, patterns, wheres))
    })();
    match prepared {
        // SAFETY: the contract; the query moves into `attempt` and `got`
        // into `finish` (a `Wait` owns nothing through `blocking_k`).
        Ok((timeout, patterns, wheres)) => unsafe {
            start_deadline(L, timeout);
            let got = attempt(L, Box::new(Query { space: space.clone(), patterns, wheres, take, fname: method_name(fname), args: args() }));
            // A zero timeout polls: no waiting (but a tuple handed meanwhile is kept).
            if matches!(got, Ok(Got::Wait)) && timeout.is_some_and(|t| t.is_zero()) {
                return blocking_k(L, ffi::LUA_OK, 0);
            }
            finish(L, got)
        },
        // SAFETY: the contract; `raise` drops `e` before unwinding.
        Err(e) => unsafe { raise(L, e) },
    }
}

/// The timeout of a timed form (argument 2).
pub(crate) unsafe fn seconds(L: *mut ffi::lua_State, fname: &str) -> Result<std::time::Duration, String> {
    // SAFETY: the contract (argument 2 is read).
    unsafe { opt_seconds(L, 2, fname)? }.ok_or_else(|| format!("bad argument #1 to '{fname}' (seconds expected)"))
}

pub(super) unsafe fn take(L: *mut ffi::lua_State, space: &Arc<Space>) -> c_int {
    // SAFETY: the contract.
    unsafe { blocking(L, space, true, false, "take") }
}

pub(super) unsafe fn rd(L: *mut ffi::lua_State, space: &Arc<Space>) -> c_int {
    // SAFETY: the contract.
    unsafe { blocking(L, space, false, false, "rd") }
}

pub(super) unsafe fn take_within(L: *mut ffi::lua_State, space: &Arc<Space>) -> c_int {
    // SAFETY: the contract.
    unsafe { blocking(L, space, true, true, "take_within") }
}

pub(super) unsafe fn rd_within(L: *mut ffi::lua_State, space: &Arc<Space>) -> c_int {
    // SAFETY: the contract.
    unsafe { blocking(L, space, false, true, "rd_within") }
}

/// `inp` / `rdp`: the oldest match now, or no values.
pub(super) unsafe fn probe(L: *mut ffi::lua_State, space: &Arc<Space>, take: bool, fname: &str) -> c_int {
    // SAFETY: the contract. NOT KEPT: lib.rs invariant 2, `patterns` and
    // `wheres` are alive while predicates run (see `attempt`).
    let found = (|| unsafe {
        let (patterns, wheres) = template(L, 2, fname)?;
        if wheres.is_empty() {
            Ok(space.with(|st| st.find(&patterns, take)))
        } else {
            find_where(L, space, &patterns, &wheres, take)
        }
    })();
    // SAFETY: the contract; the tuple moves into `finish`, `e` into `raise`.
    unsafe {
        match found {
            Ok(Some(t)) => finish(L, Ok(Got::Tuple(t))),
            Ok(None) => 0,
            Err(e) => raise(L, e),
        }
    }
}

pub(super) unsafe fn inp(L: *mut ffi::lua_State, space: &Arc<Space>) -> c_int {
    // SAFETY: the contract.
    unsafe { probe(L, space, true, "inp") }
}

pub(super) unsafe fn rdp(L: *mut ffi::lua_State, space: &Arc<Space>) -> c_int {
    // SAFETY: the contract.
    unsafe { probe(L, space, false, "rdp") }
}


pub(super) unsafe fn out(L: *mut ffi::lua_State, space: &Arc<Space>) -> c_int {
    let args = args();
    // SAFETY: the contract; the tuple is built from the arguments and
    // handed to the space (its encoding's memory errors unwind over nothing
    // this closure owns but `tuple`'s own, see `pattern::tuple`).
    let done = (|| unsafe {
        let rt = ctx(L).rt();
        Ok::<_, String>(space.out(tuple(L)?, |d| rt.complete(d)))
    })();
    // SAFETY: the contract; `done` holds no allocation in the arms that call
    // (`Refused` is a plain enum); `raise` drops its message before unwinding.
    unsafe {
        match done {
            Ok(Ok(())) => 0,
            Ok(Err(Refused::Moved)) => run_again(L, "out", args),
            Ok(Err(Refused::Full)) => raise(L, format!("out: space full: {}", handle(L, 1).map_or_else(|| "?".into(), |h| h.space.describe()))),
            Err(e) => raise(L, e),
        }
    }
}

/// The method of this name (as `take` and its forms call themselves).
pub(super) fn method_name(fname: &str) -> &'static str {
    METHODS.iter().find(|m| m.name == fname).map_or("take", |m| m.name)
}

pub(super) unsafe fn count(L: *mut ffi::lua_State, space: &Arc<Space>) -> c_int {
    // SAFETY: the contract. NOT KEPT: lib.rs invariant 2, `patterns`,
    // `wheres` and the candidates are alive while predicates run (see
    // `attempt`).
    let counted = (|| unsafe {
        let (patterns, wheres) = template(L, 2, "count")?;
        if wheres.is_empty() {
            return Ok(space.with(|st| st.count(&patterns)));
        }
        let mut n = 0;
        for (_, t) in space.with(|st| st.candidates(&patterns)) {
            n += holds(L, &t, &wheres)? as usize;
        }
        Ok(n)
    })();
    // SAFETY: the contract; `raise` drops `e` before unwinding.
    unsafe {
        match counted {
            Ok(n) => {
                ffi::lua_pushinteger(L, n as ffi::lua_Integer);
                1
            }
            Err(e) => raise(L, e),
        }
    }
}

pub(super) unsafe fn take_all(L: *mut ffi::lua_State, space: &Arc<Space>) -> c_int {
    // With `where` predicates: the matches now, oldest first, are checked
    // first and taken after, so a predicate that fails leaves the space as
    // it was (nothing taken, nothing reordered); one taken meanwhile by
    // another process is skipped.
    // SAFETY: the contract. NOT KEPT: lib.rs invariant 2, the candidates,
    // `patterns` and `wheres` are alive while predicates run (see
    // `attempt`): in practice a leak, and nothing has been taken yet.
    let taken = (|| unsafe {
        let (patterns, wheres) = template(L, 2, "take_all")?;
        if wheres.is_empty() {
            return Ok(space.with(|st| st.take_all(&patterns, usize::MAX)));
        }
        let mut passing = Vec::new();
        for (seq, tuple) in space.with(|st| st.candidates(&patterns)) {
            if holds(L, &tuple, &wheres)? {
                passing.push(seq);
            }
        }
        Ok(space.with(|st| passing.into_iter().filter_map(|seq| st.take_exact(seq, patterns.len())).collect()))
    })();
    let tuples = match taken {
        Ok(t) => t,
        // SAFETY: the contract; `raise` drops `e` before unwinding.
        Err(e) => return unsafe { raise(L, e) },
    };
    // Buffers left on their producers' nodes are fetched first, for the list as a whole.
    if tuples.iter().any(|t| t.values.attachments().iter().any(|a| a.is::<synodic_core::future::Ticket>())) {
        let list = synodic_core::linda_remote::list(tuples.into_iter().map(|t| (None, t)));
        // SAFETY: the contract; `list` moves into `deliver`.
        return unsafe { crate::api::deferred::deliver(L, list, "take_all", Box::new(|L, list| crate::api::linda::remote::results(L, list, "take_all"))) };
    }
    // NOT KEPT: lib.rs invariant 2, the tuples (`tuples`, `t`) are alive while
    // values are decoded and pushed, and a memory error unwinds over them:
    // they are neither returned nor put back.
    // SAFETY: the contract; the list is at `list`, each tuple's values decoded
    // on top and packed into one table stored in it.
    let list = unsafe {
        ffi::lua_createtable(L, tuples.len() as c_int, 0);
        ffi::lua_gettop(L)
    };
    let mut failed = None;
    let mut tuples = tuples.into_iter();
    for (i, t) in tuples.by_ref().enumerate() {
        // SAFETY: as above.
        match unsafe { push_tuple(L, &t, "take_all") } {
            // SAFETY: as above.
            Ok(n) => unsafe {
                pack(L, n);
                ffi::lua_rawseti(L, list, i as ffi::lua_Integer + 1);
            },
            Err(e) => {
                failed = Some(e);
                // SAFETY: as above (the context's runtime, borrowed in the call).
                let _ = space.put_back(t, |d| unsafe { ctx(L) }.rt().complete(d));
                break;
            }
        }
    }
    // After a failure the rest goes back too.
    for t in tuples {
        // SAFETY: as above.
        let _ = space.put_back(t, |d| unsafe { ctx(L) }.rt().complete(d));
    }
    // SAFETY: the contract; `raise` drops `e` before unwinding.
    unsafe {
        match failed {
            Some(e) => raise(L, e),
            None => 1,
        }
    }
}

pub(super) unsafe fn clear(_L: *mut ffi::lua_State, space: &Arc<Space>) -> c_int {
    space.with(|st| st.clear());
    0
}

/// The body of an `eval` process: calls the function fields, then `out`s the tuple.
pub(super) const EVAL: &str = "local ts = ... \
    local t = table.pack(select(2, ...)) \
    for i = 1, t.n do if type(t[i]) == 'function' then t[i] = t[i]() end end \
    ts:out(table.unpack(t, 1, t.n))";

/// `eval`: starts the process on the least loaded node; returns its pid.
pub(super) unsafe extern "C-unwind" fn eval(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this method with its running state `L` (lib.rs
    // invariant 1); the handle is checked at 1, and the `eval` body, loaded
    // (protected), goes under the arguments as the function to spawn.
    let loaded = (|| unsafe {
        if handle(L, 1).is_none() {
            return Err(format!("bad self to 'eval' (tuple space expected, got {}; call it as ts:eval(...))", type_name(L, 1)));
        }
        if ffi::lua_gettop(L) < 2 {
            return Err("eval: a tuple needs at least one field".to_string());
        }
        if ffi::luaL_loadbufferx(L, EVAL.as_ptr().cast(), EVAL.len(), c"=(eval)".as_ptr(), c"t".as_ptr()) != ffi::LUA_OK {
            return Err("eval: internal error".into());
        }
        ffi::lua_rotate(L, 1, 1);
        Ok(())
    })();
    // SAFETY: as above; the function and its arguments start at 1, as
    // `spawn_somewhere` asks; `raise` drops `e` before unwinding.
    unsafe {
        match loaded {
            Ok(()) => crate::api::kernel::spawn_somewhere(L, b"any", 1, "eval"),
            Err(e) => raise(L, e),
        }
    }
}
