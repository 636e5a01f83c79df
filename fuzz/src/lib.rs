//! What the fuzz targets share: a heap with a ceiling (so that a decoder
//! that asks for memory out of all proportion to its input is a crash, not
//! a slow swap), a reader of the fuzzer's bytes, and a handshake between two
//! real ends run in memory (for the targets that need a session).
//!
//! Each target is a binary in `src/bin/` that hands its input to the
//! library's decoders through `afl::fuzz!`; `scripts/fuzz` builds and runs
//! them. None of this is used by the runtime itself.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use synodic_core::NodeId;
use synodic_net::frame::Decoder;
use synodic_net::handshake::{Config, Handshake, Message, Peer, Purpose, Session, Step};

/// The system allocator, refusing (returning null) any allocation that would
/// take the live heap past [`set_heap_limit`]. A fallible allocation
/// (`try_reserve`) then fails as the code expects it to on a machine out of
/// memory; an infallible one aborts ("memory allocation of N bytes
/// failed"), which the fuzzer records as a crash.
pub struct Capped;

#[global_allocator]
static HEAP: Capped = Capped;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static LIMIT: AtomicUsize = AtomicUsize::new(usize::MAX);

/// The heap held now.
pub fn heap_live() -> usize {
    LIVE.load(Relaxed)
}

/// The most heap a target may hold at once.
pub fn set_heap_limit(bytes: usize) {
    LIMIT.store(bytes, Relaxed);
}

