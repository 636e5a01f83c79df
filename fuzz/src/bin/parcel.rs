//! Parcels put back together: an `Assembler` driven by a program in the
//! input, as a link drives it with the parts it reads:
//!
//! - 0 stream:u8 total:u32 n:u16 n bytes: `begin(stream, total, bytes)`;
//! - 1 n:u16 n bytes: the bytes into `room()` after `room()`, each time
//!   followed by `filled()`, as the link reads the rest of a part;
//! - 2: `finish()`.
//!
//! Anything else (the input over, or an op past 2) ends it with a last
//! `finish()`. Whatever a finished parcel carries, sent again as a `Parcel`,
//! comes out the same.

use synodic_fuzz::Input;
use synodic_net::frame::{Decoder, Frame, Next};
use synodic_net::parcel::{Assembler, Carrying, Parcel};

fn main() {
    // Parcels may announce up to a GiB and the payload cache keeps up to
    // 512 MiB; what they hold before their bytes come is the point here.
    synodic_fuzz::set_heap_limit(2 << 30);
    afl::fuzz!(|data: &[u8]| {
        one(data);
    });
}

fn one(data: &[u8]) {
    let mut input = Input::new(data);
    let mut a = Assembler::default();
    let mut steps = 0;
    while !input.is_empty() && steps < 1024 {
        steps += 1;
        let result = match input.u8() {
            0 => {
                let (stream, total) = (input.u8() as u64, input.u32() as u64);
                let n = input.u16() as usize;
                a.begin(stream, total, input.take(n)).map(|_| None)
            }
            1 => {
                // As the link reads the rest of a part: into each piece's
                // room in turn; no room left is a part longer than its parcel.
                let n = input.u16() as usize;
                let mut bytes = input.take(n);
                while !bytes.is_empty() {
                    let Some((piece, left)) = a.room() else { return };
                    assert!(left > 0, "room() gave a piece with no room left (the link would spin)");
                    let take = left.min(bytes.len());
                    piece.extend_from_slice(&bytes[..take]);
                    if a.filled().is_err() {
                        return;
                    }
                    bytes = &bytes[take..];
                }
                Ok(None)
            }
            2 => a.finish(),
            _ => break,
        };
        match result {
            Ok(Some(whole)) => same_again(whole),
            Ok(None) => {}
            Err(_) => return,
        }
    }
    if let Ok(Some(whole)) = a.finish() {
        same_again(whole);
    }
}

/// What a parcel carried, cut into parts again and put back together.
fn same_again((bare, attachments): Carrying) {
    let frame = Frame::decode(bare[0], &bare[1..]).expect("a parcel's frame is checked when it is whole");
    assert!(!matches!(frame, Frame::Part { .. }), "a parcel gave a part");
    let Ok(mut parcel) = Parcel::new(frame.clone(), attachments.clone()) else { return };
    parcel.stream = 7;
    let mut bytes = Vec::new();
    while let Some((header, slices)) = parcel.next_part() {
        bytes.extend_from_slice(&header);
        slices.iter().for_each(|s| bytes.extend_from_slice(s.as_slice()));
    }
    assert_eq!(parcel.left(), 0);
    let mut d = Decoder::authenticated();
    d.space(bytes.len()).extend_from_slice(&bytes);
    let mut a = Assembler::default();
    let mut got = None;
    while let Some(next) = d.next().expect("a parcel's parts decode") {
        let Next::Part { stream, total, bytes, more } = next else { panic!("a parcel's frame is not a part") };
        assert_eq!((stream, more), (7, 0));
        assert!(got.is_none(), "a part after the parcel was whole");
        a.begin(stream, total, bytes).expect("a parcel's part is taken");
        got = a.finish().expect("a parcel's parts put together");
    }
    let (bare2, attachments2) = got.expect("a parcel whole after its last part");
    // Decoded, not as bytes: a varint may have come in a longer form than
    // the encoder writes.
    let again = Frame::decode(bare2[0], &bare2[1..]).expect("a parcel's frame, sent again, decodes");
    assert_eq!(again, frame, "a parcel's frame, sent again");
    assert_eq!(attachments2, attachments, "a parcel's attachments, sent again");
}
