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
//! A handle holds its space; handles in messages and tuples share it as an
//! attachment, so a private space lives exactly as long as some handle to
//! it does.

use std::ffi::{c_int, c_void, CStr};
use std::sync::Arc;

use mlua_sys as ffi;
use synodic_core::linda::{Field, Kind, Mode, Pattern, Space, Tuple};
use synodic_core::waiting::{Completion, Waiter};
use synodic_core::{Attachment, Pid};

use crate::codec::{self, Sendable};
use crate::ctx::ctx;
use crate::peek::{peek, Plain};
use crate::util::*;
use crate::wait::{self, Poll};

/// Registry name of the metatable of space handles.
const SPACE: &CStr = c"synodic.space";

/// The key that marks a table as a formal (its address is unique).
static FORMAL: u8 = 0;

fn formal_key() -> *mut c_void {
    &FORMAL as *const u8 as *mut c_void
}

const FORMALS: &[(&CStr, &[Kind])] = &[
    (c"int", &[Kind::Int]),
    (c"float", &[Kind::Float]),
    (c"number", &[Kind::Int, Kind::Float]),
    (c"string", &[Kind::String]),
    (c"boolean", &[Kind::Boolean]),
    (c"table", &[Kind::Table]),
    (c"buffer", &[Kind::Buffer]),
    (c"any", &[]),
];

const FUNCTIONS: &[(&CStr, ffi::lua_CFunction)] = &[(c"open", open_space), (c"new", new_space), (c"where", where_)];

const METHODS: &[(&CStr, ffi::lua_CFunction)] = &[
    (c"out", out),
    (c"take", take),
    (c"in", take),
    (c"rd", rd),
    (c"inp", inp),
    (c"rdp", rdp),
    (c"take_within", take_within),
    (c"rd_within", rd_within),
    (c"count", count),
    (c"take_all", take_all),
    (c"clear", clear),
    (c"eval", eval),
];

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
    let (id, space) = ctx(L).rt().spaces().open(b"default");
    push_space(L, id, space);
    ffi::lua_setfield(L, -2, c"default".as_ptr());
    1
}

/// What a space handle holds: the space itself, so operations need no
/// lookup in the node's table (and no lock on it).
struct Handle {
    id: u64,
    space: Arc<Space>,
}

/// Pushes a handle to `space`, whose id is `id`.
pub(crate) unsafe fn push_space(L: *mut ffi::lua_State, id: u64, space: Arc<Space>) {
    (ffi::lua_newuserdatauv(L, std::mem::size_of::<Handle>(), 0) as *mut Handle).write(Handle { id, space });
    set_class(L, SPACE, &[(c"__gc", space_gc as ffi::lua_CFunction), (c"__eq", space_eq), (c"__tostring", space_tostring)], c"__index", METHODS);
}

/// A space handle crosses as its space, shared (see `codec::Sendable`).
pub(crate) static SENDABLE: Sendable = Sendable { kind: 2, share: share_space, rebuild: rebuild_space };

/// What travels: the id and the space itself.
struct Shared {
    id: u64,
    space: Arc<Space>,
}

unsafe fn share_space(L: *mut ffi::lua_State, idx: c_int) -> Option<(u8, Attachment)> {
    let h = handle(L, idx)?;
    Some((0, Arc::new(Shared { id: h.id, space: h.space.clone() })))
}

unsafe fn rebuild_space(L: *mut ffi::lua_State, _variant: u8, shared: &Attachment) -> Result<(), String> {
    let shared = shared.downcast_ref::<Shared>().ok_or("not a tuple space")?;
    push_space(L, shared.id, shared.space.clone());
    Ok(())
}

unsafe fn handle<'a>(L: *mut ffi::lua_State, idx: c_int) -> Option<&'a Handle> {
    (ffi::luaL_testudata(L, idx, SPACE.as_ptr()) as *const Handle).as_ref()
}

/// The space id of the handle at `idx`, if it is one.
unsafe fn to_space(L: *mut ffi::lua_State, idx: c_int) -> Option<u64> {
    handle(L, idx).map(|h| h.id)
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
    let same = matches!((to_space(L, 1), to_space(L, 2)), (Some(a), Some(b)) if a == b);
    ffi::lua_pushboolean(L, same as c_int);
    1
}

