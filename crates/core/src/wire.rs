//! The value wire format: how a message's values are laid out as bytes. It is
//! the one format used between processes of a node and, unchanged, between
//! nodes. This module knows tags, varints and bounds, never Lua: the Lua layer
//! walks its values and calls [`Writer`] / [`Reader`]; the core uses them to
//! write the messages it makes itself (DOWN notices). `docs/wire-format.md` is
//! the normative description; keep the two in step.
//!
//! Reading never panics: every read is bounds-checked and junk yields a
//! [`WireError`].

use crate::Pid;

/// First byte of every message; bump when the layout changes.
pub const VERSION: u8 = 2;

/// Deepest nesting of tables and functions a message may carry.
pub const MAX_DEPTH: usize = 200;

#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tag {
    Nil = 0,
    False = 1,
    True = 2,
    Int = 3,
    Float = 4,
    Str = 5,
    Table = 6,
    Ref = 7,
    Function = 8,
    Pid = 9,
    Globals = 10,
    Library = 11,
    SharedUpvalue = 12,
    /// A userdata shared through the message's attachments.
    Shared = 13,
}

impl Tag {
    #[inline]
    fn from_byte(b: u8) -> Option<Tag> {
        use Tag::*;
        Some(match b {
            0 => Nil,
            1 => False,
            2 => True,
            3 => Int,
            4 => Float,
            5 => Str,
            6 => Table,
            7 => Ref,
            8 => Function,
            9 => Pid,
            10 => Globals,
            11 => Library,
            12 => SharedUpvalue,
            13 => Shared,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("message ends early at byte {0}")]
    Truncated(usize),
    #[error("unsupported message version {0} (this build reads version {VERSION})")]
    Version(u8),
    #[error("unknown value tag {tag} at byte {at}")]
    BadTag { tag: u8, at: usize },
    #[error("malformed number at byte {0}")]
    BadVarint(usize),
    #[error("reference to undefined object {0}")]
    BadRef(u64),
    #[error("invalid pid at byte {0}")]
    BadPid(usize),
    #[error("values nested deeper than {MAX_DEPTH} levels")]
    TooDeep,
    #[error("message too large (over {} bytes, or no memory for it)", MAX_MESSAGE)]
    TooLarge,
    #[error("{0} trailing bytes after the last value")]
    Trailing(usize),
    #[error("a pid of a node this link cannot name, at byte {0}")]
    UnknownNode(usize),
}

/// The largest message (its encoded bytes): a sender's program may size a
/// message (a huge string), and encoding it must fail as an error, not
/// abort the node for want of memory.
pub const MAX_MESSAGE: usize = 1 << 31;

/// Appends values to a message buffer. Large appends that find no memory,
/// or that would pass [`MAX_MESSAGE`], stop the writer: [`Writer::finish`]
/// then returns the error.
#[derive(Default)]
pub struct Writer {
    buf: Vec<u8>,
    too_large: bool,
}

impl Writer {
    /// Starts a message that will hold `count` values.
    #[inline]
    pub fn message(count: usize) -> Writer {
        Writer::message_into(Vec::with_capacity(16), count)
    }

    /// A writer of bare fields, without a message header (the bodies of the
    /// cluster transport's frames), appending to what `buf` holds.
    pub fn fields_after(buf: Vec<u8>) -> Writer {
        Writer { buf, too_large: false }
    }

    /// Starts a message in a recycled buffer (cleared first).
    #[inline]
    pub fn message_into(mut buf: Vec<u8>, count: usize) -> Writer {
        buf.clear();
        let mut w = Writer { buf, too_large: false };
        w.header(count);
        w
    }

    /// The message, or why it could not be written (its buffer comes back
    /// too, for reuse).
    #[inline]
    pub fn finish(self) -> Result<Vec<u8>, (WireError, Vec<u8>)> {
        match self.too_large {
            false => Ok(self.buf),
            true => Err((WireError::TooLarge, self.buf)),
        }
    }

    /// The message, for writers of messages that cannot be large (the
    /// runtime's own notices).
    pub fn finish_small(self) -> Vec<u8> {
        self.buf
    }

    /// Appends `b`: a large append that finds no memory, or goes past
    /// [`MAX_MESSAGE`], stops the writer.
    #[inline]
    fn extend(&mut self, b: &[u8]) {
        if b.len() > 4096 && !self.reserve(b.len()) {
            return;
        }
        self.buf.extend_from_slice(b);
    }

    /// Makes room for `more` bytes; false (and the writer stopped) when it cannot.
    pub fn reserve(&mut self, more: usize) -> bool {
        let bound = MAX_MESSAGE.min(crate::cache::largest_block());
        if self.too_large || self.buf.len().saturating_add(more) > bound || self.buf.try_reserve(more).is_err() {
            self.too_large = true;
            return false;
        }
        true
    }

    /// Reserves a 4-byte count to be filled in by [`Writer::patch_u32`].
    #[inline]
    pub fn placeholder_u32(&mut self) -> usize {
        let at = self.buf.len();
        self.buf.extend_from_slice(&[0; 4]);
        at
    }

    #[inline]
    pub fn patch_u32(&mut self, at: usize, v: u32) {
        self.buf[at..at + 4].copy_from_slice(&v.to_le_bytes());
    }

    /// Direct access for streaming writers (e.g. `lua_dump`).
    #[inline]
    pub fn buffer(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    #[inline]
    fn header(&mut self, count: usize) {
        self.buf.push(VERSION);
        self.varint(count as u64);
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.buf.len() == 0
    }

    #[inline]
    pub fn tag(&mut self, tag: Tag) {
        self.buf.push(tag as u8);
    }

    #[inline]
    pub fn varint(&mut self, mut v: u64) {
        let mut out = [0u8; 10];
        let mut n = 0;
        while v >= 0x80 {
            out[n] = v as u8 | 0x80;
            v >>= 7;
            n += 1;
        }
        out[n] = v as u8;
        self.buf.extend_from_slice(&out[..=n]);
    }

    #[inline]
    pub fn byte(&mut self, b: u8) {
        self.buf.push(b);
    }

    #[inline]
    pub fn bool(&mut self, b: bool) {
        self.tag(if b { Tag::True } else { Tag::False });
    }

    #[inline]
    pub fn int(&mut self, i: i64) {
        let z = ((i << 1) ^ (i >> 63)) as u64;
        if z < 0x80 {
            self.buf.extend_from_slice(&[Tag::Int as u8, z as u8]);
        } else {
            self.tag(Tag::Int);
            self.varint(z);
        }
    }

    #[inline]
    pub fn float(&mut self, f: f64) {
        self.tag(Tag::Float);
        self.buf.extend_from_slice(&f.to_bits().to_le_bytes());
    }

    #[inline]
    pub fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// A length-prefixed byte string, without a tag (used inside compound values).
    #[inline]
    pub fn bytes(&mut self, b: &[u8]) {
        self.varint(b.len() as u64);
        self.extend(b);
    }

    #[inline]
    pub fn str(&mut self, b: &[u8]) {
        self.tag(Tag::Str);
        self.bytes(b);
    }

    #[inline]
    pub fn pid(&mut self, pid: Pid) {
        self.tag(Tag::Pid);
        self.buf.extend_from_slice(&pid.raw().to_le_bytes());
    }

    /// Appends already-encoded values (for instance one value cut from another message).
    #[inline]
    pub fn raw(&mut self, encoded: &[u8]) {
        self.extend(encoded);
    }
}

/// Reads values from a message buffer; every method checks bounds.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// Opens a message: checks the version and returns the value count.
    #[inline]
    pub fn message(buf: &'a [u8]) -> Result<(Reader<'a>, usize), WireError> {
        let mut r = Reader { buf, pos: 0 };
        let version = r.byte()?;
        if version != VERSION {
            return Err(WireError::Version(version));
        }
        let count = r.varint()?;
        // Every value takes at least one byte: a count beyond that is junk.
        if count > (buf.len() - r.pos) as u64 {
            return Err(WireError::Truncated(buf.len()));
        }
        Ok((r, count as usize))
    }

    /// Reads bare fields, without a message header (see [`Writer::fields`]).
    pub fn fields(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }

    #[inline]
    pub fn position(&self) -> usize {
        self.pos
    }

    #[inline]
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    #[inline]
    pub fn finish(&self) -> Result<(), WireError> {
        match self.remaining() {
            0 => Ok(()),
            n => Err(WireError::Trailing(n)),
        }
    }

    #[inline]
    fn byte(&mut self) -> Result<u8, WireError> {
        let b = *self.buf.get(self.pos).ok_or(WireError::Truncated(self.pos))?;
        self.pos += 1;
        Ok(b)
    }

    #[inline]
    pub fn byte_value(&mut self) -> Result<u8, WireError> {
        self.byte()
    }

    #[inline]
    pub fn tag(&mut self) -> Result<Tag, WireError> {
        let at = self.pos;
        let b = self.byte()?;
        Tag::from_byte(b).ok_or(WireError::BadTag { tag: b, at })
    }

    #[inline]
    pub fn varint(&mut self) -> Result<u64, WireError> {
        if let Some(&b) = self.buf.get(self.pos) {
            if b < 0x80 {
                self.pos += 1;
                return Ok(b as u64);
            }
        }
        let start = self.pos;
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            if shift == 63 && b > 1 {
                return Err(WireError::BadVarint(start));
            }
            v |= ((b & 0x7f) as u64) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(WireError::BadVarint(start))
    }

    /// The payload of an `Int` (after its tag).
    #[inline]
    pub fn int(&mut self) -> Result<i64, WireError> {
        let z = self.varint()?;
        Ok((z >> 1) as i64 ^ -((z & 1) as i64))
    }

    /// The payload of a `Float` (after its tag).
    #[inline]
    pub fn float(&mut self) -> Result<f64, WireError> {
        Ok(f64::from_bits(u64::from_le_bytes(self.array::<8>()?)))
    }

    /// A length-prefixed byte string (the payload of `Str`, or a field of a compound value).
    #[inline]
    pub fn bytes(&mut self) -> Result<&'a [u8], WireError> {
        let len = self.varint()?;
        if len > self.remaining() as u64 {
            return Err(WireError::Truncated(self.buf.len()));
        }
        let start = self.pos;
        self.pos += len as usize;
        Ok(&self.buf[start..self.pos])
    }

    /// The next `len` bytes, unprefixed.
    #[inline]
    pub fn bytes_raw(&mut self, len: usize) -> Result<&'a [u8], WireError> {
        if len > self.remaining() {
            return Err(WireError::Truncated(self.buf.len()));
        }
        let start = self.pos;
        self.pos += len;
        Ok(&self.buf[start..self.pos])
    }

