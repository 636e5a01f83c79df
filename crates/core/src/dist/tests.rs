//! Each service driven without sockets or real time: frames in through
//! `Services::receive` from a stand-in link, frames out recorded by an
//! in-memory transport (`testing`), links lost by calling what the
//! transport calls.

use std::sync::Arc;

use super::testing::{first_str, inbox, node, Link};
use super::*;
use crate::wire::{Reader, Tag, Writer};
use crate::ExitReason;

/// A message of one string.
fn text(s: &[u8]) -> Message {
    let mut w = Writer::message(1);
    w.str(s);
    Message::from_vec(w.finish_small())
}

fn pids(head: &[u8]) -> (Pid, Pid) {
    let mut r = Reader::fields(head);
    (read_pid(&mut r).unwrap(), read_pid(&mut r).unwrap())
}

#[test]
fn every_frame_kind_has_one_owner_and_the_others_are_one_error() {
    let services = Services::standard();
    let every = [
        kind::SEND, kind::MONITOR, kind::DEMONITOR, kind::SPAWN, kind::LOAD, kind::CLAIM, kind::NAMED, kind::UNNAMED, kind::TASK, kind::FETCH, kind::FETCHED, kind::RELEASE, kind::LINDA, kind::COMPLETE, kind::LINK, kind::UNLINK, kind::EXIT, kind::KILL,
    ];
    for k in every {
        assert!(services.owns(k), "kind {k}");
    }
    for k in kind::transport::ALL.into_iter().chain([99]) {
        assert!(!services.owns(k), "kind {k} is the transport's or nobody's");
    }
    let (rt, _) = node(&["b"]);
    let e = rt.services().receive(&rt, &Link::new(1), 99, &[], Vec::new()).unwrap_err();
    assert_eq!(e, "unknown frame kind 99");
    // A frame whose fields do not parse is one error naming its kind.
    let e = rt.services().receive(&rt, &Link::new(1), kind::MONITOR, &[1, 2], Vec::new()).unwrap_err();
    assert!(e.starts_with("a frame of kind 6: "), "{e}");
    let e = rt.services().receive(&rt, &Link::new(1), kind::FETCH, &[0; 17], Vec::new()).unwrap_err();
    assert!(e.contains("1 bytes after a frame of kind 13"), "{e}");
    rt.shutdown();
}

/// A service that would own one of the transport's kinds.
struct OnTheTransportsKind;

impl Service for OnTheTransportsKind {
    fn kinds(&self) -> &'static [u8] {
        &[kind::transport::PART]
    }
    fn receive(&self, _: &Runtime, _: &dyn Peer, _: u8, _: &[u8], _: Vec<Attachment>) -> Result<(), String> {
        Ok(())
    }
}

#[test]
#[should_panic(expected = "is the transport's")]
fn no_service_may_own_a_transport_kind() {
    Services::new(vec![Arc::new(OnTheTransportsKind)]);
}

#[test]
#[should_panic(expected = "owned twice")]
fn two_services_may_not_own_one_kind() {
    Services::new(vec![Arc::new(mail::Mail), Arc::new(mail::Mail)]);
}

#[test]
fn a_message_crosses_as_one_send_frame_and_arrives_in_the_mailbox() {
    let (rt, wire) = node(&["b"]);
    let (me, got) = inbox(&rt);
    let there = Pid::new(1, 7, 1);
    assert!(rt.send(there, text(b"hello")), "a pid of a linked node");
    let sent = wire.take();
    assert_eq!(sent.len(), 1);
    assert_eq!((sent[0].node, sent[0].kind), (1, kind::SEND));
    assert_eq!(pids(&sent[0].head), (there, there));
    assert_eq!(first_str(&Message::from_vec(sent[0].message.clone().unwrap())), b"hello");
    // To a node not linked: dropped, as to a dead process.
    assert!(!rt.send(Pid::new(2, 7, 1), text(b"lost")));
    // The other way: b's frame names our pid with node 0.
    let head = fields(|w| {
        w.u64(me.raw());
        w.u64(Pid::new(0, 3, 1).raw());
    });
    let body = [head.to_vec(), text(b"from b").into_vec()].concat();
    rt.services().receive(&rt, &Link::new(1), kind::SEND, &body, Vec::new()).unwrap();
    assert_eq!(first_str(&got.wait_for(1)[0]), b"from b");
    rt.shutdown();
}

