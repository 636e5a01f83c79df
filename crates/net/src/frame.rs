//! Frames: the units a connection between two nodes carries, and their
//! byte layout (`docs/cluster-protocol.md` is the normative description).
//! A frame is `len:u32 kind:u8 body`, `len` counting kind and body. This
//! module is sans-IO: [`Frame::encode`] appends a frame to a buffer and
//! [`Decoder`] cuts frames out of whatever bytes have arrived. Decoding
//! never panics: a frame that is too long, of an unknown kind or whose body
//! does not parse is an [`Error::Protocol`] naming what was wrong.

use synodic_core::wire::{Reader, WireError, Writer};
use synodic_core::{NodeId, Pid};

use crate::Error;

/// Before a peer has proved it holds the cookie it may send nothing longer
/// than a handshake message.
pub const HANDSHAKE_MAX: usize = 1024;
/// The longest frame an authenticated peer may send. Messages longer than
/// [`PART`] travel as several `Part` frames, so no frame need be longer.
pub const FRAME_MAX: usize = 1 << 20;
/// How much of a long message one `Part` frame carries: small enough that a
/// small message waits for at most one part on a busy link.
pub const PART: usize = 256 << 10;

const HEADER: usize = 5;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    /// In the pids I send, node alias `alias` means `node`.
    Node { alias: u16, node: NodeId },
    /// A piece of a parcel (`parcel`: a frame too long for one, or a
    /// message with buffers), `total` bytes in all; the parts of one parcel
    /// follow each other in order, one parcel at a time (`stream` names it).
    Part { stream: u64, total: u64, bytes: Vec<u8> },
    /// `pid` (of the sending node) holds more messages than it takes:
    /// senders on the receiving node wait until `Ready`.
    Busy { pid: Pid },
    /// `pid` has taken its messages down: its senders may go on.
    Ready { pid: Pid },
    /// A frame of one of the distributed services (`synodic_core::dist`):
    /// its kind, the fields its service wrote, then its message (the
    /// transport maps the message's pids and carries its buffers). Decoded,
    /// the whole body is in `message`: only the service reads its fields.
    Service { kind: u8, head: Vec<u8>, message: Vec<u8> },
}

/// A frame that has arrived: the transport's own, decoded, or a service's,
/// its body borrowed from where it arrived.
#[derive(Debug, PartialEq)]
pub enum Arrival<'a> {
    Frame(Frame),
    Service { kind: u8, body: &'a [u8] },
}

/// The transport's own frame kinds, numbered with every other kind in
/// `synodic_core::dist::kind`.
use synodic_core::dist::kind::transport as kind;