    /// The tag of the next value, without consuming it.
    #[inline]
    pub fn peek_tag(&self) -> Option<Tag> {
        self.buf.get(self.pos).and_then(|&b| Tag::from_byte(b))
    }

    /// The payload of a `Pid` (after its tag).
    #[inline]
    pub fn pid(&mut self) -> Result<Pid, WireError> {
        let at = self.pos;
        Pid::from_raw(u64::from_le_bytes(self.array::<8>()?)).ok_or(WireError::BadPid(at))
    }

    #[inline]
    pub fn u32(&mut self) -> Result<u32, WireError> {
        Ok(u32::from_le_bytes(self.array::<4>()?))
    }

    #[inline]
    pub fn u64(&mut self) -> Result<u64, WireError> {
        Ok(u64::from_le_bytes(self.array::<8>()?))
    }

    #[inline]
    fn array<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        let end = self.pos.checked_add(N).filter(|&e| e <= self.buf.len());
        let end = end.ok_or(WireError::Truncated(self.buf.len()))?;
        let mut out = [0; N];
        out.copy_from_slice(&self.buf[self.pos..end]);
        self.pos = end;
        Ok(out)
    }
}

/// Checks that `buf` is one well-formed message and passes every pid in it
/// through `map`, writing back what `map` returns: the cluster transport
/// rewrites the node aliases of pids this way as a message crosses to
/// another node (a pid is fixed-size, so the message keeps its length).
/// Shared values are passed over: their attachments cross beside the bytes.
pub fn map_pids(buf: &mut [u8], mut map: impl FnMut(Pid, usize) -> Result<Pid, WireError>) -> Result<(), WireError> {
    let (mut r, count) = Reader::message(buf)?;
    let mut pids = Vec::new();
    for _ in 0..count {
        skim_value(&mut r, 0, &mut pids)?;
    }
    r.finish()?;
    for at in pids {
        let raw = u64::from_le_bytes(buf[at..at + 8].try_into().expect("eight bytes"));
        let pid = map(Pid::from_raw(raw).ok_or(WireError::BadPid(at))?, at)?;
        buf[at..at + 8].copy_from_slice(&pid.raw().to_le_bytes());
    }
    Ok(())
}