#[test]
fn a_lost_node_gives_every_monitor_its_down_and_every_node_watcher_nodedown() {
    let (rt, wire) = node(&["b", "c"]);
    let (watcher, got) = inbox(&rt);
    let target = Pid::new(1, 4, 1);
    rt.monitor(watcher, target);
    let sent = wire.take();
    assert_eq!((sent[0].node, sent[0].kind, pids(&sent[0].head)), (1, kind::MONITOR, (watcher, target)));
    let monitors = rt.service::<monitors::Monitors>();
    assert!(monitors.monitor_node(&rt, watcher, "b"));
    assert!(!monitors.monitor_node(&rt, watcher, "nowhere"), "not linked: said at once");
    // c's loss touches nothing of b's.
    rt.services().lost(&rt, 2, "c");
    rt.services().gone(&rt, 2, "c");
    rt.services().lost(&rt, 1, "b");
    let down = got.wait_for(1);
    assert_eq!(down[0].as_ref(), &*crate::runtime::down_message(target, &ExitReason::Value(crate::runtime::noconnection())));
    rt.services().gone(&rt, 1, "b");
    let all = got.wait_for(2);
    assert_eq!(all[1].as_ref(), &*notice::nodedown(b"b"));
    assert_eq!(all.len(), 2);
    rt.shutdown();
}

#[test]
fn a_down_for_a_monitor_removed_meanwhile_is_dropped() {
    let (rt, wire) = node(&["b"]);
    let (watcher, got) = inbox(&rt);
    let target = Pid::new(1, 4, 1);
    rt.monitor(watcher, target);
    assert!(rt.demonitor(watcher, target));
    assert!(!rt.demonitor(watcher, target), "only one was in place");
    let kinds: Vec<u8> = wire.take().iter().map(|s| s.kind).collect();
    assert_eq!(kinds, [kind::MONITOR, kind::DEMONITOR]);
    // The DOWN b sent before it heard of the demonitor: a notice, from == to.
    let down = crate::runtime::down_message(Pid::new(0, 4, 1), &ExitReason::Normal);
    let notice_for = |to: Pid| [fields(|w| {
        w.u64(to.raw());
        w.u64(to.raw());
    }).to_vec(), down.to_vec()].concat();
    rt.services().receive(&rt, &Link::new(1), kind::SEND, &notice_for(watcher), Vec::new()).unwrap();
    // A message sent after it shows that the DOWN was not delivered.
    let head = fields(|w| {
        w.u64(watcher.raw());
        w.u64(Pid::new(0, 9, 1).raw());
    });
    rt.services().receive(&rt, &Link::new(1), kind::SEND, &[head.to_vec(), text(b"after").into_vec()].concat(), Vec::new()).unwrap();
    let all = got.wait_for(1);
    assert_eq!(first_str(&all[0]), b"after");
    // And the node's loss owes it no DOWN either.
    rt.services().lost(&rt, 1, "b");
    assert_eq!(got.now().len(), 1);
    rt.shutdown();
}

#[test]
fn a_spawn_waits_for_its_reply_and_gets_an_error_if_the_node_is_lost() {
    let (rt, wire) = node(&["b"]);
    let (caller, got) = inbox(&rt);
    let spawns = rt.service::<spawn::Spawns>();
    assert_eq!(spawns.spawn(&rt, caller, 5, "nowhere", text(b"f")).unwrap_err(), "no such node: nowhere");
    spawns.spawn(&rt, caller, 6, "b", text(b"f")).unwrap();
    let sent = wire.take();
    assert_eq!((sent[0].node, sent[0].kind), (1, kind::SPAWN));
    // Until b reports again, what was started there counts on its load.
    assert_eq!(rt.service::<pool::Pools>().least_loaded(&rt), rt.node_name());
    rt.services().lost(&rt, 1, "b");
    let reply = &got.wait_for(1)[0];
    assert_eq!(notice::reply_of(reply), Some((6, false)));
    assert!(notice::claim_answer(reply).unwrap().unwrap_err().0.contains("node lost: b"));
    rt.shutdown();
}

