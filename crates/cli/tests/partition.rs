//! Partitions that heal (SPEC §9): two nodes whose every packet goes
//! through fault proxies (`common::proxy`), cut apart while both go on
//! working, then joined again. The programs on both sides
//! (`tests/lua/partition/side.lua`) check what they can see; this file
//! drives the network and checks that both sides tell the same story.

#[macro_use]
mod common;

use std::io::BufRead;
use std::path::Path;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::proxy::Proxy;
use common::{cookie_in, free_port, scratch_dir, synodic_command, KillOnDrop, LIMIT};

/// A program running as node `name`, listening on `port` and reached by
/// the others through `proxy`; its stdout lines as they come.
struct Side {
    _process: KillOnDrop,
    lines: mpsc::Receiver<String>,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
    name: &'static str,
}

impl Side {
    fn start(name: &'static str, port: u16, proxy: &Proxy, join: Option<&str>, cookie: &Path) -> Side {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/lua/partition/side.lua");
        let mut cmd = synodic_command();
        cmd.args(["run", "--workers", "2", "--listen", &format!("127.0.0.1:{port}"), "--advertise", &proxy.addr, "--name", name, "--cookie-file"]).arg(cookie);
        if let Some(seed) = join {
            cmd.args(["--join", seed]);
        }
        cmd.env("LUA_PATH_5_4", common::test_modules_path());
        let mut child = cmd.arg(&script).arg(name).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let (tx, lines) = mpsc::channel();
        let out = std::io::BufReader::new(child.stdout.take().unwrap());
        std::thread::spawn(move || out.lines().map_while(Result::ok).for_each(|l| drop(tx.send(l))));
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let (err, pipe) = (stderr.clone(), std::io::BufReader::new(child.stderr.take().unwrap()));
        std::thread::spawn(move || pipe.lines().map_while(Result::ok).for_each(|l| { ALL.lock().unwrap().push_str(&format!("{name}: {l}\n")); err.lock().unwrap().push_str(&(l + "\n")) }));
        Side { _process: KillOnDrop(child), lines, stderr, name }
    }

    /// Waits until the node listens (it says so on stderr).
    fn listening(&self) {
        let deadline = Instant::now() + LIMIT;
        while !self.stderr.lock().unwrap().contains(" listening on ") {
            assert!(Instant::now() < deadline, "side {} does not listen", self.name);
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The next line, which must start with `prefix`.
    fn expect(&self, prefix: &str, within: Duration) -> String {
        match self.lines.recv_timeout(within) {
            Ok(line) if line.starts_with(prefix) => line,
            Ok(line) => panic!("side {}: expected {prefix:?}, got {line:?}\n{}", self.name, self.stderr.lock().unwrap()),
            Err(_) => panic!("side {}: no {prefix:?} within {} s\n{}\nALL:\n{}", self.name, within.as_secs(), self.stderr.lock().unwrap(), ALL.lock().unwrap()),
        }
    }
}

/// Every side's stderr, each line after its side's name (shown when a test fails).
static ALL: std::sync::Mutex<String> = std::sync::Mutex::new(String::new());

#[test]
fn a_healed_partition_is_one_cluster_again() {
    let dir = scratch_dir("partition-heal");
    let cookie = cookie_in(&dir, "cookie", "a cookie for the partition test");
    let (port_a, port_b) = (free_port(), free_port());
    let (proxy_a, proxy_b) = (Proxy::start(&format!("127.0.0.1:{port_a}")), Proxy::start(&format!("127.0.0.1:{port_b}")));
    let a = Side::start("a", port_a, &proxy_a, None, &cookie);
    a.listening();
    let b = Side::start("b", port_b, &proxy_b, Some(&proxy_a.addr), &cookie);
    a.expect("linked", LIMIT);
    b.expect("linked", LIMIT);

    // Cut: links close at once, membership declares each side down to the
    // other within a few seconds; both sides go on working meanwhile.
    proxy_a.cut();
    proxy_b.cut();
    a.expect("used", LIMIT);
    b.expect("used", LIMIT);
    // The partition lasts long enough for membership to declare each side
    // down to the other (3 s at most): that is the fault being tested.
    std::thread::sleep(Duration::from_secs(4));

    let healed = Instant::now();
    proxy_a.restore();
    proxy_b.restore();
    let (ca, cb) = (a.expect("converged", LIMIT), b.expect("converged", LIMIT));
    let took = healed.elapsed();
    eprintln!("a: {ca}\nb: {cb}\nhealed in {:.2} s", took.as_secs_f64());
    assert!(took < Duration::from_secs(5), "one cluster again only after {took:?}");
    // The same holder and the same home on both sides: the side whose name sorts first.
    for line in [&ca, &cb] {
        assert!(line.ends_with("svc on a, jobs at a"), "{line}");
    }
    b.expect("svc lost\tname_lost\tsvc", LIMIT);
    assert_eq!(a.expect("svc heard", LIMIT), "svc heard a b");
    assert_eq!(a.expect("taken", LIMIT), "taken 200");
    a.expect("done", LIMIT);
    b.expect("done", LIMIT);
}

/// bench/cluster's heal, as a test: a node of three stopped (SIGSTOP) for
/// 3 s, long enough to be declared down, while both sides register a name
/// and fill a space, then continued; `heal.lua` ends once every node
/// agrees on members, name and space (it fails after 30 s).
#[test]
fn a_node_stopped_and_continued_heals_into_one_cluster() {
    let dir = scratch_dir("heal");
    let cookie = cookie_in(&dir, "cookie", "heal test cookie");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/cluster/heal.lua");
    let mut cmd = synodic_command();
    cmd.args(["run", "--nodes", "3", "--cookie-file"]).arg(&cookie).arg(&script).arg("3");
    let out = common::output_within(cmd, LIMIT, "bench/cluster/heal.lua");
    assert!(out.status.success(), "heal.lua failed: {}", common::text(&out.stderr));
    let ms: f64 = common::text(&out.stdout).trim().parse().expect("heal.lua prints the milliseconds");
    assert!(ms < 30_000.0, "healed in {ms} ms");
}
