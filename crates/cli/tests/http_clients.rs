//! `synodic.http` against clients nobody here wrote (SPEC §10): curl,
//! Python's `http.client` and `asyncio`, ab and wrk; 10,000 idle
//! keep-alive connections on one node; a slow reader; a client that resets
//! in the middle of a body. Each test starts a server script and talks to
//! it from outside. The programs come from Debian (`scripts/test` installs
//! curl, apache2-utils, wrk and python3).

#[macro_use]
mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;

/// The server every test talks to: `/` says hello, `/echo` returns the
/// body, `/big?N` streams N bytes in 64 KiB chunks, `/count` counts the
/// requests served so far (in a tuple space, as handlers share state).
const SERVER: &str = r#"
local s = require "synodic"
local http = require "synodic.http"
local linda = require "synodic.linda"
linda.default:out("served", 0)
local srv = assert(http.serve { port = 0, handler = function(req)
  local linda = require "synodic.linda"
  local _, n = linda.default:take("served", linda.int)
  linda.default:out("served", n + 1)
  if req.path == "/echo" then return 200, req.body, { ["Content-Type"] = "application/octet-stream" } end
  if req.path == "/big" then
    local left = tonumber(req.query)
    return 200, function()
      if left <= 0 then return nil end
      local n = math.min(left, 65536)
      left = left - n
      return string.rep("b", n)
    end
  end
  if req.path == "/count" then return 200, tostring(n + 1) end
  return 200, "hello"
end })
print(srv.port)
io.stdout:flush()
s.receive()
"#;

/// A running server: its port, killed when dropped.
struct Server {
    _child: KillOnDrop,
    port: u16,
    pid: u32,
}

fn server(name: &str) -> Server {
    let dir = scratch_dir(&format!("http-{name}"));
    let path = dir.join("server.lua");
    std::fs::write(&path, SERVER).unwrap();
    let mut child = synodic_command().arg("run").arg(&path).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let pid = child.id();
    let child = KillOnDrop(child);
    let line = first_line_within(stdout, Duration::from_secs(30), "the http server's port");
    let port = line.trim().parse().unwrap_or_else(|_| panic!("the server printed {line:?}, not a port"));
    Server { _child: child, port, pid }
}

/// Runs a client program to its end (killed after 120 s).
fn client(program: &str, args: &[&str]) -> (String, String) {
    let mut cmd = Command::new(program);
    cmd.args(args);
    let out = output_within(cmd, LIMIT, program);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{program} {args:?} failed ({}):\n{stdout}\n{stderr}", out.status);
    (stdout, stderr)
}

#[test]
fn curl_gets_posts_streams_and_reuses_its_connection() {
    let srv = server("curl");
    let url = format!("http://127.0.0.1:{}", srv.port);
    let (body, _) = client("curl", &["-sS", "--fail", &format!("{url}/")]);
    assert_eq!(body, "hello");
    let (body, _) = client("curl", &["-sS", "--fail", "--data-binary", "payload bytes", &format!("{url}/echo")]);
    assert_eq!(body, "payload bytes");
    // A chunked upload, and a body large enough that curl asks to continue.
    let (body, _) = client("curl", &["-sS", "--fail", "-H", "Transfer-Encoding: chunked", "--data-binary", "in chunks", &format!("{url}/echo")]);
    assert_eq!(body, "in chunks");
    let big = "x".repeat(2 << 20);
    let file = scratch_dir("http-curl-upload").join("big");
    std::fs::write(&file, &big).unwrap();
    let (body, _) = client("curl", &["-sS", "--fail", "--data-binary", &format!("@{}", file.display()), &format!("{url}/echo")]);
    assert_eq!(body.len(), big.len());
    let (body, _) = client("curl", &["-sS", "--fail", &format!("{url}/big?1000000")]);
    assert_eq!(body.len(), 1_000_000);
    let (_, trace) = client("curl", &["-sS", "--fail", "-v", "--http1.0", &format!("{url}/")]);
    assert!(trace.contains("HTTP/1.0 200"), "{trace}");
    // Two URLs in one run share the connection (keep-alive).
    let (body, trace) = client("curl", &["-sS", "--fail", "-v", &format!("{url}/"), &format!("{url}/")]);
    assert_eq!(body, "hellohello");
    assert!(trace.contains("Re-using existing connection") || trace.contains("Reusing existing connection"), "{trace}");
}