#[test]
fn a_spawn_asked_by_another_node_replies_with_the_pid_over_the_link() {
    let (rt, wire) = node(&["b"]);
    let started = Pid::new(0, 42, 1);
    rt.service::<spawn::Spawns>().set_spawner(Arc::new(move |m: Message| match first_str(&m).as_slice() {
        b"ok" => Ok(started),
        _ => Err("bad function".into()),
    }));
    let their_caller = Pid::new(0, 3, 1);
    for (tag, what) in [(1u64, &b"ok"[..]), (2, b"no")] {
        let head = fields(|w| {
            w.u64(their_caller.raw());
            w.varint(tag);
        });
        rt.services().receive(&rt, &Link::new(1), kind::SPAWN, &[head.to_vec(), text(what).into_vec()].concat(), Vec::new()).unwrap();
    }
    let sent = wire.take();
    assert_eq!(sent.len(), 2);
    for s in &sent {
        assert_eq!((s.node, s.kind), (1, kind::SEND), "a reply to b's process");
        assert_eq!(pids(&s.head).0, their_caller.aliased(1, 0));
    }
    let replies: Vec<_> = sent.iter().map(|s| notice::reply_of(s.message.as_ref().unwrap())).collect();
    assert_eq!(replies, [Some((1, true)), Some((2, false))]);
    rt.shutdown();
}

#[test]
fn a_name_is_claimed_at_its_arbiter_and_told_to_every_node_once_granted() {
    let (rt, wire) = node(&["b", "c"]);
    let (holder, got) = inbox(&rt);
    let names = rt.service::<names::Names>();
    // A name whose arbiter is another node; then one whose arbiter is us.
    let find = |ours: bool| (0..100).map(|i| format!("n{i}")).find(|n| (names::Names::home_of(&rt, n.as_bytes()) == rt.node_name()) == ours).unwrap();
    let (far, near) = (find(false), find(true));
    names.claim(&rt, holder, 8, far.as_bytes(), holder).unwrap();
    let sent = wire.take();
    assert_eq!(sent.len(), 1);
    let arbiter = sent[0].node;
    assert_eq!(sent[0].kind, kind::CLAIM);
    assert_eq!(rt.whereis(far.as_bytes()), None, "not before the arbiter says so");
    // The grant comes back as a notice to the holder.
    let grant = [fields(|w| {
        w.u64(holder.raw());
        w.u64(holder.raw());
    }).to_vec(), notice::reply(8, Ok(None)).to_vec()].concat();
    rt.services().receive(&rt, &Link::new(arbiter), kind::SEND, &grant, Vec::new()).unwrap();
    assert_eq!(rt.whereis(far.as_bytes()), Some(holder));
    let told: Vec<(u16, u8)> = wire.take().iter().map(|s| (s.node, s.kind)).collect();
    assert_eq!(told, [(1, kind::NAMED), (2, kind::NAMED)]);
    assert_eq!(notice::reply_of(&got.wait_for(1)[0]), Some((8, true)));
    // Arbitrated here: granted at once, and told.
    names.claim(&rt, holder, 9, near.as_bytes(), holder).unwrap();
    assert_eq!(rt.whereis(near.as_bytes()), Some(holder));
    assert_eq!(wire.take().iter().filter(|s| s.kind == kind::NAMED).count(), 2);
    // The process ends: every node forgets its names.
    names.released(&rt, holder, &[far.as_bytes().into()]);
    assert_eq!(wire.take().iter().map(|s| s.kind).collect::<Vec<_>>(), [kind::UNNAMED, kind::UNNAMED]);
    rt.shutdown();
}

/// A link from the arbiter "b" (alias 1) that names a pid of a third
/// node, its alias 7, as one of "c" (our alias 2).
struct ViaB;

