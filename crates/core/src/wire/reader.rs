//! [`Reader`]: values read from a message, every read bounds-checked.

use super::*;

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
