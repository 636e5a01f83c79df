//! Two links over a loopback TCP connection, without a cluster: frames
//! queued on one come out of the other in order, sealed and opened; pids
//! are named by alias as announced; flow control slows senders and lets
//! them go; a closed link takes nothing; a long message left to the
//! writer task counts as written behind until it is. Waits are for the socket to be
//! readable (poll), bounded; nothing sleeps.

use std::net::{TcpListener, TcpStream};
use std::sync::Arc;

use synodic_core::dist::{Head, Outgoing, Peer};
use synodic_core::runtime::Config;
use synodic_core::wire::Writer;
use synodic_core::{Message, NodeId, Pid, Runtime};

use super::*;
use crate::frame::{Arrival, Frame};
use crate::handshake::Session;
use crate::record::{Opener, Protection, RecordKey, Sealer, KEY_LEN};
use crate::Io;

/// How long a test waits for bytes before it fails.
const LIMIT_MS: i32 = 20_000;

/// Keys for one direction: what one end seals, the other opens.
fn keys(byte: u8) -> (Sealer, Opener) {
    let p = Protection::Encrypted;
    (Sealer::new(RecordKey::new([byte; KEY_LEN]), p), Opener::new(RecordKey::new([byte; KEY_LEN]), p))
}

/// Both ends of a link between this node ("a") and "b"; b's end lives in
/// a runtime of its own.
struct Pair {
    here: Arc<Link>,
    there: Arc<Link>,
    rt: Runtime,
    other: Runtime,
    _io: Io,
}

fn pair() -> Pair {
    let io = Io::start().unwrap();
    let rt = Runtime::start(Config { workers: 1, node_name: "a".into(), ..Default::default() }).unwrap();
    let other = Runtime::start(Config { workers: 1, node_name: "b".into(), ..Default::default() }).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let dialed = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (accepted, _) = listener.accept().unwrap();
    for s in [&dialed, &accepted] {
        s.set_nonblocking(true).unwrap();
    }
    let ((seal_ab, open_ab), (seal_ba, open_ba)) = (keys(1), keys(2));
    let b_id = NodeId { name: "b".into(), incarnation: 2 };
    let a_id = rt.nodes().me();
    let alias_b = rt.nodes().alias(&b_id).unwrap();
    let alias_a = other.nodes().alias(&a_id).unwrap();
    let (rt2, other2) = (rt.clone(), other.clone());
    let (here, there) = io.run(async move {
        let here = Link::start(rt2, b_id, alias_b, (true, [0; 32]), 1, dialed, Session { sealer: seal_ab, opener: open_ba }).unwrap();
        let there = Link::start(other2, a_id, alias_a, (false, [0; 32]), 2, accepted, Session { sealer: seal_ba, opener: open_ab }).unwrap();
        (here, there)
    });
    Pair { here, there, rt, other, _io: io }
}

impl Drop for Pair {
    fn drop(&mut self) {
        self.here.close();
        self.there.close();
        self.rt.shutdown();
        self.other.shutdown();
    }
}