impl Peer for ViaB {
    fn alias(&self) -> u16 {
        1
    }
    fn ours(&self, pid: Pid) -> Result<Pid, String> {
        Link::new(1).ours(pid)
    }
    fn map_arrived(&self, message: &mut [u8]) -> Result<(), String> {
        crate::wire::map_pids(message, |p, _| Ok(p.aliased(if p.node() == 7 { 2 } else { 1 }, 0))).map_err(|e| e.to_string())
    }
    fn busy(&self, _: Pid) {}
}

#[test]
fn a_claim_refused_for_a_holder_on_a_node_lost_here_is_asked_again_until_the_arbiter_agrees() {
    let (rt, wire) = node(&["b", "c"]);
    let (caller, got) = inbox(&rt);
    let names = rt.service::<names::Names>();
    // A name that "b" arbitrates, with "c" or without.
    let name = (0..500).map(|i| format!("n{i}")).find(|n| &*names::Names::home_of(&rt, n.as_bytes()) == "b").unwrap();
    let answer = |reply: Message| {
        let body = [fields(|w| {
            w.u64(caller.raw());
            w.u64(caller.raw());
        }).to_vec(), reply.to_vec()].concat();
        rt.services().receive(&rt, &ViaB, kind::SEND, &body, Vec::new()).unwrap();
    };
    names.claim(&rt, caller, 8, name.as_bytes(), caller).unwrap();
    assert_eq!(wire.take().iter().map(|s| (s.node, s.kind)).collect::<Vec<_>>(), [(1, kind::CLAIM)]);
    // "c" is lost here; "b" has not noticed and refuses, naming c's holder.
    rt.services().lost(&rt, 2, "c");
    wire.links.lock().retain(|(a, _)| *a != 2);
    answer(notice::refused(8, "name taken", Pid::new(7, 5, 1)));
    assert!(got.now().is_empty(), "the refusal is held back");
    // The next tick asks again; now "b" grants it.
    rt.services().tick(&rt);
    assert_eq!(wire.take().iter().map(|s| (s.node, s.kind)).collect::<Vec<_>>(), [(1, kind::CLAIM)]);
    answer(notice::reply(8, Ok(None)));
    assert_eq!(notice::reply_of(&got.wait_for(1)[0]), Some((8, true)));
    assert_eq!(rt.whereis(name.as_bytes()), Some(caller));
    // A holder on a live node ("b"'s own) is a refusal at once.
    names.claim(&rt, caller, 9, b"other", caller).unwrap();
    let to = wire.take()[0].node;
    assert_eq!(to, 1, "one node left besides this one: {:?}", names::Names::home_of(&rt, b"other"));
    answer(notice::refused(9, "name taken", Pid::new(0, 5, 1)));
    assert_eq!(notice::reply_of(&got.wait_for(2)[1]), Some((9, false)));
    rt.shutdown();
}

#[test]
fn every_node_with_the_same_view_asks_the_same_arbiter() {
    let (one, _) = node(&["b", "c"]);
    let (two, _) = node(&["b", "c"]);
    for i in 0..50 {
        let name = format!("name{i}");
        let (a, b) = (names::Names::home_of(&one, name.as_bytes()), names::Names::home_of(&two, name.as_bytes()));
        // Both nodes are called "me": the same view, so the same choice.
        assert_eq!(a, b);
    }
    one.shutdown();
    two.shutdown();
}

#[test]
fn two_holders_after_a_partition_settle_alike_the_loser_is_told() {
    let (rt, wire) = node(&["a", "z"]);
    let (mine, got) = inbox(&rt);
    rt.enter_name(b"job", mine).unwrap();
    // "a" sorts before "me": its holder prevails, ours is told and unnamed.
    let named = |pid: Pid| notice::name_message(b"job", pid);
    rt.services().receive(&rt, &Link::new(1), kind::NAMED, &named(Pid::new(0, 5, 1)), Vec::new()).unwrap();
    assert_eq!(rt.whereis(b"job"), Some(Pid::new(1, 5, 1)));
    assert_eq!(first_str(&got.wait_for(1)[0]), b"name_lost");
    assert!(wire.take().iter().all(|s| s.kind == kind::UNNAMED));
    // "z" sorts after "a": its claim loses, nothing changes here.
    rt.services().receive(&rt, &Link::new(2), kind::NAMED, &named(Pid::new(0, 6, 1)), Vec::new()).unwrap();
    assert_eq!(rt.whereis(b"job"), Some(Pid::new(1, 5, 1)));
    // "a" is gone: the names it held go with it.
    rt.services().gone(&rt, 1, "a");
    assert_eq!(rt.whereis(b"job"), None);
    rt.shutdown();
}

