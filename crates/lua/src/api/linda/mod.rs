//! The `synodic.linda` module: Linda's tuple spaces (SPEC §5) over the
//! core store (`synodic_core::linda`). This file turns Lua values into
//! tuple fields and template patterns, and blocks (`take`, `rd`) by leaving
//! a waiter in the store and yielding to the scheduler.
//!
//! Formals are small marked tables (`linda.int`, ..., `linda.where(pred)`).
//! A `where` predicate is a Lua function, so it runs here, in the calling
//! process: the store matches the other fields and hands out candidates,
//! oldest first; the first one whose predicates hold is taken by its
//! sequence number, and if another process took it first, the next one is
//! tried. A blocked `where` caller is woken by any tuple matching its other
//! fields and looks again.
//!
//! A handle holds a [`SpaceRef`]: a named space's name, and where the space
//! lives once that is known. Handles in messages and tuples share it as an
//! attachment, so a private space lives exactly as long as some handle to
//! it does (or, once a handle has gone to another node, as long as its
//! node). Every method first finds where its space lives (`place`): a space
//! of this node is worked on here; one of another node through requests
//! (`remote.rs`); a named space nobody has used yet is claimed for this
//! node first (`claim`), which waits for the cluster's answer.
//!
//! In files: this one has the module, its handles and their methods'
//! dispatch; `place.rs` finds where a space lives and claims a named one
//! nobody holds; `pattern.rs` turns Lua values into fields, templates and
//! tuples; `local.rs` runs the methods on a space of this node, `remote.rs`
//! on another node's space (requests, and waiting for their answers).

mod local;
mod pattern;
mod place;
pub(crate) mod remote;
mod scope;
#[cfg(test)]
mod tests;

pub(crate) use local::seconds;
pub(crate) use pattern::{check, field, template, tuple, Wheres};

use std::ffi::{c_int, c_void, CStr};
use std::sync::Arc;

use mlua_sys as ffi;
use synodic_core::linda::{Kind, Kinds};
use synodic_core::spaces::{Home, Space, SpaceRef};
use synodic_core::Attachment;

use crate::vm::codec::Sendable;
use crate::vm::ctx::ctx;
use crate::vm::util::*;

use local::*;
use place::*;

/// Registry name of the metatable of space handles.
const SPACE: &CStr = c"synodic.space";

/// The key that marks a table as a formal (its address is unique).
static FORMAL: u8 = 0;

fn formal_key() -> *mut c_void {
    &FORMAL as *const u8 as *mut c_void
}

const FORMALS: &[(&CStr, Kinds)] = &[
    (c"int", Kinds::of(&[Kind::Int])),
    (c"float", Kinds::of(&[Kind::Float])),
    (c"number", Kinds::of(&[Kind::Int, Kind::Float])),
    (c"string", Kinds::of(&[Kind::String])),
    (c"boolean", Kinds::of(&[Kind::Boolean])),
    (c"table", Kinds::of(&[Kind::Table])),
    (c"buffer", Kinds::of(&[Kind::Buffer])),
    (c"any", Kinds(0)),
];

const FUNCTIONS: &[(&CStr, ffi::lua_CFunction)] = &[(c"open", open_space), (c"new", new_space), (c"where", where_)];

/// A method that works on the space's tuples: what it does on a space of
/// this node, and on one of another node.
struct Method {
    name: &'static str,
    here: unsafe fn(*mut ffi::lua_State, &Arc<Space>) -> c_int,
    there: unsafe fn(*mut ffi::lua_State, &SpaceRef, u16) -> c_int,
}

use crate::api::linda::remote as far;

const METHODS: [Method; 11] = [
    Method { name: "out", here: out, there: far::out },
    Method { name: "take", here: take, there: far::take },
    Method { name: "rd", here: rd, there: far::rd },
    Method { name: "inp", here: inp, there: far::inp },
    Method { name: "rdp", here: rdp, there: far::rdp },
    Method { name: "take_within", here: take_within, there: far::take_within },
    Method { name: "rd_within", here: rd_within, there: far::rd_within },
    Method { name: "count", here: count, there: far::count },
    Method { name: "take_all", here: take_all, there: far::take_all },
    Method { name: "clear", here: clear, there: far::clear },
    Method { name: "in", here: take, there: far::take },
];

/// The methods as Lua sees them (`eval` only starts a process).
const LUA_METHODS: &[(&CStr, ffi::lua_CFunction)] = &[
    (c"out", method::<0>),
    (c"take", method::<1>),
    (c"rd", method::<2>),
    (c"inp", method::<3>),
    (c"rdp", method::<4>),
    (c"take_within", method::<5>),
    (c"rd_within", method::<6>),
    (c"count", method::<7>),
    (c"take_all", method::<8>),
    (c"clear", method::<9>),
    (c"in", method::<10>),
    (c"eval", eval),
];