impl Frame {
    /// Appends the frame, header included, to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        if let Frame::Service { kind, head, message } = self {
            return Frame::encode_service(*kind, head, message, out);
        }
        let start = out.len();
        out.extend_from_slice(&[0; HEADER]);
        let mut w = Writer::fields_after(std::mem::take(out));
        let kind = match self {
            Frame::Node { alias, node } => {
                w.varint(*alias as u64);
                node_id(&mut w, node);
                kind::NODE
            }
            Frame::Part { stream, total, bytes } => {
                w.varint(*stream);
                w.varint(*total);
                w.raw(bytes);
                kind::PART
            }
            Frame::Busy { pid } | Frame::Ready { pid } => {
                w.u64(pid.raw());
                if matches!(self, Frame::Busy { .. }) { kind::BUSY } else { kind::READY }
            }
            Frame::Service { .. } => unreachable!("encoded above"),
        };
        *out = w.finish_small();
        Frame::close(out, start, kind);
    }

    /// Appends a service's frame (a [`Frame::Service`]) from where its
    /// fields and message are: a message is queued on a link without a
    /// copy of its own first.
    pub fn encode_service(kind: u8, head: &[u8], message: &[u8], out: &mut Vec<u8>) {
        let start = out.len();
        out.reserve(HEADER + head.len() + message.len());
        out.extend_from_slice(&[0; HEADER]);
        out.extend_from_slice(head);
        out.extend_from_slice(message);
        Frame::close(out, start, kind);
    }

    /// Writes the header of the frame that begins at `start` and ends at
    /// the end of `out`.
    fn close(out: &mut [u8], start: usize, kind: u8) {
        let len = (out.len() - start - 4) as u32;
        out[start..start + 4].copy_from_slice(&len.to_le_bytes());
        out[start + 4] = kind;
    }

    /// Parses a frame's body (a service's frame: its body, copied).
    pub fn decode(kind: u8, body: &[u8]) -> Result<Frame, Error> {
        Ok(match Frame::arrival(kind, body)? {
            Arrival::Frame(frame) => frame,
            Arrival::Service { kind, body } => Frame::Service { kind, head: Vec::new(), message: body.to_vec() },
        })
    }

    /// Parses a frame's body: the transport's own frames are decoded, a
    /// service's is left to its service.
    pub fn arrival(kind: u8, body: &[u8]) -> Result<Arrival<'_>, Error> {
        match kind {
            kind::NODE | kind::PART | kind::BUSY | kind::READY => {}
            1 | 2 | 19 | 20 => return Err(Error::Protocol(format!("a handshake message (kind {kind}) after the handshake"))),
            _ => return Ok(Arrival::Service { kind, body }),
        }
        parse(kind, &mut Reader::fields(body)).map(Arrival::Frame).map_err(|e| match e {
            Parse::Wire(e) => Error::Protocol(format!("malformed frame of kind {kind}: {e}")),
            Parse::Other(why) => Error::Protocol(why),
        })
    }

    /// Appends the header of a `Part` frame whose `len` payload bytes
    /// follow it on the connection (written from where they are, not
    /// gathered first).
    pub fn encode_part_header(out: &mut Vec<u8>, stream: u64, total: u64, len: usize) {
        let start = out.len();
        Frame::Part { stream, total, bytes: Vec::new() }.encode(out);
        let whole = u32::from_le_bytes(out[start..start + 4].try_into().expect("four bytes")) as usize + len;
        out[start..start + 4].copy_from_slice(&(whole as u32).to_le_bytes());
    }

    /// The frame's kind byte and body, without its length: what a parcel carries.
    pub fn encode_bare(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode(&mut out);
        out.split_off(4)
    }

    /// [`Frame::encode_bare`] cut in two without copying the message: the
    /// kind and the fields before the message, and the message (the rest
    /// of the body; empty for a frame without one).
    pub fn into_bare_and_message(mut self) -> (Vec<u8>, Vec<u8>) {
        let message = match &mut self {
            Frame::Service { message, .. } => std::mem::take(message),
            _ => Vec::new(),
        };
        (self.encode_bare(), message)
    }
}

enum Parse {
    Wire(WireError),
    Other(String),
}

impl From<WireError> for Parse {
    fn from(e: WireError) -> Parse {
        Parse::Wire(e)
    }
}

fn parse(kind: u8, r: &mut Reader) -> Result<Frame, Parse> {
    let frame = match kind {
        kind::NODE => {
            let alias = u16::try_from(r.varint()?).ok().filter(|&a| a <= Pid::MAX_NODE).ok_or(Parse::Other("node alias out of range".into()))?;
            Frame::Node { alias, node: read_node_id(r)? }
        }
        kind::PART => {
            let stream = r.varint()?;
            let total = r.varint()?;
            Frame::Part { stream, total, bytes: rest(r) }
        }
        kind::BUSY => Frame::Busy { pid: pid(r)? },
        _ => Frame::Ready { pid: pid(r)? },
    };
    match r.remaining() {
        0 => Ok(frame),
        n => Err(Parse::Other(format!("{n} bytes after a frame of kind {kind}"))),
    }
}

fn node_id(w: &mut Writer, node: &NodeId) {
    w.bytes(node.name.as_bytes());
    w.u64(node.incarnation);
}

fn read_node_id(r: &mut Reader) -> Result<NodeId, Parse> {
    let name = std::str::from_utf8(r.bytes()?).map_err(|_| Parse::Other("node name is not UTF-8".into()))?;
    if name.is_empty() || name.len() > 255 {
        return Err(Parse::Other("node name empty or longer than 255 bytes".into()));
    }
    Ok(NodeId { name: name.into(), incarnation: r.u64()? })
}

