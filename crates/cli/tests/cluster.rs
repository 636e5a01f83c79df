//! Nodes as real OS processes on 127.0.0.1: `synodic node` daemons and
//! programs that join them, each run with a time limit and every node
//! killed when its test ends.

#[macro_use]
mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use common::node::{closed_within, join_and_run, stderr_lines, FakePeer, Node};
use common::{cookie_in, output_within, scratch_dir, synodic_command, text, KillOnDrop, LIMIT};

/// Runs `tests/lua/cluster/NAME.lua` (its first line asks for `--nodes N`)
/// with a cookie of its own.
fn run_cluster_script(name: &str) {
    let dir = scratch_dir(&format!("cluster-script-{name}"));
    let cookie = cookie_in(&dir, "cookie", "a cookie for the cluster scripts");
    common::run_lua_script_with(&cluster_scripts_dir(), name, &["--cookie-file".as_ref(), cookie.as_os_str()]);
}

fn cluster_scripts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/lua/cluster")
}

script_tests!(run_cluster_script, cluster_scripts_dir, "cluster.rs"; remote_spawn, remote_send, remote_monitor, node_lost, names, long_messages, huge_message, slow_receiver, linda_private_gc, linda_full, stall_heal, backpressure, agents, busy_node, futures, skel, linda, linda_lost, linda_buffers, entities, sockets, links, supervisor, bind, idle_with_socket, held_writes, parked_link_wakes);

#[test]
fn a_program_joins_a_node_and_both_are_listed() {
    let dir = scratch_dir("cluster-join");
    let cookie = cookie_in(&dir, "cookie", "a cookie of more than sixteen bytes");
    let a = Node::start("a", &cookie);
    let out = join_and_run(
        &dir,
        "b",
        &a.addr,
        &cookie,
        r#"local s = require "synodic"
           local nodes = s.nodes()
           assert(#nodes == 2, #nodes)
           assert(s.node():match("^b@"), s.node())
           assert(nodes[1]:match("^a@") and nodes[2] == s.node(), table.concat(nodes, " "))
           print("joined ok")"#,
    );
    assert!(out.status.success() && text(&out.stdout).contains("joined ok"), "{}\n{}", text(&out.stdout), text(&out.stderr));
}

#[test]
fn a_wrong_cookie_is_one_line_on_each_side() {
    let dir = scratch_dir("cluster-cookie");
    let cookie = cookie_in(&dir, "cookie", "a cookie of more than sixteen bytes");
    let wrong = cookie_in(&dir, "wrong", "another cookie, also long enough");
    let a = Node::start("a", &cookie);
    let out = join_and_run(&dir, "intruder", &a.addr, &wrong, "print('never runs')");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(!text(&out.stdout).contains("never runs"));
    let last = stderr.lines().last().unwrap_or_default();
    assert!(last.contains(&format!("cannot join the cluster through {}: wrong cookie", a.addr)), "{stderr}");
    let logged = a.stderr.recv_timeout(LIMIT).expect("the node logs the refused connection");
    assert!(logged.contains("node connection from 127.0.0.1:") && logged.contains("wrong cookie"), "{logged}");
    // A node daemon with the wrong cookie ends too, at once, with one line.
    let mut node = synodic_command();
    node.args(["node", "--listen", "127.0.0.1:0", "--name", "stranger", "--join", &a.addr, "--cookie-file"]).arg(&wrong);
    let out = output_within(node, Duration::from_secs(20), "a node joining with the wrong cookie");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let last = text(&out.stderr).lines().last().unwrap_or_default().to_string();
    assert!(last.contains(&format!("cannot join the cluster through {}: wrong cookie", a.addr)), "{}", text(&out.stderr));
    let logged = a.stderr.recv_timeout(LIMIT).expect("the node logs the refused connection");
    assert!(logged.contains("wrong cookie"), "{logged}");
    // The node goes on: a program with the right cookie still joins.
    let out = join_and_run(&dir, "friend", &a.addr, &cookie, "assert(#require('synodic').nodes() == 2) print('friend ok')");
    assert!(text(&out.stdout).contains("friend ok"), "{}", text(&out.stderr));
}

/// A node that cannot be linked once it has proved itself (here: it has
/// the seed's own name; a full node table is refused the same way) hears
/// why and ends non-zero with one line, never running alone.
#[test]
fn a_refused_join_says_why_and_exits_non_zero() {
    let dir = scratch_dir("cluster-refused");
    let cookie = cookie_in(&dir, "cookie", "a cookie of more than sixteen bytes");
    let a = Node::start("twin", &cookie);
    let name = a.name.clone();
    let out = join_and_run(&dir, &name, &a.addr, &cookie, "print('never runs')");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(!text(&out.stdout).contains("never runs"));
    let stderr = text(&out.stderr);
    assert!(stderr.trim_end().ends_with(&format!("a node named {name} is this node")) && stderr.lines().count() == 1, "{stderr}");
    let logged = a.stderr.recv_timeout(LIMIT).expect("the node logs the refused connection");
    assert!(logged.contains(&format!("a node named {name} is this node")), "{logged}");
}

/// Runs `examples/NAME` on a cluster of `nodes` nodes; its output, once it
/// has ended well.
fn run_cluster_example(name: &str, nodes: &str, args: &[&str]) -> String {
    let dir = scratch_dir(&format!("cluster-example-{}", name.replace('/', "-")));
    let cookie = cookie_in(&dir, "cookie", "a cookie for the cluster examples");
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(name);
    let mut cmd = synodic_command();
    cmd.args(["run", "--nodes", nodes, "--cookie-file"]).arg(&cookie).arg(&file).args(args);
    let out = output_within(cmd, LIMIT, &format!("examples/{name} on {nodes} nodes"));
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "examples/{name}: {stdout}\n{}", text(&out.stderr));
    stdout
}

