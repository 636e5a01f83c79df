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
//! (`linda_remote`); a named space nobody has used yet is claimed for this
//! node first (`claim`), which waits for the cluster's answer.

use std::ffi::{c_int, c_void, CStr};
use std::sync::Arc;

use mlua_sys as ffi;
use synodic_core::linda::{Field, Kind, Kinds, Mode, Pattern, Tuple};
use synodic_core::linda_remote::{home_name, keeper};
use synodic_core::remote::{claim_answer, reply_tag};
use synodic_core::spaces::{Home, Refused, Space, SpaceRef};
use synodic_core::waiting::{Completion, Waiter};
use synodic_core::{Attachment, Pid};

use crate::vm::codec::{self, Sendable};
use crate::vm::ctx::ctx;
use crate::vm::peek::{peek, Plain};
use crate::vm::util::*;
use crate::vm::wait::{self, Poll};

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

use crate::api::linda_remote as far;

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
    call(L, M)
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
    if let Some(h) = handle(L, 1).filter(|h| h.space.name.is_some()) {
        h.space.home = Home::Unresolved;
    }
    ffi::lua_settop(L, args);
    call(L, METHODS.iter().position(|m| m.name == fname).unwrap_or(0))
}

/// `why`, raised for a space that is lost: the handle stays lost (SPEC
/// §9: a handle that raised `space lost` keeps raising it, even if the
/// space's node comes back).
pub(crate) unsafe fn lost(L: *mut ffi::lua_State, why: String) -> c_int {
    if let Some(h) = handle(L, 1) {
        h.space.home = Home::Gone;
        h.space.hold = None;
    }
    raise(L, why)
}

/// Runs method `m` where its space lives.
unsafe fn call(L: *mut ffi::lua_State, m: usize) -> c_int {
    ARGS.with(|a| a.set(ffi::lua_gettop(L)));
    let method = &METHODS[m];
    match place(L, method.name) {
        Ok(Place::Here(space)) => (method.here)(L, space),
        Ok(Place::There(space, alias)) => (method.there)(L, space, alias),
        Ok(Place::Unclaimed) => claim(L, m),
        Err(e) => raise(L, e),
    }
}

pub unsafe extern "C-unwind" fn open(L: *mut ffi::lua_State) -> c_int {
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
    (ffi::lua_newuserdatauv(L, std::mem::size_of::<Handle>(), 0) as *mut Handle).write(Handle { space });
    set_class(L, SPACE, &[(c"__gc", space_gc as ffi::lua_CFunction), (c"__eq", space_eq), (c"__tostring", space_tostring)], c"__index", LUA_METHODS);
}

/// A space handle crosses as what it holds, shared (see `codec::Sendable`;
/// between nodes, `remote::carry`).
pub(crate) static SENDABLE: Sendable = Sendable { kind: synodic_core::wire::shared::SPACE, share: share_space, rebuild: rebuild_space };

unsafe fn share_space(L: *mut ffi::lua_State, idx: c_int) -> Option<(u8, Attachment)> {
    let h = handle(L, idx)?;
    Some((0, Arc::new(h.space.clone())))
}

unsafe fn rebuild_space(L: *mut ffi::lua_State, _variant: u8, shared: &Attachment) -> Result<(), String> {
    let space = shared.downcast_ref::<SpaceRef>().ok_or("not a tuple space")?;
    push_space(L, space.clone());
    Ok(())
}

unsafe fn handle<'a>(L: *mut ffi::lua_State, idx: c_int) -> Option<&'a mut Handle> {
    (ffi::luaL_testudata(L, idx, SPACE.as_ptr()) as *mut Handle).as_mut()
}

unsafe extern "C-unwind" fn space_gc(L: *mut ffi::lua_State) -> c_int {
    if let Some(h) = handle(L, 1) {
        std::ptr::drop_in_place(h as *const Handle as *mut Handle);
        // Disarm: a resurrected handle must not drop twice.
        ffi::lua_pushnil(L);
        ffi::lua_setmetatable(L, 1);
    }
    0
}

unsafe extern "C-unwind" fn space_eq(L: *mut ffi::lua_State) -> c_int {
    let same = match (handle(L, 1), handle(L, 2)) {
        (Some(a), Some(b)) => a.space.same(&b.space),
        _ => false,
    };
    ffi::lua_pushboolean(L, same as c_int);
    1
}