/// Reads past one value, noting where its pids sit.
fn skim_value(r: &mut Reader, depth: usize, pids: &mut Vec<usize>) -> Result<(), WireError> {
    if depth > MAX_DEPTH {
        return Err(WireError::TooDeep);
    }
    match r.tag()? {
        Tag::Nil | Tag::False | Tag::True | Tag::Globals => {}
        Tag::Int | Tag::Ref => drop(r.varint()?),
        Tag::Float => drop(r.float()?),
        Tag::Str => drop(r.bytes()?),
        Tag::Pid => {
            pids.push(r.position());
            r.pid()?;
        }
        Tag::Table => {
            let narr = r.varint()?;
            let nhash = r.u32()? as u64;
            for _ in 0..narr.saturating_add(nhash.saturating_mul(2)) {
                skim_value(r, depth + 1, pids)?;
            }
        }
        Tag::Function => {
            let len = r.u32()? as usize;
            r.bytes_raw(len)?;
            for _ in 0..r.varint()? {
                if r.peek_tag() == Some(Tag::SharedUpvalue) {
                    r.tag()?;
                    r.varint()?;
                    r.varint()?;
                } else {
                    skim_value(r, depth + 1, pids)?;
                }
            }
        }
        Tag::Library => {
            r.bytes()?;
            r.bytes()?;
        }
        Tag::SharedUpvalue => return Err(WireError::BadTag { tag: Tag::SharedUpvalue as u8, at: r.position() - 1 }),
        Tag::Shared => {
            r.byte_value()?;
            r.byte_value()?;
            r.varint()?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_round_trip() {
        let mut w = Writer::message(5);
        w.int(i64::MIN);
        w.int(-1);
        w.float(-0.0);
        w.str(b"a\0b");
        w.pid(Pid::new(1, 9, 2));
        let buf = w.finish_small();
        let (mut r, n) = Reader::message(&buf).unwrap();
        assert_eq!(n, 5);
        assert_eq!((r.tag().unwrap(), r.int().unwrap()), (Tag::Int, i64::MIN));
        assert_eq!((r.tag().unwrap(), r.int().unwrap()), (Tag::Int, -1));
        assert_eq!(r.tag().unwrap(), Tag::Float);
        assert!(r.float().unwrap().is_sign_negative());
        assert_eq!((r.tag().unwrap(), r.bytes().unwrap()), (Tag::Str, &b"a\0b"[..]));
        assert_eq!((r.tag().unwrap(), r.pid().unwrap()), (Tag::Pid, Pid::new(1, 9, 2)));
        r.finish().unwrap();
    }

    #[test]
    fn junk_is_an_error_not_a_panic() {
        assert_eq!(Reader::message(&[]).err(), Some(WireError::Truncated(0)));
        assert_eq!(Reader::message(&[9, 1, 0]).err(), Some(WireError::Version(9)));
        assert!(Reader::message(&[VERSION, 200, 0]).is_err(), "count larger than the payload");
        let (mut r, _) = Reader::message(&[VERSION, 1, Tag::Str as u8, 0xff, 0xff, 0xff, 0x7f]).unwrap();
        r.tag().unwrap();
        assert!(r.bytes().is_err());
        let (mut r, _) = Reader::message(&[VERSION, 1, 99]).unwrap();
        assert_eq!(r.tag().err(), Some(WireError::BadTag { tag: 99, at: 2 }));
        let mut over = vec![VERSION, 1, Tag::Int as u8];
        over.extend([0xff; 11]);
        let (mut r, _) = Reader::message(&over).unwrap();
        r.tag().unwrap();
        assert!(matches!(r.int(), Err(WireError::BadVarint(_))));
        // Every prefix of a valid message fails cleanly.
        let mut w = Writer::message(2);
        w.str(b"hello");
        w.float(1.5);
        let buf = w.finish_small();
        for cut in 0..buf.len() {
            let ok = Reader::message(&buf[..cut]).and_then(|(mut r, n)| {
                for _ in 0..n {
                    match r.tag()? {
                        Tag::Str => drop(r.bytes()?),
                        _ => drop(r.float()?),
                    }
                }
                Ok(())
            });
            assert!(ok.is_err(), "prefix of {cut} bytes decoded");
        }
    }

    #[test]
    fn pids_are_found_and_rewritten_in_place() {
        let mut w = Writer::message(3);
        w.pid(Pid::new(0, 1, 1));
        w.tag(Tag::Table);
        w.varint(1);
        w.buffer().extend_from_slice(&1u32.to_le_bytes());
        w.pid(Pid::new(2, 3, 4));
        w.str(b"key");
        w.pid(Pid::new(0, 5, 6));
        w.str(b"tail");
        let mut buf = w.finish_small();
        let len = buf.len();
        map_pids(&mut buf, |p, _| Ok(Pid::new(p.node() + 7, p.index(), p.generation()))).unwrap();
        assert_eq!(buf.len(), len);
        let (mut r, _) = Reader::message(&buf).unwrap();
        assert_eq!((r.tag().unwrap(), r.pid().unwrap()), (Tag::Pid, Pid::new(7, 1, 1)));
        let mut seen = Vec::new();
        map_pids(&mut buf, |p, _| {
            seen.push(p);
            Ok(p)
        })
        .unwrap();
        assert_eq!(seen, [Pid::new(7, 1, 1), Pid::new(9, 3, 4), Pid::new(7, 5, 6)]);
        // Junk, truncation and a refusing map are errors, never panics.
        for cut in 0..len {
            assert!(map_pids(&mut buf.clone()[..cut], |p, _| Ok(p)).is_err(), "prefix of {cut} bytes");
        }
        assert_eq!(map_pids(&mut buf, |_, at| Err(WireError::UnknownNode(at))), Err(WireError::UnknownNode(3)));
    }

    #[test]
    fn a_message_too_large_is_an_error_not_an_abort() {
        let mut w = Writer::message(1);
        assert!(!w.reserve(MAX_MESSAGE + 1), "over the largest message");
        w.str(&[7; 5000]);
        assert!(matches!(w.finish(), Err((WireError::TooLarge, _))), "the writer stopped");
        let mut w = Writer::message(1);
        w.str(&[7; 5000]);
        assert!(w.finish().is_ok());
    }
}