unsafe extern "C-unwind" fn method<const M: usize>(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this method with its running state `L` (lib.rs
    // invariant 1); `M` indexes `METHODS` (the table above pairs them).
    unsafe { call(L, M) }
}

thread_local! {
    /// The number of arguments of the method call being entered (see
    /// [`args`]): read as its wait starts, before any Lua code runs.
    static ARGS: std::cell::Cell<c_int> = const { std::cell::Cell::new(0) };
}

/// The number of arguments of the method call in progress, as it started.
pub(crate) fn args() -> c_int {
    ARGS.with(|a| a.get())
}

/// The named space a method was waiting on moved to another node (a
/// partition healed): the handle looks for its home again, and the method
/// `fname` runs anew with its first `args` arguments, where the space is now.
pub(crate) unsafe fn run_again(L: *mut ffi::lua_State, fname: &str, args: c_int) -> c_int {
    // SAFETY: `L` is the running process's thread in a method's
    // continuation (lib.rs invariant 1), its handle at 1 (borrowed for the
    // statement only); the method runs again on its first `args` arguments.
    unsafe {
        if let Some(h) = handle(L, 1).filter(|h| h.space.name.is_some()) {
            h.space.home = Home::Unresolved;
        }
        ffi::lua_settop(L, args);
        dispatch(L, METHODS.iter().position(|m| m.name == fname).unwrap_or(0))
    }
}

/// `why`, raised for a space that is lost: the handle stays lost (SPEC
/// §9: a handle that raised `space lost` keeps raising it, even if the
/// space's node comes back).
pub(crate) unsafe fn lost(L: *mut ffi::lua_State, why: String) -> c_int {
    // SAFETY: `L` is the running state of a method call (lib.rs invariant
    // 1), its handle at 1; `raise` drops `why` before unwinding.
    unsafe {
        if let Some(h) = handle(L, 1) {
            h.space.home = Home::Gone;
            h.space.hold = None;
        }
        raise(L, why)
    }
}

/// Runs method `m`, once the tuple scope lets it (`scope.rs`).
unsafe fn call(L: *mut ffi::lua_State, m: usize) -> c_int {
    // SAFETY: `L` is the running state of a method call (lib.rs invariant 1).
    unsafe {
        if let Some(held) = scope::gate(L, m) {
            return held;
        }
        dispatch(L, m)
    }
}

/// Runs method `m` where its space lives.
unsafe fn dispatch(L: *mut ffi::lua_State, m: usize) -> c_int {
    // SAFETY: `L` is the running state of a method call (lib.rs invariant 1).
    ARGS.with(|a| a.set(unsafe { ffi::lua_gettop(L) }));
    let method = &METHODS[m];
    // SAFETY: as above; `space` borrows the handle at 1, which stays on the
    // stack through the method; `place`'s result owns nothing but `e`, which
    // `raise` drops before unwinding.
    unsafe {
        match place(L, method.name) {
            Ok(Place::Here(space)) => (method.here)(L, space),
            Ok(Place::There(space, alias)) => (method.there)(L, space, alias),
            Ok(Place::Unclaimed) => claim(L, m),
            Err(e) => raise(L, e),
        }
    }
}

pub unsafe extern "C-unwind" fn open(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this opener with a process's running state `L`
    // (lib.rs invariant 1); the module table is at -2 while each field,
    // built at -1, is set in it.
    unsafe {
        ffi::lua_createtable(L, 0, (FUNCTIONS.len() + FORMALS.len() + 1) as c_int);
        for (name, f) in FUNCTIONS {
            ffi::lua_pushcfunction(L, *f);
            ffi::lua_setfield(L, -2, name.as_ptr());
        }
        for (i, (name, _)) in FORMALS.iter().enumerate() {
            ffi::lua_createtable(L, 0, 1);
            ffi::lua_pushinteger(L, i as ffi::lua_Integer);
            ffi::lua_rawsetp(L, -2, formal_key());
            ffi::lua_setfield(L, -2, name.as_ptr());
        }
        push_space(L, named(b"default"));
        ffi::lua_setfield(L, -2, c"default".as_ptr());
    }
    1
}

/// A handle to the named space `name`, not looked up yet.
fn named(name: &[u8]) -> SpaceRef {
    SpaceRef { name: Some(Arc::new(name.into())), home: Home::Unresolved, hold: None }
}

/// What a space handle holds: where its space is (for a space of this
/// node, the space itself, so operations need no lookup in the node's
/// table and no lock on it).
struct Handle {
    space: SpaceRef,
}

/// Pushes a handle to `space`.
pub(crate) unsafe fn push_space(L: *mut ffi::lua_State, space: SpaceRef) {
    // NOT KEPT: lib.rs invariant 2, `space` is alive through the allocation,
    // and the handle in the userdata has no `__gc` until `set_class` sets the
    // metatable: a memory error in either leaks the `SpaceRef`.
    // SAFETY: `L` is a process's state (lib.rs invariant 1). The new userdata
    // is `size_of::<Handle>()` bytes, aligned by Lua for any C type (enough
    // for a `Handle`), and written whole before anything reads it; its
    // metatable gives it `__gc`, which drops it.
    unsafe {
        (ffi::lua_newuserdatauv(L, std::mem::size_of::<Handle>(), 0) as *mut Handle).write(Handle { space });
        set_class(L, SPACE, &[(c"__gc", space_gc as ffi::lua_CFunction), (c"__eq", space_eq), (c"__tostring", space_tostring)], c"__index", LUA_METHODS);
    }
}

/// A space handle crosses as what it holds, shared (see `codec::Sendable`;
/// between nodes, `remote::carry`).
pub(crate) static SENDABLE: Sendable = Sendable { kind: synodic_core::wire::shared::SPACE, share: share_space, rebuild: rebuild_space };

unsafe fn share_space(L: *mut ffi::lua_State, idx: c_int) -> Option<(u8, Attachment)> {
    // SAFETY: `L` is a process's state and `idx` a stack index (the
    // encoder's contract); `handle` checks the userdata is a space's.
    let h = unsafe { handle(L, idx)? };
    Some((0, Arc::new(h.space.clone())))
}

unsafe fn rebuild_space(L: *mut ffi::lua_State, _variant: u8, shared: &Attachment) -> Result<(), String> {
    let space = shared.downcast_ref::<SpaceRef>().ok_or("not a tuple space")?;
    // SAFETY: `L` is the decoder's state, with room for a value.
    unsafe { push_space(L, space.clone()) };
    Ok(())
}

/// The space handle at `idx`, if that is one. The reference lives while
/// the userdata does and its `__gc` has not run; callers use it within
/// the native call that found it, the userdata on the stack.
unsafe fn handle<'a>(L: *mut ffi::lua_State, idx: c_int) -> Option<&'a mut Handle> {
    // SAFETY: `L` is a process's state (lib.rs invariant 1). A userdata
    // with the space metatable was made by `push_space`, holding a written
    // `Handle`; `space_gc` takes the metatable off when it drops it, so a
    // dropped one is never found here.
    unsafe { (ffi::luaL_testudata(L, idx, SPACE.as_ptr()) as *mut Handle).as_mut() }
}

unsafe extern "C-unwind" fn space_gc(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls `__gc` with the userdata at 1 (lib.rs invariant 1);
    // a handle found is dropped once: the metatable is taken off right
    // after, so a resurrected handle is found no more.
    unsafe {
        if let Some(h) = handle(L, 1) {
            std::ptr::drop_in_place(h as *const Handle as *mut Handle);
            // Disarm: a resurrected handle must not drop twice.
            ffi::lua_pushnil(L);
            ffi::lua_setmetatable(L, 1);
        }
    }
    0
}

unsafe extern "C-unwind" fn space_eq(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls `__eq` with its running state `L` and the two
    // operands at 1 and 2 (lib.rs invariant 1).
    unsafe {
        let same = match (handle(L, 1), handle(L, 2)) {
            (Some(a), Some(b)) => a.space.same(&b.space),
            _ => false,
        };
        ffi::lua_pushboolean(L, same as c_int);
    }
    1
}

unsafe extern "C-unwind" fn space_tostring(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls `__tostring` with its running state `L` and the
    // value at 1 (lib.rs invariant 1). NOT KEPT: lib.rs invariant 2, a
    // memory error while pushing would unwind over `s` (in practice a leak).
    unsafe {
        let s = format!("space: {}", handle(L, 1).map_or_else(String::new, |h| h.space.describe()));
        push_bytes(L, s.as_bytes());
    }
    1
}

unsafe extern "C-unwind" fn open_space(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1); argument 1 is read as bytes only once checked
    // to be a string; `raise` drops its message before unwinding.
    unsafe {
        let Some(name) = (ffi::lua_type(L, 1) == ffi::LUA_TSTRING).then(|| to_bytes(L, 1)).flatten() else {
            return raise(L, format!("bad argument #1 to 'open' (space name expected, got {})", type_name(L, 1)));
        };
        push_space(L, named(name));
    }
    1
}

unsafe extern "C-unwind" fn new_space(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1), whose context is entered.
    unsafe {
        let (serial, space) = ctx(L).rt().spaces().create();
        push_space(L, SpaceRef { name: None, home: Home::Here(serial, space), hold: None });
    }
    1
}

/// `linda.where(pred)`: a formal that matches when `pred(value)` is truthy.
unsafe extern "C-unwind" fn where_(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1); the predicate at 1 is checked to be a function,
    // then stored in a new formal table (marked raw with `-1`).
    unsafe {
        if ffi::lua_type(L, 1) != ffi::LUA_TFUNCTION {
            return raise(L, format!("bad argument #1 to 'where' (function expected, got {})", type_name(L, 1)));
        }
        ffi::lua_createtable(L, 1, 1);
        ffi::lua_pushinteger(L, -1);
        ffi::lua_rawsetp(L, -2, formal_key());
        ffi::lua_pushvalue(L, 1);
        ffi::lua_rawseti(L, -2, 1);
    }
    1
}
