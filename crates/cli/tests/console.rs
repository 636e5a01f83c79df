//! The console as a user and as an attacker meet it: attaching with the
//! cookie and without, listing and inspecting processes, statements over
//! several lines, readable values, Ctrl-C, its end with the program; lines bounded, altered lines refused, idle unproven
//! connections that never lock the real console out.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{run_source, text};

/// A program started with a console endpoint, killed when the test ends.
struct WithConsole {
    _program: common::KillOnDrop,
    addr: String,
    cookie: PathBuf,
    stderr: std::sync::mpsc::Receiver<String>,
}

impl WithConsole {
    fn start(name: &str, source: &str) -> WithConsole {
        use std::io::BufRead;
        let dir = common::scratch_dir(&format!("console-{name}"));
        let prog = dir.join("prog.lua");
        std::fs::write(&prog, source).unwrap();
        let cookie = common::cookie_in(&dir, "cookie", "a cookie for the console tests");
        let mut child = common::synodic_command()
            .args(["run", "--console", "127.0.0.1:0", "--cookie-file"])
            .arg(&cookie)
            .arg(&prog)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Every line the program writes on stderr, as it comes.
        let (tx, stderr) = std::sync::mpsc::channel();
        let pipe = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(pipe).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let line = stderr.recv_timeout(common::LIMIT).expect("the program says where its console listens");
        assert!(line.starts_with("synodic: console on "), "{line}");
        let addr = line.split_whitespace().nth(3).expect("console address").to_string();
        WithConsole { _program: common::KillOnDrop(child), addr, cookie, stderr }
    }

    /// Runs `synodic console` with `input` on its stdin.
    fn console(&self, cookie_file: &Path, input: &str) -> Output {
        let mut c = common::synodic_command();
        c.args(["console", &self.addr, "--cookie-file"]).arg(cookie_file);
        common::output_with_input(c, Some(input.as_bytes()), common::LIMIT, "synodic console")
    }
}

/// The console, driven as a user would: attach with the right cookie,
/// inspect and change an agent, see an error with the frames of the line
/// only; a wrong cookie is refused (the program names the address) and the
/// program goes on.
#[test]
fn console_attaches_with_the_cookie_and_refuses_without() {
    let p = WithConsole::start("agents", "alua.spawn{'B'}\nalua.send('B', 'x = 42')\n");
    let out = p.console(&p.cookie, "inspect('B', 'x')\nalua.send('B', 'x = x + 1')\ninspect('B', 'x')\n1 + 2\nerror('oops')\n");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.starts_with("42\n43\n3\nerror: (console):1: oops\nstack traceback:\n"), "{stdout}");
    assert!(!stdout.contains("lualib") && !stdout.contains("xpcall"), "the console's own frames are hidden: {stdout}");

    let wrong = p.cookie.with_file_name("wrong");
    std::fs::write(&wrong, "not-the-cookie-but-long-enough\n").unwrap();
    let out = p.console(&wrong, "x = 1\n");
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("wrong cookie"), "{}", text(&out.stderr));
    let said = p.stderr.recv_timeout(common::LIMIT).expect("the program says it refused a console");
    assert!(said.starts_with("synodic: console from 127.0.0.1:") && said.contains("refused: wrong cookie"), "{said}");

    // The program went on: a rightful console still works.
    let out = p.console(&p.cookie, "inspect('B', 'x')\n");
    assert_eq!(text(&out.stdout), "43\n");
}

/// A program that does not use agents: the console lists its processes and
/// shows where one waits.
#[test]
fn console_lists_and_inspects_processes() {
    let p = WithConsole::start(
        "plain",
        "local s = require 'synodic'\n\
         local function serve() while true do s.receive() end end\n\
         s.register('server', s.spawn(serve))\n\
         s.receive()\n",
    );
    let out = p.console(&p.cookie, "processes()\ninspect('server')\ninspect('nobody')\n");
    let stdout = text(&out.stdout);
    assert!(stdout.lines().any(|l| l.contains("waiting") && l.ends_with("server")), "{stdout}");
    assert!(stdout.contains("registered as server") && stdout.contains("waiting for a message"), "{stdout}");
    assert!(stdout.contains("in function 'synodic.receive'") && stdout.contains("prog.lua:2: in function"), "the call stack: {stdout}");
    assert!(stdout.contains("error: (console):1: inspect: no process nobody"), "{stdout}");
}

/// When the program ends, an attached console says so and ends.
#[test]
fn console_ends_with_the_program() {
    let p = WithConsole::start("ending", "local s = require 'synodic'\nassert(s.receive() == 'stop')\n");
    let out = p.console(&p.cookie, "local s = require('synodic') s.send(s.main(), 'stop')\n1\n2\n");
    assert!(text(&out.stderr).contains("has ended (connection closed)"), "{}", text(&out.stderr));
}

