//! `pattern.rs`: how Lua values become tuple fields and template patterns
//! (actuals, typed formals, `any`, `where`, tables that never match), the
//! errors for what cannot be a field, tuples and their values, and the
//! `where` predicates run in the calling process. A process-less state
//! does: none of this needs a runtime (the spaces are made bare).

use std::sync::Arc;

use synodic_core::linda::{Field, Kind, Kinds, Pattern, Tuple};
use synodic_core::spaces::{Space, Spaces};
use synodic_core::Pid;

use super::super::pattern::*;
use super::super::{formal_key, FORMALS};
use super::*;

/// The template of every value `code` returns.
fn template_of(st: &TestState, code: &str) -> Result<(Vec<Pattern>, Wheres), String> {
    values(st.L, code);
    // SAFETY: the template's values are on the test's state, from slot 1.
    unsafe { template(st.L, 1, "rd") }
}

/// The field of the one value `code` returns.
fn field_of(st: &TestState, code: &str) -> Result<Field, String> {
    values(st.L, code);
    // SAFETY: the value is in slot 1 of the test's state.
    unsafe { field(st.L, 1, 1, "out") }
}

/// The tuple of an `out` whose arguments `code` returns (self first).
fn tuple_of(st: &TestState, code: &str) -> Result<Tuple, String> {
    values(st.L, code);
    // SAFETY: the arguments are on the test's state, from slot 1.
    unsafe { tuple(st.L) }
}

fn text(s: &str) -> Field {
    Field::Str(Arc::new(s.as_bytes().into()))
}

/// A bare space holding the tuples `codes` make (each returns `out`'s arguments).
fn space_with(st: &TestState, codes: &[&str]) -> Arc<Space> {
    let (_, space) = Spaces::default().create();
    for code in codes {
        space.out(tuple_of(st, code).expect("a tuple"), |_| {}).unwrap_or_else(|_| panic!("stored: {code}"));
    }
    space
}

#[test]
fn plain_values_are_actuals_of_their_own_type() {
    let st = state();
    let (p, wheres) = template_of(&st, "return true, 3, 2.5, 's'").unwrap();
    assert!(wheres.is_empty());
    assert!(matches!(p[0], Pattern::Actual(Field::Bool(true))));
    assert!(matches!(p[1], Pattern::Actual(Field::Int(3))));
    assert!(matches!(p[2], Pattern::Actual(Field::Float(f)) if f == 2.5));
    assert!(matches!(&p[3], Pattern::Actual(Field::Str(s)) if s.as_ref().as_ref() == b"s"));
}

#[test]
fn each_typed_formal_stands_for_its_kinds() {
    let st = state();
    let (p, wheres) = template_of(&st, "return linda.int, linda.float, linda.number, linda.string, linda.boolean, linda.table, linda.buffer").unwrap();
    assert!(wheres.is_empty());
    let kinds: Vec<Kinds> = p
        .iter()
        .map(|p| match p {
            Pattern::Formal(k) => *k,
            other => panic!("a formal, not {other:?}"),
        })
        .collect();
    let of = |k: &[Kind]| Kinds::of(k);
    assert_eq!(kinds, vec![of(&[Kind::Int]), of(&[Kind::Float]), of(&[Kind::Int, Kind::Float]), of(&[Kind::String]), of(&[Kind::Boolean]), of(&[Kind::Table]), of(&[Kind::Buffer])]);
    assert_eq!(FORMALS.len(), 8, "seven typed formals and any: a new one needs a test here");
}

