//! `kernel.rs`, the `synodic` module: each function's checks of its
//! arguments and its answers on a node alone. Calls that do not wait run
//! on a state of a node's main process (`ProcState`); what waits, exits or
//! halts runs as a real main script. How `receive_match` compares a
//! message's first value with a plain one is tested on encoded messages.

use synodic_core::{ExitReason, Pid, Process, RunEnd, Runtime};

use super::inbox::first_value_is;
use crate::api::testkit::{on_node, script, script_ok, ProcState};
use crate::vm::codec::tests::TestState;
use crate::vm::peek::Plain;

fn with_state(check: impl FnOnce(&Runtime, &'static Process, &ProcState) + Send + 'static) {
    on_node(move |rt: &Runtime, me: &'static Process| {
        let st = ProcState::new(rt, me);
        st.check("s = require('synodic')");
        check(rt, me, &st)
    });
}

/// Asserts that `code` raises an error containing `expected`.
fn refused(st: &ProcState, code: &str, expected: &str) {
    let e = st.error_of(code);
    assert!(e.contains(expected), "{code}\nraised: {e}\nexpected: {expected}");
}

#[test]
fn a_messages_first_value_is_compared_as_lua_compares_plain_values() {
    let st = TestState::new();
    let msg = |code: &str| st.encode(code);
    assert!(first_value_is(&msg("return 'job', 1"), Plain::Str(b"job")));
    assert!(!first_value_is(&msg("return 'jobs', 1"), Plain::Str(b"job")));
    assert!(first_value_is(&msg("return 2"), Plain::Int(2)));
    assert!(first_value_is(&msg("return 2"), Plain::Float(2.0)), "2 == 2.0");
    assert!(first_value_is(&msg("return 2.0"), Plain::Int(2)), "2.0 == 2");
    assert!(!first_value_is(&msg("return 2.5"), Plain::Int(2)));
    assert!(first_value_is(&msg("return true"), Plain::Bool(true)) && first_value_is(&msg("return false"), Plain::Bool(false)));
    assert!(!first_value_is(&msg("return false"), Plain::Bool(true)));
    assert!(first_value_is(&msg("return nil, 1"), Plain::Nil));
    assert!(!first_value_is(&msg("return '2'"), Plain::Int(2)), "no coercion between strings and numbers");
    assert!(!first_value_is(&msg("return {}"), Plain::Nil), "a table equals no plain value");
    assert!(!first_value_is(&msg("return 'x'"), Plain::Other));
    assert!(!first_value_is(b"not a message", Plain::Nil), "junk matches nothing");
}

#[test]
fn a_messages_first_pid_is_compared_by_identity() {
    let st = TestState::new();
    let pid = Pid::new(0, 9, 2);
    let other = Pid::new(0, 9, 3);
    // SAFETY: the test's state, emptied; the pid pushed and encoded as a message.
    let msg = unsafe {
        mlua_sys::lua_settop(st.L, 0);
        crate::vm::util::push_pid(st.L, pid);
        crate::vm::codec::encode(st.L, 1, 1).expect("a pid encodes")
    };
    assert!(first_value_is(&msg, Plain::Light(pid.raw() as usize as *mut std::ffi::c_void)));
    assert!(!first_value_is(&msg, Plain::Light(other.raw() as usize as *mut std::ffi::c_void)));
}

#[test]
fn spawn_and_its_forms_check_their_arguments() {
    with_state(|_, _, st| {
        refused(st, "s.spawn(5)", "bad argument #1 to 'spawn' (function expected, got number)");
        refused(st, "s.spawn_opt(function() end)", "bad argument #1 to 'spawn_opt' (options table expected, got function)");
        refused(st, "s.spawn_opt({}, 'f')", "bad argument #2 to 'spawn_opt' (function expected, got string)");
        refused(st, "s.spawn_opt({stack = 1}, print)", "spawn_opt: unknown option 'stack' (known: max_memory)");
        for bad in ["0", "-5", "1.5", "'lots'"] {
            refused(st, &format!("s.spawn_opt({{max_memory = {bad}}}, print)"), "spawn_opt: max_memory must be a positive number of bytes");
        }
        refused(st, "s.spawn_on(1, print)", "bad argument #1 to 'spawn_on' (node name expected, got number)");
        refused(st, "s.spawn_on('test', 'f')", "bad argument #2 to 'spawn_on' (function expected, got string)");
        st.check("local p = s.spawn_opt({max_memory = 1 << 20}, function() end) assert(type(p) == 'userdata')");
        st.check("local p = s.spawn_on('test', function() end) assert(s.node(p) == 'test', 'spawned here: the node is named test')");
    });
}

