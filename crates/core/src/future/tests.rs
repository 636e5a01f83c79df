use super::*;
use crate::waiting::{Completion, Waiter};
use crate::Pid;

const A: FutureId = FutureId { origin: 7, seq: 1 };

fn waiter(n: u32) -> Waiter {
    Waiter { pid: Pid::new(0, n, 1), ticket: 1 }
}

fn msg(b: &[u8]) -> Message {
    Message::from_slice(b)
}

#[test]
fn a_result_is_freed_once_all_weight_is_back() {
    let mut st = Store::default();
    assert!(st.grant(A, 100));
    assert!(st.release(A, 50, 0).0.is_none()); // a node's half
    assert_eq!(st.resolve(A, msg(b"v")).0, Resolved::default());
    assert!(st.is_ready(A));
    assert_eq!(st.release(A, 50, 0).0, Some(msg(b"v")));
    assert!(st.is_empty(), "nobody can ask any more");
    assert_eq!(st.resolve(A, msg(b"late")).1 .0, Some(msg(b"late")), "a value nobody wants is handed back");
}

#[test]
fn releases_that_overtake_the_grant_do_not_free_early() {
    let mut st = Store::default();
    let _ = st.release(A, 30, 3); // another node dropped its handle before the task came
    assert!(st.is_wanted(A));
    assert!(st.grant(A, 100));
    assert!(st.is_wanted(A));
    let _ = st.release(A, 70, 0);
    assert!(st.is_empty());
    // All weight back before the task ran: it need not run.
    let _ = st.release(A, 100, 4);
    assert!(!st.grant(A, 100));
    assert!(st.is_empty());
}

#[test]
fn waiters_and_asking_nodes_get_the_value() {
    let mut st = Store::default();
    st.grant(A, 10);
    assert_eq!(st.read_or_wait(A, 0, waiter(1)), Read::Wait { ask: None });
    assert_eq!(st.fetch(A, 3), Fetch::Later);
    let (r, _) = st.resolve(A, msg(b"v"));
    assert_eq!(r.deliveries, vec![(waiter(1), Completion::Value(msg(b"v")))]);
    assert_eq!(r.fetchers, vec![3]);
    assert_eq!(st.fetch(A, 4), Fetch::Now(msg(b"v")));
    assert_eq!(st.read_or_wait(A, 0, waiter(2)), Read::Value(msg(b"v")));
}

#[test]
fn requests_about_unknown_results_are_bounded_and_go_with_their_node() {
    let mut st = Store::default();
    let id = |seq| FutureId { origin: 9, seq };
    for seq in 0..PROVISIONAL_MAX as u64 {
        let asked = if seq % 2 == 0 { st.fetch(id(seq), 3) == Fetch::Later } else { st.release(id(seq), 5, 3).0.is_none() };
        assert!(asked);
    }
    assert_eq!(st.fetch(id(u64::MAX), 3), Fetch::Unknown, "no more");
    let _ = st.release(id(u64::MAX), 5, 3);
    assert_eq!(st.len(), PROVISIONAL_MAX);
    // A task that comes makes its entry a lasting one.
    assert!(st.grant(id(0), 10));
    assert_eq!(st.fetch(id(u64::MAX), 4), Fetch::Later, "room again");
    // The asking node is lost: what only its requests made goes.
    st.home_lost(3, &failure("lost"));
    assert_eq!(st.len(), 2, "the granted entry, and node 4's request");
    st.home_lost(4, &failure("lost"));
    assert_eq!(st.len(), 1);
    assert_eq!(st.provisional, 0);
}

#[test]
fn a_request_other_nodes_joined_outlives_the_node_that_made_it() {
    let mut st = Store::default();
    assert_eq!(st.fetch(A, 3), Fetch::Later);
    assert_eq!(st.fetch(A, 4), Fetch::Later);
    st.home_lost(3, &failure("lost"));
    assert_eq!(st.len(), 1, "node 4 still waits for the value");
    let (r, _) = st.resolve(A, msg(b"v"));
    assert_eq!(r.fetchers, vec![4]);
}

#[test]
fn weight_back_home_for_an_unknown_hold_leaves_nothing() {
    let mut st = Store::default();
    for seq in 0..1000 {
        assert!(st.release_held(FutureId { origin: 0, seq }, 5).0.is_none());
    }
    assert!(st.is_empty());
    st.hold(A, || msg(b"space"), 10);
    assert!(st.release_held(A, 4).0.is_none());
    assert_eq!(st.release_held(A, 6).0, Some(msg(b"space")));
    assert!(st.is_empty());
}

#[test]
fn a_replica_asks_its_home_once_and_serves_every_waiter() {
    let mut st = Store::default();
    assert_eq!(st.read_or_wait(A, 5, waiter(1)), Read::Wait { ask: Some(5) });
    assert_eq!(st.read_or_wait(A, 5, waiter(2)), Read::Wait { ask: None });
    st.cancel(A, waiter(2));
    assert_eq!(st.fill(A, msg(b"v")).0, vec![(waiter(1), Completion::Value(msg(b"v")))]);
    assert_eq!(st.read_or_wait(A, 5, waiter(3)), Read::Value(msg(b"v")));
    assert_eq!(st.drop_replica(A).0, Some(msg(b"v")));
    assert!(st.is_empty());
}

#[test]
fn a_ticket_dropped_after_a_new_one_was_made_leaves_the_replica_to_it() {
    let rt = Runtime::start(crate::runtime::Config { workers: 1, ..Default::default() }).unwrap();
    let live = rt.ticket(A, 5, 10);
    assert_eq!(rt.futures().with(|st| st.read_or_wait(A, 5, waiter(1))), Read::Wait { ask: Some(5) });
    // The drop of the ticket this one replaced comes late.
    rt.ticket_dropped(A, 5, 4);
    let (deliveries, freed) = rt.futures().with(|st| st.fill(A, msg(b"v")));
    assert!(freed.0.is_none(), "the replica is still wanted");
    assert_eq!(deliveries, vec![(waiter(1), Completion::Value(msg(b"v")))]);
    drop(live);
    assert!(rt.futures().with(|st| st.is_empty()), "the last ticket took the replica with it");
    rt.shutdown();
}

#[test]
fn a_lost_home_fails_its_replicas() {
    let mut st = Store::default();
    st.read_or_wait(A, 5, waiter(1));
    let lost = failure("node lost: b");
    assert_eq!(st.home_lost(5, &lost), vec![(waiter(1), Completion::Value(lost.clone()))]);
    assert_eq!(st.read_or_wait(A, 5, waiter(2)), Read::Value(lost));
}
