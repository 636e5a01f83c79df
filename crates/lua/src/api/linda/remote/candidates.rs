//! `where` predicates on a space of another node: the home sends the
//! candidates (tuples that match the template but for the predicates),
//! oldest first, and the caller checks them here with its own functions,
//! then asks for the one it wants by sequence number; with none passing, it
//! asks again for newer ones, waiting if the method waits. The contract of
//! `remote`'s functions holds here.

use super::*;

/// Looks through the candidate list (on top) from `asked.next`: counts,
/// returns, or takes the first whose predicates hold; at the end, asks for
/// newer ones or returns.
pub(super) unsafe fn scan(L: *mut ffi::lua_State, mut asked: Box<Asked>) -> c_int {
    let list = asked.base + 2;
    // SAFETY: the contract (the candidate list is at `base + 2`).
    let len = unsafe { ffi::lua_rawlen(L, list) } as i64;
    while asked.next <= len {
        let i = asked.next;
        asked.next += 1;
        // SAFETY: the contract; candidate `i` ([seq, fields...]) is pushed at
        // `list + 1`, its fields above it.
        let (arity, seq) = unsafe {
            ffi::lua_rawgeti(L, list, i);
            let arity = ffi::lua_rawlen(L, -1) as c_int - 1;
            ffi::lua_rawgeti(L, -1, 1);
            let seq = ffi::lua_tointegerx(L, -1, std::ptr::null_mut()) as u64;
            ffi::lua_settop(L, -2);
            (arity, seq)
        };
        asked.after = asked.after.max(seq + 1);
        // SAFETY: the contract; `lua_checkstack` reports failure, never raises.
        if unsafe { ffi::lua_checkstack(L, arity.max(0) + 8) } == 0 {
            drop(asked);
            // SAFETY: the contract; nothing of this frame needs dropping now.
            return unsafe { raise(L, format!("a tuple of {arity} fields is too wide to check here")) };
        }
        // SAFETY: as above, with room for the fields made just now.
        unsafe {
            for k in 2..=arity + 1 {
                ffi::lua_rawgeti(L, list + 1, k as ffi::lua_Integer);
            }
        }
        // SAFETY: the contract; the candidate's fields start at `list + 2`.
        // NOT KEPT: lib.rs invariant 2, `asked` is alive while predicates
        // run, and an error `protected` lets through (an `exit`) unwinds
        // over it.
        let held = unsafe { check(L, list + 2, &asked.wheres) };
        match held {
            Err(e) => {
                let why = format!("{}: {e}", asked.fname);
                // SAFETY: the contract.
                return unsafe { fail(L, asked, why) };
            }
            Ok(false) => {
                // SAFETY: the contract (back to the candidate list on top).
                unsafe { ffi::lua_settop(L, list) };
                continue;
            }
            Ok(true) => {}
        }
        match asked.then {
            Then::Where(Purpose::Count) => {
                asked.counted += 1;
                // SAFETY: as above.
                unsafe { ffi::lua_settop(L, list) };
            }
            // A read returns the candidate as it is.
            Then::Where(Purpose::Find { take: false, .. }) => return arity,
            _ => {
                // SAFETY: the contract; `asked` moves into `ask`.
                unsafe { ffi::lua_settop(L, list) };
                asked.arity = arity as usize;
                return unsafe { ask(L, asked, Op::TakeExact, 0, seq, None) };
            }
        }
    }
    match asked.then {
        Then::Where(Purpose::Count) => {
            // SAFETY: the contract (pushing an integer allocates nothing).
            unsafe { ffi::lua_pushinteger(L, asked.counted as ffi::lua_Integer) };
            1
        }
        Then::Where(Purpose::TakeAll) => {
            // SAFETY: the contract; the result list is left on top.
            unsafe { ffi::lua_settop(L, asked.base + 1) };
            1
        }
        // SAFETY: the contract (the deadline is read from the context).
        Then::Where(Purpose::Find { blocking: true, .. }) if !unsafe { deadline_passed(L) } => {
            asked.next = 0;
            // SAFETY: the contract; `asked` moves into the call.
            unsafe { ask_candidates(L, asked, WAIT) }
        }
        _ => 0,
    }
}

/// After `Notified` (or a cancelled wait): candidates once more, waiting
/// again unless the deadline passed.
pub(super) unsafe fn again(L: *mut ffi::lua_State, mut asked: Box<Asked>) -> c_int {
    let blocking = matches!(asked.then, Then::Where(Purpose::Find { blocking: true, .. }));
    asked.next = 0;
    // SAFETY: the contract (the deadline is read from the context).
    let flags = if blocking && !asked.cancelled.get() && !unsafe { deadline_passed(L) } { WAIT } else { 0 };
    // SAFETY: the contract; `asked` moves into the call.
    unsafe { ask_candidates(L, asked, flags) }
}

pub(super) unsafe fn ask_candidates(L: *mut ffi::lua_State, asked: Box<Asked>, flags: u8) -> c_int {
    let after = asked.after;
    // SAFETY: the contract; `asked` moves into `ask`.
    unsafe { ask(L, asked, Op::Candidates, flags, after, None) }
}
