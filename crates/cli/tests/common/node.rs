//! Cluster nodes for the tests: `synodic node` daemons in the background
//! and programs that join them, and peers written by hand that speak the
//! handshake and then whatever a test writes.

use std::io::BufRead;
use std::path::Path;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use super::{output_within, synodic_command, KillOnDrop, LIMIT};

/// A `synodic node` running in the background, with where it listens and
/// the lines it writes on stderr.
pub struct Node {
    pub _process: KillOnDrop,
    /// Its full name (NAME@HOST).
    pub name: String,
    pub addr: String,
    pub stderr: mpsc::Receiver<String>,
}

impl Node {
    pub fn start(name: &str, cookie: &Path) -> Node {
        Node::start_with(name, cookie, &[])
    }

    /// A node started with `extra` flags too.
    pub fn start_with(name: &str, cookie: &Path, extra: &[&str]) -> Node {
        let mut child = synodic_command()
            .args(["node", "--listen", "127.0.0.1:0", "--name", name, "--cookie-file"])
            .arg(cookie)
            .args(extra)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = stderr_lines(&mut child);
        let first = stderr.recv_timeout(LIMIT).expect("the node says where it listens");
        let addr = first.rsplit(' ').next().unwrap().to_string();
        assert!(first.contains(&format!("node {name}@")) && addr.starts_with("127.0.0.1:"), "{first}");
        let full = first.split(' ').nth(2).unwrap().to_string();
        Node { _process: KillOnDrop(child), name: full, addr, stderr }
    }
}

/// The lines `child` writes on its (piped) stderr, as they come.
pub fn stderr_lines(child: &mut std::process::Child) -> mpsc::Receiver<String> {
    let lines = std::io::BufReader::new(child.stderr.take().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in lines.lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    rx
}

/// Runs `source` as a program joining the node at `seed`.
pub fn join_and_run(dir: &Path, name: &str, seed: &str, cookie: &Path, source: &str) -> std::process::Output {
    let prog = dir.join(format!("{name}.lua"));
    std::fs::write(&prog, source).unwrap();
    let mut cmd = synodic_command();
    cmd.args(["run", "--join", seed, "--name", name, "--cookie-file"]).arg(cookie).arg(&prog).env("LUA_PATH_5_4", super::test_modules_path());
    output_within(cmd, LIMIT, &format!("{name}.lua joining {seed}"))
}

/// A peer written by hand: connected to a node, and, with a cookie, past
/// the handshake as node `name`; then whatever the test writes, sealed in
/// records as a node's would be (`send`) or not (`send_raw`).
pub struct FakePeer {
    pub tcp: std::net::TcpStream,
    pub sealer: Option<synodic_net::record::Sealer>,
}

impl FakePeer {
    pub fn connect(addr: &str, name: &str, cookie: Option<&str>) -> FakePeer {
        FakePeer::with_nonce(addr, name, cookie, [3; 32])
    }

    /// [`FakePeer::connect`], with the nonce its hello carries.
    pub fn with_nonce(addr: &str, name: &str, cookie: Option<&str>, nonce: [u8; 32]) -> FakePeer {
        use synodic_net::handshake::{self, Handshake, Purpose};
        let mut tcp = std::net::TcpStream::connect(addr).unwrap();
        let Some(cookie) = cookie else { return FakePeer { tcp, sealer: None } };
        let node = synodic_core::NodeId { name: name.into(), incarnation: 1 };
        let config = handshake::Config { cookie: cookie.as_bytes().to_vec(), purpose: Purpose::Node, node, listen: String::new(), plain: false };
        let (_, session) = handshake::blocking(&mut tcp, Handshake::dialer(config).unwrap().with_nonce(nonce), None).expect("the fake peer passes the handshake");
        FakePeer { tcp, sealer: Some(session.sealer) }
    }

    /// Writes `frames` as a node would: sealed, once past the handshake.
    pub fn send(&mut self, frames: &[u8]) {
        use std::io::Write;
        let mut bytes = Vec::new();
        match &mut self.sealer {
            Some(sealer) => sealer.seal(frames, &mut bytes).unwrap(),
            None => bytes.extend_from_slice(frames),
        }
        self.tcp.write_all(&bytes).unwrap();
    }
}

/// Writes `frames` (sealed once past the handshake) and closes the
/// connection cleanly: the write side first, then reading what the node
/// sent until it closes too (closing with unread bytes would reset the
/// connection instead).
pub fn send_and_close(mut peer: FakePeer, frames: &[u8]) {
    peer.send(frames);
    peer.tcp.shutdown(std::net::Shutdown::Write).unwrap();
    closed_within(&mut peer.tcp, LIMIT);
}

/// Whether the node closed its side of `tcp`, reading what it sends until
/// then (`within` bounds the wait; false if it is still open then).
pub fn closed_within(tcp: &mut std::net::TcpStream, within: Duration) -> bool {
    use std::io::Read;
    let deadline = std::time::Instant::now() + within;
    let mut buf = [0; 4096];
    // The node sends its load now and then: read on until the deadline.
    while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()).filter(|d| !d.is_zero()) {
        tcp.set_read_timeout(Some(left)).unwrap();
        match tcp.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(_) => return false,
        }
    }
    false
}