fn pid(r: &mut Reader) -> Result<Pid, Parse> {
    let at = r.position();
    Pid::from_raw(r.u64()?).ok_or(Parse::Wire(WireError::BadPid(at)))
}

fn rest(r: &mut Reader) -> Vec<u8> {
    r.bytes_raw(r.remaining()).expect("the rest is there").to_vec()
}

/// What [`Decoder::next`] gives.
#[derive(Debug, PartialEq)]
pub enum Next<'a> {
    Frame(Frame),
    /// A service's frame, its body borrowed (see [`Arrival`]).
    Service { kind: u8, body: &'a [u8] },
    /// A `Part`: the payload bytes that have arrived, and how many more
    /// the connection will bring (not through the decoder).
    Part { stream: u64, total: u64, bytes: &'a [u8], more: usize },
}

/// Cuts frames out of a byte stream.
pub struct Decoder {
    buf: Vec<u8>,
    start: usize,
    max: usize,
}

impl Decoder {
    /// A decoder for a peer that has not authenticated yet.
    pub fn new() -> Decoder {
        Decoder { buf: Vec::new(), start: 0, max: HANDSHAKE_MAX }
    }

    /// A decoder for the frames of an authenticated link: they may be as
    /// long as [`FRAME_MAX`].
    pub fn authenticated() -> Decoder {
        Decoder { buf: Vec::new(), start: 0, max: FRAME_MAX }
    }

    /// Where bytes read from the connection go.
    pub fn space(&mut self, want: usize) -> &mut Vec<u8> {
        if self.start > 0 && self.start * 2 >= self.buf.len() {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.reserve(want);
        &mut self.buf
    }

    /// The next whole frame's kind and body, undecoded (the handshake's
    /// messages), once all of it has arrived.
    pub fn next_raw(&mut self) -> Result<Option<(u8, &[u8])>, Error> {
        let Some(len) = self.frame_len()? else { return Ok(None) };
        let base = self.start;
        if self.buf.len() - base < 4 + len {
            return Ok(None);
        }
        self.start += 4 + len;
        Ok(Some((self.buf[base + 4], &self.buf[base + HEADER..base + 4 + len])))
    }

    /// The bytes received and not yet cut into frames, taken out.
    pub fn take_rest(&mut self) -> Vec<u8> {
        let rest = self.buf.split_off(self.start);
        (self.buf, self.start) = (Vec::new(), 0);
        rest
    }

    /// The next whole frame, if one has arrived.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, Error> {
        match self.frame_len()? {
            Some(len) => self.whole(len),
            None => Ok(None),
        }
    }

    /// The frame in front, of `len` bytes, once all of it has arrived.
    fn whole(&mut self, len: usize) -> Result<Option<Frame>, Error> {
        let pending = &self.buf[self.start..];
        if pending.len() < 4 + len {
            return Ok(None);
        }
        let frame = Frame::decode(pending[4], &pending[HEADER..4 + len]);
        self.start += 4 + len;
        frame.map(Some)
    }

    /// The next frame, where a `Part` is given as soon as its header has
    /// arrived: its payload bytes received so far, borrowed, and how many
    /// are still to come, which the caller reads from the connection
    /// itself, straight to where they belong (a long message's bytes are
    /// copied once, not once per layer).
    // Not an `Iterator`: what it gives borrows the decoder's buffer.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<Next<'_>>, Error> {
        let Some(len) = self.frame_len()? else { return Ok(None) };
        let base = self.start;
        if self.buf[base + 4] != kind::PART {
            if self.buf.len() - base < 4 + len {
                return Ok(None);
            }
            self.start += 4 + len;
            return Ok(Some(match Frame::arrival(self.buf[base + 4], &self.buf[base + HEADER..base + 4 + len])? {
                Arrival::Frame(frame) => Next::Frame(frame),
                Arrival::Service { kind, body } => Next::Service { kind, body },
            }));
        }
        let arrived = (self.buf.len() - base).min(4 + len);
        let mut r = Reader::fields(&self.buf[base + HEADER..base + arrived]);
        let (stream, total) = match (r.varint(), r.varint()) {
            (Ok(stream), Ok(total)) => (stream, total),
            _ if arrived < 4 + len => return Ok(None),
            _ => return Err(Error::Protocol("malformed frame of kind 5: its header is cut short".into())),
        };
        let head = HEADER + r.position();
        self.start += arrived;
        Ok(Some(Next::Part { stream, total, bytes: &self.buf[base + head..base + arrived], more: 4 + len - arrived }))
    }

    /// The length of the frame in front, once its header has arrived.
    fn frame_len(&self) -> Result<Option<usize>, Error> {
        let pending = &self.buf[self.start..];
        if pending.len() < HEADER {
            return Ok(None);
        }
        let len = u32::from_le_bytes(pending[..4].try_into().expect("four bytes")) as usize;
        if len == 0 || len > self.max {
            if let Some(what) = text_protocol(pending) {
                return Err(Error::Protocol(format!("this is not a Synodic node (it speaks like {what})")));
            }
            return Err(Error::Protocol(format!("frame of {len} bytes (at most {} here)", self.max)));
        }
        Ok(Some(len))
    }

    /// Bytes received that do not yet make a whole frame.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.start
    }
}