/// A program runs without a console endpoint unless asked.
#[test]
fn no_console_unless_asked() {
    let out = run_source("quiet", "print('done')", &[]);
    assert!(out.status.success());
    assert_eq!(text(&out.stderr), "", "nothing is said, nothing listens");
}

/// Attaches to the console at `addr` as `synodic console` does, by hand:
/// the stream, what to seal lines with, and the program's first line.
fn console_by_hand(addr: &str, cookie: &Path) -> (std::net::TcpStream, synodic_net::record::Sealer, synodic_net::console::Lines, String) {
    use synodic_net::handshake::{self, Handshake, Purpose, Session};
    let cookie = std::fs::read_to_string(cookie).unwrap().trim().as_bytes().to_vec();
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    let config = handshake::Config { cookie, purpose: Purpose::Console, node: synodic_core::NodeId::fresh("console"), listen: String::new(), plain: false };
    let (_, Session { sealer, opener }) = handshake::blocking(&mut stream, Handshake::dialer(config).unwrap(), None).unwrap();
    let mut lines = synodic_net::console::Lines::new(opener, usize::MAX);
    stream.set_read_timeout(Some(common::LIMIT)).unwrap();
    let first = read_console_line(&mut stream, &mut lines).expect("the program's first line");
    (stream, sealer, lines, first)
}

/// The next line the program sends a console attached by hand; `None` once it closes.
fn read_console_line(stream: &mut std::net::TcpStream, lines: &mut synodic_net::console::Lines) -> Option<String> {
    use std::io::Read;
    loop {
        if let Some(line) = lines.next_line().unwrap() {
            return Some(String::from_utf8(line).unwrap());
        }
        let mut buf = [0; 4096];
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return None,
            Ok(n) => lines.space().extend_from_slice(&buf[..n]),
        }
    }
}

/// What a peer can size is bounded: a line too long closes its connection,
/// and the program goes on.
#[test]
fn console_lines_are_bounded() {
    use std::io::Write;
    let p = WithConsole::start("bounded", "alua.spawn{'B'}\n");
    let (mut stream, mut sealer, mut lines, first) = console_by_hand(&p.addr, &p.cookie);
    assert!(first.starts_with("ok "), "{first}");
    let mut sealed = Vec::new();
    sealer.seal(&vec![b'x'; 2 << 20], &mut sealed).unwrap();
    let _ = stream.write_all(&sealed);
    assert_eq!(read_console_line(&mut stream, &mut lines), None, "the console is closed");
    let said = p.stderr.recv_timeout(common::LIMIT).expect("the program says why it closed the console");
    assert!(said.contains("line longer than"), "{said}");
    let out = p.console(&p.cookie, "1 + 1\n");
    assert_eq!(text(&out.stdout), "2\n", "the program goes on");
}

/// The console's lines are sealed records: a byte changed on the way (by
/// a relay, say) closes the console with one line, and the line never runs.
#[test]
fn an_altered_console_line_closes_the_console_and_never_runs() {
    use std::io::Write;
    let p = WithConsole::start("altered", "alua.spawn{'B'}\nalua.send('B', 'x = 1')\n");
    let (mut stream, mut sealer, mut lines, first) = console_by_hand(&p.addr, &p.cookie);
    assert!(first.starts_with("ok "), "{first}");
    let mut sealed = Vec::new();
    sealer.seal(b"alua.send('B', 'x = 2')\n", &mut sealed).unwrap();
    let last = sealed.len() - 1;
    sealed[last] ^= 1;
    stream.write_all(&sealed).unwrap();
    assert_eq!(read_console_line(&mut stream, &mut lines), None, "the console is closed");
    let said = p.stderr.recv_timeout(common::LIMIT).expect("the program says why it closed the console");
    assert!(said.contains("failed its authentication check"), "{said}");
    let out = p.console(&p.cookie, "inspect('B', 'x')\n");
    assert_eq!(text(&out.stdout), "1\n", "the altered line did not run");
}