/// What arrived on `link`, read until `n` frames have come.
fn read(link: &Arc<Link>, n: usize) -> Vec<Frame> {
    let mut got = Vec::new();
    while got.len() < n {
        let mut fd = libc::pollfd { fd: link.fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd, for the duration of the call.
        let ready = unsafe { libc::poll(&mut fd, 1, LIMIT_MS) };
        assert!(ready > 0, "{} of {n} frames came", got.len());
        let drained = link.drain(&mut |arrival, _| {
            got.push(match arrival {
                Arrival::Frame(f) => f,
                Arrival::Service { kind, body } => Frame::Service { kind, head: Vec::new(), message: body.to_vec() },
            });
            Ok(())
        });
        assert!(matches!(drained, Ok(Drained::Open | Drained::Budget)), "{drained:?}");
    }
    got
}

/// A message holding one pid.
fn naming(pid: Pid) -> Message {
    let mut w = Writer::message(1);
    w.pid(pid);
    Message::from_vec(w.finish_small())
}

#[test]
fn frames_queued_at_one_end_come_out_of_the_other_in_order() {
    let p = pair();
    for i in 0..3u8 {
        assert!(p.here.push_service(Outgoing::fields(40 + i, Head::from_vec(vec![i; 3]))));
    }
    let mut w = Writer::message(1);
    w.str(&vec![7u8; 3 * crate::frame::PART]);
    let long = w.finish_small();
    assert!(p.here.push_service(Outgoing::carrying(41, Head::from_vec(vec![1]), Message::from_vec(long.clone()))));
    let got = read(&p.there, 4);
    assert_eq!(&got[..3], &[0u8, 1, 2].map(|i| Frame::Service { kind: 40 + i, head: Vec::new(), message: vec![i; 3] }));
    let Frame::Service { kind: 41, message, .. } = &got[3] else { panic!("{:?}", got[3]) };
    assert_eq!((message[0], &message[1..]), (1, &long[..]), "a long message, as a parcel, whole");
}

#[test]
fn a_pid_of_a_third_node_is_announced_before_the_message_that_names_it() {
    let p = pair();
    let c = NodeId { name: "c".into(), incarnation: 3 };
    let alias_c = p.rt.nodes().alias(&c).unwrap();
    let pid = Pid::new(alias_c, 5, 1).aliased(alias_c, p.rt.nodes().epoch(alias_c));
    assert!(p.here.push_service(Outgoing::carrying(40, Head::new(), naming(pid))));
    let got = read(&p.there, 2);
    assert_eq!(got[0], Frame::Node { alias: alias_c, node: c.clone() });
    // Once announced, b maps the alias to its own for c; before, it refuses.
    let over = Over(&p.there);
    assert!(over.ours(Pid::new(alias_c, 5, 1)).unwrap_err().contains("never announced"));
    let theirs_for_c = p.other.nodes().alias(&c).unwrap();
    p.there.announced(alias_c, theirs_for_c);
    assert_eq!(over.ours(Pid::new(alias_c, 5, 1)).unwrap().node(), theirs_for_c);
    // Our own pids (node 0 in a's frames) are a's node here, b's alias for it.
    assert_eq!(over.ours(Pid::new(0, 5, 1)).unwrap().node(), p.there.alias);
    let Frame::Service { message, .. } = &got[1] else { panic!() };
    assert!(over.map_arrived(&mut message.clone()).is_ok(), "the message's pid maps once c is announced");
}

#[test]
fn a_busy_receiver_slows_its_senders_until_it_is_ready() {
    let p = pair();
    let (to, sender) = (Pid::new(p.here.alias, 3, 1), Pid::new(0, 9, 1));
    assert!(p.here.room_for(to, sender), "nobody is busy");
    p.here.set_busy(to, true);
    assert!(!p.here.room_for(to, sender), "a sender to a busy process waits");
    assert!(p.here.room_for(Pid::new(p.here.alias, 4, 1), sender), "to another process it goes on");
    assert_eq!(p.here.outbox.lock().slowed, vec![sender]);
    assert!(!p.here.room_for(to, sender));
    assert_eq!(p.here.outbox.lock().slowed, vec![sender], "listed once");
    p.here.set_busy(to, false);
    assert!(p.here.outbox.lock().slowed.is_empty(), "woken when it is ready");
    assert!(p.here.room_for(to, sender));
}

#[test]
fn the_busy_notice_goes_once_and_ready_follows_it() {
    let p = pair();
    // A process of b's that holds more than it takes.
    let to = Pid::new(0, 3, 1);
    Over(&p.there).busy(to);
    Over(&p.there).busy(to);
    // Not busy by b's runtime (no such process): nothing is told.
    assert!(p.there.told_busy.lock().is_empty());
    p.there.told_busy.lock().insert(to);
    assert!(p.there.push(|out| Frame::Ready { pid: to }.encode(&mut out.bytes)));
    assert_eq!(read(&p.here, 1), [Frame::Ready { pid: to }]);
}

#[test]
fn a_closed_link_takes_nothing_and_a_sender_is_not_held() {
    let p = pair();
    let (to, sender) = (Pid::new(p.here.alias, 3, 1), Pid::new(0, 9, 1));
    p.here.set_busy(to, true);
    p.here.close();
    assert!(!p.here.push_service(Outgoing::fields(40, Head::new())));
    assert!(p.here.room_for(to, sender), "a closed link holds no sender back");
}

#[test]
fn small_parcels_go_among_frames_and_keep_their_order_behind_a_long_one() {
    use synodic_core::dist::carry::Carried;
    let p = pair();
    // A message carrying one buffer of `len` bytes, each `byte`.
    let carrying = |kind: u8, byte: u8, len: usize| {
        let payload: synodic_core::Attachment = Arc::new(synodic_core::payload::Payload::from(vec![byte; len]));
        let mut w = Writer::message(1);
        w.int(byte as i64);
        Outgoing::carrying(kind, Head::new(), Message::with_attachments(w.finish_small(), vec![payload]))
    };
    assert!(p.here.push_service(carrying(40, 1, 3)), "small: goes whole");
    assert!(p.here.push_service(carrying(41, 2, 3 * crate::frame::PART)), "long: cut into parts");
    assert!(p.here.push_service(carrying(42, 3, 3)), "small, behind the long one: waits its turn");
    assert!(p.here.push_service(Outgoing::fields(43, Head::from_vec(vec![4]))));
    let mut got = Vec::new();
    while got.len() < 4 {
        let mut fd = libc::pollfd { fd: p.there.fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd, for the duration of the call.
        assert!(unsafe { libc::poll(&mut fd, 1, LIMIT_MS) } > 0, "{} of 4 frames came", got.len());
        p.there
            .drain(&mut |arrival, shared| {
                let Arrival::Service { kind, .. } = arrival else { panic!("not a service's frame") };
                let bytes: Vec<(u8, usize)> = shared.iter().map(|c| match c {
                    Carried::Bytes(b) => (b.first().copied().unwrap_or(0), b.len()),
                    _ => panic!("not bytes"),
                }).collect();
                got.push((kind, bytes));
                Ok(())
            })
            .unwrap();
    }
    // Parcels go one at a time, in order; the plain frame may pass the
    // long one (nothing waits behind a long parcel but what goes to its
    // process), depending on how far the writer has cut it.
    let parcels: Vec<_> = got.iter().filter(|(kind, _)| *kind != 43).cloned().collect();
    assert_eq!(parcels, vec![(40, vec![(1, 3)]), (41, vec![(2, 3 * crate::frame::PART)]), (42, vec![(3, 3)])]);
    assert!(got.contains(&(43, vec![])), "{got:?}");
}

#[test]
fn a_long_message_left_to_the_writer_task_counts_as_writing_behind_until_written() {
    let p = pair();
    // 16 MiB that b does not read yet: the socket fills, and a flush that
    // finds it full leaves the rest to the writer task.
    let len = 16 << 20;
    let payload: synodic_core::Attachment = Arc::new(synodic_core::payload::Payload::from(vec![5u8; len]));
    let mut w = Writer::message(1);
    w.int(5);
    assert!(p.here.push_service(Outgoing::carrying(40, Head::new(), Message::with_attachments(w.finish_small(), vec![payload]))));
    assert!(!p.here.behind.load(Relaxed), "queued, nothing left behind yet");
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(LIMIT_MS as u64);
    // (The writer task may be writing itself when a flush comes: that
    // flush leaves nothing. Once the socket is full, one does.)
    while !p.here.behind.load(Relaxed) {
        assert!(std::time::Instant::now() < deadline, "no flush left the message to the writer task");
        p.here.flush();
        std::thread::yield_now();
    }
    assert!(writing_behind(), "the node knows a writer task writes behind");
    assert_eq!(read(&p.there, 1).len(), 1, "the message came whole");
    while p.here.behind.load(Relaxed) {
        assert!(std::time::Instant::now() < deadline, "the writer task still counts as writing after it wrote all");
        std::thread::yield_now();
    }
}

#[test]
fn the_other_nodes_a_message_names_are_announced_once_each() {
    let mut named = Named::default();
    // This node (0) never; each other once, past the few kept inline too.
    for alias in [3, 0, 5, 3, 7, 9, 11, 5, 13, 0, 13, 11] {
        named.insert(alias);
    }
    assert_eq!(named.iter().collect::<Vec<u16>>(), vec![3, 5, 7, 9, 11, 13]);
}

#[test]
fn frames_sealed_by_the_writer_under_the_lock_and_outside_it_arrive_alike() {
    let p = pair();
    let frame = |i: u8, len: usize| Frame::Service { kind: 40, head: Vec::new(), message: vec![i; len] };
    // One small frame (sealed under the outbox's lock), then more than
    // that path takes at once (sealed outside it), then a small one again:
    // the records' numbers run on across both, or the peer refuses them.
    let rounds: [&[(u8, usize)]; 3] = [&[(1, 10)], &[(2, 1500), (3, 1500), (4, 1500), (5, 1500)], &[(6, 10)]];
    for frames in rounds {
        for &(i, len) in frames {
            assert!(p.here.push_service(Outgoing::fields(40, Head::from_vec(vec![i; len]))));
        }
        let got = read(&p.there, frames.len());
        assert_eq!(got, frames.iter().map(|&(i, len)| frame(i, len)).collect::<Vec<_>>());
    }
}

#[test]
fn a_retired_link_writes_what_it_held_then_refuses_what_comes_after() {
    let p = pair();
    assert!(p.here.push_service(Outgoing::fields(40, Head::from_vec(vec![1; 10]))));
    p.here.retire();
    assert_eq!(read(&p.there, 1), vec![Frame::Service { kind: 40, head: Vec::new(), message: vec![1; 10] }], "what it held went out");
    // Its writer closes it once drained, in the hold of the lock that
    // found it so: from then on a push is refused, never queued unwritten.
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(LIMIT_MS as u64);
    while p.here.push_service(Outgoing::fields(40, Head::from_vec(vec![2; 10]))) {
        assert!(std::time::Instant::now() < deadline, "a retired link still takes frames");
        assert!(p.here.outbox.lock().draining, "retired");
        std::thread::yield_now();
    }
    assert!(p.here.outbox.lock().closed);
}
