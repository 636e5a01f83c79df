//! Chaos: real nodes on 127.0.0.1, every link between them through a fault
//! proxy (`common::proxy`), and a schedule of faults while a program works
//! across them: links paused, delayed, read slowly, cut and restored, nodes
//! stopped (SIGSTOP) and continued, a node killed. The programs
//! (`tests/lua/chaos/`) print what they did and saw; the checkers here
//! verify the histories against SPEC §2, §5 and §9: messages in order per
//! pair and never twice; every acknowledged tuple taken at most once, and
//! exactly once unless a take whose answer a fault lost removed it; every
//! skeleton result exactly once; a name with one holder after healing.
//!
//! The schedule is random but seeded: a failure prints the seed and the
//! faults, and `SYNODIC_CHAOS_SEED=N` replays the same schedule.

#[macro_use]
mod common;

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, Write};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::proxy::Proxy;
use common::{cookie_in, free_port, scratch_dir, synodic_command, KillOnDrop, LIMIT};

/// How long faults go on in each scenario.
const FAULTS_FOR: Duration = Duration::from_secs(12);

/// A node daemon behind its proxy.
struct Node {
    process: KillOnDrop,
    proxy: Proxy,
}

impl Node {
    fn os_pid(&self) -> i32 {
        self.process.0.id() as i32
    }

    fn signal(&self, sig: i32) {
        // SAFETY: a signal to a child this test started and has not waited for.
        unsafe { libc::kill(self.os_pid(), sig) };
    }
}

