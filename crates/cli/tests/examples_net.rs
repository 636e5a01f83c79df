//! The network examples (`examples/net/`) run as their comments say: the
//! chat server with two users, the JSON service, the reverse proxy in
//! front of the page server, and the page server itself.

#[macro_use]
mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::time::Duration;

use common::*;

/// Starts `examples/net/NAME.lua` with `args`; returns it (killed when
/// dropped) and the port it printed.
fn start(name: &str, args: &[&str]) -> (KillOnDrop, u16) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../examples/net/{name}.lua"));
    let mut child = synodic_command().arg("run").arg(path).args(args).stdout(Stdio::piped()).spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let child = KillOnDrop(child);
    let line = first_line_within(stdout, Duration::from_secs(30), name);
    (child, line.trim().parse().unwrap_or_else(|_| panic!("{name} printed {line:?}, not a port")))
}

/// One HTTP/1.1 request on a new connection; the whole answer.
fn request(port: u16, method: &str, path: &str, body: &str) -> String {
    let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(c, "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}", body.len()).unwrap();
    let mut answer = String::new();
    c.read_to_string(&mut answer).unwrap();
    answer
}

fn body(answer: &str) -> &str {
    answer.split_once("\r\n\r\n").map_or("", |(_, b)| b)
}

#[test]
fn chat_users_hear_each_other() {
    let (_chat, port) = start("chat", &[]);
    let connect = |name: &str| {
        let c = TcpStream::connect(("127.0.0.1", port)).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut reader = BufReader::new(c.try_clone().unwrap());
        let mut prompt = [0u8; 6];
        reader.read_exact(&mut prompt).unwrap();
        assert_eq!(&prompt, b"name? ");
        (&c).write_all(format!("{name}\n").as_bytes()).unwrap();
        (c, reader)
    };
    let line = |r: &mut BufReader<TcpStream>| {
        let mut l = String::new();
        r.read_line(&mut l).unwrap();
        l.trim_end().to_string()
    };
    let (ann, mut ann_in) = connect("ann");
    assert_eq!(line(&mut ann_in), "* ann joined");
    let (bob, mut bob_in) = connect("bob");
    assert_eq!(line(&mut bob_in), "* bob joined");
    assert_eq!(line(&mut ann_in), "* bob joined");
    (&ann).write_all(b"hello bob\r\n").unwrap();
    assert_eq!(line(&mut bob_in), "ann: hello bob");
    assert_eq!(line(&mut ann_in), "ann: hello bob");
    (&bob).write_all(b"/quit\n").unwrap();
    assert_eq!(line(&mut ann_in), "* bob left");
    drop(ann);
}

#[test]
fn the_json_service_keeps_its_state_in_a_tuple_space() {
    let (_svc, port) = start("json_service", &[]);
    assert_eq!(body(&request(port, "PUT", "/kv/a", r#"{"n": 1}"#)), r#"{"ok":true}"#);
    assert_eq!(body(&request(port, "PUT", "/kv/b", "[1,2]")), r#"{"ok":true}"#);
    assert_eq!(body(&request(port, "PUT", "/kv/a", r#"{"n": 2}"#)), r#"{"ok":true}"#);
    assert_eq!(body(&request(port, "GET", "/kv/a", "")), r#"{"n": 2}"#);
    assert_eq!(body(&request(port, "GET", "/kv", "")), r#"{"keys":["a","b"]}"#);
    let bad = request(port, "PUT", "/kv/c", "not json");
    assert!(bad.starts_with("HTTP/1.1 400") && body(&bad).contains("not JSON"), "{bad}");
    assert!(request(port, "GET", "/kv/zz", "").starts_with("HTTP/1.1 404"));
}

#[test]
fn the_proxy_passes_the_page_server_on() {
    let (_pages, page_port) = start("page_server", &["0"]);
    let (_proxy, port) = start("proxy", &[&format!("http://127.0.0.1:{page_port}")]);
    let direct = request(page_port, "GET", "/", "");
    let proxied = request(port, "GET", "/", "");
    assert!(proxied.starts_with("HTTP/1.1 200"), "{proxied}");
    assert_eq!(body(&proxied), body(&direct));
    assert!(body(&direct).starts_with("1\n2\n3\n") && body(&direct).ends_with("4999\n5000\n"));
    assert_eq!(body(&request(port, "GET", "/hello", "")), "hello world!\n");
    // Its upstream gone, the proxy answers 502.
    drop(_pages);
    assert!(request(port, "GET", "/", "").starts_with("HTTP/1.1 502"));
}

#[test]
fn the_page_server_with_a_pool_of_processes() {
    let (_pages, port) = start("page_server", &["0", "20"]);
    for _ in 0..50 {
        assert_eq!(body(&request(port, "GET", "/hello", "")), "hello world!\n");
    }
}
