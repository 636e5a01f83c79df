//! The handshake, before the peer has proved anything. The first byte
//! chooses what the rest is:
//!
//! - 0: `Message::decode(kind, body)` on the rest cut as kind (first byte)
//!   and body; a message that decodes, encoded again, decodes to itself;
//! - 1: a byte stream of framed messages, cut with `Decoder::new()` +
//!   `next_raw()` and given, one after the other, to an acceptor's
//!   handshake and to a dialer's, until one fails;
//! - 2: a real dialer and a real acceptor talk, and the rest says how each
//!   of their messages is altered on the way (passed, a byte changed, cut,
//!   replaced, more added). Whatever is done to them, neither end may
//!   complete unless it got exactly what the other sent; two ends that
//!   complete agree on who is who and their records go through.

use synodic_fuzz::{config, decode_all, relay, End, Input};
use synodic_net::frame::Decoder;
use synodic_net::handshake::{Handshake, Message, Purpose, Step};
use synodic_net::record::Protection;

fn main() {
    synodic_fuzz::set_heap_limit(256 << 20);
    afl::fuzz!(|data: &[u8]| {
        let Some((&mode, rest)) = data.split_first() else { return };
        match mode % 3 {
            0 => decode(rest),
            1 => stream(rest),
            _ => tampered(rest),
        }
    });
}

fn decode(data: &[u8]) {
    let Some((&kind, body)) = data.split_first() else { return };
    if let Ok(m) = Message::decode(kind, body) {
        same_again(&m);
    }
}

fn same_again(m: &Message) {
    let bytes = m.encode();
    assert_eq!(u32::from_le_bytes(bytes[..4].try_into().unwrap()) as usize, bytes.len() - 4);
    let again = Message::decode(bytes[4], &bytes[5..]).unwrap_or_else(|e| panic!("{m:?} encoded does not decode: {e}"));
    assert_eq!(&again, m, "a message decoded, encoded and decoded again");
}

fn stream(data: &[u8]) {
    let cookie = b"cookie";
    let (acceptor, _challenge) = Handshake::acceptor(config(cookie, Purpose::Node, false)).expect("an acceptor");
    let dialer = Handshake::dialer(config(cookie, Purpose::Node, false)).expect("a dialer");
    for mut hs in [acceptor, dialer] {
        let mut d = Decoder::new();
        d.space(data.len()).extend_from_slice(data);
        loop {
            let (kind, body) = match d.next_raw() {
                Ok(Some(frame)) => frame,
                Ok(None) | Err(_) => break,
            };
            if let Ok(m) = Message::decode(kind, body) {
                same_again(&m);
            }
            match hs.receive(kind, body) {
                Ok(Step::Send(out)) => assert!(!decode_all(&out).is_empty(), "what a handshake sends decodes"),
                // Reaching the end from bytes that the fuzzer made up would
                // mean it forged a proof.
                Ok(Step::Done { .. }) => panic!("a handshake completed with messages made up by the fuzzer"),
                Err(e) => {
                    let _ = hs.refusal(&e);
                    break;
                }
            }
        }
    }
}

fn tampered(data: &[u8]) {
    let mut input = Input::new(data);
    let flags = input.u8();
    let dialer_cookie: &[u8] = if flags & 1 != 0 { b"another cookie" } else { b"cookie" };
    let purpose = if flags & 2 != 0 { Purpose::Console } else { Purpose::Node };
    let (dialer_plain, acceptor_plain) = (flags & 4 != 0, flags & 8 != 0);
    let mut dialer_config = config(dialer_cookie, purpose, dialer_plain);
    if flags & 16 != 0 {
        dialer_config.listen = "127.0.0.1:4000".into();
        dialer_config.node.name = "d\u{e9}j\u{e0}".into();
    }
    let acceptor_config = config(b"cookie", Purpose::Node, acceptor_plain);
    let (dialer, acceptor) = relay(dialer_config.clone(), acceptor_config.clone(), |_, bytes| alter(&mut input, bytes));

    // An end that completed got what the other end sent, as it was sent.
    if acceptor.end.is_done() {
        assert_eq!(acceptor.received.first(), dialer.sent.first(), "the acceptor completed on a hello the dialer did not send");
        assert_eq!(dialer.received.first(), acceptor.sent.first(), "the acceptor completed though the dialer got another challenge");
    }
    if dialer.end.is_done() {
        assert!(acceptor.end.is_done(), "the dialer completed, the acceptor did not");
        assert_eq!(dialer.received[..], acceptor.sent[..], "the dialer completed on messages the acceptor did not send");
        assert_eq!(&acceptor.received[..1], &dialer.sent[..], "the dialer completed though the acceptor got another hello");
    }
    let (End::Done(dialer_peer, mut dialer_session), End::Done(acceptor_peer, mut acceptor_session)) = (dialer.end, acceptor.end) else { return };
    assert_eq!(dialer_config.cookie, acceptor_config.cookie, "completed with two cookies");
    assert_eq!(dialer_config.purpose, acceptor_config.purpose, "completed for two purposes");
    assert_eq!(dialer_peer.node, acceptor_config.node);
    assert_eq!((&acceptor_peer.node, &acceptor_peer.listen), (&dialer_config.node, &dialer_config.listen));
    assert_eq!(dialer_peer.dialer_nonce, acceptor_peer.dialer_nonce);
    let protection = if dialer_plain && acceptor_plain { Protection::Authenticated } else { Protection::Encrypted };
    assert_eq!((dialer_session.protection(), acceptor_session.protection()), (protection, protection));
    // Records go through, both ways.
    for (sealer, opener) in [(&mut dialer_session.sealer, &mut acceptor_session.opener), (&mut acceptor_session.sealer, &mut dialer_session.opener)] {
        let mut wire = Vec::new();
        sealer.seal(b"after the handshake", &mut wire).unwrap();
        opener.feed(&wire);
        assert_eq!(opener.next().unwrap(), Some(&b"after the handshake"[..]));
    }
}

/// What happens to one message on the way, as the input says.
fn alter(input: &mut Input, bytes: &mut Vec<u8>) {
    if input.is_empty() {
        return;
    }
    match input.u8() % 6 {
        0 => {}
        1 => {
            // One byte changed.
            if !bytes.is_empty() {
                let at = input.u16() as usize % bytes.len();
                bytes[at] ^= input.u8().max(1);
            }
        }
        2 => {
            let at = input.u16() as usize % (bytes.len() + 1);
            bytes.truncate(at);
        }
        3 => *bytes = input.chunk().to_vec(),
        4 => bytes.extend_from_slice(input.chunk()),
        _ => {
            // A byte added or removed in the middle (lengths and fields slide).
            let at = input.u16() as usize % (bytes.len() + 1);
            match input.u8() {
                v if v & 1 == 0 => bytes.insert(at, v),
                _ if at < bytes.len() => drop(bytes.remove(at)),
                _ => {}
            }
        }
    }
}
