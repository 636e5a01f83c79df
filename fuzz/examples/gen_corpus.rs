//! Writes the seed corpus of every target to `fuzz/corpus/<target>/`: a few
//! valid inputs of each, made with the library's own encoders, for the
//! fuzzer to start from. Run it again (`scripts/fuzz corpus`) when a
//! format changes; its output is committed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use synodic_core::linda_remote::{Op, Request, Target};
use synodic_core::dist::carry::Carried;
use synodic_core::dist::kind;
use synodic_core::dist::spaces::completion;
use synodic_core::wire::{self, Tag, Writer};
use synodic_core::{NodeId, Pid};
use synodic_net::frame::Frame;
use synodic_net::handshake::{Challenge, Hello, Message, Purpose, Welcome};
use synodic_net::parcel::Parcel;

fn main() {
    let root = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/corpus").into()));
    frame(&root.join("frame"));
    services(&root.join("service"));
    handshake(&root.join("handshake"));
    record(&root.join("record"));
    wire(&root.join("wire"));
    parcel(&root.join("parcel"));
}

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(name), bytes).unwrap();
}

/// A message of Lua-ish values: what a process sends.
fn message() -> Vec<u8> {
    let mut w = Writer::message(4);
    w.str(b"hello");
    w.int(-42);
    w.float(2.5);
    // {1, 2, x = true}
    w.tag(Tag::Table);
    w.varint(2);
    w.buffer().extend_from_slice(&1u32.to_le_bytes());
    w.int(1);
    w.int(2);
    w.str(b"x");
    w.bool(true);
    w.finish_small()
}

/// A service's frame: its kind, fields written by `fields`, then `message`.
fn service(kind: u8, fields: impl FnOnce(&mut Writer), message: Vec<u8>) -> Frame {
    let mut w = Writer::fields_after(Vec::new());
    fields(&mut w);
    Frame::Service { kind, head: w.finish_small(), message }
}

fn frames() -> Vec<Frame> {
    let (p, q) = (Pid::new(0, 3, 1), Pid::new(2, 9, 5));
    let m = message();
    let two = |a: Pid, b: Pid| move |w: &mut Writer| {
        w.u64(a.raw());
        w.u64(b.raw());
    };
    let tagged = |a: Pid, tag: u64| move |w: &mut Writer| {
        w.u64(a.raw());
        w.varint(tag);
    };
    vec![
        Frame::Node { alias: 4, node: NodeId { name: "a@host".into(), incarnation: 77 } },
        service(kind::SEND, two(p, q), m.clone()),
        Frame::Part { stream: 12, total: 100, bytes: vec![1; 20] },
        service(kind::MONITOR, two(p, q), Vec::new()),
        service(kind::DEMONITOR, two(p, q), Vec::new()),
        service(kind::SPAWN, tagged(q, 5), m.clone()),
        service(kind::LOAD, |w| {
            w.varint(1500);
            w.varint(3);
        }, Vec::new()),
        service(kind::CLAIM, tagged(p, 3), m.clone()),
        service(kind::NAMED, |_| {}, m.clone()),
        service(kind::UNNAMED, |_| {}, m.clone()),
        service(kind::TASK, |_| {}, m.clone()),
        service(kind::FETCH, |w| {
            w.u64(1 << 60);
            w.u64(4);
        }, Vec::new()),
        service(kind::FETCHED, |w| {
            w.u64(9);
            w.u64(4);
        }, m.clone()),
        service(kind::RELEASE, |w| {
            w.u64(9);
            w.u64(4);
            w.u64(1 << 61);
        }, Vec::new()),
        service(kind::LINDA, tagged(q, 1 << 40), linda_request()),
        service(kind::COMPLETE, |w| {
            w.u64(p.raw());
            w.varint(7);
            w.byte(completion::COUNT);
            w.varint(12);
        }, m),
        Frame::Busy { pid: q },
        Frame::Ready { pid: p },
    ]
}

/// The services' frames as `Services::receive` takes them: kind, then body.
fn services(dir: &Path) {
    for (i, f) in frames().iter().enumerate() {
        if let Frame::Service { kind, .. } = f {
            write(dir, &format!("{kind:02}-{i:02}"), &f.encode_bare());
        }
    }
}