/// The ALua paper's tuple multiplication, unchanged, with its agents dealt
/// over three nodes.
#[test]
fn the_alua_matrix_product_runs_over_three_nodes() {
    let stdout = run_cluster_example("alua/tuple_multiplication.lua", "3", &["24", "6"]);
    assert!(stdout.starts_with("6 agents over 3 node(s)\nmatrix multiplication 24x24: parallel = sequential"), "{stdout}");
    assert!(stdout.contains("all-pairs shortest paths on 24 nodes: parallel = sequential"), "{stdout}");
}

#[test]
fn the_ring_spreads_over_three_nodes() {
    let stdout = run_cluster_example("cluster/ring.lua", "3", &["90", "5"]);
    assert!(stdout.starts_with("ring of 90 processes over 3 node(s) ["), "{stdout}");
    assert_eq!(stdout.matches(":30").count(), 3, "30 members on each node: {stdout}");
}

#[test]
fn the_worker_pool_survives_losing_a_node() {
    let stdout = run_cluster_example("cluster/worker_pool.lua", "3", &["60", "2", "lose"]);
    // The primes below 10001..10060, each counted once: the same total as on one node.
    assert!(stdout.starts_with("60 jobs on 3 node(s), 4 workers left; 73888 primes in all\nlost "), "{stdout}");
}

