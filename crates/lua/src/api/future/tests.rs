//! `future.rs`: a future's states as its handle shows them (pending,
//! resolved with values, failed with an error), the checks of `async`,
//! `async_on`, `get` and the handle's methods, and the native helpers the
//! pool and the skeletons use. What does not wait runs on a state of a
//! node's main process (`ProcState`), with the node's pool running tasks
//! meanwhile; what waits for a result runs as a real main script.

use synodic_core::{Process, Runtime};

use crate::api::testkit::{on_node, script_ok, ProcState};

fn with_state(check: impl FnOnce(&ProcState) + Send + 'static) {
    on_node(move |rt: &Runtime, me: &'static Process| {
        let st = ProcState::new(rt, me);
        st.check("s = require('synodic')");
        check(&st)
    });
}

fn refused(st: &ProcState, code: &str, expected: &str) {
    let e = st.error_of(code);
    assert!(e.contains(expected), "{code}\nraised: {e}\nexpected: {expected}");
}

#[test]
fn a_stored_future_is_ready_at_once_with_every_value() {
    with_state(|st| {
        st.check(
            "local f = s._store(1, nil, 'three')
             assert(s._is_future(f) and not s._is_future({}) and not s._is_future(nil))
             assert(f:ready(), 'resolved when made')
             assert(select('#', f:get()) == 3, 'every value, nils included')
             local a, b, c = f:get()
             assert(a == 1 and b == nil and c == 'three', 'and again: get does not consume')
             assert(f:node() == 'test', 'its home is this node')
             assert(tostring(f):match('^future: test#%d+$'), tostring(f))",
        );
    });
}

#[test]
fn handles_of_one_future_are_equal_and_of_two_are_not() {
    with_state(|st| {
        st.check(
            "local f, g = s._store(1), s._store(1)
             assert(f == f and f ~= g, 'equal by identity of the future, not by value')
             local copy = select(2, (function() s.send(s.self(), 'x', f) return s.receive(0) end)())
             assert(copy == f and copy:get() == 1, 'a handle that crossed a mailbox names the same future')",
        );
    });
}

#[test]
fn a_pending_future_is_not_ready_and_a_zero_timeout_gives_nothing() {
    with_state(|st| {
        st.check(
            "local f = s.async(function() require('synodic').receive() end)
             assert(not f:ready(), 'its task waits forever')
             assert(select('#', f:get(0)) == 0, 'a zero timeout polls')
             assert(s._pool_load() >= 1, 'the task is in the pool\\'s hands')",
        );
    });
}

#[test]
fn a_get_that_cannot_wait_is_refused() {
    with_state(|st| {
        refused(st, "local f = s.async(function() require('synodic').receive() end) f:get()", "get: cannot block here");
    });
}

#[test]
fn async_and_its_forms_check_their_arguments() {
    with_state(|st| {
        refused(st, "s.async(5)", "bad argument #1 to 'async' (function expected, got number)");
        refused(st, "s.async_on('test', 5)", "bad argument #2 to 'async_on' (function expected, got number)");
        refused(st, "s.async_on(5, print)", "bad argument #1 to 'async_on' (node name expected, got number)");
        refused(st, "s.async_on('nowhere', print)", "async_on: no such node: nowhere");
        refused(st, "s._submit(5, nil, nil, print)", "bad argument #1 to '_submit' (node name expected, got number)");
        refused(st, "s.async(print, coroutine.create(print))", "async: ");
        st.check("local f = s.async_on('any', function() return 1 end) assert(f:node() == 'test', 'any: the least loaded node, here the only one')");
    });
}

#[test]
fn submit_returns_the_future_and_the_bytes_its_task_carried() {
    with_state(|st| {
        st.check(
            "local f, bytes = s._submit('test', nil, nil, function(x) return x end, string.rep('x', 1000))
             assert(s._is_future(f) and math.type(bytes) == 'integer' and bytes > 1000, tostring(bytes))",
        );
    });
}

#[test]
fn the_handles_methods_refuse_anything_else_as_self() {
    with_state(|st| {
        st.check("f = s._store(1)");
        refused(st, "f.get(5)", "bad self to 'get' (future expected, got number)");
        refused(st, "f.ready({})", "bad self to 'ready' (future expected, got table)");
        refused(st, "f.node('x')", "bad self to 'node' (future expected, got string)");
        refused(st, "f:get('soon')", "get");
    });
}

#[test]
fn the_native_helpers_answer_on_a_node_alone() {
    with_state(|st| {
        st.check(
            "assert(s._fetched() == 0, 'nothing fetched from other nodes')
             local before = s._futures_held()
             local f = s._store('kept')
             assert(s._futures_held() == before + 1, 'a stored result is held')
             assert(s._isatty(-1) == false, 'no such descriptor')",
        );
    });
}

#[test]
fn get_waits_for_the_results_or_raises_the_tasks_error() {
    script_ok(
        r##"local s = require "synodic"
        local me = s.self()
        local f = s.async(function(a, b) return a + b, nil end, 2, 3)
        local sum, none = f:get()
        assert(sum == 5 and none == nil and select("#", f:get()) == 2 and f:ready())
        local bad = s.async(function() error("boom", 0) end)
        local ok, err = pcall(bad.get, bad)
        assert(not ok and err == "boom", tostring(err))
        local table_error = s.async(function() error({code = 4}) end)
        ok, err = pcall(table_error.get, table_error)
        assert(not ok and type(err) == "table" and err.code == 4, "the error object comes back as it was")
        local gate = s.async(function(who) require("synodic").send(who, "started") require("synodic").receive() end, me)
        assert(s.receive() == "started")
        assert(select("#", gate:get(0.02)) == 0, "a timed get that expires gives no values")
        assert(not gate:ready())"##,
    );
}