unsafe extern "C-unwind" fn space_tostring(L: *mut ffi::lua_State) -> c_int {
    let (node, serial) = synodic_core::linda::space_id_parts(to_space(L, 1).unwrap_or(0));
    let s = format!("space: {node}.{serial}");
    push_bytes(L, s.as_bytes());
    1
}

unsafe extern "C-unwind" fn open_space(L: *mut ffi::lua_State) -> c_int {
    let Some(name) = (ffi::lua_type(L, 1) == ffi::LUA_TSTRING).then(|| to_bytes(L, 1)).flatten() else {
        return raise(L, format!("bad argument #1 to 'open' (space name expected, got {})", type_name(L, 1)));
    };
    let (id, space) = ctx(L).rt().spaces().open(name);
    push_space(L, id, space);
    1
}

unsafe extern "C-unwind" fn new_space(L: *mut ffi::lua_State) -> c_int {
    let (id, space) = ctx(L).rt().spaces().create();
    push_space(L, id, space);
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

/// The space of the handle `self` (argument 1), borrowed for this call:
/// every space operation goes through here, the one place where a space
/// held by another node will branch off (as `Runtime::route` does for
/// processes).
unsafe fn space_of<'a>(L: *mut ffi::lua_State, fname: &str) -> Result<&'a Arc<Space>, String> {
    handle(L, 1)
        .map(|h| &h.space)
        .ok_or_else(|| format!("bad self to '{fname}' (tuple space expected, got {}; call it as ts:{fname}(...))", type_name(L, 1)))
}

/// The field at `idx`, for a tuple (`n` is its position, for errors).
unsafe fn field(L: *mut ffi::lua_State, idx: c_int, n: c_int, what: &str) -> Result<Field, String> {
    Ok(match peek(L, idx) {
        Plain::Nil => return Err(format!("{what}: field {n} is nil (tuples cannot hold nil)")),
        Plain::Bool(b) => Field::Bool(b),
        Plain::Int(i) => Field::Int(i),
        Plain::Float(f) => Field::Float(f),
        Plain::Str(s) => Field::Str(Arc::new(try_copy(s).map_err(|e| format!("{what}: {e}"))?)),
        Plain::Light(p) => Pid::from_raw(p as usize as u64).map_or(Field::Opaque(Kind::Other), |p| Field::Pid(p.raw())),
        Plain::Other if ffi::lua_type(L, idx) == ffi::LUA_TTABLE => Field::Opaque(Kind::Table),
        Plain::Other if crate::buffer::to_buffer(L, idx).is_some() => Field::Opaque(Kind::Buffer),
        Plain::Other => Field::Opaque(Kind::Other),
    })
}

/// The `where` fields of a template: (field index, stack slot of the formal).
type Wheres = Vec<(usize, c_int)>;

/// A template from the arguments `first..=top`; also the stack slots of its `where` formals.
unsafe fn template(L: *mut ffi::lua_State, first: c_int, what: &str) -> Result<(Vec<Pattern>, Wheres), String> {
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
                    Some((_, [])) => Pattern::Any,
                    Some((_, kinds)) => Pattern::Formal(kinds),
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
    for &(field, slot) in wheres {
        ffi::lua_rawgeti(L, slot, 1);
        ffi::lua_pushvalue(L, base + 1 + field as c_int);
        if protected(L, 1, 1).is_err() {
            let err = pop_error(L);
            ffi::lua_settop(L, base);
            return Err(format!("where: the predicate failed: {err}"));
        }
        let ok = ffi::lua_toboolean(L, -1) != 0;
        ffi::lua_settop(L, -2);
        if !ok {
            ffi::lua_settop(L, base);
            return Ok(false);
        }
    }
    ffi::lua_settop(L, base);
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
}

/// One attempt: a tuple now, or a waiter left in the store.
unsafe fn attempt(L: *mut ffi::lua_State, q: Box<Query>) -> Result<Got, String> {
    let space = q.space.clone();
    let (patterns, wheres, take) = (q.patterns.clone(), q.wheres.clone(), q.take);
    if wheres.is_empty() {
        let mode = if take { Mode::Take } else { Mode::Read };
        let waiter = wait::begin(L, q);
        return Ok(match space.with(|st| st.find_or_wait(patterns, mode, waiter)) {
            Some(t) => {
                wait::end::<Query>(L);
                Got::Tuple(t)
            }
            None => Got::Wait,
        });
    }
    if let Some(t) = find_where(L, &space, &patterns, &wheres, take)? {
        return Ok(Got::Tuple(t));
    }
    // Register interest, then look once more: a tuple may have come in between.
    let waiter = wait::begin(L, q);
    space.with(|st| st.find_or_wait(patterns.clone(), Mode::Notify, waiter));
    if let Some(t) = find_where(L, &space, &patterns, &wheres, take)? {
        space.with(|st| st.cancel(waiter));
        wait::end::<Query>(L);
        return Ok(Got::Tuple(t));
    }
    Ok(Got::Wait)
}

/// Returns the tuple's values, or blocks with `blocking_k` as continuation.
unsafe fn finish(L: *mut ffi::lua_State, got: Result<Got, String>) -> c_int {
    match got {
        Ok(Got::Tuple(t)) => {
            let pushed = push_tuple(L, &t, "take");
            drop(t);
            match pushed {
                Ok(n) => n,
                Err(e) => raise(L, e),
            }
        }
        Ok(Got::Wait) => wait::block(L, blocking_k, "linda"),
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
            let pushed = codec::decode(L, &values).map_err(|e| format!("take: {e}"));
            drop(values);
            return match pushed {
                Ok(n) => n,
                Err(e) => raise(L, e),
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
unsafe fn blocking(L: *mut ffi::lua_State, take: bool, timed: bool, fname: &str) -> c_int {
    let prepared = (|| {
        let space = space_of(L, fname)?;
        let timeout = if timed { Some(opt_seconds(L, 2, fname)?.ok_or_else(|| format!("bad argument #1 to '{fname}' (seconds expected)"))?) } else { None };
        let (patterns, wheres) = template(L, if timed { 3 } else { 2 }, fname)?;
        Ok::<_, String>((space, timeout, patterns, wheres))
    })();
    match prepared {
        Ok((space, timeout, patterns, wheres)) => {
            start_deadline(L, timeout);
            let got = attempt(L, Box::new(Query { space: space.clone(), patterns, wheres, take }));
            // A zero timeout polls: no waiting (but a tuple handed meanwhile is kept).
            if matches!(got, Ok(Got::Wait)) && timeout.is_some_and(|t| t.is_zero()) {
                return blocking_k(L, ffi::LUA_OK, 0);
            }
            finish(L, got)
        }
        Err(e) => raise(L, e),
    }
}

unsafe extern "C-unwind" fn take(L: *mut ffi::lua_State) -> c_int {
    blocking(L, true, false, "take")
}

unsafe extern "C-unwind" fn rd(L: *mut ffi::lua_State) -> c_int {
    blocking(L, false, false, "rd")
}

unsafe extern "C-unwind" fn take_within(L: *mut ffi::lua_State) -> c_int {
    blocking(L, true, true, "take_within")
}

unsafe extern "C-unwind" fn rd_within(L: *mut ffi::lua_State) -> c_int {
    blocking(L, false, true, "rd_within")
}

/// `inp` / `rdp`: the oldest match now, or no values.
unsafe fn probe(L: *mut ffi::lua_State, take: bool, fname: &str) -> c_int {
    let found = (|| {
        let space = space_of(L, fname)?;
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

unsafe extern "C-unwind" fn inp(L: *mut ffi::lua_State) -> c_int {
    probe(L, true, "inp")
}

unsafe extern "C-unwind" fn rdp(L: *mut ffi::lua_State) -> c_int {
    probe(L, false, "rdp")
}

unsafe extern "C-unwind" fn out(L: *mut ffi::lua_State) -> c_int {
    let done = (|| {
        let space = space_of(L, "out")?;
        let top = ffi::lua_gettop(L);
        if top < 2 {
            return Err("out: a tuple needs at least one field".to_string());
        }
        let fields = (2..=top).map(|i| field(L, i, i - 1, "out")).collect::<Result<Vec<_>, _>>()?;
        let values = codec::encode(L, 2, top).map_err(|e| format!("out: {e}"))?;
        let rt = ctx(L).rt();
        space.out(Tuple { fields, values }, |d| rt.complete(d));
        Ok(())
    })();
    match done {
        Ok(()) => 0,
        Err(e) => raise(L, e),
    }
}

unsafe extern "C-unwind" fn count(L: *mut ffi::lua_State) -> c_int {
    let counted = (|| {
        let space = space_of(L, "count")?;
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

unsafe extern "C-unwind" fn take_all(L: *mut ffi::lua_State) -> c_int {
    let taken = (|| {
        let space = space_of(L, "take_all")?;
        let (patterns, wheres) = template(L, 2, "take_all")?;
        if wheres.is_empty() {
            let all = space.with(|st| st.take_all(&patterns));
            return Ok((space, all));
        }
        let mut all = Vec::new();
        loop {
            match find_where(L, space, &patterns, &wheres, true) {
                Ok(Some(t)) => all.push(t),
                Ok(None) => return Ok((space, all)),
                Err(e) => {
                    // Nothing is lost: what was taken goes back.
                    for t in all {
                        space.out(t, |d| ctx(L).rt().complete(d));
                    }
                    return Err(e);
                }
            }
        }
    })();
    let (space, tuples) = match taken {
        Ok(t) => t,
        Err(e) => return raise(L, e),
    };
    ffi::lua_createtable(L, tuples.len() as c_int, 0);
    let list = ffi::lua_gettop(L);
    let mut failed = None;
    let mut tuples = tuples.into_iter();
    for (i, t) in tuples.by_ref().enumerate() {
        let base = ffi::lua_gettop(L);
        match push_tuple(L, &t, "take_all") {
            Ok(n) => {
                ffi::lua_createtable(L, n, 0);
                ffi::lua_rotate(L, base + 1, 1);
                for k in (1..=n).rev() {
                    ffi::lua_rawseti(L, base + 1, k as ffi::lua_Integer);
                }
                ffi::lua_rawseti(L, list, i as ffi::lua_Integer + 1);
            }
            Err(e) => {
                failed = Some(e);
                space.out(t, |d| ctx(L).rt().complete(d));
                break;
            }
        }
    }
    // After a failure the rest goes back too.
    for t in tuples {
        space.out(t, |d| ctx(L).rt().complete(d));
    }
    match failed {
        Some(e) => raise(L, e),
        None => 1,
    }
}

unsafe extern "C-unwind" fn clear(L: *mut ffi::lua_State) -> c_int {
    match space_of(L, "clear") {
        Ok(space) => {
            space.with(|st| st.clear());
            0
        }
        Err(e) => raise(L, e),
    }
}

/// The body of an `eval` process: calls the function fields, then `out`s the tuple.
const EVAL: &str = "local ts = ... \
    local t = table.pack(select(2, ...)) \
    for i = 1, t.n do if type(t[i]) == 'function' then t[i] = t[i]() end end \
    ts:out(table.unpack(t, 1, t.n))";

unsafe extern "C-unwind" fn eval(L: *mut ffi::lua_State) -> c_int {
    let started = (|| {
        space_of(L, "eval")?;
        let top = ffi::lua_gettop(L);
        if top < 2 {
            return Err("eval: a tuple needs at least one field".to_string());
        }
        if ffi::luaL_loadbufferx(L, EVAL.as_ptr().cast(), EVAL.len(), c"=(eval)".as_ptr(), c"t".as_ptr()) != ffi::LUA_OK {
            return Err("eval: internal error".into());
        }
        ffi::lua_rotate(L, 1, 1);
        crate::kernel::spawn_encoded(L, 1, None, "eval")
    })();
    match started {
        Ok(_) => 0,
        Err(e) => raise(L, e),
    }
}