impl Default for Decoder {
    fn default() -> Decoder {
        Decoder::new()
    }
}

/// What the peer is, when its first bytes are those of a text protocol
/// rather than a frame (someone gave the address of another server).
fn text_protocol(bytes: &[u8]) -> Option<&'static str> {
    let starts = |p: &[u8]| bytes.len() >= p.len() && bytes[..p.len()].eq_ignore_ascii_case(p);
    if starts(b"HTTP/") || starts(b"<!DOCTYPE") || starts(b"<html") {
        return Some("an HTTP server");
    }
    if [&b"GET "[..], b"POST ", b"PUT ", b"HEAD ", b"DELETE ", b"OPTIONS ", b"CONNECT "].iter().any(|m| starts(m)) {
        return Some("an HTTP client");
    }
    if starts(b"SSH-") {
        return Some("an SSH server");
    }
    if starts(b"-ERR") || starts(b"+OK") {
        return Some("a Redis or POP server");
    }
    if bytes.iter().take(8).all(|b| b.is_ascii_graphic() || *b == b' ') {
        return Some("a text protocol");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples() -> Vec<Frame> {
        let node = NodeId { name: "a@host".into(), incarnation: 77 };
        let (p, q) = (Pid::new(0, 3, 1), Pid::new(2, 9, 5));
        vec![
            Frame::Node { alias: 4, node },
            Frame::Service { kind: 4, head: Vec::new(), message: vec![2, 1, 3, 4] },
            Frame::Part { stream: 12, total: 1 << 20, bytes: vec![1; 100] },
            Frame::Service { kind: 6, head: Vec::new(), message: vec![] },
            Frame::Service { kind: 17, head: Vec::new(), message: vec![9; 40] },
            Frame::Busy { pid: q },
            Frame::Ready { pid: p },
        ]
    }

    #[test]
    fn frames_round_trip_through_a_byte_stream_cut_anywhere() {
        let mut bytes = Vec::new();
        for f in samples() {
            f.encode(&mut bytes);
        }
        for step in [1, 3, 7, bytes.len()] {
            let mut d = Decoder::new();
            let mut got = Vec::new();
            for chunk in bytes.chunks(step) {
                d.space(chunk.len()).extend_from_slice(chunk);
                while let Some(f) = d.next_frame().unwrap() {
                    got.push(f);
                }
            }
            assert_eq!(got, samples(), "fed {step} bytes at a time");
            assert_eq!(d.buffered(), 0);
        }
    }

    #[test]
    fn a_server_of_another_kind_is_named() {
        for (answer, said) in [(&b"HTTP/1.1 400 Bad Request\r\n"[..], "an HTTP server"), (b"SSH-2.0-OpenSSH_9.2\r\n", "an SSH server"), (b"-ERR unknown command\r\n", "a Redis or POP server")] {
            let mut d = Decoder::new();
            d.space(64).extend_from_slice(answer);
            let e = d.next().unwrap_err().to_string();
            assert!(e.contains(&format!("this is not a Synodic node (it speaks like {said})")), "{e}");
        }
    }

    #[test]
    fn a_part_is_given_as_soon_as_its_header_has_come() {
        let mut out = Vec::new();
        Frame::encode_part_header(&mut out, 300, 9, 9);
        out.extend_from_slice(b"abcdefghi");
        Frame::Busy { pid: Pid::new(0, 3, 1) }.encode(&mut out);
        let cut = out.len() - 13 - 4;
        let mut d = Decoder::new();
        d.space(cut).extend_from_slice(&out[..3]);
        assert_eq!(d.next().unwrap(), None);
        d.space(cut).extend_from_slice(&out[3..cut]);
        assert_eq!(d.next().unwrap(), Some(Next::Part { stream: 300, total: 9, bytes: b"abcde", more: 4 }));
        // The caller reads the last four itself; the decoder goes on after them.
        d.space(64).extend_from_slice(&out[cut + 4..]);
        assert_eq!(d.next().unwrap(), Some(Next::Frame(Frame::Busy { pid: Pid::new(0, 3, 1) })));
        // A service's frame comes borrowed, once whole.
        let mut out = Vec::new();
        Frame::Service { kind: 4, head: vec![1], message: vec![2, 3] }.encode(&mut out);
        let mut d = Decoder::new();
        d.space(8).extend_from_slice(&out[..out.len() - 1]);
        assert_eq!(d.next().unwrap(), None);
        d.space(8).extend_from_slice(&out[out.len() - 1..]);
        assert_eq!(d.next().unwrap(), Some(Next::Service { kind: 4, body: &[1, 2, 3] }));
        // A part whose header does not parse, though whole, is an error.
        let mut d = Decoder::new();
        d.space(8).extend_from_slice(&[2, 0, 0, 0, kind::PART, 0x80]);
        assert!(d.next().unwrap_err().to_string().contains("cut short"));
    }

    #[test]
    fn a_part_header_and_its_payload_are_a_part() {
        let mut out = Vec::new();
        Frame::encode_part_header(&mut out, 3, 9, 8);
        out.extend_from_slice(b"abcdefgh");
        let mut d = Decoder::new();
        d.space(out.len()).extend_from_slice(&out);
        assert_eq!(d.next_frame().unwrap(), Some(Frame::Part { stream: 3, total: 9, bytes: b"abcdefgh".to_vec() }));
    }

    #[test]
    fn junk_is_one_error_never_a_panic() {
        let mut d = Decoder::new();
        d.space(8).extend_from_slice(b"GET / HTTP/1.1\r\n");
        let e = d.next_frame().unwrap_err().to_string();
        assert!(e.contains("this is not a Synodic node (it speaks like an HTTP client)"), "{e}");
        let mut d = Decoder::new();
        d.space(8).extend_from_slice(&[0xff, 0xff, 0xff, 0x7f, 1, 2, 3, 4]);
        let e = d.next_frame().unwrap_err().to_string();
        assert!(e.contains("frame of") && e.contains("at most 1024"), "{e}");
        // Every truncation and every one-byte change of every sample
        // decodes or fails cleanly.
        for f in samples() {
            let mut bytes = Vec::new();
            f.encode(&mut bytes);
            for cut in HEADER..bytes.len() {
                let _ = Frame::decode(bytes[4], &bytes[HEADER..cut]);
            }
            for i in HEADER..bytes.len() {
                for v in [0, 1, 0x7f, 0x80, 0xff] {
                    let mut b = bytes.clone();
                    b[i] = v;
                    let _ = Frame::decode(b[4], &b[HEADER..]);
                }
            }
        }
        // A service's kind is the service's to judge (`Services::receive`).
        assert_eq!(Frame::decode(99, &[1, 2]).unwrap(), Frame::Service { kind: 99, head: Vec::new(), message: vec![1, 2] });
        assert!(Frame::decode(1, &[]).unwrap_err().to_string().contains("a handshake message (kind 1) after the handshake"));
    }
}