unsafe impl GlobalAlloc for Capped {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !reserve(layout.size()) {
            return std::ptr::null_mut();
        }
        let p = System.alloc(layout);
        if p.is_null() {
            LIVE.fetch_sub(layout.size(), Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !reserve(layout.size()) {
            return std::ptr::null_mut();
        }
        let p = System.alloc_zeroed(layout);
        if p.is_null() {
            LIVE.fetch_sub(layout.size(), Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        LIVE.fetch_sub(layout.size(), Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old = layout.size();
        if new_size > old && !reserve(new_size - old) {
            return std::ptr::null_mut();
        }
        let p = System.realloc(ptr, layout, new_size);
        match (p.is_null(), new_size > old) {
            (true, true) => drop(LIVE.fetch_sub(new_size - old, Relaxed)),
            (false, false) => drop(LIVE.fetch_sub(old - new_size, Relaxed)),
            _ => {}
        }
        p
    }
}

fn reserve(size: usize) -> bool {
    let limit = LIMIT.load(Relaxed);
    LIVE.fetch_update(Relaxed, Relaxed, |live| live.checked_add(size).filter(|&sum| sum <= limit)).is_ok()
}

/// Reads the fuzzer's bytes as the operands of a target: every read gives
/// something (zeros once the input has run out), so any input is a valid
/// program.
pub struct Input<'a> {
    data: &'a [u8],
}

impl<'a> Input<'a> {
    pub fn new(data: &'a [u8]) -> Input<'a> {
        Input { data }
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    pub fn u8(&mut self) -> u8 {
        self.take(1).first().copied().unwrap_or(0)
    }

    pub fn u16(&mut self) -> u16 {
        let mut b = [0; 2];
        let got = self.take(2);
        b[..got.len()].copy_from_slice(got);
        u16::from_le_bytes(b)
    }

    pub fn u32(&mut self) -> u32 {
        let mut b = [0; 4];
        let got = self.take(4);
        b[..got.len()].copy_from_slice(got);
        u32::from_le_bytes(b)
    }

    /// The next `n` bytes, or as many as are left.
    pub fn take(&mut self, n: usize) -> &'a [u8] {
        let (head, tail) = self.data.split_at(n.min(self.data.len()));
        self.data = tail;
        head
    }

    /// A run of bytes whose length (one byte) comes first.
    pub fn chunk(&mut self) -> &'a [u8] {
        let n = self.u8() as usize;
        self.take(n)
    }

    pub fn rest(&mut self) -> &'a [u8] {
        self.take(self.data.len())
    }
}

/// A side's handshake configuration, as the brief of the targets gives it.
pub fn config(cookie: &[u8], purpose: Purpose, plain: bool) -> Config {
    Config { cookie: cookie.to_vec(), purpose, node: NodeId { name: "fuzz".into(), incarnation: 1 }, listen: String::new(), plain }
}

/// How one end of a relayed handshake ended.
pub enum End {
    /// Still waiting for a message.
    Waiting,
    Done(Peer, Session),
    Failed(String),
}

impl End {
    pub fn is_done(&self) -> bool {
        matches!(self, End::Done(..))
    }
}

/// One end of a handshake run in memory.
pub struct Side {
    pub hs: Handshake,
    pub decoder: Decoder,
    pub end: End,
    /// The messages this end's handshake was given, decoded, in order.
    pub received: Vec<Message>,
    /// The messages it sent, decoded, in order (before anything altered them).
    pub sent: Vec<Message>,
}

/// A handshake between a dialer and an acceptor in memory, every message
/// passing through `tamper` (which may change, cut, replace or add to its
/// bytes) on its way: index 0 is the challenge, 1 the hello, 2 the welcome
/// or a refusal, and so on. Returns both ends, the dialer first.
pub fn relay(dialer: Config, acceptor: Config, mut tamper: impl FnMut(usize, &mut Vec<u8>)) -> (Side, Side) {
    let (acc, challenge) = Handshake::acceptor(acceptor).expect("an acceptor's handshake");
    let dial = Handshake::dialer(dialer).expect("a dialer's handshake");
    let side = |hs| Side { hs, decoder: Decoder::new(), end: End::Waiting, received: Vec::new(), sent: Vec::new() };
    let mut sides = [side(dial), side(acc)];
    sides[1].sent.extend(decode_all(&challenge));
    // (to which side, the bytes): 0 the dialer, 1 the acceptor.
    let mut queue = std::collections::VecDeque::from([(0usize, challenge)]);
    let mut index = 0;
    while let Some((to, mut bytes)) = queue.pop_front() {
        if index > 16 {
            break;
        }
        tamper(index, &mut bytes);
        index += 1;
        let side = &mut sides[to];
        if !matches!(side.end, End::Waiting) {
            continue;
        }
        side.decoder.space(bytes.len()).extend_from_slice(&bytes);
        loop {
            let (kind, body) = match side.decoder.next_raw() {
                Ok(Some(frame)) => frame,
                Ok(None) => break,
                Err(e) => {
                    side.end = End::Failed(e.to_string());
                    break;
                }
            };
            if let Ok(m) = Message::decode(kind, body) {
                side.received.push(m);
            }
            match side.hs.receive(kind, body) {
                Ok(Step::Send(out)) => {
                    side.sent.extend(decode_all(&out));
                    queue.push_back((1 - to, out));
                }
                Ok(Step::Done { send, peer, session }) => {
                    if let Some(out) = send {
                        side.sent.extend(decode_all(&out));
                        queue.push_back((1 - to, out));
                    }
                    side.end = End::Done(peer, session);
                    break;
                }
                Err(e) => {
                    if let Some(out) = side.hs.refusal(&e) {
                        side.sent.extend(decode_all(&out));
                        queue.push_back((1 - to, out));
                    }
                    side.end = End::Failed(e.to_string());
                    break;
                }
            }
        }
    }
    let [dialer, acceptor] = sides;
    (dialer, acceptor)
}

/// The handshake messages in `bytes` (whole frames that decode).
pub fn decode_all(bytes: &[u8]) -> Vec<Message> {
    let mut d = Decoder::new();
    d.space(bytes.len()).extend_from_slice(bytes);
    let mut out = Vec::new();
    while let Ok(Some((kind, body))) = d.next_raw() {
        match Message::decode(kind, body) {
            Ok(m) => out.push(m),
            Err(_) => break,
        }
    }
    out
}

/// The two sessions of a handshake that went through untouched: the
/// dialer's, then the acceptor's.
pub fn session_pair(plain: bool) -> (Session, Session) {
    let cookie = b"a cookie for fuzzing";
    let (dialer, acceptor) = relay(config(cookie, Purpose::Node, plain), config(cookie, Purpose::Node, plain), |_, _| {});
    match (dialer.end, acceptor.end) {
        (End::Done(_, d), End::Done(_, a)) => (d, a),
        _ => panic!("an untouched handshake failed"),
    }
}