/// What processes on the other nodes of a run print reaches the run's
/// standard output, a pipe or a file alike, each process's lines in order,
/// and all of it before the run exits (the run ends right after its last
/// reply: what the nodes still hold must not be lost).
#[test]
fn the_output_of_every_node_reaches_the_run() {
    let dir = scratch_dir("cluster-output");
    let cookie = cookie_in(&dir, "cookie", "a cookie of more than sixteen bytes");
    let prog = dir.join("print.lua");
    std::fs::write(
        &prog,
        r#"local s = require "synodic"
           local me = s.self()
           for _, n in ipairs(s.nodes()) do
             if n ~= s.node() then
               s.spawn_on(n, function(boss, n)
                 local s = require "synodic"
                 for i = 1, 2000 do print(n, i) end
                 io.write("written ", n, "\n")
                 s.send(boss, "done")
               end, me, n)
             end
           end
           for _ = 2, #s.nodes() do s.receive() end"#,
    )
    .unwrap();
    let check = |out: &str| {
        let mut next: std::collections::HashMap<&str, u32> = std::collections::HashMap::new();
        for line in out.lines() {
            if let Some(node) = line.strip_prefix("written ") {
                assert_eq!(next.get(node), Some(&2001), "io.write came after its prints");
                continue;
            }
            let (node, i) = line.split_once('\t').unwrap_or_else(|| panic!("a cut line: {line:?}"));
            let expected = next.entry(node).or_insert(1);
            assert_eq!(i.parse::<u32>().unwrap(), *expected, "{node}'s lines in order");
            *expected += 1;
        }
        assert_eq!(next.len(), 2, "both other nodes printed");
        assert!(next.values().all(|&n| n == 2001), "every line arrived: {next:?}");
        assert_eq!(out.lines().count(), 4002);
    };
    for _ in 0..3 {
        let mut cmd = synodic_command();
        cmd.args(["run", "--nodes", "3", "--cookie-file"]).arg(&cookie).arg(&prog);
        let out = output_within(cmd, LIMIT, "a run whose nodes print, to a pipe");
        assert!(out.status.success(), "{}", text(&out.stderr));
        check(&text(&out.stdout));
    }
    let file = dir.join("out.txt");
    let mut cmd = synodic_command();
    cmd.args(["run", "--nodes", "3", "--cookie-file"]).arg(&cookie).arg(&prog).stdout(std::fs::File::create(&file).unwrap());
    assert!(common::status_within(cmd, LIMIT, "a run whose nodes print, to a file").success());
    check(&std::fs::read_to_string(&file).unwrap());
}

/// A console attached to a node that runs no program reaches the agents of
/// a program on another node, reads and changes their variables, and sees
/// an agent placed on its own node, and shows the program's tuple space
/// (`scope`, `dump`); when the program ends, that agent ends with it and
/// its name is released.
#[test]
fn a_console_on_any_node_reaches_every_agent() {
    let dir = scratch_dir("cluster-console");
    let cookie = cookie_in(&dir, "cookie", "a cookie for the console test");
    let a = Node::start_with("a", &cookie, &["--console", "127.0.0.1:0"]);
    let said = a.stderr.recv_timeout(LIMIT).expect("the node says where its console listens");
    let console_addr = said.strip_prefix("synodic: console on ").and_then(|l| l.split(' ').next()).unwrap_or_else(|| panic!("{said}"));

    let prog = dir.join("agents.lua");
    std::fs::write(
        &prog,
        r#"local s = require "synodic"
           local other = s.nodes()[1] == s.node() and s.nodes()[2] or s.nodes()[1]
           alua.spawn({"here"})
           alua.spawn({"there"}, {on = other})
           alua.send("here", "x = 1")
           local jobs = require("synodic.linda").open("jobs")
           jobs:out("job", 1) jobs:out("job", 2) jobs:out("done", true, 3)
           print("ready")
           io.stdout:flush()"#,
    )
    .unwrap();
    let mut child = synodic_command().args(["run", "--join", &a.addr, "--name", "p", "--cookie-file"]).arg(&cookie).arg(&prog).stdout(Stdio::piped()).spawn().unwrap();
    let ready = common::first_line_within(child.stdout.take().unwrap(), LIMIT, "the program spawning its agents");
    assert_eq!(ready, "ready\n");
    let program = KillOnDrop(child);

    let mut console = synodic_command();
    console.args(["console", console_addr, "--cookie-file"]).arg(&cookie);
    let lines = "inspect('here', 'x')\n\
                 alua.send('here', 'x = x + 1')\n\
                 inspect('here', 'x')\n\
                 inspect('there', 'require(\"synodic\").node()')\n\
                 inspect('here')\n\
                 scope('jobs')\n\
                 dump('jobs', 'job')\n\
                 s = require('synodic') s.monitor(s.whereis('there'))\n\
                 alua.send('main', 'alua.exit_all()') print(select(3, s.receive_match('DOWN', 10)), s.whereis('there'))\n";
    let out = common::output_with_input(console, Some(lines.as_bytes()), LIMIT, "synodic console on node a");
    let stdout = text(&out.stdout);
    let mut got = stdout.lines();
    assert_eq!(got.next(), Some("1"), "{stdout}");
    assert_eq!(got.next(), Some("2"), "{stdout}");
    assert!(got.next().is_some_and(|l| l.starts_with("a@")), "the agent placed on node a: {stdout}");
    assert!(stdout.contains("inspect: no process here on this node (inspect(who, expr) reaches an agent on any node)"), "{stdout}");
    assert!(stdout.contains("\"jobs\" on p@") && stdout.contains(": 3 tuples, 0 waiting\n  (\"job\", ...) x2  2\n  (\"done\", ...) x3  1\n"), "the scope: {stdout}");
    assert!(stdout.contains("(\"job\", 1)\n(\"job\", 2)\n"), "the class dumped: {stdout}");
    assert!(stdout.ends_with("normal\tnil\n"), "the agent on a ended with the run, its name released: {stdout}");
    drop(program);
}

