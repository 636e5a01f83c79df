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

/// The kinds of shared values (tag 13), and their variants that the core
/// needs to know (the Lua layer defines them all).
pub mod shared {
    pub const BUFFER: u8 = 1;
    pub const SPACE: u8 = 2;
    pub const FUTURE: u8 = 3;
    /// A future variant: the bytes of a large buffer kept on the node that
    /// made it, which a tuple space hands out in its stead.
    pub const DEFERRED_BUFFER: u8 = 1;
}

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
    let pids = walk(buf)?.0.pids;
    for at in pids {
        let raw = u64::from_le_bytes(buf[at..at + 8].try_into().expect("eight bytes"));
        let pid = map(Pid::from_raw(raw).ok_or(WireError::BadPid(at))?, at)?;
        buf[at..at + 8].copy_from_slice(&pid.raw().to_le_bytes());
    }
    Ok(())
}

/// Calls `found` with every pid in the message `buf` (a walk that changes nothing).
pub fn each_pid(buf: &[u8], mut found: impl FnMut(Pid)) -> Result<(), WireError> {
    for at in walk(buf)?.0.pids {
        let raw = u64::from_le_bytes(buf[at..at + 8].try_into().expect("eight bytes"));
        found(Pid::from_raw(raw).ok_or(WireError::BadPid(at))?);
    }
    Ok(())
}

/// Walks every value of the message `buf`, which must be well formed: what
/// the walk found, and the values' shapes.
fn walk(buf: &[u8]) -> Result<(Walk<'static>, Vec<Shape<'_>>), WireError> {
    let (mut r, count) = Reader::message(buf)?;
    let mut walk = Walk::default();
    let shapes = (0..count).map(|_| walk.value(&mut r, 0)).collect::<Result<Vec<_>, _>>()?;
    r.finish()?;
    Ok((walk, shapes))
}

/// What a value is, seen from outside: tables and functions are not opened.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Shape<'a> {
    Nil,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(&'a [u8]),
    Pid(Pid),
    Table,
    Function,
    /// A loaded module (`function`: one of its C functions).
    Library { function: bool },
    /// A shared userdata: its kind and variant (see the format's shared kinds).
    Shared { kind: u8, variant: u8 },
}

/// The shapes of the values of the message `buf`, which must be well formed.
pub fn shapes(buf: &[u8]) -> Result<Vec<Shape<'_>>, WireError> {
    Ok(walk(buf)?.1)
}

/// A shared value in a message: where its kind byte is (the variant byte
/// follows), its kind, variant and attachment index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SharedAt {
    pub at: usize,
    pub kind: u8,
    pub variant: u8,
    pub index: u64,
}

/// The shared values of the message `buf`, which must be well formed, in
/// order. (A value's kind and variant can be rewritten in place at `at`.)
pub fn shared_values(buf: &[u8]) -> Result<Vec<SharedAt>, WireError> {
    Ok(walk(buf)?.0.shared)
}

/// Appends the values of the message `msg` to `w`, as if they had been
/// written there: the message's tables and functions are renumbered after
/// the `objects` that `w` holds already (the count is updated), and its
/// shared values after the `shared_base` attachments that come before its
/// own. So several messages become values of one (a list of tuples).
/// Returns how many values were appended.
pub fn append_values(w: &mut Writer, msg: &[u8], objects: &mut u64, shared_base: u64) -> Result<usize, WireError> {
    let (mut r, count) = Reader::message(msg)?;
    let mut walk = Walk { copy: Some(Copy { w, object_base: *objects, shared_base }), ..Walk::default() };
    for _ in 0..count {
        walk.value(&mut r, 0)?;
    }
    r.finish()?;
    *objects += walk.objects.len() as u64;
    Ok(count)
}

/// The first `n` values of the message `buf` (fewer if it has fewer), as
/// the bytes that encode them, and the shape of the last of them, when
/// they hold no shared value (a value whose meaning is an attachment
/// rather than its bytes); None for a malformed message or one whose
/// first values share.
pub fn leading_values(buf: &[u8], n: usize) -> Option<(&[u8], Shape<'_>)> {
    let (mut r, count) = Reader::message(buf).ok()?;
    let start = r.position();
    let mut walk = Walk::default();
    let mut last = Shape::Nil;
    for _ in 0..n.min(count) {
        last = walk.value(&mut r, 0).ok()?;
    }
    walk.shared.is_empty().then(|| (&buf[start..r.position()], last))
}

