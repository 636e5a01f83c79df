//! Lua values as tuple fields, template patterns (formals, `where`
//! predicates) and whole tuples; checking a candidate against the
//! predicates in the calling process.

use std::ffi::c_int;
use std::sync::Arc;

use mlua_sys as ffi;
use synodic_core::linda::{Field, Kind, Kinds, Pattern, Tuple};
use synodic_core::spaces::Space;
use synodic_core::Pid;

use crate::vm::codec::{self};
use crate::vm::peek::{peek, Plain};
use crate::vm::util::*;

use super::*;

/// The field at `idx`, for a tuple (`n` is its position, for errors).
pub(crate) unsafe fn field(L: *mut ffi::lua_State, idx: c_int, n: c_int, what: &str) -> Result<Field, String> {
    // SAFETY: `L` is the running state and `idx` a stack slot (lib.rs
    // invariant 1); a string's bytes are copied while on the stack.
    Ok(match unsafe { peek(L, idx) } {
        Plain::Nil => return Err(format!("{what}: field {n} is nil (tuples cannot hold nil)")),
        Plain::Bool(b) => Field::Bool(b),
        Plain::Int(i) => Field::Int(i),
        Plain::Float(f) => Field::Float(f),
        Plain::Str(s) => Field::Str(Arc::new(try_copy(s).map_err(|e| format!("{what}: {e}"))?)),
        Plain::Light(p) => Pid::from_raw(p as usize as u64).map_or(Field::Opaque(Kind::Other), |p| Field::Pid(p.raw())),
        // SAFETY: as above (a type read).
        Plain::Other if unsafe { ffi::lua_type(L, idx) } == ffi::LUA_TTABLE => Field::Opaque(Kind::Table),
        // SAFETY: as above.
        Plain::Other if unsafe { crate::api::buffer::to_buffer(L, idx) }.is_some() => Field::Opaque(Kind::Buffer),
        Plain::Other => Field::Opaque(Kind::Other),
    })
}

/// The `where` fields of a template: (field index, stack slot of the formal).
pub(crate) type Wheres = Vec<(usize, c_int)>;

/// A template from the arguments `first..=top`; also the stack slots of its `where` formals.
pub(crate) unsafe fn template(L: *mut ffi::lua_State, first: c_int, what: &str) -> Result<(Vec<Pattern>, Wheres), String> {
    // SAFETY: `L` is the running state (lib.rs invariant 1).
    let top = unsafe { ffi::lua_gettop(L) };
    if top < first {
        return Err(format!("{what}: a template needs at least one field"));
    }
    let mut patterns = Vec::with_capacity((top - first + 1) as usize);
    let mut wheres = Vec::new();
    for idx in first..=top {
        let n = idx - first + 1;
        // SAFETY: as above; `idx` is an argument, checked to be a table
        // before its formal mark is read raw (no metamethod, no
        // allocation), and the mark pushed is popped.
        let p = if unsafe { ffi::lua_type(L, idx) } == ffi::LUA_TTABLE {
            let (marked, which) = unsafe {
                let marked = ffi::lua_rawgetp(L, idx, formal_key()) == ffi::LUA_TNUMBER;
                let which = ffi::lua_tointegerx(L, -1, std::ptr::null_mut());
                ffi::lua_settop(L, -2);
                (marked, which)
            };
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
            // SAFETY: as above.
            Pattern::Actual(unsafe { field(L, idx, n, what)? })
        };
        patterns.push(p);
    }
    Ok((patterns, wheres))
}

/// Pushes a tuple's values; returns how many.
pub(super) unsafe fn push_tuple(L: *mut ffi::lua_State, tuple: &Tuple, what: &str) -> Result<c_int, String> {
    // SAFETY: `L` is the running state (lib.rs invariant 1); the tuple is
    // borrowed from the caller.
    unsafe { codec::decode(L, &tuple.values) }.map_err(|e| format!("{what}: {e}"))
}

/// Whether every `where` predicate holds for its field of `tuple`.
pub(super) unsafe fn holds(L: *mut ffi::lua_State, tuple: &Tuple, wheres: &[(usize, c_int)]) -> Result<bool, String> {
    // SAFETY: `L` is the running state (lib.rs invariant 1) and `wheres`
    // slots of formals on its stack (the caller's); the tuple's values are
    // pushed above `base`, checked, then popped.
    unsafe {
        let base = ffi::lua_gettop(L);
        push_tuple(L, tuple, "where")?;
        let held = check(L, base + 1, wheres);
        ffi::lua_settop(L, base);
        held
    }
}

/// Whether every `where` predicate holds for its field of the tuple whose
/// values are on the stack from `first` on (left as they are).
pub(crate) unsafe fn check(L: *mut ffi::lua_State, first: c_int, wheres: &[(usize, c_int)]) -> Result<bool, String> {
    for &(field, slot) in wheres {
        // SAFETY: `L` is the running state (lib.rs invariant 1); `slot` is a
        // `where` formal (a table whose [1] is the predicate) and the tuple's
        // field is at `first + field` (the caller's). The predicate runs
        // protected (lib.rs invariant 3); its result is popped.
        let ok = unsafe {
            ffi::lua_rawgeti(L, slot, 1);
            ffi::lua_pushvalue(L, first + field as c_int);
            if protected(L, 1, 1).is_err() {
                let err = pop_error(L);
                return Err(format!("where: the predicate failed: {err}"));
            }
            let ok = ffi::lua_toboolean(L, -1) != 0;
            ffi::lua_settop(L, -2);
            ok
        };
        if !ok {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The first candidate whose `where` predicates hold, taken (or read).
pub(super) unsafe fn find_where(L: *mut ffi::lua_State, space: &Space, patterns: &[Pattern], wheres: &[(usize, c_int)], take: bool) -> Result<Option<Tuple>, String> {
    for (seq, tuple) in space.with(|st| st.candidates(patterns)) {
        // NOT KEPT: lib.rs invariant 2, the candidates and `tuple` are alive
        // while predicates run; an error `protected` lets through (an `exit`
        // in a predicate) or a memory error in decoding unwinds over them (in
        // practice a leak).
        // SAFETY: `L` is the running state and `wheres` the formals' slots
        // (the caller's).
        if !unsafe { holds(L, &tuple, wheres)? } {
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


/// The tuple of an `out`'s arguments (from 2 on): its fields and values.
pub(crate) unsafe fn tuple(L: *mut ffi::lua_State) -> Result<Tuple, String> {
    // SAFETY: `L` is the running state (lib.rs invariant 1).
    let top = unsafe { ffi::lua_gettop(L) };
    if top < 2 {
        return Err("out: a tuple needs at least one field".to_string());
    }
    // SAFETY: as above; `2..=top` are arguments.
    let fields = (2..=top).map(|i| unsafe { field(L, i, i - 1, "out") }).collect::<Result<Vec<_>, _>>()?;
    // SAFETY: as above. NOT KEPT: lib.rs invariant 2, `fields` is alive
    // while encoding, whose memory errors would unwind over it.
    let values = unsafe { codec::encode(L, 2, top) }.map_err(|e| format!("out: {e}"))?;
    Ok(Tuple { fields, values })
}