/// Of two links to one peer (two nodes that dialed each other at once, or
/// a dial repeated), a node keeps the one the peer keeps too: the one the
/// node with the smaller name dialed, then the one with the larger dialer's
/// nonce. The other closes quietly, and the peer is not lost.
#[test]
fn of_two_links_to_one_peer_both_sides_keep_the_same() {
    let dir = scratch_dir("cluster-two-links");
    let secret = "a cookie for the two links test";
    let cookie = cookie_in(&dir, "cookie", secret);
    let z = Node::start("z", &cookie);
    // "a" sorts before "z": every link here is one the smaller name dialed.
    let mut first = FakePeer::with_nonce(&z.addr, "a", Some(secret), [3; 32]).tcp;
    let mut lower = FakePeer::with_nonce(&z.addr, "a", Some(secret), [2; 32]).tcp;
    assert!(closed_within(&mut lower, Duration::from_secs(20)), "the link with the lower nonce gives way");
    assert!(!closed_within(&mut first, Duration::from_millis(300)), "the first link is kept");
    let _higher = FakePeer::with_nonce(&z.addr, "a", Some(secret), [9; 32]);
    assert!(closed_within(&mut first, Duration::from_secs(20)), "a link with a higher nonce replaces it");
    assert!(z.stderr.try_recv().is_err(), "links given way to are not failures: {:?}", z.stderr.try_recv());
}