#[test]
fn python_http_client_and_asyncio() {
    let srv = server("python");
    let script = format!(
        r#"
import http.client, asyncio
c = http.client.HTTPConnection("127.0.0.1", {port})
for i in range(200):
    c.request("POST", "/echo", body=str(i))
    r = c.getresponse()
    assert r.status == 200 and r.read() == str(i).encode(), i
c.close()

async def one(i):
    reader, writer = await asyncio.open_connection("127.0.0.1", {port})
    writer.write(b"GET /?%d HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % i)
    await writer.drain()
    data = await reader.read()
    writer.close()
    return data.startswith(b"HTTP/1.1 200") and data.endswith(b"hello")

async def main():
    results = await asyncio.gather(*(one(i) for i in range(500)))
    assert all(results), results.count(False)

asyncio.run(main())
print("python ok")
"#,
        port = srv.port
    );
    let (out, _) = client("python3", &["-c", &script]);
    assert!(out.contains("python ok"), "{out}");
}

#[test]
fn ab_and_wrk_find_no_error() {
    let srv = server("load");
    let url = format!("http://127.0.0.1:{}/", srv.port);
    let (out, _) = client("ab", &["-q", "-k", "-n", "5000", "-c", "50", &url]);
    assert!(out.contains("Complete requests:      5000") && out.contains("Failed requests:        0"), "{out}");
    let (out, _) = client("ab", &["-q", "-n", "2000", "-c", "20", &url]);
    assert!(out.contains("Complete requests:      2000") && out.contains("Failed requests:        0"), "{out}");
    let (out, _) = client("wrk", &["-t1", "-c100", "-d1s", &url]);
    assert!(out.contains("requests in") && !out.contains("Socket errors") && !out.contains("Non-2xx"), "{out}");
}

/// The resident memory of process `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok()).unwrap()
}