/// Splits a message whose first value is a string: that string's bytes,
/// and the message of the values after it. (The string numbers no object
/// and refers to no attachment, so the rest needs no renumbering.)
pub fn split_leading_str(msg: &[u8]) -> Result<(&[u8], Vec<u8>), WireError> {
    let (mut r, count) = Reader::message(msg)?;
    let at = r.position();
    if count == 0 || r.tag()? != Tag::Str {
        return Err(WireError::BadTag { tag: msg.get(at).copied().unwrap_or(0), at });
    }
    let lead = r.bytes()?;
    let mut w = Writer::message(count - 1);
    w.raw(&msg[r.position()..]);
    Ok((lead, w.finish_small()))
}

/// The message `msg` with the string `lead` as a new first value (undoes
/// [`split_leading_str`]).
pub fn prepend_str(lead: &[u8], msg: &[u8]) -> Result<Vec<u8>, WireError> {
    let (r, count) = Reader::message(msg)?;
    let mut w = Writer::message(count + 1);
    w.str(lead);
    w.raw(&msg[r.position()..]);
    w.finish().map_err(|(e, _)| e)
}

/// A walk over values: where their pids sit, the kind of each object
/// (true: a table) by number, and, when copying, the values written again
/// with objects and shared values renumbered.
#[derive(Default)]
struct Walk<'w> {
    pids: Vec<usize>,
    objects: Vec<bool>,
    shared: Vec<SharedAt>,
    copy: Option<Copy<'w>>,
}

struct Copy<'w> {
    w: &'w mut Writer,
    object_base: u64,
    shared_base: u64,
}

