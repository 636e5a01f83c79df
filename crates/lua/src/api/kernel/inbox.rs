//! `receive` and `receive_match`: the next message, or the first one that
//! matches a filter (its first value, or a predicate run in the receiver),
//! waiting by yielding with a continuation that looks again when the
//! process is woken. The contract of `kernel`'s functions holds here.

use super::*;

/// Pushes the next message's values, if there is one.
unsafe fn take_message(L: *mut ffi::lua_State) -> Option<Result<c_int, String>> {
    // SAFETY: the contract.
    let msg = unsafe { ctx(L) }.proc().pop_message()?;
    // SAFETY: the contract. NOT KEPT: lib.rs invariant 2, `msg` is alive
    // while it is decoded, and a memory error there unwinds over it (in
    // practice a leak).
    Some(unsafe { codec::decode(L, &msg) }.map_err(|e| format!("receive: {e}")))
}

unsafe fn finish_receive(L: *mut ffi::lua_State, got: Result<c_int, String>) -> c_int {
    match got {
        Ok(n) => n,
        // SAFETY: the contract; `raise` drops `e` before unwinding.
        Err(e) => unsafe { raise(L, e) },
    }
}

/// Refuses to take messages out of the mailbox while a `receive_match`
/// filter runs: it is walking the mailbox by position.
unsafe fn not_in_filter(L: *mut ffi::lua_State, fname: &str) -> Result<(), String> {
    // SAFETY: the contract (a read of the context).
    match unsafe { ctx(L) }.in_filter {
        true => Err(format!("{fname}: cannot receive inside a receive_match filter")),
        false => Ok(()),
    }
}

pub(super) unsafe extern "C-unwind" fn receive(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: the contract; the checks' errors are raised with nothing
    // else owned, and this frame owns nothing when it blocks.
    unsafe {
        let timeout = match opt_seconds(L, 1, "receive").and_then(|t| not_in_filter(L, "receive").map(|()| t)) {
            Ok(t) => t,
            Err(e) => return raise(L, e),
        };
        ctx(L).rt().flush_queued();
        if let Some(got) = take_message(L) {
            return finish_receive(L, got);
        }
        if timeout.is_some_and(|t| t.is_zero()) {
            return 0;
        }
        start_deadline(L, timeout);
        block_on_mailbox(L, receive_k, 0, "receive")
    }
}

unsafe extern "C-unwind" fn receive_k(L: *mut ffi::lua_State, _status: c_int, _k: ffi::lua_KContext) -> c_int {
    // SAFETY: the contract (a continuation of `receive`); as in `receive`.
    unsafe {
        if let Some(got) = take_message(L) {
            return finish_receive(L, got);
        }
        if wait::take_withdrawn(L) {
            return wait::cannot_block(L, "receive");
        }
        if deadline_passed(L) {
            return 0;
        }
        block_on_mailbox(L, receive_k, 0, "receive")
    }
}