#[test]
fn load_reports_choose_the_least_loaded_node_and_a_lost_one_is_forgotten() {
    let (rt, wire) = node(&["b", "c"]);
    let pools = rt.service::<pool::Pools>();
    let report = |alias, load: u64, sees: u64| {
        let body = fields(|w| {
            w.varint(load);
            w.varint(sees);
        });
        rt.services().receive(&rt, &Link::new(alias), kind::LOAD, &body, Vec::new()).unwrap();
    };
    assert_eq!(pools.sees(1), 0, "no report yet");
    report(1, 3000, 3);
    report(2, 0, 3);
    assert_eq!((pools.sees(1), pools.sees(2)), (3, 3));
    let least = pools.least_loaded(&rt);
    // This node has only its idle runtime: load 0, as c; ties go to the name first.
    assert_eq!(&*least, std::cmp::min("c", &*rt.node_name()));
    rt.services().lost(&rt, 2, "c");
    wire.links.lock().retain(|(a, _)| *a != 2);
    assert_eq!(pools.sees(2), 0);
    assert_eq!(pools.least_loaded(&rt), rt.node_name());
    pools.tell(&rt, 2);
    let sent = wire.take();
    assert_eq!(sent.iter().map(|s| (s.node, s.kind)).collect::<Vec<_>>(), [(1, kind::LOAD)]);
    assert_eq!(pools.submit(&rt, "c", text(b"t")).unwrap_err(), "no such node: c");
    pools.submit(&rt, "b", text(b"t")).unwrap();
    assert_eq!(wire.take()[0].kind, kind::TASK);
    rt.shutdown();
}

#[test]
fn results_are_asked_for_sent_and_released_by_id() {
    let (rt, wire) = node(&["b"]);
    let results = rt.service::<futures::Results>();
    let id = crate::future::FutureId { origin: 7, seq: 9 };
    results.fetch(&rt, 1, id);
    results.fetched(&rt, 1, id, text(b"v"));
    results.release(&rt, 1, id, 1 << 40);
    let sent = wire.take();
    assert_eq!(sent.iter().map(|s| s.kind).collect::<Vec<_>>(), [kind::FETCH, kind::FETCHED, kind::RELEASE]);
    let mut r = Reader::fields(&sent[2].head);
    assert_eq!((r.u64().unwrap(), r.u64().unwrap(), r.u64().unwrap()), (7, 9, 1 << 40));
    rt.shutdown();
}

#[test]
fn a_tuple_space_request_goes_to_the_home_and_junk_answers_are_errors() {
    let (rt, wire) = node(&["b"]);
    let spaces = rt.service::<spaces::Spaces>();
    let waiter = crate::waiting::Waiter { pid: Pid::new(0, 4, 1), ticket: 77 };
    assert!(spaces.linda(&rt, 1, waiter, text(b"req"), true));
    assert!(!spaces.linda(&rt, 2, waiter, text(b"req"), true), "not linked");
    let sent = wire.take();
    let mut r = Reader::fields(&sent[0].head);
    assert_eq!((sent[0].kind, read_pid(&mut r).unwrap(), r.varint().unwrap()), (kind::LINDA, waiter.pid, 77));
    // An answer of a kind no completion has.
    let answer = fields(|w| {
        w.u64(waiter.pid.raw());
        w.varint(77);
        w.byte(9);
        w.varint(0);
    });
    let e = rt.services().receive(&rt, &Link::new(1), kind::COMPLETE, &answer, Vec::new()).unwrap_err();
    assert!(e.contains("unknown completion kind 9"), "{e}");
    // Values that cannot cross: the waiter there is told Deleted instead.
    let there = crate::waiting::Waiter { pid: Pid::new(1, 4, 1), ticket: 3 };
    spaces.complete(&rt, there, crate::waiting::Completion::Count(5));
    let sent = wire.take();
    let mut r = Reader::fields(&sent[0].head);
    let (_, _, what, count) = (read_pid(&mut r).unwrap(), r.varint().unwrap(), r.byte_value().unwrap(), r.varint().unwrap());
    assert_eq!((what, count), (spaces::completion::COUNT, 5));
    assert_eq!(Reader::message(sent[0].message.as_ref().unwrap()).unwrap().1, 0, "no values");
    let _ = Tag::Nil;
    rt.shutdown();
}