#[test]
fn ten_thousand_idle_keep_alive_connections() {
    let srv = server("idle");
    let before = rss_kib(srv.pid);
    let script = format!(
        r#"
import socket, resource
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
conns = []
for i in range(10000):
    c = socket.create_connection(("127.0.0.1", {port}))
    c.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    conns.append(c)
ok = 0
for c in conns:
    data = b""
    while not data.endswith(b"hello"):
        d = c.recv(4096)
        if not d: break
        data += d
    ok += data.startswith(b"HTTP/1.1 200")
print(ok)
import sys; sys.stdout.flush()
sys.stdin.read(1)
"#,
        port = srv.port
    );
    let mut holder = KillOnDrop(Command::new("python3").args(["-c", &script]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap());
    let line = first_line_within(holder.0.stdout.take().unwrap(), LIMIT, "10,000 connections");
    assert_eq!(line.trim(), "10000", "every connection was answered");
    // All of them open and idle: the server still answers a new one.
    let mut c = TcpStream::connect(("127.0.0.1", srv.port)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    c.write_all(b"GET /count HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    c.read_to_string(&mut answer).unwrap();
    assert!(answer.ends_with("10001"), "{answer}");
    let per_connection = (rss_kib(srv.pid) - before) * 1024 / 10_000;
    eprintln!("{per_connection} bytes of resident memory per idle connection");
    assert!(per_connection < 32 * 1024, "{per_connection} bytes per idle connection");
    let _ = holder.0.stdin.take().unwrap().write_all(b"x");
}

#[test]
fn a_slow_reader_holds_only_its_own_process() {
    let srv = server("slow");
    // Asks for 32 MB and reads none of it for a while: the server's process
    // for it waits (the kernel's buffers full), and others are served.
    let mut slow = TcpStream::connect(("127.0.0.1", srv.port)).unwrap();
    slow.write_all(b"GET /big?33554432 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let mut first = [0u8; 1024];
    slow.read_exact(&mut first).unwrap();
    let before = rss_kib(srv.pid);
    let (body, _) = client("curl", &["-sS", "--fail", "--max-time", "10", &format!("http://127.0.0.1:{}/", srv.port)]);
    assert_eq!(body, "hello", "served while the slow reader does not read");
    assert!(rss_kib(srv.pid) < before + 8 * 1024, "the unread body is not buffered in the server");
    let mut rest = Vec::new();
    slow.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    slow.read_to_end(&mut rest).unwrap();
    let total = first.len() + rest.len();
    assert!(total > 32 << 20, "the whole body arrives in the end ({total} bytes with the head)");
}

#[test]
fn a_client_that_resets_mid_body_breaks_nothing() {
    let srv = server("reset");
    for _ in 0..20 {
        let c = TcpStream::connect(("127.0.0.1", srv.port)).unwrap();
        (&c).write_all(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nonly a few bytes").unwrap();
        // SO_LINGER 0: the close sends a reset.
        let linger = libc::linger { l_onoff: 1, l_linger: 0 };
        use std::os::fd::AsRawFd;
        // SAFETY: sets an option of our own socket through a valid struct.
        unsafe { libc::setsockopt(c.as_raw_fd(), libc::SOL_SOCKET, libc::SO_LINGER, (&linger as *const libc::linger).cast(), std::mem::size_of::<libc::linger>() as u32) };
        drop(c);
    }
    let (body, _) = client("curl", &["-sS", "--fail", &format!("http://127.0.0.1:{}/count", srv.port)]);
    assert_eq!(body, "1", "no reset request reached the handler, and the server goes on");
}

#[test]
fn curl_and_python_speak_https_to_it() {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/lua/fixtures/tls");
    let dir = scratch_dir("http-tls");
    let path = dir.join("tls_server.lua");
    let source = format!(
        r#"local s = require "synodic"
           local http = require "synodic.http"
           local srv = assert(http.serve {{ port = 0, cert_file = "{cert}", key_file = "{key}",
             handler = function(req) return 200, "secure " .. req.body end }})
           print(srv.port) io.stdout:flush() s.receive()"#,
        cert = fixtures.join("cert.pem").display(),
        key = fixtures.join("key.pem").display()
    );
    std::fs::write(&path, source).unwrap();
    let mut child = synodic_command().arg("run").arg(&path).stdout(Stdio::piped()).spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let _child = KillOnDrop(child);
    let port = first_line_within(stdout, Duration::from_secs(30), "the https server's port").trim().to_string();
    let ca = fixtures.join("ca.pem");
    let (body, _) = client("curl", &["-sS", "--fail", "--cacert", ca.to_str().unwrap(), "--data-binary", "hi", &format!("https://localhost:{port}/")]);
    assert_eq!(body, "secure hi");
    // Without the CA, curl refuses the certificate (and the server goes on).
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", &format!("https://localhost:{port}/")]);
    let out = output_within(cmd, LIMIT, "curl without the CA");
    assert!(!out.status.success(), "an unknown authority is refused");
    let script = format!(
        "import ssl, urllib.request\nctx = ssl.create_default_context(cafile={ca:?})\nprint(urllib.request.urlopen('https://localhost:{port}/', data=b'py', context=ctx).read().decode())",
        ca = ca.to_str().unwrap()
    );
    let (out, _) = client("python3", &["-c", &script]);
    assert_eq!(out.trim(), "secure py");
}

#[test]
fn a_listener_out_of_descriptors_pauses_and_goes_on() {
    // A node allowed 64 open files, and 100 clients holding connections:
    // accepting fails with EMFILE; each acceptor says so once, pauses, and
    // serves again once the clients are gone.
    let dir = scratch_dir("http-emfile");
    let path = dir.join("server.lua");
    std::fs::write(&path, "local s = require 'synodic' local http = require 'synodic.http'\nlocal srv = assert(http.serve { port = 0, handler = function() return 200, 'ok' end })\nprint(srv.port) io.stdout:flush() s.receive()\n").unwrap();
    let mut child = Command::new("prlimit")
        .args(["--nofile=64:64", env!("CARGO_BIN_EXE_synodic"), "run"])
        .arg(&path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Every line of its stderr is read (a pipe closed after the first would
    // end the node with SIGPIPE at the next acceptor's line).
    let stderr = common::node::stderr_lines(&mut child);
    let stdout = child.stdout.take().unwrap();
    let child = KillOnDrop(child);
    let port: u16 = first_line_within(stdout, Duration::from_secs(30), "the server's port").trim().parse().unwrap();
    let held: Vec<TcpStream> = (0..100).map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap()).collect();
    let warning = stderr.recv_timeout(Duration::from_secs(30)).expect("the EMFILE warning within 30 s");
    assert!(warning.contains("too many open files; accepting again after a pause"), "{warning}");
    drop(held);
    let (body, _) = client("curl", &["-sS", "--fail", "--retry", "5", "--retry-connrefused", "--max-time", "20", &format!("http://127.0.0.1:{port}/")]);
    assert_eq!(body, "ok", "serving again");
    drop(child);
}