unsafe extern "C-unwind" fn space_tostring(L: *mut ffi::lua_State) -> c_int {
    let s = format!("space: {}", handle(L, 1).map_or_else(String::new, |h| h.space.describe()));
    push_bytes(L, s.as_bytes());
    1
}

unsafe extern "C-unwind" fn open_space(L: *mut ffi::lua_State) -> c_int {
    let Some(name) = (ffi::lua_type(L, 1) == ffi::LUA_TSTRING).then(|| to_bytes(L, 1)).flatten() else {
        return raise(L, format!("bad argument #1 to 'open' (space name expected, got {})", type_name(L, 1)));
    };
    push_space(L, named(name));
    1
}

unsafe extern "C-unwind" fn new_space(L: *mut ffi::lua_State) -> c_int {
    let (serial, space) = ctx(L).rt().spaces().create();
    push_space(L, SpaceRef { name: None, home: Home::Here(serial, space), hold: None });
    1
}

/// `linda.where(pred)`: a formal that matches when `pred(value)` is truthy.
unsafe extern "C-unwind" fn where_(L: *mut ffi::lua_State) -> c_int {
    if ffi::lua_type(L, 1) != ffi::LUA_TFUNCTION {
        return raise(L, format!("bad argument #1 to 'where' (function expected, got {})", type_name(L, 1)));
    }
    ffi::lua_createtable(L, 1, 1);
    ffi::lua_pushinteger(L, -1);
    ffi::lua_rawsetp(L, -2, formal_key());
    ffi::lua_pushvalue(L, 1);
    ffi::lua_rawseti(L, -2, 1);
    1
}