impl Walk<'_> {
    fn out(&mut self) -> Option<&mut Writer> {
        self.copy.as_mut().map(|c| &mut *c.w)
    }

    fn base(&self) -> (u64, u64) {
        self.copy.as_ref().map_or((0, 0), |c| (c.object_base, c.shared_base))
    }

    /// Reads past one value (copying it if asked); returns its shape.
    fn value<'a>(&mut self, r: &mut Reader<'a>, depth: usize) -> Result<Shape<'a>, WireError> {
        if depth > MAX_DEPTH {
            return Err(WireError::TooDeep);
        }
        let (object_base, shared_base) = self.base();
        let tag = r.tag()?;
        let shape = match tag {
            Tag::Nil => Shape::Nil,
            Tag::False | Tag::True => Shape::Bool(tag == Tag::True),
            Tag::Globals => Shape::Table,
            Tag::Int => {
                let i = r.int()?;
                if let Some(w) = self.out() {
                    w.int(i);
                }
                return Ok(Shape::Int(i));
            }
            Tag::Ref => {
                let id = r.varint()?;
                let table = *self.objects.get(id as usize).ok_or(WireError::BadRef(id))?;
                if let Some(w) = self.out() {
                    w.tag(Tag::Ref);
                    w.varint(object_base + id);
                }
                return Ok(if table { Shape::Table } else { Shape::Function });
            }
            Tag::Float => {
                let f = r.float()?;
                if let Some(w) = self.out() {
                    w.float(f);
                }
                return Ok(Shape::Float(f));
            }
            Tag::Str => {
                let b = r.bytes()?;
                if let Some(w) = self.out() {
                    w.str(b);
                }
                return Ok(Shape::Str(b));
            }
            Tag::Pid => {
                self.pids.push(r.position());
                let pid = r.pid()?;
                if let Some(w) = self.out() {
                    w.pid(pid);
                }
                return Ok(Shape::Pid(pid));
            }
            Tag::Table => {
                self.objects.push(true);
                let narr = r.varint()?;
                let nhash = r.u32()?;
                if let Some(w) = self.out() {
                    w.tag(Tag::Table);
                    w.varint(narr);
                    w.buffer().extend_from_slice(&nhash.to_le_bytes());
                }
                for _ in 0..narr.saturating_add((nhash as u64).saturating_mul(2)) {
                    self.value(r, depth + 1)?;
                }
                return Ok(Shape::Table);
            }
            Tag::Function => {
                self.objects.push(false);
                let len = r.u32()?;
                let code = r.bytes_raw(len as usize)?;
                let nups = r.varint()?;
                if let Some(w) = self.out() {
                    w.tag(Tag::Function);
                    w.buffer().extend_from_slice(&len.to_le_bytes());
                    w.raw(code);
                    w.varint(nups);
                }
                for _ in 0..nups {
                    if r.peek_tag() == Some(Tag::SharedUpvalue) {
                        r.tag()?;
                        let (owner, index) = (r.varint()?, r.varint()?);
                        if let Some(w) = self.out() {
                            w.tag(Tag::SharedUpvalue);
                            w.varint(object_base + owner);
                            w.varint(index);
                        }
                    } else {
                        self.value(r, depth + 1)?;
                    }
                }
                return Ok(Shape::Function);
            }
            Tag::Library => {
                let (module, field) = (r.bytes()?, r.bytes()?);
                if let Some(w) = self.out() {
                    w.tag(Tag::Library);
                    w.bytes(module);
                    w.bytes(field);
                }
                return Ok(Shape::Library { function: !field.is_empty() });
            }
            Tag::SharedUpvalue => return Err(WireError::BadTag { tag: Tag::SharedUpvalue as u8, at: r.position() - 1 }),
            Tag::Shared => {
                let at = r.position();
                let (kind, variant, index) = (r.byte_value()?, r.byte_value()?, r.varint()?);
                self.shared.push(SharedAt { at, kind, variant, index });
                if let Some(w) = self.out() {
                    w.tag(Tag::Shared);
                    w.byte(kind);
                    w.byte(variant);
                    w.varint(shared_base + index);
                }
                return Ok(Shape::Shared { kind, variant });
            }
        };
        if let Some(w) = self.out() {
            w.tag(tag);
        }
        Ok(shape)
    }
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
    fn leading_values_are_their_bytes() {
        let mut w = Writer::message(3);
        w.int(1);
        w.str(b"two");
        w.int(3);
        let buf = w.finish_small();
        let (mut r, _) = Reader::message(&buf).unwrap();
        let start = r.position();
        r.tag().unwrap();
        r.int().unwrap();
        r.tag().unwrap();
        r.bytes().unwrap();
        assert_eq!(leading_values(&buf, 2), Some((&buf[start..r.position()], Shape::Str(b"two"))));
        assert_eq!(leading_values(&buf, 5), Some((&buf[start..], Shape::Int(3))), "fewer values than asked");
        assert_eq!(leading_values(&buf[..buf.len() - 2], 3), None, "truncated");
        let mut w = Writer::message(1);
        w.tag(Tag::Shared);
        w.byte(1);
        w.byte(0);
        w.varint(0);
        assert_eq!(leading_values(&w.finish_small(), 1), None, "a shared value");
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

    /// A message of one table holding itself, then a shared value.
    fn self_holding_table(shared: u64) -> Vec<u8> {
        let mut w = Writer::message(2);
        w.tag(Tag::Table);
        w.varint(1);
        w.buffer().extend_from_slice(&0u32.to_le_bytes());
        w.tag(Tag::Ref);
        w.varint(0);
        w.tag(Tag::Shared);
        w.byte(1);
        w.byte(0);
        w.varint(shared);
        w.finish_small()
    }

    #[test]
    fn values_of_several_messages_become_one_renumbered() {
        let a = self_holding_table(0);
        let b = self_holding_table(0);
        let mut w = Writer::message(1);
        w.tag(Tag::Table);
        w.varint(4);
        w.buffer().extend_from_slice(&0u32.to_le_bytes());
        let mut objects = 1;
        for (i, m) in [&a, &b].into_iter().enumerate() {
            assert_eq!(append_values(&mut w, m, &mut objects, i as u64).unwrap(), 2);
        }
        assert_eq!(objects, 3);
        let list = w.finish_small();
        // The second table refers to itself as object 2, and to attachment 1.
        let (mut r, _) = Reader::message(&list).unwrap();
        let mut walk = Walk::default();
        assert_eq!(walk.value(&mut r, 0).unwrap(), Shape::Table);
        assert_eq!(walk.objects.len(), 3);
        r.finish().unwrap();
        let tail = &list[list.len() - 12..];
        assert_eq!(tail, &[Tag::Table as u8, 1, 0, 0, 0, 0, Tag::Ref as u8, 2, Tag::Shared as u8, 1, 0, 1][..]);
    }

    #[test]
    fn shapes_see_through_references_and_strings_split_off() {
        let m = self_holding_table(3);
        assert_eq!(shapes(&m).unwrap(), vec![Shape::Table, Shape::Shared { kind: 1, variant: 0 }]);
        let shared = shared_values(&m).unwrap();
        assert_eq!(shared.len(), 1);
        assert_eq!((m[shared[0].at], m[shared[0].at + 1], shared[0].index), (1, 0, 3), "where the kind and variant bytes are");
        let with_lead = prepend_str(b"op", &m).unwrap();
        let (lead, rest) = split_leading_str(&with_lead).unwrap();
        assert_eq!((lead, rest), (&b"op"[..], m.clone()));
        assert!(split_leading_str(&m).is_err(), "the first value is no string");
        let mut w = Writer::message(1);
        w.tag(Tag::Ref);
        w.varint(0);
        assert_eq!(shapes(&w.finish_small()), Err(WireError::BadRef(0)));
        assert!(split_leading_str(&with_lead[..4]).is_err(), "cut inside the string");
    }
}