#[test]
fn formals_match_values_of_their_kinds_only() {
    let st = state();
    let space = space_with(&st, &["return 0, 'v', 1", "return 0, 'v', 2.5", "return 0, 'v', 's'", "return 0, 'v', true", "return 0, 'v', {}"]);
    let count = |code: &str| space.with(|s| s.count(&template_of(&st, code).unwrap().0));
    assert_eq!(count("return 'v', linda.int"), 1);
    assert_eq!(count("return 'v', linda.float"), 1);
    assert_eq!(count("return 'v', linda.number"), 2, "number: integers and floats");
    assert_eq!(count("return 'v', linda.string"), 1);
    assert_eq!(count("return 'v', linda.boolean"), 1);
    assert_eq!(count("return 'v', linda.table"), 1);
    assert_eq!(count("return 'v', linda.buffer"), 0);
    assert_eq!(count("return 'v', linda.any"), 5);
    assert_eq!(count("return linda.any, linda.any, linda.any"), 0, "the arity must match");
    assert_eq!(count("return 'v', 1.0"), 1, "1.0 is the actual 1, as in Lua");
}

#[test]
fn any_is_a_wildcard() {
    let st = state();
    let (p, wheres) = template_of(&st, "return linda.any").unwrap();
    assert!(matches!(p[..], [Pattern::Any]));
    assert!(wheres.is_empty(), "any is no predicate");
}

#[test]
fn a_where_formal_is_a_wildcard_to_the_store_and_its_slot_is_kept() {
    let st = state();
    let (p, wheres) = template_of(&st, "return 'k', linda.where(function(v) return v > 1 end), linda.int").unwrap();
    assert!(matches!(p[1], Pattern::Any), "the store matches the other fields; the predicate runs here");
    assert_eq!(wheres, vec![(1, 2)], "field 1 (from 0), its formal in stack slot 2");
}

#[test]
fn a_table_given_as_an_actual_never_matches() {
    let st = state();
    let (p, _) = template_of(&st, "return {}, {1, 2}, setmetatable({}, {})").unwrap();
    assert!(p.iter().all(|p| matches!(p, Pattern::Never)), "{p:?}");
}

#[test]
fn a_table_marked_as_a_formal_of_no_known_kind_never_matches() {
    let st = state();
    values(st.L, "return {}");
    // SAFETY: the table is in slot 1 of the test's state.
    let (p, _) = unsafe {
        ffi::lua_pushinteger(st.L, FORMALS.len() as ffi::lua_Integer + 10);
        ffi::lua_rawsetp(st.L, 1, formal_key());
        template(st.L, 1, "rd")
    }
    .unwrap();
    assert!(matches!(p[..], [Pattern::Never]));
}

#[test]
fn a_template_needs_a_field_and_cannot_hold_nil() {
    let st = state();
    assert_eq!(template_of(&st, "return").unwrap_err(), "rd: a template needs at least one field");
    assert_eq!(template_of(&st, "return 'a', nil").unwrap_err(), "rd: field 2 is nil (tuples cannot hold nil)");
}

#[test]
fn values_that_are_not_plain_become_opaque_fields_of_their_kind() {
    let st = state();
    assert!(matches!(field_of(&st, "return {}"), Ok(Field::Opaque(Kind::Table))));
    assert!(matches!(field_of(&st, "return require('synodic.buffer').new(2)"), Ok(Field::Opaque(Kind::Buffer))));
    assert!(matches!(field_of(&st, "return print"), Ok(Field::Opaque(Kind::Other))));
    assert!(matches!(field_of(&st, "return coroutine.create(print)"), Ok(Field::Opaque(Kind::Other))));
}

#[test]
fn a_pid_is_a_field_of_its_own_and_other_light_userdata_is_opaque() {
    let st = state();
    let pid = Pid::new(0, 5, 1);
    let not_a_pid = pid.raw() ^ 1;
    assert!(Pid::from_raw(not_a_pid).is_none());
    // SAFETY: the test's state, emptied; one value pushed, then read as a field.
    let (a, b) = unsafe {
        ffi::lua_settop(st.L, 0);
        crate::vm::util::push_pid(st.L, pid);
        ffi::lua_pushlightuserdata(st.L, not_a_pid as usize as *mut std::ffi::c_void);
        (field(st.L, 1, 1, "out"), field(st.L, 2, 2, "out"))
    };
    assert!(matches!(a, Ok(Field::Pid(raw)) if raw == pid.raw()));
    assert!(matches!(b, Ok(Field::Opaque(Kind::Other))));
}

