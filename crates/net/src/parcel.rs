//! Parcels: what crosses a link as a run of `Part` frames rather than as one
//! frame. A frame longer than a part is a parcel, and so is a message that
//! carries buffers: their bytes travel beside the message, as within a node
//! they are shared beside it. Cutting long messages into parts lets a link
//! put small frames between them, so nothing waits behind a large buffer.
//! Sans-IO: [`Parcel`] cuts one into parts as the link has room, and
//! [`Assembler`] puts the parts back together on the other side.
//!
//! A parcel's bytes, cut anywhere into parts of at most [`PART`] bytes:
//!
//! 1. the envelope: how many pieces (varint), then each piece's length
//!    and kind (varint: length × 4 + kind; kind 0 is bytes, 1 a future,
//!    2 a tuple-space handle);
//! 2. piece 0: the carried frame, its kind byte and body (kind 0);
//! 3. pieces 1…: the message's attachments, in order: a buffer's bytes, or
//!    a future or a space handle as `synodic_core::dist::carry::carry` encodes it.
//!
//! The first part holds the whole envelope (it is at most a few kilobytes,
//! a part is 64 KiB), so the receiver can give every piece a buffer of its
//! final size at once and copy each byte once. It does so while the
//! parcels open on all links have announced at most [`PREALLOCATED_MAX`]
//! bytes in all; past that, a piece's buffer grows as its bytes arrive, so
//! what a peer announces is not memory spent before it is sent. The parts of one parcel
//! follow each other; a part of another parcel before the last part is a
//! protocol error, so a receiver holds at most one parcel per link.

use std::sync::Arc;

use synodic_core::dist::carry::Carried;
use synodic_core::wire::{Reader, Writer};

use crate::frame::{Arrival, Frame, PART};
use crate::record::TAG;
use crate::Error;

pub use synodic_core::dist::{ATTACHMENTS_MAX, MESSAGE_MAX};

/// A buffer's bytes, shared with the processes that hold the buffer.
pub type Bytes = Arc<synodic_core::payload::Payload>;

/// Bytes the open parcels of all links may have buffers of their final
/// size for before their bytes have come.
pub const PREALLOCATED_MAX: u64 = 256 << 20;
/// The longest parcel that may go whole, as one part among a link's frames
/// (`Parcel::write_whole`): a message with a few small buffers then costs
/// what a plain frame does, where a parcel of its own costs a record per
/// piece and, on the other side, a read per record.
pub const WHOLE_MAX: u64 = 16 << 10;
/// How much a piece that grows as its bytes arrive grows by, at least.
const GROWTH: usize = 1 << 20;

/// Bytes preallocated for the parcels open now.
static PREALLOCATED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A whole parcel's frame (its kind byte and body) and its attachments.
pub type Carrying = (Vec<u8>, Vec<Carried>);

/// A parcel on its way out.
pub struct Parcel {
    pub stream: u64,
    /// What goes out, in order: the envelope and the frame's header, the
    /// frame's message, then its attachments' bytes.
    pieces: Vec<Bytes>,
    piece: usize,
    offset: usize,
    total: u64,
    left: u64,
}