fn frame(dir: &Path) {
    let mut all = Vec::new();
    for (i, f) in frames().iter().enumerate() {
        // As the stream carries it, and bare (kind, then body).
        let mut one = Vec::new();
        f.encode(&mut one);
        write(dir, &format!("stream-{i:02}"), &one);
        write(dir, &format!("bare-{i:02}"), &f.encode_bare());
        all.extend_from_slice(&one);
    }
    write(dir, "stream-all", &all);
    // A part whose header announces payload that follows it.
    let mut part = Vec::new();
    Frame::encode_part_header(&mut part, 3, 9, 9);
    part.extend_from_slice(b"abcdefghi");
    Frame::Busy { pid: Pid::new(0, 3, 1) }.encode(&mut part);
    write(dir, "stream-part", &part);
}

fn messages() -> Vec<Message> {
    let node = NodeId { name: "fuzz".into(), incarnation: 1 };
    vec![
        Message::Challenge(Challenge { nonce: [1; 32], ephemeral: [9; 32] }),
        Message::Hello(Hello { purpose: Purpose::Node, plain: false, node: node.clone(), listen: "127.0.0.1:4000".into(), nonce: [3; 32], ephemeral: [4; 32], proof: [5; 32] }),
        Message::Welcome(Welcome { plain: true, node, listen: String::new(), proof: [6; 32] }),
        Message::Refused("wrong cookie".into()),
    ]
}

fn handshake(dir: &Path) {
    let mut stream = vec![1];
    for (i, m) in messages().iter().enumerate() {
        let bytes = m.encode();
        // Mode 0: kind, body.
        write(dir, &format!("decode-{i}"), &[&[0][..], &bytes[4..]].concat());
        // Mode 1: one framed message.
        write(dir, &format!("stream-{i}"), &[&[1][..], &bytes].concat());
        stream.extend_from_slice(&bytes);
    }
    write(dir, "stream-all", &stream);
    // Mode 2: flags, then one alteration per message.
    write(dir, "relay-untouched", &[2, 0]);
    write(dir, "relay-plain", &[2, 4 | 8, 0, 0, 0]);
    write(dir, "relay-listen", &[2, 16, 0, 0, 0]);
    write(dir, "relay-wrong-cookie", &[2, 1, 0, 0, 0, 0]);
    write(dir, "relay-console", &[2, 2, 0, 0, 0, 0]);
    write(dir, "relay-flip-hello", &[2, 0, 0, 1, 40, 0, 1]);
    write(dir, "relay-cut-welcome", &[2, 0, 0, 0, 2, 20, 0]);
    write(dir, "relay-extra", &[2, 0, 4, 5, 1, 0, 0, 0, 2, 0, 0]);
}

fn record(dir: &Path) {
    // Encrypted: seal, deliver.
    write(dir, "seal-deliver", &[0, 0, 5, b'h', b'e', b'l', b'l', b'o', 4, 0xff, 0xff]);
    // Authenticated only: two records, the first delivered in pieces.
    write(dir, "plain-pieces", &[1, 0, 3, b'a', b'b', b'c', 1, 2, b'd', b'e', 1, b'f', 4, 3, 0, 4, 7, 0, 4, 0xff, 0xff]);
    // A byte changed in the second record.
    write(dir, "flip", &[0, 0, 2, b'o', b'k', 0, 3, b'b', b'a', b'd', 4, 22, 0, 2, 5, 0, 0x40, 4, 0xff, 0xff]);
    // Bytes no sealer wrote.
    write(dir, "inject", &[1, 0, 1, b'x', 3, 6, 4, 0, 0, 0, 1, 2, 4, 0xff, 0xff]);
    // An empty record.
    write(dir, "empty", &[0, 0, 0, 4, 0xff, 0xff]);
}

fn linda_request() -> Vec<u8> {
    let header = Request { op: Op::Find, flags: 1 | 2, target: Target::Named(b"jobs"), number: 7, shape: &[0, 1, 0x08, 2] }.encode();
    let mut w = Writer::message(1);
    w.int(5);
    wire::prepend_str(&header, &w.finish_small()).unwrap()
}