#[test]
fn a_tuple_is_its_fields_and_its_values_come_back_whole() {
    let st = state();
    let t = tuple_of(&st, "return 'self', 'job', 7, 1.5, {x = 'kept'}").unwrap();
    assert_eq!(t.fields.len(), 4);
    assert!(t.fields[0].equals(&text("job")) && t.fields[1].equals(&Field::Int(7)) && t.fields[2].equals(&Field::Float(1.5)));
    assert!(matches!(t.fields[3], Field::Opaque(Kind::Table)));
    // SAFETY: the test's state, emptied; the tuple's values pushed and read.
    let (n, kept) = unsafe {
        ffi::lua_settop(st.L, 0);
        let n = push_tuple(st.L, &t, "take").unwrap();
        ffi::lua_getfield(st.L, 4, c"x".as_ptr());
        (n, crate::vm::util::to_bytes(st.L, -1).map(<[u8]>::to_vec))
    };
    assert_eq!(n, 4);
    assert_eq!(kept.as_deref(), Some(&b"kept"[..]), "a table field's contents travel in the values");
}

#[test]
fn a_tuple_needs_a_field_and_cannot_hold_nil() {
    let st = state();
    assert_eq!(tuple_of(&st, "return 'self'").unwrap_err(), "out: a tuple needs at least one field");
    assert_eq!(tuple_of(&st, "return 'self', 1, nil").unwrap_err(), "out: field 2 is nil (tuples cannot hold nil)");
}

#[test]
fn where_predicates_decide_and_a_failing_one_is_an_error() {
    let st = state();
    values(st.L, "return linda.where(function(v) return v > 1 end), linda.where(function(v) return v < 10 end), 5, 0, 50");
    // SAFETY: the formals are in slots 1 and 2, the candidate values in 3 to 5.
    let (five, zero, fifty) = unsafe { (check(st.L, 3, &[(0, 1), (0, 2)]), check(st.L, 4, &[(0, 1), (0, 2)]), check(st.L, 5, &[(0, 1), (0, 2)])) };
    assert_eq!((five, zero, fifty), (Ok(true), Ok(false), Ok(false)), "every predicate must hold");
    values(st.L, "return linda.where(function() error('no way') end), 1");
    // SAFETY: the formal in slot 1, the value in slot 2.
    let failed = unsafe { check(st.L, 2, &[(0, 1)]) }.unwrap_err();
    assert!(failed.starts_with("where: the predicate failed: ") && failed.contains("no way"), "{failed}");
}

#[test]
fn the_first_candidate_whose_predicate_holds_is_read_or_taken_oldest_first() {
    let st = state();
    let space = space_with(&st, &["return 0, 'n', 1", "return 0, 'n', 2", "return 0, 'n', 3", "return 0, 'n', 4", "return 0, 'm', 5"]);
    let (patterns, wheres) = template_of(&st, "return 'n', linda.where(function(v) return v % 2 == 1 end)").unwrap();
    let find = |take| {
        // SAFETY: the template's formal stays in slot 2 of the test's state.
        let t = unsafe { find_where(st.L, &space, &patterns, &wheres, take) }.expect("no predicate fails");
        t.map(|t| match t.fields[1] {
            Field::Int(i) => i,
            ref f => panic!("{f:?}"),
        })
    };
    assert_eq!(find(false), Some(1), "read: the oldest that passes");
    assert_eq!(find(false), Some(1), "a read leaves it");
    assert_eq!(find(true), Some(1));
    assert_eq!(find(true), Some(3), "2 does not pass");
    assert_eq!(find(true), None, "5 is of another class");
    assert_eq!(space.with(|s| s.len()), 3, "2, 4 and ('m', 5) stay");
}
