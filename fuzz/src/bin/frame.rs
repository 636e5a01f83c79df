//! Frames from an authenticated peer: `Frame::decode` on the input cut as
//! kind (first byte) and body (the rest), and the input as a byte stream
//! through `Decoder::authenticated()`, three ways that must agree:
//!
//! - all at once, cut with `next_frame`;
//! - all at once, cut with `next` (a part given as soon as its header is in);
//! - a few bytes at a time, cut with `next`, the rest of each part read
//!   past the decoder as the link does.
//!
//! And a frame that decodes, encoded again, decodes to itself.

use synodic_net::frame::{Decoder, Frame, Next};

fn main() {
    synodic_fuzz::set_heap_limit(256 << 20);
    afl::fuzz!(|data: &[u8]| {
        one(data);
    });
}

fn one(data: &[u8]) {
    if let Some((&kind, body)) = data.split_first() {
        if let Ok(frame) = Frame::decode(kind, body) {
            same_again(&frame);
        }
    }
    let whole = by_frames(data);
    for (i, f) in whole.0.iter().enumerate() {
        if i < 8 {
            same_again(f);
        }
    }
    assert_eq!(whole, by_parts(data, data.len().max(1)), "next() and next_frame() disagree on the whole input");
    const STEPS: [usize; 8] = [1, 2, 3, 5, 8, 13, 64, 4096];
    let step = STEPS[data.len() % STEPS.len()];
    assert_eq!(whole, by_parts(data, step), "fed {step} bytes at a time, next() disagrees with next_frame()");
}

/// The frame encoded, then decoded again: the same frame.
fn same_again(frame: &Frame) {
    let mut bytes = Vec::new();
    frame.encode(&mut bytes);
    let len = u32::from_le_bytes(bytes[..4].try_into().unwrap()) as usize;
    assert_eq!(len, bytes.len() - 4, "a frame's length");
    let again = Frame::decode(bytes[4], &bytes[5..]).unwrap_or_else(|e| panic!("{frame:?} encoded does not decode: {e}"));
    assert_eq!(&again, frame, "a frame decoded, encoded and decoded again");
    let bare = frame.encode_bare();
    assert_eq!(&bare[..], &bytes[4..]);
    let (head, message) = frame.clone().into_bare_and_message();
    assert_eq!([head, message].concat(), bare);
}

/// The frames, and whether the stream ended in an error.
type Cut = (Vec<Frame>, bool);

fn by_frames(data: &[u8]) -> Cut {
    let mut d = Decoder::authenticated();
    d.space(data.len()).extend_from_slice(data);
    let mut frames = Vec::new();
    loop {
        match d.next_frame() {
            Ok(Some(f)) => frames.push(f),
            Ok(None) => {
                assert!(d.buffered() <= data.len());
                return (frames, false);
            }
            Err(_) => return (frames, true),
        }
    }
}

/// `step` bytes at a time through `next`; a part's bytes that had not come
/// yet are taken straight from the input (the link reads them itself).
fn by_parts(data: &[u8], step: usize) -> Cut {
    let mut d = Decoder::authenticated();
    let mut at = 0;
    let mut frames = Vec::new();
    loop {
        match d.next() {
            Err(_) => return (frames, true),
            Ok(Some(Next::Frame(f))) => frames.push(f),
            Ok(Some(Next::Service { kind, body })) => frames.push(Frame::Service { kind, head: Vec::new(), message: body.to_vec() }),
            Ok(Some(Next::Part { stream, total, bytes, more })) => {
                let mut bytes = bytes.to_vec();
                if more > 0 {
                    if data.len() - at < more {
                        return (frames, false);
                    }
                    bytes.extend_from_slice(&data[at..at + more]);
                    at += more;
                }
                frames.push(Frame::Part { stream, total, bytes });
            }
            Ok(None) => {
                if at == data.len() {
                    return (frames, false);
                }
                let n = step.min(data.len() - at);
                d.space(n).extend_from_slice(&data[at..at + n]);
                at += n;
            }
        }
    }
}
