//! [`Writer`]: values appended to a message, bounded by [`MAX_MESSAGE`].

use super::*;

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

    /// What is written so far.
    #[inline]
    pub fn written(&self) -> &[u8] {
        &self.buf
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
