//! Nodes under a hostile network: junk and cut frames on the node port, a
//! link stalled and cut by a faulty proxy, a relay that replays and
//! injects. Each is one clear line, and nothing already accepted is lost.

#[macro_use]
mod common;

use std::time::Duration;

use common::node::{join_and_run, send_and_close, FakePeer, Node};
use std::io::BufRead;
use std::process::Stdio;

use common::{cookie_in, scratch_dir, synodic_command, text, KillOnDrop, LIMIT};

#[test]
fn junk_and_cut_frames_on_the_node_port_are_one_line_each_and_the_node_goes_on() {
    let dir = scratch_dir("cluster-junk");
    let secret = "a cookie of more than sixteen bytes";
    let cookie = cookie_in(&dir, "cookie", secret);
    let a = Node::start("a", &cookie);
    let next_line = || a.stderr.recv_timeout(LIMIT).expect("the node logs one line");
    // Before the handshake: junk, then a frame cut short.
    send_and_close(FakePeer::connect(&a.addr, "", None), b"GET / HTTP/1.1\r\n\r\n");
    let line = next_line();
    assert!(line.contains("node connection from 127.0.0.1:") && line.contains("this is not a Synodic node (it speaks like an HTTP client)"), "{line}");
    send_and_close(FakePeer::connect(&a.addr, "", None), &[40, 0, 0, 0, 1, b'S']);
    let line = next_line();
    assert!(line.contains("closed the connection during the handshake"), "{line}");
    // After it: a frame of an unknown kind, one too long, one cut short, and
    // a parcel that says more than it carries.
    send_and_close(FakePeer::connect(&a.addr, "junk1@host", Some(secret)), &[1, 0, 0, 0, 99]);
    let line = next_line();
    assert!(line.contains("link to node junk1@host closed: unknown frame kind 99"), "{line}");
    send_and_close(FakePeer::connect(&a.addr, "junk2@host", Some(secret)), &[0xff, 0xff, 0xff, 0x7f, 4]);
    let line = next_line();
    assert!(line.contains("link to node junk2@host closed: frame of") && line.contains("at most 1048576"), "{line}");
    send_and_close(FakePeer::connect(&a.addr, "junk3@host", Some(secret)), &[20, 0, 0, 0, 4, 1, 2]);
    let line = next_line();
    assert!(line.contains("link to node junk3@host closed: the peer closed the connection in the middle of a frame"), "{line}");
    send_and_close(FakePeer::connect(&a.addr, "junk4@host", Some(secret)), &[6, 0, 0, 0, 5, 1, 10, 1, 4, 4]);
    let line = next_line();
    assert!(line.contains("link to node junk4@host closed: parcel 1: its pieces do not add up"), "{line}");
    // Past the handshake, bytes that are not sealed records (a frame as a
    // relay would inject it) close the link before anything is read.
    let mut unsealed = FakePeer::connect(&a.addr, "junk5@host", Some(secret));
    unsealed.sealer = None;
    send_and_close(unsealed, &[3, 0, 0, 0, 8, 1, 1].repeat(4));
    let line = next_line();
    assert!(line.contains("link to node junk5@host closed: a record failed its authentication check"), "{line}");
    // Nothing else was logged, and the node still takes a program.
    assert!(a.stderr.try_recv().is_err());
    let out = join_and_run(&dir, "b", &a.addr, &cookie, "local s = require 'synodic' assert(#s.nodes() == 2, #s.nodes()) print('still ok')");
    assert!(text(&out.stdout).contains("still ok"), "{}", text(&out.stderr));
}

/// A TCP proxy between two nodes standing in for a network fault: it
/// forwards one connection, stops forwarding (both ways) during `stall`,
/// counted from that connection's start, and cuts the connection at `cut`.
fn faulty_link(to: String, stall: std::ops::Range<Duration>, cut: Duration) -> String {
    use std::net::{TcpListener, TcpStream};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        let (inbound, _) = listener.accept().unwrap();
        let outbound = TcpStream::connect(&to).unwrap();
        let (a, b) = (inbound.try_clone().unwrap(), outbound.try_clone().unwrap());
        let (stall_there, start) = (stall.clone(), std::time::Instant::now());
        std::thread::spawn(move || pump(a, b, start, stall_there, cut));
        pump(outbound, inbound, start, stall, cut);
    });
    addr
}

/// One direction of [`faulty_link`].
fn pump(mut from: std::net::TcpStream, mut to: std::net::TcpStream, start: std::time::Instant, stall: std::ops::Range<Duration>, cut: Duration) {
    use std::io::{Read, Write};
    use std::net::Shutdown;
    from.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
    let mut buf = vec![0; 64 << 10];
    loop {
        let now = start.elapsed();
        if now >= cut {
            let _ = from.shutdown(Shutdown::Both);
            let _ = to.shutdown(Shutdown::Both);
            return;
        }
        if stall.contains(&now) {
            std::thread::sleep(stall.end - now);
            continue;
        }
        match from.read(&mut buf) {
            Ok(0) => return,
            Ok(n) if to.write_all(&buf[..n]).is_ok() => {}
            Ok(_) => return,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => return,
        }
    }
}