/// Two nodes started together, each joining the other, form one cluster:
/// messages and monitors between them work, and neither loses the other.
#[test]
fn two_nodes_started_together_each_joining_the_other() {
    let dir = scratch_dir("cluster-dual");
    let cookie = cookie_in(&dir, "cookie", "a cookie for the dual link test");
    // Two free ports, held together while both are picked (one picked
    // after the other was let go could be the same port).
    let held = [0, 1].map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap());
    let [pa, pb] = held.each_ref().map(|l| l.local_addr().unwrap().to_string());
    drop(held);
    let start = |name: &str, listen: &str, join: &str| {
        let mut cmd = synodic_command();
        cmd.args(["node", "--name", name, "--listen", listen, "--join", join, "--cookie-file"]).arg(&cookie);
        let mut child = cmd.stderr(Stdio::piped()).spawn().unwrap();
        let lines = stderr_lines(&mut child);
        (KillOnDrop(child), lines)
    };
    let (a, b) = (start("a", &pa, &pb), start("b", &pb, &pa));
    // Each says where it listens, then that it has joined the other.
    // (On failure, both nodes' lines: the one that failed may be the other's doing.)
    let firsts: Vec<(String, String)> = [&a, &b].map(|(_, lines)| (lines.recv_timeout(LIMIT).unwrap_or_default(), lines.recv_timeout(LIMIT).unwrap_or_default())).into();
    let ok = firsts.iter().all(|(listening, joined)| listening.contains(" listening on ") && joined.contains(" joined the cluster through "));
    if !ok {
        let rest: Vec<String> = [&a, &b].map(|(_, lines)| lines.recv_timeout(Duration::from_secs(1)).into_iter().chain(lines.try_iter()).collect::<Vec<_>>().join("\n")).into();
        panic!("a: {:?} then {}\nb: {:?} then {}", firsts[0], rest[0], firsts[1], rest[1]);
    }
    let out = join_and_run(
        &dir,
        "c",
        &pa,
        &cookie,
        r#"local s = require "synodic"
           local testkit = require "testkit"
           assert(#s.nodes() == 3, table.concat(s.nodes(), " "))
           local a, b = s.nodes()[1], s.nodes()[2]
           local echo = testkit.echo_on(b)
           -- From a to b and back, 300 times, with a monitor between them.
           s.spawn_on(a, function(parent, echo)
             local s = require "synodic"
             s.monitor(echo)
             for i = 1, 300 do
               s.send(echo, s.self(), i)
               local got = s.receive(10)
               assert(got == i, "lost between a and b at " .. i .. ": " .. tostring(got))
             end
             s.send(parent, "done", #s.nodes())
           end, s.self(), echo)
           local tag, seen = s.receive(20)
           assert(tag == "done" and seen == 3, tostring(tag) .. " " .. tostring(seen))
           print("one link ok")"#,
    );
    assert!(text(&out.stdout).contains("one link ok"), "{}\n{}", text(&out.stdout), text(&out.stderr));
    // Neither node said a link closed or failed meanwhile (asked before
    // they are stopped: the second to stop may say the first went away).
    for (_, lines) in [&a, &b] {
        let said: Vec<String> = lines.try_iter().collect();
        assert!(said.is_empty(), "{said:?}");
    }
}

/// SIGTERM ends a node cleanly: it leaves the cluster, so the others hear
/// of it at once: a program that joins right after neither sees it nor
/// tries to reach it (with SIGKILL, membership would still list it for a
/// few seconds, and the program would try to link to it and say it could
/// not).
#[test]
fn sigterm_leaves_the_cluster_cleanly() {
    let dir = scratch_dir("cluster-sigterm");
    let cookie = cookie_in(&dir, "cookie", "a cookie for the sigterm test");
    let a = Node::start("a", &cookie);
    let mut b = Node::start_with("b", &cookie, &["--join", &a.addr]);
    let joined = b.stderr.recv_timeout(LIMIT).expect("b says it joined");
    assert!(joined.contains("joined the cluster through"), "{joined}");
    unsafe { libc::kill(b._process.0.id() as i32, libc::SIGTERM) };
    assert_eq!(b.stderr.recv_timeout(LIMIT).as_deref(), Ok("synodic: terminated"));
    let status = b._process.0.wait().unwrap();
    assert_eq!(std::os::unix::process::ExitStatusExt::into_raw(status) >> 8, 143, "{status}");
    // "aa" sorts before "b": it would be the one to dial b.
    let out = join_and_run(&dir, "aa", &a.addr, &cookie, "assert(#require('synodic').nodes() == 2) print('b is gone')");
    assert!(text(&out.stdout).contains("b is gone"), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "", "nobody tries to reach b");
}

/// Bounce in the VEOS paper's three placements over nodes: the balls on a
/// second node (distributed), the same with their renderer updates bundled
/// there (wholesale), the balls over a second and a third (parallel). Each
/// run keeps the energy and shows every frame.
#[test]
fn bounce_runs_in_every_placement() {
    let dir = scratch_dir("cluster-bounce");
    let cookie = cookie_in(&dir, "cookie", "a cookie for the bounce test");
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/entities/bounce.lua");
    for (placement, nodes) in [("distributed", "2"), ("wholesale", "2"), ("parallel", "3")] {
        let page = dir.join(format!("{placement}.html"));
        let mut cmd = synodic_command();
        cmd.args(["run", "--nodes", nodes, "--cookie-file"]).arg(&cookie).arg(&example).args(["200", placement]).arg(&page);
        let out = output_within(cmd, LIMIT, &format!("bounce {placement}"));
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{placement}: {stdout}\n{}", text(&out.stderr));
        let last = stdout.lines().last().unwrap_or_default();
        assert!(last.starts_with(&format!("bounce: 15 balls, 200 frames, {placement}, ")) && last.contains("energy 750.000000 -> 750.000000"), "{last}");
        let html = std::fs::read_to_string(&page).unwrap();
        assert_eq!(html.matches("],[").count() + 1, 201, "every frame is on the page");
    }
}
