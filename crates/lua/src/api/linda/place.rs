//! Where a space lives: a handle's space of this node, another node's, or
//! a named space nobody has used yet, which this node claims first (the
//! cluster answers; the first claim wins).

use std::ffi::c_int;
use std::sync::Arc;

use mlua_sys as ffi;
use synodic_core::linda_remote::{home_name, keeper};
use synodic_core::dist::notice::{claim_answer, reply_tag};
use synodic_core::spaces::{Home, Space, SpaceRef};
use synodic_core::Pid;

use crate::vm::ctx::ctx;
use crate::vm::util::*;
use crate::vm::wait::{self};

use super::*;

/// Where the space of the handle `self` (argument 1) lives, borrowed for this call.
pub(super) enum Place<'a> {
    Here(&'a Arc<Space>),
    /// Another node's (its alias).
    There(&'a SpaceRef, u16),
    /// A named space that no node has claimed yet.
    Unclaimed,
}

/// Finds where `self`'s space lives; a named space is looked up in the
/// cluster's name map the first time, and the answer kept in the handle.
///
/// # Safety
/// `L` is the running state of a method call (lib.rs invariant 1), its
/// context entered; the handle at 1 stays on the stack for `'a`.
pub(super) unsafe fn place<'a>(L: *mut ffi::lua_State, fname: &str) -> Result<Place<'a>, String> {
    // SAFETY: the contract; `self` (at 1) is read.
    let h = unsafe { handle(L, 1) }.ok_or_else(|| format!("bad self to '{fname}' (tuple space expected, got {}; call it as ts:{fname}(...))", unsafe { type_name(L, 1) }))?;
    if let (Home::Unresolved, Some(name)) = (&h.space.home, &h.space.name) {
        // SAFETY: the contract (the context's runtime, a plain borrow).
        let rt = unsafe { ctx(L) }.rt();
        let found = match rt.transport() {
            None => Some(Pid::new(0, 0, 0)),
            Some(_) => rt.whereis(&home_name(name)),
        };
        if let Some(holder) = found {
            // SAFETY: the contract.
            h.space.home = unsafe { home_at(L, name, holder) };
        }
    }
    // A named space of this node that moved to another (a partition healed).
    if matches!(&h.space.home, Home::Here(_, space) if h.space.name.is_some() && space.with(|st| st.is_moved())) {
        h.space.home = Home::Unresolved;
        // SAFETY: the contract (`h` is not used after).
        return unsafe { place(L, fname) };
    }
    Ok(match &h.space.home {
        Home::Here(_, space) => Place::Here(space),
        Home::There(alias, _) => Place::There(&h.space, *alias),
        Home::Unresolved => Place::Unclaimed,
        Home::Gone => return Err(format!("{fname}: space lost: {}", h.space.describe())),
        // Stays lost, even if its node comes back (see `lost`).
    })
}

/// The home of the named space `name`, whose name `holder` holds.
pub(super) unsafe fn home_at(L: *mut ffi::lua_State, name: &[u8], holder: Pid) -> Home {
    match holder.node() {
        0 => {
            // SAFETY: `L` is the running process's state (lib.rs invariant
            // 1), with its context entered.
            let (serial, space) = unsafe { ctx(L) }.rt().spaces().open(name);
            Home::Here(serial, space)
        }
        alias => Home::There(alias, 0),
    }
}

/// Method `m` on a named space nobody has claimed: claims it for this
/// node, waits for the cluster's answer (granted, or another node was
/// first), then runs the method where the space lives.
pub(super) unsafe fn claim(L: *mut ffi::lua_State, m: usize) -> c_int {
    let fname = METHODS[m].name;
    // SAFETY: `L` is the running state of method `m` (lib.rs invariant 1),
    // its context entered and the handle at 1; nothing here raises.
    let asked = (|| unsafe {
        if ffi::lua_isyieldable(L) == 0 {
            return Err(format!("{fname}: cannot block here (inside a call that cannot yield, such as a metamethod called from C)"));
        }
        let rt = ctx(L).rt();
        let name = handle(L, 1).and_then(|h| h.space.name.clone()).ok_or("not a named space")?;
        let holder = keeper(rt).map_err(|e| format!("{fname}: {e}"))?;
        let tag = rt.next_tag();
        rt.service::<synodic_core::dist::names::Names>().claim(rt, ctx(L).proc().pid(), tag, &home_name(&name), holder).map_err(|e| format!("{fname}: space lost: {} ({e})", String::from_utf8_lossy(&name)))?;
        Ok(tag)
    })();
    // SAFETY: as above; the tag goes on top for `claimed_k`, which may
    // block (this frame owns nothing); `e` moves into `lost`/`raise`, which
    // drop it before unwinding.
    unsafe {
        match asked {
            Ok(tag) => {
                start_deadline(L, None);
                ffi::lua_pushinteger(L, tag as ffi::lua_Integer);
                claimed_k(L, ffi::LUA_OK, m as ffi::lua_KContext)
            }
            Err(e) if e.contains(": space lost: ") => lost(L, e),
            Err(e) => raise(L, e),
        }
    }
}

/// Waits for the answer to a claim (its tag on top of the stack); the
/// context is the method, and the mailbox cursor above 8 bits.
pub(super) unsafe extern "C-unwind" fn claimed_k(L: *mut ffi::lua_State, _status: c_int, k: ffi::lua_KContext) -> c_int {
    let (m, cursor) = (k as usize & 0xff, k as usize >> 8);
    // SAFETY: Lua runs this continuation (or `claim` calls it) with the
    // process's running thread (lib.rs invariant 1): the handle at 1, the
    // claim's tag on top.
    let tag = unsafe { ffi::lua_tointegerx(L, -1, std::ptr::null_mut()) } as u64;
    // SAFETY: as above; the message is dropped at the end of its arm, and
    // the waiting arms own nothing when they block or raise.
    let answer = unsafe {
        match ctx(L).proc().take_first_match(cursor, |msg| reply_tag(msg) == Some(tag)) {
            Ok(msg) => claim_answer(&msg),
            Err(next) => {
                if wait::take_withdrawn(L) {
                    return wait::cannot_block(L, METHODS[m].name);
                }
                return crate::vm::wait::block_on_mailbox(L, claimed_k, ((next << 8) | m) as ffi::lua_KContext, METHODS[m].name);
            }
        }
    };
    // SAFETY: as above; the tag is popped and the handle read.
    let Some(h) = (unsafe {
        ffi::lua_settop(L, -2);
        handle(L, 1)
    }) else {
        return 0;
    };
    let name = h.space.name.clone().unwrap_or_default();
    let failed = match answer {
        Some(Ok(())) => {
            // SAFETY: as above.
            h.space.home = unsafe { home_at(L, &name, Pid::new(0, 0, 0)) };
            None
        }
        Some(Err((_, Some(holder)))) => {
            // SAFETY: as above.
            h.space.home = unsafe { home_at(L, &name, holder) };
            None
        }
        Some(Err((why, None))) => Some(format!("{}: space lost: {} ({why})", METHODS[m].name, String::from_utf8_lossy(&name))),
        None => Some(format!("{}: a malformed answer from the cluster", METHODS[m].name)),
    };
    drop(name);
    // SAFETY: as above; `why` moves into `lost`/`raise`, which drop it
    // before unwinding, and nothing else is owned when the method runs.
    unsafe {
        match failed {
            Some(why) if why.contains(": space lost: ") => lost(L, why),
            Some(why) => raise(L, why),
            None => dispatch(L, m),
        }
    }
}