/// How `receive_match` tells a message it wants (its argument 1).
enum Filter {
    /// The first value equals this one (Lua's `==` on plain values).
    Value(Plain<'static>),
    /// The filter function says so.
    Function,
}

/// The filter of a `receive_match` (its argument 1). A string filter's
/// bytes are borrowed from the stack: `'static` here is for the call that
/// asked only (`match_from`, which reads it anew after every yield).
unsafe fn filter(L: *mut ffi::lua_State) -> Result<Filter, String> {
    // SAFETY: the contract (argument 1 is read).
    match unsafe { peek(L, 1) } {
        // SAFETY: the contract.
        Plain::Other if unsafe { ffi::lua_type(L, 1) } == ffi::LUA_TFUNCTION => Ok(Filter::Function),
        // SAFETY: the contract.
        Plain::Other => Err(format!("bad argument #1 to 'receive_match' (a plain value or a function expected, got {})", unsafe { type_name(L, 1) })),
        // The string stays on the stack (argument 1) for the whole call.
        // SAFETY: only the lifetime changes: a string's bytes live while
        // it stays at 1, which it does for the whole native call (or
        // continuation) in which `match_from` uses the filter.
        v => Ok(Filter::Value(unsafe { std::mem::transmute::<Plain<'_>, Plain<'static>>(v) })),
    }
}

/// Whether the first value of `msg` equals `want`.
pub(super) fn first_value_is(msg: &[u8], want: Plain) -> bool {
    let Ok((mut r, count)) = Reader::message(msg) else { return false };
    if count == 0 {
        return false;
    }
    let Ok(tag) = r.tag() else { return false };
    match (tag, want) {
        (Tag::Nil, Plain::Nil) => true,
        (Tag::False, Plain::Bool(b)) => !b,
        (Tag::True, Plain::Bool(b)) => b,
        (Tag::Str, Plain::Str(s)) => r.bytes().is_ok_and(|b| b == s),
        (Tag::Pid, Plain::Light(p)) => r.pid().is_ok_and(|pid| pid.raw() == p as usize as u64),
        (Tag::Int, want) => r.int().is_ok_and(|i| Field::Int(i).equals(&number(want))),
        (Tag::Float, want) => r.float().is_ok_and(|f| Field::Float(f).equals(&number(want))),
        _ => false,
    }
}

/// A plain number as a tuple field, for Lua's `==` across integers and floats.
fn number(v: Plain) -> Field {
    match v {
        Plain::Int(i) => Field::Int(i),
        Plain::Float(f) => Field::Float(f),
        _ => Field::Bool(false),
    }
}

/// Looks at the messages from position `cursor` on. Pushes the values of
/// the first that matches (taken out of the mailbox) and returns their
/// count, or returns the position to look from next time.
unsafe fn match_from(L: *mut ffi::lua_State, cursor: usize) -> Result<Result<c_int, usize>, String> {
    // SAFETY: the contract.
    let proc = unsafe { ctx(L) }.proc();
    // SAFETY: the contract.
    match unsafe { filter(L)? } {
        Filter::Value(want) => match proc.take_first_match(cursor, |m| first_value_is(m, want)) {
            // SAFETY: the contract. NOT KEPT: lib.rs invariant 2, `msg` is
            // alive while it is decoded, and a memory error there unwinds
            // over it (in practice a leak).
            Ok(msg) => Ok(Ok(unsafe { codec::decode(L, &msg) }.map_err(|e| format!("receive_match: {e}"))?)),
            Err(count) => Ok(Err(count)),
        },
        Filter::Function => {
            let mut at = cursor;
            loop {
                let Some(msg) = proc.peek_message(at) else { return Ok(Err(at)) };
                // SAFETY: the contract. NOT KEPT: as above, for `msg`.
                let n = unsafe { codec::decode(L, &msg) }.map_err(|e| format!("receive_match: {e}"))?;
                drop(msg);
                // SAFETY: the contract; the message's `n` values are on
                // top, and nothing is owned here when the filter runs.
                if unsafe { call_filter(L, n)? } {
                    proc.take_message_at(at);
                    return Ok(Ok(n));
                }
                // SAFETY: the contract; the values looked at are popped.
                unsafe { ffi::lua_settop(L, -n - 1) };
                at += 1;
            }
        }
    }
}

/// Calls the filter (argument 1) with the `n` values on top, which stay.
unsafe fn call_filter(L: *mut ffi::lua_State, n: c_int) -> Result<bool, String> {
    // SAFETY: the contract; room for the filter and its `n` arguments is
    // made first; the filter runs protected (lib.rs invariant 3), its
    // error raised again through frames that own nothing; the context is
    // borrowed per statement.
    unsafe {
        if ffi::lua_checkstack(L, n + 2) == 0 {
            return Err("receive_match: too many values".into());
        }
        let first = ffi::lua_gettop(L) - n + 1;
        ffi::lua_pushvalue(L, 1);
        for i in first..first + n {
            ffi::lua_pushvalue(L, i);
        }
        ctx(L).in_filter = true;
        let called = protected(L, n, 1);
        ctx(L).in_filter = false;
        if called.is_err() {
            // The filter's error is the caller's (the message stays queued).
            ffi::lua_error(L);
        }
        let yes = ffi::lua_toboolean(L, -1) != 0;
        ffi::lua_settop(L, -2);
        Ok(yes)
    }
}

/// `receive_match(filter [, timeout])`: the oldest message the filter wants;
/// the others stay queued in order. Each message is looked at once per
/// call, however long it waits: the position reached is kept across yields
/// (the continuation's context).
pub(super) unsafe extern "C-unwind" fn receive_match(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: the contract; the checks' errors are raised with nothing
    // else owned; the stack is cut to [filter, timeout] for `match_k`.
    unsafe {
        let timeout = match opt_seconds(L, 2, "receive_match").and_then(|t| not_in_filter(L, "receive_match").map(|()| t)) {
            Ok(t) => t,
            Err(e) => return raise(L, e),
        };
        ctx(L).rt().flush_queued();
        ffi::lua_settop(L, 2);
        defer_deadline(L, timeout);
        match_k(L, ffi::LUA_OK, 0)
    }
}

unsafe extern "C-unwind" fn match_k(L: *mut ffi::lua_State, _status: c_int, cursor: ffi::lua_KContext) -> c_int {
    // SAFETY: the contract (called by `receive_match`, or as its
    // continuation, the filter at 1); `found` holds nothing owned but `e`,
    // which `raise` drops before unwinding.
    unsafe {
        let found = match_from(L, cursor as usize);
        match found {
            Ok(Ok(n)) => n,
            Ok(Err(next)) => {
                if wait::take_withdrawn(L) {
                    return wait::cannot_block(L, "receive_match");
                }
                if !may_block(L) {
                    return 0;
                }
                block_on_mailbox(L, match_k, next as ffi::lua_KContext, "receive_match")
            }
            Err(e) => raise(L, e),
        }
    }
}