/// Connections that never prove themselves hold a few places of their own
/// for a few seconds: twenty of them, open and silent, keep no console
/// out, and each is closed with one line once its time is up.
#[test]
fn idle_unproven_connections_never_lock_a_console_out() {
    use std::io::Read;
    let p = WithConsole::start("crowded", "alua.spawn{'B'}\nalua.send('B', 'x = 5')\n");
    let mut idle: Vec<_> = (0..20).map(|_| std::net::TcpStream::connect(&p.addr).unwrap()).collect();
    let out = p.console(&p.cookie, "inspect('B', 'x')\n");
    assert_eq!(text(&out.stdout), "5\n", "{}", text(&out.stderr));
    // All twenty are closed: the oldest crowded out, the rest timed out.
    for stream in &mut idle {
        stream.set_read_timeout(Some(common::LIMIT)).unwrap();
        let mut rest = Vec::new();
        assert!(stream.read_to_end(&mut rest).is_ok(), "closed, not reset or left open");
    }
    let said: Vec<String> = (0..20).map(|_| p.stderr.recv_timeout(common::LIMIT).expect("one line per idle connection")).collect();
    assert!(said.iter().all(|l| l.starts_with("synodic: console from 127.0.0.1:") && (l.contains("crowded out") || l.contains("no handshake within"))), "{said:?}");
}

/// The console as Erlang's shell: a statement over several lines, values
/// shown readably (tables nested, strings quoted), a printed pid pasted
/// back, processes of every node sorted, kill.
#[test]
fn console_takes_statements_over_lines_and_shows_values() {
    let p = WithConsole::start(
        "shell",
        "local s = require 'synodic'\n\
         s.register('server', s.spawn(function() while true do s.receive() end end))\n\
         s.receive()\n",
    );
    let out = p.console(
        &p.cookie,
        "for i = 1, 3 do\nprint(i)\nend\n{1, 'two', {x = 3, y = {4}}}\nlocal s = require('synodic') return tostring(s.whereis('server'))\n\
         local s = require('synodic') return s.whereis('server') == pid(tostring(s.whereis('server')))\n\
         processes()\nkill(tostring(require('synodic').whereis('server')))\nrequire('synodic').sleep(0.05) return require('synodic').whereis('server')\n",
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(stdout.starts_with("1\n2\n3\n{1, \"two\", {x = 3, y = {4}}}\n\"<0."), "{stdout}");
    assert!(stdout.contains("\ntrue\n"), "a pasted pid names the process: {stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("pid ") && l.contains("queued")), "{stdout}");
    assert!(stdout.lines().any(|l| l.contains("waiting") && l.ends_with("server")), "{stdout}");
    assert!(stdout.trim_end().ends_with("true\nnil"), "killed: its name is free: {stdout}");
}

/// Ctrl-C stops a runaway line, and the console goes on; a client that
/// leaves in the middle of one ends its agent (nothing keeps computing).
#[test]
fn a_runaway_line_is_interrupted_and_a_console_that_leaves_ends_its_agent() {
    use std::io::Write;
    let p = WithConsole::start("runaway", "alua.spawn{'B'}\n");
    let (mut stream, mut sealer, mut lines, first) = console_by_hand(&p.addr, &p.cookie);
    assert!(first.starts_with("ok "), "{first}");
    let mut writer = stream.try_clone().unwrap();
    let mut send = |line: &[u8]| {
        let mut sealed = Vec::new();
        sealer.seal(&[line, b"\n"].concat(), &mut sealed).unwrap();
        writer.write_all(&sealed).unwrap();
    };
    send(b"while true do end");
    send(b"\x03");
    let mut got = Vec::new();
    while let Some(line) = read_console_line(&mut stream, &mut lines) {
        got.push(line.clone());
        if line.trim_end() == "d" {
            break;
        }
    }
    assert!(got.iter().any(|l| l.starts_with("e ") && l.contains("interrupted!")), "{got:?}");
    send(b"1 + 1");
    assert_eq!(read_console_line(&mut stream, &mut lines).as_deref(), Some("o 2"));
    assert_eq!(read_console_line(&mut stream, &mut lines).map(|l| l.trim_end().to_string()).as_deref(), Some("d"));
    // A line that waits is interrupted too.
    send(b"require('synodic').receive()");
    send(b"\x03");
    let e = read_console_line(&mut stream, &mut lines).unwrap_or_default();
    assert!(e.starts_with("e ") && e.contains("interrupted!"), "{e}");
    assert_eq!(read_console_line(&mut stream, &mut lines).map(|l| l.trim_end().to_string()).as_deref(), Some("d"));
    // Leave in the middle of a runaway line: the agent ends.
    send(b"while true do end");
    let _ = writer.shutdown(std::net::Shutdown::Both);
    drop(stream);
    let out = p.console(&p.cookie, "local n = 0 for _, q in ipairs(require('synodic.control').processes()) do if q.state == 'running' or q.state == 'runnable' then n = n + 1 end end return n\n");
    let busy: i32 = text(&out.stdout).trim().parse().unwrap_or(-1);
    assert!(busy <= 1, "only the asking console runs: {}", text(&out.stdout));
}