#[test]
fn send_checks_its_destination_and_that_there_is_something_to_send() {
    with_state(|_, _, st| {
        refused(st, "s.send(5, 'x')", "bad argument #1 to 'send' (pid or name expected, got number)");
        refused(st, "s.send(s.self())", "send: nothing to send (give at least one value)");
        refused(st, "s.send('nobody', 1)", "no such name: nobody");
        refused(st, "s.send(s.self(), coroutine.create(print))", "send: ");
    });
}

#[test]
fn receive_with_a_zero_timeout_takes_what_is_there_or_nothing() {
    with_state(|_, _, st| {
        st.check(
            "assert(select('#', s.receive(0)) == 0, 'an empty mailbox: no values')
             s.send(s.self(), 'a', 1, nil, {2})
             local a, one, none, t = s.receive(0)
             assert(a == 'a' and one == 1 and none == nil and t[1] == 2, 'every value, nils too')
             assert(select('#', s.receive(0)) == 0)",
        );
        refused(st, "s.receive('soon')", "receive");
    });
}

#[test]
fn receive_match_takes_the_oldest_wanted_message_and_keeps_the_others_in_order() {
    with_state(|_, _, st| {
        st.check(
            "local me = s.self()
             s.send(me, 'a', 1) s.send(me, 'b', 2) s.send(me, 'a', 3) s.send(me, 2, 'two')
             assert(select(2, s.receive_match('a', 0)) == 1, 'the oldest a')
             assert(select(2, s.receive_match(2.0, 0)) == 'two', 'numbers compare as numbers')
             assert(select(2, s.receive_match(function(k, v) return v == 3 end, 0)) == 3, 'a filter function sees every value')
             assert(select('#', s.receive_match('zzz', 0)) == 0, 'nothing wanted: no values')
             assert(select(2, s.receive(0)) == 2, 'b stayed, first')
             assert(select('#', s.receive(0)) == 0)",
        );
    });
}

#[test]
fn a_receive_match_filter_may_not_receive_and_its_error_leaves_the_message_queued() {
    with_state(|_, _, st| {
        st.check("s.send(s.self(), 'kept')");
        refused(st, "s.receive_match(function() return s.receive(0) end, 0)", "receive: cannot receive inside a receive_match filter");
        refused(st, "s.receive_match(function() error('filter broke') end, 0)", "filter broke");
        refused(st, "s.receive_match({}, 0)", "bad argument #1 to 'receive_match' (a plain value or a function expected, got table)");
        st.check("assert(s.receive(0) == 'kept', 'still there')");
    });
}

#[test]
fn monitors_of_ended_processes_and_of_nodes_that_are_not_there_hear_at_once() {
    with_state(|rt, _, st| {
        let dead = rt.spawn(Box::new(Ends)).expect("a process");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while rt.is_alive(dead) {
            assert!(std::time::Instant::now() < deadline, "a process that ends at once ends");
            std::thread::yield_now();
        }
        // SAFETY: the process's state; the pid is pushed as a global.
        unsafe {
            crate::vm::util::push_pid(st.L, dead);
            mlua_sys::lua_setglobal(st.L, c"dead".as_ptr());
        }
        st.check(
            "assert(not s.is_alive(dead) and s.is_alive(s.self()) and not s.is_alive('x'))
             s.monitor(dead)
             local what, who, why = s.receive(0)
             assert(what == 'DOWN' and who == dead and why == 'normal', 'DOWN at once, for a pid that has ended')
             assert(s.demonitor(dead) == false, 'no monitor left in place')
             s.monitor_node('test')
             assert(select('#', s.receive(0)) == 0, 'this node is never lost')
             s.monitor_node('elsewhere')
             local down, node = s.receive(0)
             assert(down == 'nodedown' and node == 'elsewhere', 'a node alone is connected to no other')",
        );
        refused(st, "s.monitor('x')", "monitor");
        refused(st, "s.demonitor(1)", "demonitor");
        refused(st, "s.monitor_node(1)", "bad argument #1 to 'monitor_node' (node name expected, got number)");
    });
}