impl Parcel {
    /// `frame` (a message-carrying frame) with the attachments its message
    /// refers to; an error when it is too large to cross. Its message's
    /// bytes are taken over, not copied. The link numbers it (`stream`)
    /// when it queues it.
    pub fn new(frame: Frame, attachments: Vec<Carried>) -> Result<Parcel, String> {
        if attachments.len() > ATTACHMENTS_MAX {
            return Err(format!("a message to another node carries at most {ATTACHMENTS_MAX} buffers (this one {})", attachments.len()));
        }
        let attachments: Vec<(u64, Bytes)> = attachments
            .into_iter()
            .map(|a| match a {
                Carried::Bytes(bytes) => (0, bytes),
                Carried::Future(encoded) => (1, Arc::new(encoded.into())),
                Carried::Space(encoded) => (2, Arc::new(encoded.into())),
            })
            .collect();
        let (bare, message) = frame.into_bare_and_message();
        let mut w = Writer::fields_after(Vec::new());
        w.varint(1 + attachments.len() as u64);
        w.varint(((bare.len() + message.len()) as u64) << 2);
        for (kind, a) in &attachments {
            w.varint((a.len() as u64) << 2 | kind);
        }
        let mut head = w.finish_small();
        head.extend_from_slice(&bare);
        let total = (head.len() + message.len()) as u64 + attachments.iter().map(|(_, a)| a.len() as u64).sum::<u64>();
        if total > MESSAGE_MAX {
            return Err(format!("message too large: {total} bytes, at most {MESSAGE_MAX} to another node"));
        }
        // Piece 0 goes out as the envelope and frame header, then the
        // message's own bytes.
        let mut pieces = vec![Arc::new(head.into()), Arc::new(message.into())];
        pieces.extend(attachments.into_iter().map(|(_, a)| a));
        Ok(Parcel { stream: 0, pieces, piece: 0, offset: 0, total, left: total })
    }

    /// Bytes not yet cut into parts.
    pub fn left(&self) -> u64 {
        self.left
    }

    /// Writes the whole parcel onto `out` as one part, its pieces copied
    /// (for a parcel of at most [`WHOLE_MAX`] bytes, which fits a part).
    pub fn write_whole(&mut self, out: &mut Vec<u8>) {
        debug_assert!(self.left <= WHOLE_MAX && WHOLE_MAX <= PART as u64);
        while let Some((header, slices)) = self.next_part() {
            out.extend_from_slice(&header);
            slices.iter().for_each(|s| out.extend_from_slice(s.as_slice()));
        }
    }

    /// The next part: its frame header, and its payload as ranges of the
    /// pieces (borrowed, not copied); `None` once the parcel has gone.
    pub fn next_part(&mut self) -> Option<(Vec<u8>, Vec<Slice>)> {
        let mut slices = Vec::new();
        let mut room = PART;
        while room > 0 && self.piece < self.pieces.len() {
            let bytes = &self.pieces[self.piece];
            let take = (bytes.len() - self.offset).min(room);
            if take > 0 {
                slices.push(Slice { bytes: bytes.clone(), range: self.offset..self.offset + take });
            }
            room -= take;
            self.offset += take;
            if self.offset == bytes.len() {
                (self.piece, self.offset) = (self.piece + 1, 0);
            }
        }
        let carried = PART - room;
        if carried == 0 {
            return None;
        }
        self.left -= carried as u64;
        let mut header = Vec::new();
        Frame::encode_part_header(&mut header, self.stream, self.total, carried);
        Some((header, slices))
    }
}

/// Some of a piece's bytes.
pub struct Slice {
    pub bytes: Bytes,
    pub range: std::ops::Range<usize>,
}

impl Slice {
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[self.range.clone()]
    }
}

/// Puts parcels back together from the parts that arrive on one link.
#[derive(Default)]
pub struct Assembler {
    open: Option<Open>,
    /// A parcel whose first bytes have come but not yet its whole envelope
    /// (a part's header can arrive alone): stream, total, bytes so far.
    envelope: Option<(u64, u64, Vec<u8>)>,
}

/// The most bytes a parcel's envelope takes (4097 pieces of 10-byte varints).
const ENVELOPE_MAX: usize = 64 << 10;

/// A parcel whose parts are arriving.
struct Open {
    stream: u64,
    total: u64,
    pieces: Vec<Vec<u8>>,
    lens: Vec<usize>,
    /// Each piece's kind (0: bytes, 1: a future, 2: a space handle).
    kinds: Vec<u8>,
    piece: usize,
    /// Bytes it counts in [`PREALLOCATED`].
    preallocated: u64,
}