#[test]
fn a_link_across_nodes_carries_exit_signals_both_ways_and_a_lost_node_gives_noconnection() {
    let (rt, wire) = node(&["b", "c"]);
    let (me, got) = inbox(&rt);
    assert!(!rt.trap_exit(me, true));
    let (far, farther) = (Pid::new(1, 4, 1), Pid::new(2, 5, 1));
    // Linking out: a LINK frame names our process, then theirs.
    assert_eq!(rt.link(me, far), crate::runtime::Linked::Yes);
    assert_eq!(rt.link(me, farther), crate::runtime::Linked::Yes);
    let sent = wire.take();
    assert_eq!((sent[0].node, sent[0].kind, pids(&sent[0].head)), (1, kind::LINK, (me, far)));
    assert_eq!((sent[1].node, sent[1].kind), (2, kind::LINK));
    // b's process ends: its EXIT names it (b's view: node 0), then ours.
    let from_b = Pid::new(0, 4, 1);
    let reason = crate::runtime::reason_message(&ExitReason::Value(text(b"boom").into_vec()));
    let head = fields(|w| {
        w.u64(from_b.raw());
        w.u64(me.raw());
    });
    rt.services().receive(&rt, &Link::new(1), kind::EXIT, &[head.to_vec(), reason.clone()].concat(), Vec::new()).unwrap();
    let exit = got.wait_for(1);
    assert_eq!(exit[0].as_ref(), &*crate::runtime::exit_message(far, &ExitReason::Value(text(b"boom").into_vec())));
    // The same signal again: the link is gone, so nothing more comes.
    rt.services().receive(&rt, &Link::new(1), kind::EXIT, &[head.to_vec(), reason].concat(), Vec::new()).unwrap();
    // c is lost: the link to its process ends with "noconnection".
    rt.services().lost(&rt, 2, "c");
    let all = got.wait_for(2);
    assert_eq!(all[1].as_ref(), &*crate::runtime::exit_message(farther, &ExitReason::Value(crate::runtime::noconnection())));
    assert_eq!(got.now().len(), 2, "one signal per link");
    // A LINK from b to a process here that is gone is answered by its EXIT.
    let gone = Pid::new(0, 900, 1);
    let head = fields(|w| {
        w.u64(from_b.raw());
        w.u64(gone.raw());
    });
    rt.services().receive(&rt, &Link::new(1), kind::LINK, &head, Vec::new()).unwrap();
    let sent = wire.take();
    assert_eq!((sent.len(), sent[0].node, sent[0].kind), (1, 1, kind::EXIT));
    // A KILL from b ends our process, trapping or not.
    let (watcher, downs) = inbox(&rt);
    rt.monitor(watcher, me);
    let head = fields(|w| w.u64(me.raw()));
    rt.services().receive(&rt, &Link::new(1), kind::KILL, &[head.to_vec(), crate::runtime::reason_message(&ExitReason::Value(text(b"stop").into_vec()))].concat(), Vec::new()).unwrap();
    let down = downs.wait_for(1);
    assert_eq!(down[0].as_ref(), &*crate::runtime::down_message(me, &ExitReason::Value(text(b"stop").into_vec())));
    rt.shutdown();
}