fn wire(dir: &Path) {
    write(dir, "message", &message());
    let mut w = Writer::message(6);
    w.pid(Pid::new(1, 9, 2));
    w.tag(Tag::Nil);
    w.bool(false);
    w.int(i64::MIN);
    w.float(-0.0);
    w.str(b"");
    write(dir, "scalars", &w.finish_small());
    // A table holding itself, and a shared buffer (attachment 0).
    let mut w = Writer::message(2);
    w.tag(Tag::Table);
    w.varint(1);
    w.buffer().extend_from_slice(&0u32.to_le_bytes());
    w.tag(Tag::Ref);
    w.varint(0);
    w.tag(Tag::Shared);
    w.byte(wire::shared::BUFFER);
    w.byte(0);
    w.varint(0);
    write(dir, "self-table-shared", &w.finish_small());
    // A function with two upvalues (one shared with function 0), a library
    // function, the globals.
    let mut w = Writer::message(3);
    w.tag(Tag::Function);
    w.buffer().extend_from_slice(&4u32.to_le_bytes());
    w.raw(b"\x1bLua");
    w.varint(2);
    w.int(1);
    w.tag(Tag::SharedUpvalue);
    w.varint(0);
    w.varint(1);
    w.tag(Tag::Library);
    w.bytes(b"string");
    w.bytes(b"format");
    w.tag(Tag::Globals);
    write(dir, "function-library", &w.finish_small());
    // A tuple-space request (header string, then the template's actuals),
    // and a bare header.
    write(dir, "linda-request", &linda_request());
    let out = Request { op: Op::Out, flags: 0, target: Target::Private(3), number: 0, shape: &[] }.encode();
    let mut w = Writer::message(2);
    w.str(b"k");
    w.pid(Pid::new(0, 4, 1));
    write(dir, "linda-out", &wire::prepend_str(&out, &w.finish_small()).unwrap());
    write(dir, "linda-header", &out);
}

/// The input of the parcel target that delivers `parcel` part by part:
/// each part's first bytes through `begin`, the rest through `room`.
fn parcel_program(parcel: &mut Parcel) -> Vec<u8> {
    let mut program = Vec::new();
    while let Some((header, slices)) = parcel.next_part() {
        let mut d = synodic_net::frame::Decoder::authenticated();
        d.space(header.len()).extend_from_slice(&header);
        let Ok(Some(synodic_net::frame::Next::Part { stream, total, .. })) = d.next() else { panic!("a part header") };
        let payload: Vec<u8> = slices.iter().flat_map(|s| s.as_slice().to_vec()).collect();
        let first = payload.len().min(48);
        program.push(0);
        program.push(stream as u8);
        program.extend_from_slice(&(total as u32).to_le_bytes());
        program.extend_from_slice(&(first as u16).to_le_bytes());
        program.extend_from_slice(&payload[..first]);
        for piece in payload[first..].chunks(40) {
            program.push(1);
            program.extend_from_slice(&(piece.len() as u16).to_le_bytes());
            program.extend_from_slice(piece);
        }
        program.push(2);
    }
    program
}

fn parcel(dir: &Path) {
    let bytes = |v: Vec<u8>| Carried::Bytes(Arc::new(v.into()));
    let send = service(kind::SEND, |w| {
        w.u64(Pid::new(0, 1, 1).raw());
        w.u64(Pid::new(1, 2, 1).raw());
    }, message());
    let cases: Vec<(&str, Frame, Vec<Carried>)> = vec![
        ("send", send.clone(), vec![]),
        ("send-buffer", send.clone(), vec![bytes((0..100).collect())]),
        ("send-attachments", send, vec![bytes(vec![7; 30]), Carried::Future(vec![4, 5, 6]), bytes(Vec::new()), Carried::Space(vec![0, 1, b'x'])]),
        ("named", service(kind::NAMED, |_| {}, message()), vec![bytes(vec![1, 2, 3])]),
        ("linda", service(kind::LINDA, |w| {
            w.u64(Pid::new(0, 3, 1).raw());
            w.varint(9);
        }, linda_request()), vec![]),
    ];
    for (i, (name, frame, attachments)) in cases.into_iter().enumerate() {
        let mut p = Parcel::new(frame, attachments).unwrap();
        p.stream = i as u64;
        write(dir, name, &parcel_program(&mut p));
    }
}
