//! A fault proxy: stands between nodes in place of a network and does to
//! their traffic what a bad network or an attacker does. It listens on one
//! port for TCP (links) and UDP (membership datagrams), as a node does, and
//! forwards both to the node behind it; a node started with `--advertise`
//! set to the proxy is reached by every other node through it.
//!
//! - `pause` / `resume`: nothing moves (TCP bytes wait in the buffers,
//!   datagrams are lost), as on a link that stalls;
//! - `cut` / `restore`: the connections are closed, and until `restore`
//!   new ones are closed at once and datagrams lost, as on a cable pulled;
//! - `delay`: every piece waits that long before it is forwarded;
//! - `slow_read`: the proxy reads from the connecting side at most so many
//!   bytes a second, as a peer that reads slowly;
//! - `inject` writes bytes of the test's own into the stream towards the
//!   node behind, and `upstream` is everything that went that way so far,
//!   as a relay would see and tamper with it.
//!
//! Threads end when their sockets close; the listening thread lives as
//! long as the test process (it is parked on `accept`).

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How much of what goes upstream [`Proxy::upstream`] keeps.
const SEEN_MAX: usize = 1 << 20;

#[derive(Default)]
struct Control {
    paused: AtomicBool,
    cut: AtomicBool,
    delay_ms: AtomicU64,
    /// Bytes a second read from the connecting side (0: no limit).
    read_rate: AtomicU64,
    /// The live connections' upstream sides (towards the node behind).
    upstream: Mutex<Vec<TcpStream>>,
    /// Every live connection's sockets, to cut them.
    live: Mutex<Vec<TcpStream>>,
    /// What went upstream so far, all connections together.
    seen: Mutex<Vec<u8>>,
}

pub struct Proxy {
    pub addr: String,
    control: Arc<Control>,
}

impl Proxy {
    /// A proxy for the node listening at `to` (TCP and UDP).
    pub fn start(to: &str) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let udp = UdpSocket::bind(addr).unwrap();
        let control = Arc::new(Control::default());
        let (c, target) = (control.clone(), to.to_string());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(client) = stream else { continue };
                if c.cut.load(SeqCst) {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                let Ok(server) = TcpStream::connect(&target) else { continue };
                let _ = (client.set_nodelay(true), server.set_nodelay(true));
                {
                    let mut live = c.live.lock().unwrap();
                    live.push(client.try_clone().unwrap());
                    live.push(server.try_clone().unwrap());
                    c.upstream.lock().unwrap().push(server.try_clone().unwrap());
                }
                let (c1, c2) = (c.clone(), c.clone());
                let (up_from, up_to) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                std::thread::spawn(move || pump(up_from, up_to, &c1, true));
                std::thread::spawn(move || pump(server, client, &c2, false));
            }
        });
        let (c, target) = (control.clone(), to.to_string());
        std::thread::spawn(move || {
            let out = UdpSocket::bind("127.0.0.1:0").unwrap();
            let mut buf = vec![0; 65536];
            while let Ok(n) = udp.recv(&mut buf) {
                if !c.paused.load(SeqCst) && !c.cut.load(SeqCst) {
                    let _ = out.send_to(&buf[..n], &target);
                }
            }
        });
        Proxy { addr: addr.to_string(), control }
    }

    pub fn pause(&self) {
        self.control.paused.store(true, SeqCst);
    }

    pub fn resume(&self) {
        self.control.paused.store(false, SeqCst);
    }

    /// Closes every connection; until [`Proxy::restore`], new ones too.
    pub fn cut(&self) {
        self.control.cut.store(true, SeqCst);
        for s in self.control.live.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
        self.control.upstream.lock().unwrap().clear();
    }

    pub fn restore(&self) {
        self.control.cut.store(false, SeqCst);
    }

    pub fn delay(&self, by: Duration) {
        self.control.delay_ms.store(by.as_millis() as u64, SeqCst);
    }

    /// Reads from the connecting side at most `bytes_per_second` (0: no limit).
    pub fn slow_read(&self, bytes_per_second: u64) {
        self.control.read_rate.store(bytes_per_second, SeqCst);
    }

    /// Writes `bytes` towards the node behind, on every live connection.
    pub fn inject(&self, bytes: &[u8]) {
        for s in self.control.upstream.lock().unwrap().iter_mut() {
            let _ = s.write_all(bytes);
        }
    }

    /// What went towards the node behind so far (its first megabyte).
    pub fn upstream(&self) -> Vec<u8> {
        self.control.seen.lock().unwrap().clone()
    }
}

/// One direction of one connection.
fn pump(mut from: TcpStream, mut to: TcpStream, c: &Control, upstream: bool) {
    from.set_read_timeout(Some(Duration::from_millis(10))).unwrap();
    let mut buf = vec![0; 64 << 10];
    loop {
        if c.paused.load(SeqCst) {
            std::thread::sleep(Duration::from_millis(5));
            continue;
        }
        let rate = if upstream { c.read_rate.load(SeqCst) } else { 0 };
        let want = if rate > 0 { (rate / 100).clamp(1, buf.len() as u64) as usize } else { buf.len() };
        match from.read(&mut buf[..want]) {
            Ok(0) => break,
            Ok(n) => {
                let delay = c.delay_ms.load(SeqCst);
                if delay > 0 {
                    std::thread::sleep(Duration::from_millis(delay));
                }
                if upstream {
                    let mut seen = c.seen.lock().unwrap();
                    if seen.len() < SEEN_MAX {
                        seen.extend_from_slice(&buf[..n]);
                    }
                }
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
                if rate > 0 {
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => break,
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}
