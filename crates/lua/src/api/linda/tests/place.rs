//! `place.rs`: where the space of a handle lives, decided at a method's
//! call. On a node alone (no cluster): a private space is here from the
//! start; a named one is looked up at its first use and is this node's
//! space of that name, kept in the handle; a named space that moved away
//! is looked up again; a lost one stays lost; anything that is not a
//! handle is refused with a hint. Each test runs as the main process of a
//! node of its own (`api::testkit`), calling `place` on a handle in slot 1.

use std::sync::Arc;

use synodic_core::spaces::{Home, Space};
use synodic_core::{Pid, Process, Runtime};

use super::super::place::{home_at, place, Place};
use super::super::handle;
use super::*;
use crate::api::testkit::{on_node, ProcState};

/// Where the handle `code` returns lives (`Ok(Some(space))`: here).
fn placed(st: &ProcState, code: &str) -> Result<Option<Arc<Space>>, String> {
    lost_or_refused(st, code).map(|p| p.0)
}

/// What `placed` says, with a `Debug` face (spaces have none) for `unwrap_err`.
struct Placed(Option<Arc<Space>>);

impl std::fmt::Debug for Placed {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "{}", if self.0.is_some() { "here" } else { "elsewhere" })
    }
}

fn lost_or_refused(st: &ProcState, code: &str) -> Result<Placed, String> {
    values(st.L, code);
    // SAFETY: the handle (or whatever `code` returned) is in slot 1 of the process's state.
    unsafe {
        place(st.L, "out").map(|p| match p {
            Place::Here(space) => Placed(Some(space.clone())),
            Place::There(..) | Place::Unclaimed => Placed(None),
        })
    }
}

/// The home the handle in slot 1 keeps.
fn kept_home(st: &ProcState) -> Home {
    // SAFETY: slot 1 of the process's state holds a handle.
    unsafe { handle(st.L, 1) }.expect("a handle").space.home.clone()
}

fn with_state(check: impl FnOnce(&Runtime, &ProcState) + Send + 'static) {
    on_node(move |rt: &Runtime, me: &'static Process| {
        let st = ProcState::new(rt, me);
        values(st.L, "return true");
        check(rt, &st)
    });
}

#[test]
fn a_private_space_is_here_from_the_start() {
    with_state(|_, st| {
        let space = placed(st, "return linda.new()").unwrap();
        assert!(space.is_some(), "here");
        assert!(matches!(kept_home(st), Home::Here(..)));
    });
}

#[test]
fn a_named_space_is_this_nodes_space_of_that_name_from_its_first_use_on() {
    with_state(|rt, st| {
        values(st.L, "return linda.open('jobs')");
        assert!(matches!(kept_home(st), Home::Unresolved), "not looked up before a method needs it");
        let space = placed(st, "return linda.open('jobs')").unwrap().expect("here: the node is alone");
        let (_, by_name) = rt.spaces().open(b"jobs");
        assert!(Arc::ptr_eq(&space, &by_name), "the node's space of that name");
        assert!(matches!(kept_home(st), Home::Here(_, ref s) if Arc::ptr_eq(s, &by_name)), "the handle keeps its home");
        let other = placed(st, "return linda.open('other')").unwrap().expect("here");
        assert!(!Arc::ptr_eq(&space, &other), "another name, another space");
    });
}

#[test]
fn handles_of_one_name_in_two_places_reach_the_same_tuples() {
    with_state(|_, st| {
        st.check(
            "local a, b = linda.open('shared'), linda.open('shared')
             assert(a == b and a ~= linda.open('elsewhere'), 'handles of one name are equal')
             a:out('t', 1)
             assert(b:count('t', linda.int) == 1)
             assert(select(2, b:inp('t', linda.int)) == 1 and a:count('t', linda.any) == 0)
             assert(tostring(a) == 'space: shared', tostring(a))",
        );
    });
}

#[test]
fn a_named_space_that_moved_to_another_node_is_looked_up_again() {
    with_state(|rt, st| {
        let first = placed(st, "h = linda.open('mobile') return h").unwrap().expect("here");
        // It moves away, as when a healed partition gives the name to another node.
        first.with(|s| s.move_out());
        rt.spaces().unname(b"mobile");
        let again = placed(st, "return h").unwrap().expect("this node's space of that name again (the node is alone)");
        assert!(!Arc::ptr_eq(&first, &again), "not the space that moved");
        let (_, now) = rt.spaces().open(b"mobile");
        assert!(Arc::ptr_eq(&again, &now));
        st.check("h:out('after', 1) assert(h:count('after', 1) == 1)");
    });
}

#[test]
fn a_lost_space_stays_lost() {
    with_state(|_, st| {
        values(st.L, "h = linda.open('gone') return h");
        // SAFETY: slot 1 holds the handle.
        unsafe { handle(st.L, 1) }.expect("a handle").space.home = Home::Gone;
        assert_eq!(lost_or_refused(st, "return h").unwrap_err(), "out: space lost: gone");
        assert_eq!(lost_or_refused(st, "return h").unwrap_err(), "out: space lost: gone", "still lost");
        let e = st.error_of("h:out('x', 1)");
        assert!(e.contains("out: space lost: gone"), "{e}");
    });
}

#[test]
fn a_method_called_on_something_else_says_how_to_call_it() {
    with_state(|_, st| {
        assert_eq!(lost_or_refused(st, "return 5").unwrap_err(), "bad self to 'out' (tuple space expected, got number; call it as ts:out(...))");
        let e = st.error_of("local ts = linda.new() ts.count('x', 1)");
        assert!(e.contains("bad self to 'count' (tuple space expected, got string; call it as ts:count(...))"), "{e}");
    });
}

#[test]
fn a_name_held_by_this_node_is_here_and_one_held_elsewhere_is_there() {
    with_state(|rt, st| {
        // SAFETY: the process's state; `home_at` only reads the runtime.
        let (here, there) = unsafe { (home_at(st.L, b"n", Pid::new(0, 0, 0)), home_at(st.L, b"n", Pid::new(3, 7, 1))) };
        let (_, by_name) = rt.spaces().open(b"n");
        assert!(matches!(here, Home::Here(_, ref s) if Arc::ptr_eq(s, &by_name)));
        assert!(matches!(there, Home::There(3, 0)), "on the node of alias 3, found by name there");
    });
}
