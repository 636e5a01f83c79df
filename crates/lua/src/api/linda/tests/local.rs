//! `local.rs`: the methods on a space of this node. What does not wait
//! (`out`, `inp`, `rdp`, `count`, `take_all`, `clear`, a zero timeout, a
//! blocking call where nothing can block) runs on a state of a node's main
//! process (`ProcState`); what waits (`take`, `rd`, timed forms that
//! expire, `eval`) runs as a real main script.

use synodic_core::{Process, Runtime};

use super::*;
use crate::api::testkit::{on_node, script_ok, ProcState};

fn with_state(check: impl FnOnce(&Runtime, &ProcState) + Send + 'static) {
    on_node(move |rt: &Runtime, me: &'static Process| {
        let st = ProcState::new(rt, me);
        values(st.L, "ts = linda.new() return true");
        check(rt, &st)
    });
}

#[test]
fn probes_take_or_read_the_oldest_match_now_or_give_nothing() {
    with_state(|_, st| {
        st.check(
            "ts:out('k', 1) ts:out('k', 2)
             assert(select('#', ts:inp('k', 3)) == 0 and select('#', ts:rdp('none')) == 0, 'no match: no values')
             local k, v = ts:rdp('k', linda.int)
             assert(k == 'k' and v == 1, 'the oldest')
             assert(ts:count('k', linda.int) == 2, 'rdp leaves it')
             assert(select(2, ts:inp('k', linda.int)) == 1 and select(2, ts:inp('k', linda.int)) == 2)
             assert(select('#', ts:inp('k', linda.int)) == 0 and ts:count('k', linda.any) == 0)",
        );
    });
}

#[test]
fn count_and_take_all_apply_where_predicates() {
    with_state(|_, st| {
        st.check(
            "for i = 1, 6 do ts:out('n', i) end
             local even = linda.where(function(v) return v % 2 == 0 end)
             assert(ts:count('n', even) == 3 and ts:count('n', linda.int) == 6)
             local all = ts:take_all('n', even)
             assert(#all == 3 and all[1][1] == 'n' and all[1][2] == 2 and all[3][2] == 6, 'oldest first, each tuple a list')
             assert(ts:count('n', linda.any) == 3, 'the odd ones stay')
             assert(#ts:take_all('none') == 0, 'nothing: an empty list')",
        );
    });
}

#[test]
fn take_all_puts_everything_back_when_a_predicate_fails_midway() {
    with_state(|_, st| {
        let e = st.error_of(
            "for i = 1, 4 do ts:out('n', i) end
             ts:take_all('n', linda.where(function(v) if v == 3 then error('three') end return true end))",
        );
        assert!(e.contains("where: the predicate failed") && e.contains("three"), "{e}");
        // Nothing was taken: every tuple is there, in the order it came.
        st.check("local all = ts:take_all('n', linda.int) assert(#all == 4, 'nothing lost') for i = 1, 4 do assert(all[i][2] == i, 'in order') end");
    });
}

#[test]
fn clear_empties_the_space() {
    with_state(|_, st| {
        st.check("for i = 1, 5 do ts:out(i) ts:out('x', i) end ts:clear() assert(ts:count(linda.any) == 0 and ts:count('x', linda.any) == 0)");
    });
}

#[test]
fn a_zero_timeout_polls() {
    with_state(|_, st| {
        st.check(
            "assert(select('#', ts:take_within(0, 'p')) == 0 and select('#', ts:rd_within(0, 'p')) == 0, 'nothing there: no values')
             ts:out('p', 9)
             assert(select(2, ts:rd_within(0, 'p', linda.int)) == 9 and select(2, ts:take_within(0, 'p', linda.int)) == 9)
             assert(ts:count('p', linda.any) == 0)",
        );
        let e = st.error_of("ts:take_within('soon', 'p')");
        assert!(e.contains("take_within"), "{e}");
    });
}

#[test]
fn a_take_that_cannot_wait_is_refused_and_leaves_no_waiter_behind() {
    with_state(|_, st| {
        let e = st.error_of("ts:take('later', linda.int)");
        assert!(e.contains("cannot block here"), "{e}");
        st.check("ts:out('later', 1) assert(ts:count('later', linda.int) == 1, 'the tuple is stored, not handed to a waiter that left')");
    });
}

#[test]
fn out_past_the_nodes_limit_is_refused_and_names_the_space() {
    with_state(|rt, st| {
        rt.spaces().set_limit(1000);
        let e = st.error_of("ts:out('big', string.rep('x', 5000))");
        assert!(e.starts_with("out: space full: private space 0."), "{e}");
        st.check("assert(ts:count('big', linda.any) == 0) ts:out('small', 1) assert(ts:count('small', 1) == 1, 'what fits still goes in')");
    });
}

#[test]
fn eval_is_refused_on_something_else_or_without_fields() {
    with_state(|_, st| {
        let e = st.error_of("ts.eval(5, 'x')");
        assert!(e.contains("bad self to 'eval' (tuple space expected, got number"), "{e}");
        let e = st.error_of("ts:eval()");
        assert!(e.contains("eval: a tuple needs at least one field"), "{e}");
    });
}

#[test]
fn a_taker_gets_a_matching_tuple_and_a_reader_a_copy_whether_or_not_they_waited() {
    // The two may block before the tuples come or find them there: either
    // way the taker removes one 7, the reader none, and the string, which
    // matches neither template, stays.
    script_ok(
        r##"local s, linda = require "synodic", require "synodic.linda"
        local ts, me = linda.new(), s.self()
        s.spawn(function() s.send(me, "took", select(2, ts:take("job", linda.int))) end)
        s.spawn(function() s.send(me, "read", select(2, ts:rd("job", linda.int))) end)
        ts:out("job", "not a number")
        ts:out("job", 7)
        ts:out("job", 7)
        local got = {}
        for _ = 1, 2 do local what, v = s.receive() got[what] = v end
        assert(got.took == 7 and got.read == 7, "both had a 7")
        assert(ts:count("job", 7) == 1 and ts:count("job", linda.string) == 1, "one 7 taken, none read away, the string left")"##,
    );
}

#[test]
fn a_timed_take_that_expires_gives_no_values_and_leaves_nothing_waiting() {
    script_ok(
        r##"local linda = require "synodic.linda"
        local ts = linda.new()
        assert(select("#", ts:take_within(0.02, "never")) == 0)
        ts:out("never", 1)
        assert(ts:count("never", 1) == 1, "no expired waiter took it")"##,
    );
}

#[test]
fn eval_computes_the_function_fields_in_a_process_then_outs_the_tuple() {
    script_ok(
        r##"local linda = require "synodic.linda"
        local ts = linda.new()
        ts:eval("square", 4, function() return 4 * 4 end)
        local _, n, sq = ts:take("square", linda.int, linda.int)
        assert(n == 4 and sq == 16)"##,
    );
}
