//! The record layer: an `Opener` reads what the peer's `Sealer` wrote (the
//! two come out of a real handshake run in memory: `Opener::new` is not
//! public), with whatever the input adds on the way. The first byte picks
//! the protection (bit 0: authenticated only); the rest is a program:
//!
//! - 0 L bytes: seal L bytes of plaintext;
//! - 1 L bytes L bytes: seal two pieces gathered into one record;
//! - 2 at:u16 x: change one byte of what was sealed and not yet delivered;
//! - 3 L bytes: add bytes that no sealer wrote;
//! - 4 n:u16: deliver n bytes to the opener (in `feed` calls of up to n), and
//!   open what it can.
//!
//! What the opener gives is always a prefix of what was sealed, in order;
//! after a failure it opens nothing more; untouched, it gives everything.

use synodic_fuzz::{session_pair, Input};
use synodic_net::record::Opener;

fn main() {
    synodic_fuzz::set_heap_limit(256 << 20);
    afl::fuzz!(|data: &[u8]| {
        one(data);
    });
}

fn one(data: &[u8]) {
    let mut input = Input::new(data);
    let plain = input.u8() & 1 == 1;
    let (mut dialer, mut acceptor) = session_pair(plain);
    let (sealer, opener) = (&mut dialer.sealer, &mut acceptor.opener);

    // What was sealed, what the wire carries (altered or not), what is
    // delivered so far, and what came out.
    let (mut sealed, mut pristine, mut wire) = (Vec::new(), Vec::new(), Vec::new());
    let mut delivered = 0;
    let mut opened = Vec::new();
    let mut failed = false;
    let mut steps = 0;
    while !input.is_empty() && steps < 256 {
        steps += 1;
        match input.u8() % 5 {
            0 => {
                let text = input.chunk();
                sealed.extend_from_slice(text);
                let start = wire.len();
                sealer.seal(text, &mut wire).unwrap();
                pristine.extend_from_slice(&wire[start..]);
            }
            1 => {
                let (a, b) = (input.chunk(), input.chunk());
                let start = wire.len();
                let took = sealer.seal_gathered(&mut [a, b].into_iter(), &mut wire).unwrap();
                assert_eq!(took, a.len() + b.len());
                sealed.extend_from_slice(a);
                sealed.extend_from_slice(b);
                pristine.extend_from_slice(&wire[start..]);
            }
            2 => {
                let (at, x) = (input.u16() as usize, input.u8());
                if wire.len() > delivered {
                    let at = delivered + at % (wire.len() - delivered);
                    wire[at] ^= x;
                }
            }
            3 => wire.extend_from_slice(input.chunk()),
            _ => {
                let n = (input.u16() as usize).min(wire.len() - delivered);
                opener.feed(&wire[delivered..delivered + n]);
                delivered += n;
                assert!(opener.buffered() <= delivered);
                open(opener, &mut opened, &mut failed);
            }
        }
        assert!(sealed.starts_with(&opened), "the opener gave what was not sealed");
    }
    opener.feed(&wire[delivered..]);
    open(opener, &mut opened, &mut failed);
    assert!(sealed.starts_with(&opened), "the opener gave what was not sealed");
    if wire == pristine {
        assert!(!failed, "untouched records failed their check");
        assert_eq!(opened, sealed, "untouched records did not all open");
        assert_eq!(opener.buffered(), 0);
    }
}

/// Opens every record that has come whole.
fn open(opener: &mut Opener, opened: &mut Vec<u8>, failed: &mut bool) {
    loop {
        match opener.next() {
            Ok(Some(plain)) => {
                assert!(!*failed, "a record opened after a failure");
                opened.extend_from_slice(plain);
            }
            Ok(None) => return,
            Err(_) => {
                *failed = true;
                // Poisoned: asking again fails again.
                assert!(opener.next().is_err(), "an opener opened after a failure");
                return;
            }
        }
    }
}