/// A body that ends at its first turn.
struct Ends;

impl synodic_core::Body for Ends {
    fn resume(&mut self, _rt: &Runtime, _me: &'static Process) -> synodic_core::Step {
        synodic_core::Step::Exited(ExitReason::Normal)
    }
}

#[test]
fn a_monitor_of_a_live_process_can_be_taken_back() {
    with_state(|_, _, st| {
        st.check(
            "local p = s.spawn(function() require('synodic').receive() end)
             s.monitor(p)
             assert(s.demonitor(p) == true, 'it was in place')
             assert(s.demonitor(p) == false, 'once')",
        );
    });
}

#[test]
fn names_are_registered_once_and_found_on_a_node_alone() {
    with_state(|_, _, st| {
        st.check("assert(s.register('svc', s.self()) == true and s.whereis('svc') == s.self())");
        refused(st, "s.register('svc', s.spawn(function() require('synodic').receive() end))", "register: ");
        refused(st, "s.register(1, s.self())", "bad argument #1 to 'register' (string expected, got number)");
        refused(st, "s.register('other', 'not a pid')", "register");
        st.check("assert(s.whereis('nobody') == nil and s.whereis(42) == nil)");
        st.check("s.send('svc', 'by name') assert(s.receive(0) == 'by name', 'send takes a registered name')");
    });
}

#[test]
fn the_node_answers_its_name_its_nodes_its_clock_and_its_main_process() {
    with_state(|_, _, st| {
        st.check(
            "assert(s.node() == 'test' and s.node(s.self()) == 'test')
             local nodes = s.nodes()
             assert(#nodes == 1 and nodes[1] == 'test')
             local t0 = s.clock() local t1 = s.clock()
             assert(type(t0) == 'number' and t0 >= 0 and t1 >= t0, 'a monotonic clock')
             assert(s.main() == s.self(), 'this is the main process')",
        );
        refused(st, "s.node('x')", "bad argument #1 to 'node' (pid expected, got string)");
        refused(st, "s.halt(256)", "bad argument #1 to 'halt' (exit status 0-255 expected, got number)");
        refused(st, "s.halt('x')", "bad argument #1 to 'halt' (exit status 0-255 expected, got string)");
        refused(st, "s.sleep()", "bad argument #1 to 'sleep' (number expected, got no value)");
    });
}

#[test]
fn halt_ends_the_run_with_its_status_whatever_the_main_process_does() {
    assert_eq!(script("local s = require 'synodic' s.spawn(function() s.halt(3) end) s.receive()"), RunEnd::Halted(3));
    assert_eq!(script("require('synodic').halt()"), RunEnd::Halted(0));
}

#[test]
fn exit_ends_the_process_with_its_reason_even_where_it_cannot_yield() {
    assert_eq!(script("require('synodic').exit() error('not reached')"), RunEnd::Exited(ExitReason::Normal));
    assert_eq!(script("require('synodic').exit('normal') error('not reached')"), RunEnd::Exited(ExitReason::Normal));
    let RunEnd::Exited(ExitReason::Value(v)) = script("require('synodic').exit({code = 7})") else { panic!("a value") };
    assert!(!v.is_empty());
    // Inside a comparator of table.sort (a C call that cannot yield), exit
    // unwinds, and no pcall keeps it.
    let end = script("local s = require 'synodic' pcall(table.sort, {2, 1}, function() s.exit('deep') end) error('not reached')");
    assert!(matches!(end, RunEnd::Exited(ExitReason::Value(_))), "{end:?}");
}

#[test]
fn blocking_calls_wait_for_what_they_wait_for() {
    script_ok(
        r##"local s = require "synodic"
        local me = s.self()
        assert(select("#", s.receive(0.02)) == 0, "a receive that times out gives no values")
        s.sleep(0) -- yields, and comes back
        local p = s.spawn(function() s.send(me, "late", 1) s.send(me, "first", 2) end)
        assert(select(2, s.receive_match("first")) == 2, "receive_match waits for what it wants")
        assert(s.receive() == "late", "the rest waited, in order")
        s.monitor(p)
        assert(s.receive() == "DOWN")"##,
    );
}