/// Where the space of the handle `self` (argument 1) lives, borrowed for this call.
enum Place<'a> {
    Here(&'a Arc<Space>),
    /// Another node's (its alias).
    There(&'a SpaceRef, u16),
    /// A named space that no node has claimed yet.
    Unclaimed,
}

/// Finds where `self`'s space lives; a named space is looked up in the
/// cluster's name map the first time, and the answer kept in the handle.
unsafe fn place<'a>(L: *mut ffi::lua_State, fname: &str) -> Result<Place<'a>, String> {
    let h = handle(L, 1).ok_or_else(|| format!("bad self to '{fname}' (tuple space expected, got {}; call it as ts:{fname}(...))", type_name(L, 1)))?;
    if let (Home::Unresolved, Some(name)) = (&h.space.home, &h.space.name) {
        let rt = ctx(L).rt();
        let found = match rt.remote() {
            None => Some(Pid::new(0, 0, 0)),
            Some(_) => rt.whereis(&home_name(name)),
        };
        if let Some(holder) = found {
            h.space.home = home_at(L, name, holder);
        }
    }
    // A named space of this node that moved to another (a partition healed).
    if matches!(&h.space.home, Home::Here(_, space) if h.space.name.is_some() && space.with(|st| st.is_moved())) {
        h.space.home = Home::Unresolved;
        return place(L, fname);
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
unsafe fn home_at(L: *mut ffi::lua_State, name: &[u8], holder: Pid) -> Home {
    match holder.node() {
        0 => {
            let (serial, space) = ctx(L).rt().spaces().open(name);
            Home::Here(serial, space)
        }
        alias => Home::There(alias, 0),
    }
}

/// Method `m` on a named space nobody has claimed: claims it for this
/// node, waits for the cluster's answer (granted, or another node was
/// first), then runs the method where the space lives.
unsafe fn claim(L: *mut ffi::lua_State, m: usize) -> c_int {
    let fname = METHODS[m].name;
    let asked = (|| {
        if ffi::lua_isyieldable(L) == 0 {
            return Err(format!("{fname}: cannot block here (inside a call that cannot yield, such as a metamethod called from C)"));
        }
        let rt = ctx(L).rt();
        let name = handle(L, 1).and_then(|h| h.space.name.clone()).ok_or("not a named space")?;
        let holder = keeper(rt).map_err(|e| format!("{fname}: {e}"))?;
        let remote = rt.remote().ok_or("no cluster")?;
        let tag = rt.next_tag();
        remote.claim(ctx(L).proc().pid(), tag, &home_name(&name), holder).map_err(|e| format!("{fname}: space lost: {} ({e})", String::from_utf8_lossy(&name)))?;
        Ok(tag)
    })();
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

/// Waits for the answer to a claim (its tag on top of the stack); the
/// context is the method, and the mailbox cursor above 8 bits.
unsafe extern "C-unwind" fn claimed_k(L: *mut ffi::lua_State, _status: c_int, k: ffi::lua_KContext) -> c_int {
    let (m, cursor) = (k as usize & 0xff, k as usize >> 8);
    let tag = ffi::lua_tointegerx(L, -1, std::ptr::null_mut()) as u64;
    let answer = match ctx(L).proc().take_first_match(cursor, |msg| reply_tag(msg) == Some(tag)) {
        Ok(msg) => claim_answer(&msg),
        Err(next) => {
            if wait::take_withdrawn(L) {
                return wait::cannot_block(L, METHODS[m].name);
            }
            return crate::api::kernel::block_on_mailbox(L, claimed_k, ((next << 8) | m) as ffi::lua_KContext, METHODS[m].name);
        }
    };
    ffi::lua_settop(L, -2);
    let Some(h) = handle(L, 1) else { return 0 };
    let name = h.space.name.clone().unwrap_or_default();
    let failed = match answer {
        Some(Ok(())) => {
            h.space.home = home_at(L, &name, Pid::new(0, 0, 0));
            None
        }
        Some(Err((_, Some(holder)))) => {
            h.space.home = home_at(L, &name, holder);
            None
        }
        Some(Err((why, None))) => Some(format!("{}: space lost: {} ({why})", METHODS[m].name, String::from_utf8_lossy(&name))),
        None => Some(format!("{}: a malformed answer from the cluster", METHODS[m].name)),
    };
    drop(name);
    match failed {
        Some(why) if why.contains(": space lost: ") => lost(L, why),
        Some(why) => raise(L, why),
        None => call(L, m),
    }
}

/// The field at `idx`, for a tuple (`n` is its position, for errors).
pub(crate) unsafe fn field(L: *mut ffi::lua_State, idx: c_int, n: c_int, what: &str) -> Result<Field, String> {
    Ok(match peek(L, idx) {
        Plain::Nil => return Err(format!("{what}: field {n} is nil (tuples cannot hold nil)")),
        Plain::Bool(b) => Field::Bool(b),
        Plain::Int(i) => Field::Int(i),
        Plain::Float(f) => Field::Float(f),
        Plain::Str(s) => Field::Str(Arc::new(try_copy(s).map_err(|e| format!("{what}: {e}"))?)),
        Plain::Light(p) => Pid::from_raw(p as usize as u64).map_or(Field::Opaque(Kind::Other), |p| Field::Pid(p.raw())),
        Plain::Other if ffi::lua_type(L, idx) == ffi::LUA_TTABLE => Field::Opaque(Kind::Table),
        Plain::Other if crate::api::buffer::to_buffer(L, idx).is_some() => Field::Opaque(Kind::Buffer),
        Plain::Other => Field::Opaque(Kind::Other),
    })
}

/// The `where` fields of a template: (field index, stack slot of the formal).
pub(crate) type Wheres = Vec<(usize, c_int)>;

/// A template from the arguments `first..=top`; also the stack slots of its `where` formals.
pub(crate) unsafe fn template(L: *mut ffi::lua_State, first: c_int, what: &str) -> Result<(Vec<Pattern>, Wheres), String> {
    let top = ffi::lua_gettop(L);
    if top < first {
        return Err(format!("{what}: a template needs at least one field"));
    }
    let mut patterns = Vec::with_capacity((top - first + 1) as usize);
    let mut wheres = Vec::new();
    for idx in first..=top {
        let n = idx - first + 1;
        let p = if ffi::lua_type(L, idx) == ffi::LUA_TTABLE {
            let marked = ffi::lua_rawgetp(L, idx, formal_key()) == ffi::LUA_TNUMBER;
            let which = ffi::lua_tointegerx(L, -1, std::ptr::null_mut());
            ffi::lua_settop(L, -2);
            match (marked, which) {
                (true, -1) => {
                    wheres.push((n as usize - 1, idx));
                    Pattern::Any
                }
                (true, i) => match FORMALS.get(i as usize) {
                    Some((_, Kinds(0))) => Pattern::Any,
                    Some((_, kinds)) => Pattern::Formal(*kinds),
                    None => Pattern::Never,
                },
                // A table as an actual never matches (SPEC §5).
                (false, _) => Pattern::Never,
            }
        } else {
            Pattern::Actual(field(L, idx, n, what)?)
        };
        patterns.push(p);
    }
    Ok((patterns, wheres))
}

/// Pushes a tuple's values; returns how many.
unsafe fn push_tuple(L: *mut ffi::lua_State, tuple: &Tuple, what: &str) -> Result<c_int, String> {
    codec::decode(L, &tuple.values).map_err(|e| format!("{what}: {e}"))
}

/// Whether every `where` predicate holds for its field of `tuple`.
unsafe fn holds(L: *mut ffi::lua_State, tuple: &Tuple, wheres: &[(usize, c_int)]) -> Result<bool, String> {
    let base = ffi::lua_gettop(L);
    push_tuple(L, tuple, "where")?;
    let held = check(L, base + 1, wheres);
    ffi::lua_settop(L, base);
    held
}

/// Whether every `where` predicate holds for its field of the tuple whose
/// values are on the stack from `first` on (left as they are).
pub(crate) unsafe fn check(L: *mut ffi::lua_State, first: c_int, wheres: &[(usize, c_int)]) -> Result<bool, String> {
    for &(field, slot) in wheres {
        ffi::lua_rawgeti(L, slot, 1);
        ffi::lua_pushvalue(L, first + field as c_int);
        if protected(L, 1, 1).is_err() {
            let err = pop_error(L);
            return Err(format!("where: the predicate failed: {err}"));
        }
        let ok = ffi::lua_toboolean(L, -1) != 0;
        ffi::lua_settop(L, -2);
        if !ok {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The first candidate whose `where` predicates hold, taken (or read).
unsafe fn find_where(L: *mut ffi::lua_State, space: &Space, patterns: &[Pattern], wheres: &[(usize, c_int)], take: bool) -> Result<Option<Tuple>, String> {
    for (seq, tuple) in space.with(|st| st.candidates(patterns)) {
        if !holds(L, &tuple, wheres)? {
            continue;
        }
        if !take {
            return Ok(Some(tuple));
        }
        // Gone if another process took it meanwhile: try the next one.
        if let Some(t) = space.with(|st| st.take_exact(seq, patterns.len())) {
            return Ok(Some(t));
        }
    }
    Ok(None)
}

/// A `take`/`rd` that found nothing yet: what it looks for, kept across
/// yields (the `where` predicates stay on the stack, as the arguments).
struct Query {
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

enum Got {
    Tuple(Tuple),
    /// A waiter is queued in the store (the query is the current wait's).
    Wait,
    /// The space moved to another node: the method runs again there.
    Moved(&'static str, c_int),
}

/// One attempt: a tuple now, or a waiter left in the store.
unsafe fn attempt(L: *mut ffi::lua_State, q: Box<Query>) -> Result<Got, String> {
    let space = q.space.clone();
    let (patterns, wheres, take) = (q.patterns.clone(), q.wheres.clone(), q.take);
    let (fname, args) = (q.fname, q.args);
    if wheres.is_empty() {
        let mode = if take { Mode::Take } else { Mode::Read };
        let waiter = wait::begin(L, q);
        // Checked with the store locked: a moved space queues no one.
        return Ok(match space.with(|st| if st.is_moved() { Err(()) } else { Ok(st.find_or_wait(patterns, mode, waiter)) }) {
            Ok(Some(t)) => {
                wait::end::<Query>(L);
                Got::Tuple(t)
            }
            Ok(None) => Got::Wait,
            Err(()) => {
                wait::end::<Query>(L);
                Got::Moved(fname, args)
            }
        });
    }
    if let Some(t) = find_where(L, &space, &patterns, &wheres, take)? {
        return Ok(Got::Tuple(t));
    }
    // Register interest, then look once more: a tuple may have come in between.
    let waiter = wait::begin(L, q);
    let moved = space.with(|st| {
        if st.is_moved() {
            return true;
        }
        st.find_or_wait(patterns.clone(), Mode::Notify, waiter);
        false
    });
    if moved {
        wait::end::<Query>(L);
        return Ok(Got::Moved(fname, args));
    }
    if let Some(t) = find_where(L, &space, &patterns, &wheres, take)? {
        space.with(|st| st.cancel(waiter));
        wait::end::<Query>(L);
        return Ok(Got::Tuple(t));
    }
    Ok(Got::Wait)
}

/// Returns a tuple's values (once the bytes of its buffers left on other
/// nodes are here).
unsafe fn handed(L: *mut ffi::lua_State, values: synodic_core::Message) -> c_int {
    crate::api::deferred::deliver(L, values, "take", Box::new(|L, values| crate::api::linda_remote::results(L, values, "take")))
}

/// Returns the tuple's values, or blocks with `blocking_k` as continuation.
unsafe fn finish(L: *mut ffi::lua_State, got: Result<Got, String>) -> c_int {
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

unsafe extern "C-unwind" fn blocking_k(L: *mut ffi::lua_State, _status: c_int, _k: ffi::lua_KContext) -> c_int {
    let expired = deadline_passed(L);
    let polled = match wait::poll(L) {
        // Withdraw, then look once more: a tuple handed meanwhile is kept.
        Poll::Waiting if expired => wait::expire(L).map_or(Poll::Withdrawn, Poll::Done),
        p => p,
    };
    let got = match polled {
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
    };
    // A `where` waiter that looked again after its deadline does not wait again.
    if expired && matches!(got, Ok(Got::Wait)) {
        return match wait::expire(L) {
            Some(_) => blocking_k(L, ffi::LUA_OK, 0),
            None => {
                wait::end::<Query>(L);
                0
            }
        };
    }
    finish(L, got)
}

/// `take`/`rd` and their timed forms: the template starts at `first`.
unsafe fn blocking(L: *mut ffi::lua_State, space: &Arc<Space>, take: bool, timed: bool, fname: &str) -> c_int {
    let prepared = (|| {
        let timeout = if timed { Some(seconds(L, fname)?) } else { None };
        let (patterns, wheres) = template(L, if timed { 3 } else { 2 }, fname)?;
        Ok::<_, String>((timeout, patterns, wheres))
    })();
    match prepared {
        Ok((timeout, patterns, wheres)) => {
            start_deadline(L, timeout);
            let got = attempt(L, Box::new(Query { space: space.clone(), patterns, wheres, take, fname: method_name(fname), args: args() }));
            // A zero timeout polls: no waiting (but a tuple handed meanwhile is kept).
            if matches!(got, Ok(Got::Wait)) && timeout.is_some_and(|t| t.is_zero()) {
                return blocking_k(L, ffi::LUA_OK, 0);
            }
            finish(L, got)
        }
        Err(e) => raise(L, e),
    }
}

/// The timeout of a timed form (argument 2).
pub(crate) unsafe fn seconds(L: *mut ffi::lua_State, fname: &str) -> Result<std::time::Duration, String> {
    opt_seconds(L, 2, fname)?.ok_or_else(|| format!("bad argument #1 to '{fname}' (seconds expected)"))
}

unsafe fn take(L: *mut ffi::lua_State, space: &Arc<Space>) -> c_int {
    blocking(L, space, true, false, "take")
}

unsafe fn rd(L: *mut ffi::lua_State, space: &Arc<Space>) -> c_int {
    blocking(L, space, false, false, "rd")
}

unsafe fn take_within(L: *mut ffi::lua_State, space: &Arc<Space>) -> c_int {
    blocking(L, space, true, true, "take_within")
}

unsafe fn rd_within(L: *mut ffi::lua_State, space: &Arc<Space>) -> c_int {
    blocking(L, space, false, true, "rd_within")
}

/// `inp` / `rdp`: the oldest match now, or no values.
unsafe fn probe(L: *mut ffi::lua_State, space: &Arc<Space>, take: bool, fname: &str) -> c_int {
    let found = (|| {
        let (patterns, wheres) = template(L, 2, fname)?;
        if wheres.is_empty() {
            Ok(space.with(|st| st.find(&patterns, take)))
        } else {
            find_where(L, space, &patterns, &wheres, take)
        }
    })();
    match found {
        Ok(Some(t)) => finish(L, Ok(Got::Tuple(t))),
        Ok(None) => 0,
        Err(e) => raise(L, e),
    }
}

unsafe fn inp(L: *mut ffi::lua_State, space: &Arc<Space>) -> c_int {
    probe(L, space, true, "inp")
}

unsafe fn rdp(L: *mut ffi::lua_State, space: &Arc<Space>) -> c_int {
    probe(L, space, false, "rdp")
}

/// The tuple of an `out`'s arguments (from 2 on): its fields and values.
pub(crate) unsafe fn tuple(L: *mut ffi::lua_State) -> Result<Tuple, String> {
    let top = ffi::lua_gettop(L);
    if top < 2 {
        return Err("out: a tuple needs at least one field".to_string());
    }
    let fields = (2..=top).map(|i| field(L, i, i - 1, "out")).collect::<Result<Vec<_>, _>>()?;
    let values = codec::encode(L, 2, top).map_err(|e| format!("out: {e}"))?;
    Ok(Tuple { fields, values })
}

unsafe fn out(L: *mut ffi::lua_State, space: &Arc<Space>) -> c_int {
    let args = args();
    let done = (|| {
        let rt = ctx(L).rt();
        Ok::<_, String>(space.out(tuple(L)?, |d| rt.complete(d)))
    })();
    match done {
        Ok(Ok(())) => 0,
        Ok(Err(Refused::Moved)) => run_again(L, "out", args),
        Ok(Err(Refused::Full)) => raise(L, format!("out: space full: {}", handle(L, 1).map_or_else(|| "?".into(), |h| h.space.describe()))),
        Err(e) => raise(L, e),
    }
}

/// The method of this name (as `take` and its forms call themselves).
fn method_name(fname: &str) -> &'static str {
    METHODS.iter().find(|m| m.name == fname).map_or("take", |m| m.name)
}

unsafe fn count(L: *mut ffi::lua_State, space: &Arc<Space>) -> c_int {
    let counted = (|| {
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
    match counted {
        Ok(n) => {
            ffi::lua_pushinteger(L, n as ffi::lua_Integer);
            1
        }
        Err(e) => raise(L, e),
    }
}

unsafe fn take_all(L: *mut ffi::lua_State, space: &Arc<Space>) -> c_int {
    let taken = (|| {
        let (patterns, wheres) = template(L, 2, "take_all")?;
        if wheres.is_empty() {
            return Ok(space.with(|st| st.take_all(&patterns, usize::MAX)));
        }
        let mut all = Vec::new();
        loop {
            match find_where(L, space, &patterns, &wheres, true) {
                Ok(Some(t)) => all.push(t),
                Ok(None) => return Ok(all),
                Err(e) => {
                    // Nothing is lost: what was taken goes back.
                    for t in all {
                        let _ = space.put_back(t, |d| ctx(L).rt().complete(d));
                    }
                    return Err(e);
                }
            }
        }
    })();
    let tuples = match taken {
        Ok(t) => t,
        Err(e) => return raise(L, e),
    };
    // Buffers left on their producers' nodes are fetched first, for the list as a whole.
    if tuples.iter().any(|t| t.values.attachments().iter().any(|a| a.is::<synodic_core::future::Ticket>())) {
        let list = synodic_core::linda_remote::list(tuples.into_iter().map(|t| (None, t)));
        return crate::api::deferred::deliver(L, list, "take_all", Box::new(|L, list| crate::api::linda_remote::results(L, list, "take_all")));
    }
    ffi::lua_createtable(L, tuples.len() as c_int, 0);
    let list = ffi::lua_gettop(L);
    let mut failed = None;
    let mut tuples = tuples.into_iter();
    for (i, t) in tuples.by_ref().enumerate() {
        match push_tuple(L, &t, "take_all") {
            Ok(n) => {
                pack(L, n);
                ffi::lua_rawseti(L, list, i as ffi::lua_Integer + 1);
            }
            Err(e) => {
                failed = Some(e);
                let _ = space.put_back(t, |d| ctx(L).rt().complete(d));
                break;
            }
        }
    }
    // After a failure the rest goes back too.
    for t in tuples {
        let _ = space.put_back(t, |d| ctx(L).rt().complete(d));
    }
    match failed {
        Some(e) => raise(L, e),
        None => 1,
    }
}

unsafe fn clear(_L: *mut ffi::lua_State, space: &Arc<Space>) -> c_int {
    space.with(|st| st.clear());
    0
}

/// The body of an `eval` process: calls the function fields, then `out`s the tuple.
const EVAL: &str = "local ts = ... \
    local t = table.pack(select(2, ...)) \
    for i = 1, t.n do if type(t[i]) == 'function' then t[i] = t[i]() end end \
    ts:out(table.unpack(t, 1, t.n))";

/// `eval`: starts the process on the least loaded node; returns its pid.
unsafe extern "C-unwind" fn eval(L: *mut ffi::lua_State) -> c_int {
    let loaded = (|| {
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
    match loaded {
        Ok(()) => crate::api::kernel::spawn_somewhere(L, b"any", 1, "eval"),
        Err(e) => raise(L, e),
    }
}