#[test]
fn a_stalled_link_loses_nothing_and_a_cut_one_is_noconnection() {
    let dir = scratch_dir("cluster-stall");
    let cookie = cookie_in(&dir, "cookie", "a cookie of more than sixteen bytes");
    // The node's name sorts after the program's, so only the program dials
    // (through the proxy): no second, direct link forms beside it.
    let a = Node::start("z", &cookie);
    let proxy = faulty_link(a.addr.clone(), Duration::from_millis(600)..Duration::from_millis(1600), Duration::from_millis(4000));
    let out = join_and_run(
        &dir,
        "b",
        &proxy,
        &cookie,
        r#"local s = require "synodic"
           local me, a = s.self(), s.nodes()[2]
           assert(a:match("^z@"), a)
           local echo = s.spawn_on(a, function()
             local s = require "synodic"
             while true do local from, i = s.receive() s.send(from, i) end
           end)
           s.monitor(echo)
           s.monitor_node(a)
           -- Sent across the stall: all come back, in order, once.
           for i = 1, 150 do s.send(echo, me, i) s.sleep(0.01) end
           for i = 1, 150 do
             local got = s.receive(10)
             assert(got == i, ("%d came back as %s"):format(i, tostring(got)))
           end
           -- The cut: the process there is unreachable, the node lost.
           local tag, who, why = s.receive_match("DOWN", 10)
           assert(who == echo and why == "noconnection", tostring(why))
           assert(s.receive_match("nodedown", 10) == "nodedown")
           -- Membership still lists z: this node dials it again, directly.
           -- (No event says a node is back: look, for at most 10 s.)
           local back = false
           for _ = 1, 200 do
             back = #s.nodes() == 2
             if back then break end
             s.sleep(0.05)
           end
           assert(back, "the link to z is back")
           local echo = s.spawn_on(a, function(p) require("synodic").send(p, "again") end, me)
           assert(s.receive(10) == "again")
           print("stall and cut ok")"#,
    );
    assert!(text(&out.stdout).contains("stall and cut ok"), "{}\n{}", text(&out.stdout), text(&out.stderr));
}

/// A relay between a program and a node (what `--advertise` invites) sees
/// the handshake pass, then tampers with the link: a record it saw,
/// replayed, and a frame of its own, written in clear. Either closes the
/// link with one line on the node's stderr and reaches no process; the
/// program hears of the loss as of any other.
#[test]
fn a_relay_can_neither_replay_nor_inject() {
    let dir = scratch_dir("cluster-relay");
    let cookie = cookie_in(&dir, "cookie", "a cookie of more than sixteen bytes");
    let z = Node::start("z", &cookie);
    for attack in ["replay", "inject"] {
        let relay = common::proxy::Proxy::start(&z.addr);
        let prog = dir.join(format!("{attack}.lua"));
        std::fs::write(
            &prog,
            r#"local s = require "synodic"
               local z = s.nodes()[2]
               local echo = s.spawn_on(z, function()
                 local s = require "synodic"
                 while true do local from, i = s.receive() s.send(from, i) end
               end)
               s.monitor_node(z)
               s.send(echo, s.self(), 1)
               assert(s.receive(10) == 1)
               print("linked") io.stdout:flush()
               assert(s.receive_match("nodedown", 20) == "nodedown")
               print("lost")"#,
        )
        .unwrap();
        let mut child = synodic_command().args(["run", "--join", &relay.addr, "--name", attack, "--cookie-file"]).arg(&cookie).arg(&prog).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let program = KillOnDrop(child);
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        assert_eq!(line, "linked\n");
        match attack {
            "replay" => {
                // The dialer's hello, then its first record: sent again.
                let seen = relay.upstream();
                let hello = 4 + u32::from_le_bytes(seen[..4].try_into().unwrap()) as usize;
                let record = 4 + u32::from_le_bytes(seen[hello..hello + 4].try_into().unwrap()) as usize + 16;
                relay.inject(&seen[hello..hello + record]);
            }
            _ => {
                let mut frame = Vec::new();
                synodic_net::frame::Frame::Service { kind: synodic_core::dist::kind::LOAD, head: vec![0, 1], message: Vec::new() }.encode(&mut frame);
                relay.inject(&frame.repeat(8));
            }
        }
        line.clear();
        stdout.read_line(&mut line).unwrap();
        assert_eq!(line, "lost\n", "the program hears of the loss ({attack})");
        let logged = z.stderr.recv_timeout(LIMIT).expect("the node says why it closed the link");
        assert!(logged.contains(&format!("link to node {attack}@")) && logged.contains("a record failed its authentication check"), "{attack}: {logged}");
        drop(program);
    }
}