impl Drop for Open {
    fn drop(&mut self) {
        PREALLOCATED.fetch_sub(self.preallocated, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Assembler {
    /// Takes the first bytes of a part (the rest may follow through [`Assembler::room`]).
    pub fn begin(&mut self, stream: u64, total: u64, bytes: &[u8]) -> Result<(), Error> {
        let (open_stream, open_total) = match (&self.open, &self.envelope) {
            (Some(open), _) => (open.stream, open.total),
            (None, Some((s, t, _))) => (*s, *t),
            (None, None) if total > MESSAGE_MAX => return Err(Error::Protocol(format!("parcel {stream}: {total} bytes (at most {MESSAGE_MAX})"))),
            (None, None) => {
                self.envelope = Some((stream, total, Vec::new()));
                (stream, total)
            }
        };
        if open_stream != stream {
            return Err(Error::Protocol(format!("a part of parcel {stream} inside parcel {open_stream}")));
        }
        if open_total != total {
            return Err(Error::Protocol(format!("parcel {stream} changed its length")));
        }
        match (&mut self.open, &mut self.envelope) {
            (Some(open), _) => open.fill(bytes),
            (None, Some((_, _, first))) => {
                first.extend_from_slice(bytes);
                self.try_open()
            }
            (None, None) => unreachable!("one of them was set above"),
        }
    }

    /// Opens the parcel once its envelope has come whole.
    fn try_open(&mut self) -> Result<(), Error> {
        let Some((stream, total, first)) = &self.envelope else { return Ok(()) };
        match Open::start(*stream, *total, first)? {
            Some((mut open, rest)) => {
                open.fill(rest)?;
                self.open = Some(open);
                self.envelope = None;
                Ok(())
            }
            None if first.len() < ENVELOPE_MAX => Ok(()),
            None => Err(Error::Protocol(format!("parcel {stream}: its first part does not hold the envelope"))),
        }
    }

    /// Where the next bytes of the open parcel go, and how many that piece
    /// still takes; the caller appends to it and then calls
    /// [`Assembler::filled`].
    pub fn room(&mut self) -> Option<(&mut Vec<u8>, usize)> {
        if let (None, Some((_, _, first))) = (&self.open, &mut self.envelope) {
            let left = ENVELOPE_MAX.saturating_sub(first.len()).max(1);
            return Some((first, left));
        }
        let open = self.open.as_mut()?;
        let len = *open.lens.get(open.piece)?;
        let piece = &mut open.pieces[open.piece];
        let left = len - piece.len();
        if piece.capacity() - piece.len() < left.min(GROWTH) {
            // A piece that grows as its bytes come: by half its size, at
            // least a megabyte, never past its length.
            // (And room for a record's tag past it: records are read
            // straight into the piece, tag included.)
            piece.reserve_exact(left.min((piece.len() / 2).max(GROWTH)) + TAG);
        }
        Some((piece, left))
    }

    /// Whether a parcel is coming (its first part has come, not its last).
    pub fn is_open(&self) -> bool {
        self.open.is_some() || self.envelope.is_some()
    }

    /// The piece the next bytes go to, as it is (no room made).
    pub fn piece(&mut self) -> Option<&mut Vec<u8>> {
        let open = self.open.as_mut()?;
        open.pieces.get_mut(open.piece).filter(|_| open.piece < open.lens.len())
    }

    /// Bytes were appended to the piece [`Assembler::room`] gave.
    pub fn filled(&mut self) -> Result<(), Error> {
        if let Some(open) = &mut self.open {
            open.skip_whole();
            return Ok(());
        }
        self.try_open()
    }

    /// The carried frame (its kind byte and body) and its attachments,
    /// once the parcel is whole.
    pub fn finish(&mut self) -> Result<Option<Carrying>, Error> {
        let Some(open) = &self.open else { return Ok(None) };
        if open.piece < open.lens.len() {
            return Ok(None);
        }
        let stream = open.stream;
        let mut open = self.open.take().expect("open");
        let mut pieces = std::mem::take(&mut open.pieces).into_iter().zip(std::mem::take(&mut open.kinds));
        let (bare, _) = pieces.next().unwrap_or_default();
        let Some((&kind, body)) = bare.split_first() else {
            return Err(Error::Protocol(format!("parcel {stream} carries no frame")));
        };
        if matches!(Frame::arrival(kind, body)?, Arrival::Frame(Frame::Part { .. })) {
            return Err(Error::Protocol(format!("parcel {stream} carries a frame of kind {kind}")));
        }
        let attached = pieces.map(|(p, kind)| match kind {
            1 => Carried::Future(p),
            2 => Carried::Space(p),
            _ => Carried::Bytes(Arc::new(p.into())),
        });
        Ok(Some((bare, attached.collect())))
    }
}

impl Open {
    /// Reads the envelope from the first bytes of the parcel; returns the
    /// bytes after it, or `None` if they do not hold all of it yet.
    fn start(stream: u64, total: u64, first: &[u8]) -> Result<Option<(Open, &[u8])>, Error> {
        let bad = |why: &str| Error::Protocol(format!("parcel {stream}: {why}"));
        if total > MESSAGE_MAX {
            return Err(bad(&format!("{total} bytes (at most {MESSAGE_MAX})")));
        }
        let mut r = Reader::fields(first);
        let Ok(count) = r.varint() else { return Ok(None) };
        if count == 0 || count > 1 + ATTACHMENTS_MAX as u64 {
            return Err(bad(&format!("{count} pieces")));
        }
        let (mut lens, mut kinds) = (Vec::with_capacity(count as usize), Vec::with_capacity(count as usize));
        for i in 0..count {
            let Ok(word) = r.varint() else { return Ok(None) };
            if (i == 0 && word & 3 != 0) || word & 3 == 3 {
                return Err(bad("a piece of an unknown kind"));
            }
            lens.push(word >> 2);
            kinds.push((word & 3) as u8);
        }
        let sum = lens.iter().try_fold(r.position() as u64, |a, &l| a.checked_add(l));
        if sum != Some(total) {
            return Err(bad("its pieces do not add up to its length"));
        }
        let lens: Vec<usize> = lens.into_iter().map(|l| l as usize).collect();
        use std::sync::atomic::Ordering::Relaxed;
        let preallocated = match PREALLOCATED.fetch_update(Relaxed, Relaxed, |held| held.checked_add(total).filter(|&sum| sum <= PREALLOCATED_MAX)) {
            Ok(_) => total,
            Err(_) => 0,
        };
        // Past the budget a piece starts empty: a few bytes announcing
        // thousands of pieces reserve nothing. Within it, the piece has
        // room for the tag of the record that ends it (records are read
        // straight into the piece): a piece that had to grow by those 16
        // bytes would be copied whole into fresh memory.
        let initial = |l: usize| if preallocated > 0 { l + TAG } else { 0 };
        let pieces = lens.iter().map(|&l| synodic_core::payload::with_capacity(initial(l))).collect::<Result<_, _>>();
        let mut open = Open { stream, total, pieces: Vec::new(), lens, kinds, piece: 0, preallocated };
        open.pieces = pieces.map_err(|_| bad(&format!("no memory for its {total} bytes")))?;
        open.skip_whole();
        Ok(Some((open, &first[r.position()..])))
    }

    fn fill(&mut self, mut bytes: &[u8]) -> Result<(), Error> {
        while !bytes.is_empty() {
            let Some(&len) = self.lens.get(self.piece) else {
                return Err(Error::Protocol(format!("parcel {} is longer than it said", self.stream)));
            };
            let piece = &mut self.pieces[self.piece];
            let take = (len - piece.len()).min(bytes.len());
            piece.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            self.skip_whole();
        }
        Ok(())
    }

    /// Moves past the pieces that are whole (an empty one is at once).
    fn skip_whole(&mut self) {
        while self.piece < self.lens.len() && self.pieces[self.piece].len() == self.lens[self.piece] {
            self.piece += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::Decoder;

    /// A whole part through the assembler.
    fn part(a: &mut Assembler, stream: u64, total: u64, bytes: &[u8]) -> Result<Option<(Frame, Vec<Carried>)>, Error> {
        a.begin(stream, total, bytes)?;
        Ok(a.finish()?.map(|(bare, shared)| (Frame::decode(bare[0], &bare[1..]).unwrap(), shared)))
    }

    /// A service's frame as it is sent: fields, then a message.
    fn service(kind: u8, head: &[u8], message: Vec<u8>) -> Frame {
        Frame::Service { kind, head: head.to_vec(), message }
    }

    /// The same frame as it is decoded: its whole body in `message`.
    fn decoded(frame: &Frame) -> Frame {
        let bare = frame.encode_bare();
        Frame::decode(bare[0], &bare[1..]).unwrap()
    }

    /// The parcel's parts, one after the other, as the connection carries them.
    fn parts(parcel: &mut Parcel) -> Vec<u8> {
        let mut bytes = Vec::new();
        while let Some((header, slices)) = parcel.next_part() {
            bytes.extend_from_slice(&header);
            slices.iter().for_each(|s| bytes.extend_from_slice(s.as_slice()));
        }
        bytes
    }

    fn carry(parcel: &mut Parcel) -> Result<Option<(Frame, Vec<Carried>)>, Error> {
        let bytes = parts(parcel);
        let mut decoder = Decoder::authenticated();
        decoder.space(bytes.len()).extend_from_slice(&bytes);
        let mut assembler = Assembler::default();
        let mut got = None;
        while let Some(frame) = decoder.next_frame()? {
            let Frame::Part { stream, total, bytes } = frame else { panic!("not a part") };
            assert!(got.is_none(), "a part after the last");
            got = part(&mut assembler, stream, total, &bytes)?;
        }
        Ok(got)
    }

    #[test]
    fn a_long_message_with_buffers_and_futures_crosses_whole() {
        let frame = service(4, &[1; 16], vec![7; 200_000]);
        let mut buffers: Vec<Carried> = [(0..300_000u32).map(|i| i as u8).collect(), Vec::new(), vec![1; 10]].into_iter().map(|v: Vec<u8>| Carried::Bytes(Arc::new(v.into()))).collect();
        buffers.insert(1, Carried::Future(vec![4, 5, 6]));
        buffers.push(Carried::Space(vec![0, 1, b'x']));
        let mut parcel = Parcel::new(frame.clone(), buffers.clone()).unwrap();
        let (got, attachments) = carry(&mut parcel).unwrap().expect("whole");
        assert_eq!(got, decoded(&frame));
        assert_eq!(attachments, buffers);
        assert_eq!(parcel.left(), 0);
    }

    #[test]
    fn junk_parcels_are_errors() {
        // A first part without its envelope waits for it; past the most an
        // envelope takes, it is an error.
        let mut a = Assembler::default();
        assert!(part(&mut a, 1, 10, &[]).unwrap().is_none());
        assert!(part(&mut a, 1, 10, &[1, 4, 5]).unwrap_err().to_string().contains("add up"));
        let mut a = Assembler::default();
        assert!(part(&mut a, 1, 1 << 20, &[0x80; ENVELOPE_MAX - 1]).unwrap().is_none());
        assert!(part(&mut a, 1, 1 << 20, &[0x80; 2]).unwrap_err().to_string().contains("does not hold the envelope"));
        assert!(part(&mut Assembler::default(), 1, 10, &[1, 6, 5]).unwrap_err().to_string().contains("unknown kind"));
        assert!(part(&mut Assembler::default(), 1, 10, &[2, 4, 7, 5]).unwrap_err().to_string().contains("unknown kind"));
        assert!(part(&mut Assembler::default(), 1, MESSAGE_MAX + 1, &[1]).unwrap_err().to_string().contains("at most"));
        // One piece of 2 bytes: a bare frame of one kind byte and one body byte.
        let mut a = Assembler::default();
        assert!(part(&mut a, 2, 4, &[1, 8, 99]).unwrap().is_none());
        assert!(part(&mut a, 3, 4, &[0]).unwrap_err().to_string().contains("inside parcel 2"));
        // A kind no transport frame has is a service's, for the services to judge.
        let (got, _) = part(&mut a, 2, 4, &[0]).unwrap().expect("whole");
        assert_eq!(got, Frame::Service { kind: 99, head: Vec::new(), message: vec![0] });
        // A part inside a parcel is an error.
        let mut a = Assembler::default();
        assert!(part(&mut a, 2, 4, &[1, 8, 5]).unwrap().is_none());
        assert!(part(&mut a, 2, 4, &[0]).unwrap_err().to_string().contains("malformed frame of kind 5"));
        let mut a = Assembler::default();
        assert!(part(&mut a, 2, 4, &[1, 8, 99, 0, 0]).unwrap_err().to_string().contains("longer"));
        // Every cut of a good parcel's first part fails cleanly or waits.
        let frame = service(10, &[], vec![2, 0]);
        let mut parcel = Parcel::new(frame, vec![Carried::Bytes(Arc::new(vec![5; 3].into()))]).unwrap();
        parcel.stream = 4;
        let bytes = parts(&mut parcel);
        for cut in 0..bytes.len() {
            let _ = part(&mut Assembler::default(), 4, 99, &bytes[..cut]);
        }
    }

    #[test]
    fn announced_bytes_past_the_budget_are_not_spent_before_they_come() {
        // A parcel of 200 MiB announced (its first part only): preallocated.
        let big = |stream| {
            let mut w = Writer::fields_after(Vec::new());
            w.varint(2);
            w.varint(2 << 2);
            w.varint((200 << 20) << 2);
            let mut first = w.finish_small();
            first.extend_from_slice(&[8, 0]);
            let total = first.len() as u64 + (200 << 20);
            let mut a = Assembler::default();
            a.begin(stream, total, &first).unwrap();
            a
        };
        let mut one = big(1);
        let cap = |a: &mut Assembler| a.room().unwrap().0.capacity();
        assert!(cap(&mut one) >= 200 << 20, "within the budget: its final size at once");
        // A second one would pass the budget: it grows as bytes come.
        let mut two = big(2);
        assert!(cap(&mut two) <= GROWTH + TAG, "reserved only as bytes come");
        let (piece, left) = two.room().unwrap();
        piece.extend_from_slice(&vec![1; GROWTH]);
        assert_eq!(left, 200 << 20);
        assert!(cap(&mut two) < 4 * GROWTH, "grown by a step");
        // The first gone, its budget is back.
        drop(one);
        let mut three = big(3);
        assert!(cap(&mut three) >= 200 << 20);
    }

    #[test]
    fn a_part_whose_header_came_alone_gets_its_envelope_later() {
        let frame = service(4, &[2; 16], vec![7; 1000]);
        let buffers = vec![Carried::Bytes(Arc::new(vec![3; 5000].into()))];
        let mut parcel = Parcel::new(frame.clone(), buffers.clone()).unwrap();
        let (header, slices) = parcel.next_part().unwrap();
        let payload: Vec<u8> = slices.iter().flat_map(|s| s.as_slice().to_vec()).collect();
        let mut d = Decoder::authenticated();
        d.space(header.len()).extend_from_slice(&header);
        let Some(crate::frame::Next::Part { stream, total, bytes, more }) = d.next().unwrap() else { panic!("a part") };
        assert!(bytes.is_empty() && more == payload.len());
        let mut a = Assembler::default();
        a.begin(stream, total, &[]).unwrap();
        assert!(a.is_open());
        // The payload comes the way the link gives it: into `room`, a few bytes at a time.
        for chunk in payload.chunks(7) {
            let mut chunk = chunk;
            while !chunk.is_empty() {
                let (piece, left) = a.room().unwrap();
                let take = left.min(chunk.len());
                piece.extend_from_slice(&chunk[..take]);
                chunk = &chunk[take..];
                a.filled().unwrap();
            }
        }
        let (got, attached) = a.finish().unwrap().expect("whole");
        assert_eq!((Frame::decode(got[0], &got[1..]).unwrap(), attached), (decoded(&frame), buffers));
    }

    #[test]
    fn too_many_buffers_is_an_error_at_the_sender() {
        let frame = service(10, &[], vec![2, 0]);
        let many = vec![Carried::Future(Vec::new()); ATTACHMENTS_MAX + 1];
        assert!(Parcel::new(frame, many).err().unwrap().contains("at most 4096 buffers"));
    }
}