/// `count` nodes, each reached by the others only through its proxy.
fn nodes(count: usize, cookie: &Path, dir: &Path) -> Vec<Node> {
    let mut nodes: Vec<Node> = Vec::new();
    for i in 1..=count {
        let port = free_port();
        let proxy = Proxy::start(&format!("127.0.0.1:{port}"));
        let mut cmd = synodic_command();
        cmd.args(["node", "--quiet", "--workers", "2", "--listen", &format!("127.0.0.1:{port}"), "--advertise", &proxy.addr, "--name", &format!("n{i}"), "--cookie-file"]).arg(cookie);
        if let Some(first) = nodes.first() {
            cmd.args(["--join", &first.proxy.addr]);
        }
        let log = std::fs::File::create(dir.join(format!("n{i}.stderr"))).unwrap();
        let child = cmd.stdout(Stdio::null()).stderr(log).spawn().unwrap();
        nodes.push(Node { process: KillOnDrop(child), proxy });
        // The next one joins through this one: it must be listening.
        let deadline = Instant::now() + LIMIT;
        while std::net::TcpStream::connect(format!("127.0.0.1:{port}")).is_err() {
            let ended = nodes.last_mut().unwrap().process.0.try_wait().ok().flatten();
            assert!(ended.is_none(), "node n{i} ended ({ended:?}): {}", std::fs::read_to_string(dir.join(format!("n{i}.stderr"))).unwrap_or_default());
            assert!(Instant::now() < deadline, "node n{i} does not listen");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    nodes
}

/// A small random source (xorshift), seeded for replay.
struct Dice(u64);

impl Dice {
    fn new() -> Dice {
        let seed = std::env::var("SYNODIC_CHAOS_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1);
        eprintln!("chaos seed {seed} (SYNODIC_CHAOS_SEED={seed} replays it)");
        Dice(seed)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }

    fn millis(&mut self, from: u64, to: u64) -> Duration {
        Duration::from_millis(from + self.below(to - from))
    }
}

/// Runs faults on `nodes` for [`FAULTS_FOR`], one after the other; with
/// `kill`, the last node is killed midway (and stays dead). Returns what
/// was done, for the failure message. Every fault is over when it returns.
fn faults(nodes: &[Node], kill: bool, dice: &mut Dice) -> Vec<String> {
    let mut log = Vec::new();
    let start = Instant::now();
    let mut killed = false;
    while start.elapsed() < FAULTS_FOR {
        let alive = if killed { nodes.len() - 1 } else { nodes.len() };
        let k = dice.below(alive as u64) as usize;
        let (node, name) = (&nodes[k], format!("n{}", k + 1));
        if kill && !killed && start.elapsed() > FAULTS_FOR / 2 {
            let last = nodes.len() - 1;
            nodes[last].signal(libc::SIGKILL);
            log.push(format!("{:.1}s kill n{}", start.elapsed().as_secs_f64(), last + 1));
            killed = true;
            continue;
        }
        let at = start.elapsed().as_secs_f64();
        match dice.below(5) {
            0 => {
                let d = dice.millis(300, 2500);
                log.push(format!("{at:.1}s pause {name} {d:?}"));
                node.proxy.pause();
                std::thread::sleep(d);
                node.proxy.resume();
            }
            1 => {
                let d = dice.millis(500, 2000);
                log.push(format!("{at:.1}s delay {name} by 30 ms for {d:?}"));
                node.proxy.delay(Duration::from_millis(30));
                std::thread::sleep(d);
                node.proxy.delay(Duration::ZERO);
            }
            2 => {
                let d = dice.millis(500, 2000);
                log.push(format!("{at:.1}s slow-read {name} (64 KB/s) for {d:?}"));
                node.proxy.slow_read(64 << 10);
                std::thread::sleep(d);
                node.proxy.slow_read(0);
            }
            3 => {
                let d = dice.millis(500, 4000);
                log.push(format!("{at:.1}s cut {name} for {d:?}"));
                node.proxy.cut();
                std::thread::sleep(d);
                node.proxy.restore();
            }
            _ => {
                let d = dice.millis(500, 4000);
                log.push(format!("{at:.1}s stop {name} for {d:?}"));
                node.signal(libc::SIGSTOP);
                std::thread::sleep(d);
                node.signal(libc::SIGCONT);
            }
        }
        // Between two faults, a moment of calm.
        std::thread::sleep(dice.millis(100, 600));
    }
    log
}

/// The workload `script` over `count` daemon nodes and its own, with the
/// faults; its output once it has said `done`.
fn run_chaos(scenario: &str, script: &str, count: usize, kill: bool) -> (Vec<String>, Vec<String>) {
    let dir = scratch_dir(&format!("chaos-{scenario}"));
    let cookie = cookie_in(&dir, "cookie", "a cookie for the chaos tests");
    let nodes = nodes(count, &cookie, &dir);
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/lua/chaos").join(script);
    let seconds = FAULTS_FOR.as_secs() - 1;
    let mut program: Child = synodic_command()
        .args(["run", "--workers", "3", "--name", "main", "--join", &nodes[0].proxy.addr, "--cookie-file"])
        .arg(&cookie)
        .arg(&path)
        .args([seconds.to_string(), (count + 1).to_string()])
        .env("LUA_PATH_5_4", common::test_modules_path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, lines) = mpsc::channel();
    let out = std::io::BufReader::new(program.stdout.take().unwrap());
    std::thread::spawn(move || out.lines().map_while(Result::ok).for_each(|l| drop(tx.send(l))));
    let stderr = program.stderr.take().unwrap();
    let errors = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    let mut stdin = program.stdin.take().unwrap();
    let program = KillOnDrop(program);
    let first = lines.recv_timeout(LIMIT);
    assert_eq!(first.as_deref(), Ok("started"), "{scenario}: the workload did not start");
    let mut dice = Dice::new();
    let log = faults(&nodes, kill, &mut dice);
    writeln!(stdin, "faults over {}", if kill { count } else { count + 1 }).unwrap();
    let mut output = Vec::new();
    loop {
        match lines.recv_timeout(LIMIT) {
            Ok(line) if line == format!("{scenario} done") => break,
            Ok(line) => output.push(line),
            Err(_) => {
                drop(program);
                let logs: String = (1..=count).map(|i| format!("n{i}: {}\n", std::fs::read_to_string(dir.join(format!("n{i}.stderr"))).unwrap_or_default())).collect();
                panic!("{scenario}: the workload did not finish\nfaults: {log:#?}\noutput: {output:#?}\n{}\n{logs}", errors.join().unwrap_or_default());
            }
        }
    }
    drop(program);
    drop(nodes);
    (output, log)
}

#[test]
fn messages_stay_in_order_and_never_come_twice() {
    let (output, log) = run_chaos("messages", "messages.lua", 3, true);
    let mut pairs = 0;
    for line in output.iter().filter(|l| l.starts_with("got ")) {
        let mut words = line.split(' ').skip(1);
        let (receiver, sender) = (words.next().unwrap(), words.next().unwrap());
        let seqs: Vec<u64> = words.map(|w| w.parse().unwrap()).collect();
        assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{sender} -> {receiver}: out of order or twice: {seqs:?}\nfaults: {log:#?}");
        pairs += 1;
    }
    assert!(pairs >= 6, "the live workers heard each other: {output:#?}\nfaults: {log:#?}");
}

#[test]
fn acknowledged_tuples_are_taken_once() {
    let (output, log) = run_chaos("tuples", "tuples.lua", 3, false);
    let field = |prefix: &str| output.iter().filter_map(|l| l.strip_prefix(prefix)).collect::<Vec<_>>();
    let mut acked: HashSet<String> = HashSet::new();
    for line in field("acked ") {
        let mut words = line.split(' ');
        let name = words.next().unwrap();
        acked.extend(words.filter(|w| !w.is_empty()).map(|n| format!("{name} {n}")));
    }
    let mut seen: HashMap<String, u32> = HashMap::new();
    for line in field("taken ").into_iter().chain(field("left ")) {
        let words: Vec<&str> = line.split(' ').filter(|w| !w.is_empty()).collect();
        for pair in words.chunks(2) {
            *seen.entry(pair.join(" ")).or_default() += 1;
        }
    }
    let twice: Vec<_> = seen.iter().filter(|(_, &n)| n > 1).collect();
    assert!(twice.is_empty(), "tuples taken twice: {twice:?}\nfaults: {log:#?}");
    let missing: Vec<_> = acked.iter().filter(|t| !seen.contains_key(*t)).collect();
    let failed: usize = field("failed_takes ").first().map_or(0, |n| n.parse().unwrap());
    assert!(missing.len() <= failed, "{} acknowledged tuples lost, {failed} takes failed: {missing:?}\nfaults: {log:#?}", missing.len());
    assert!(acked.len() > 100, "work got done: {} acknowledged\nfaults: {log:#?}", acked.len());
    eprintln!("{} acknowledged, {} taken or left, {} lost to {failed} failed takes", acked.len(), seen.len(), missing.len());
}

#[test]
fn skeleton_results_come_once_and_names_have_one_holder() {
    let (output, log) = run_chaos("skeletons", "skeletons.lua", 3, true);
    let added: u64 = output.iter().find_map(|l| l.strip_prefix("tasks ")).expect("the run said how many tasks").parse().unwrap();
    let mut results: HashMap<u64, u32> = HashMap::new();
    for line in output.iter().filter_map(|l| l.strip_prefix("result ")) {
        let n: Vec<u64> = line.split(' ').map(|w| w.parse().unwrap()).collect();
        let (task, input, echoed, square) = (n[0], n[1], n[2], n[3]);
        assert!(echoed == input && square == input * input, "task {task}: wrong result {line}\nfaults: {log:#?}");
        *results.entry(task).or_default() += 1;
    }
    let twice: Vec<_> = results.iter().filter(|(_, &n)| n > 1).collect();
    assert!(twice.is_empty(), "results given twice: {twice:?}\nfaults: {log:#?}");
    let missing: Vec<u64> = (1..=added).filter(|t| !results.contains_key(t)).collect();
    assert!(missing.is_empty(), "results missing: {missing:?}\nfaults: {log:#?}");
    assert!(added > 100, "work got done: {added} tasks\nfaults: {log:#?}");
    let leaders: Vec<&str> = output.iter().find_map(|l| l.strip_prefix("leaders ")).expect("the leaders were asked").split(' ').collect();
    assert!(leaders.len() >= 2 && leaders.iter().all(|l| *l == leaders[0] && *l != "false"), "\"leader\" does not have one holder: {leaders:?}\nfaults: {log:#?}");
    eprintln!("{added} tasks, each result once; \"leader\" held by {}", leaders[0]);
}
