//! Walks over a whole message without decoding it: checking it, finding
//! and rewriting its pids, its shared values, its leading values' shapes,
//! and copying values from one message into another.

use super::*;

/// Checks that `buf` is one well-formed message and passes every pid in it
/// through `map`, writing back what `map` returns: the cluster transport
/// rewrites the node aliases of pids this way as a message crosses to
/// another node (a pid is fixed-size, so the message keeps its length).
/// Shared values are passed over: their attachments cross beside the bytes.
pub fn map_pids(buf: &mut [u8], mut map: impl FnMut(Pid, usize) -> Result<Pid, WireError>) -> Result<(), WireError> {
    for at in pids_of(buf)? {
        let raw = u64::from_le_bytes(buf[at..at + 8].try_into().expect("eight bytes"));
        let pid = map(Pid::from_raw(raw).ok_or(WireError::BadPid(at))?, at)?;
        buf[at..at + 8].copy_from_slice(&pid.raw().to_le_bytes());
    }
    Ok(())
}

/// Calls `found` with every pid in the message `buf` (a walk that changes nothing).
pub fn each_pid(buf: &[u8], mut found: impl FnMut(Pid)) -> Result<(), WireError> {
    for at in pids_of(buf)? {
        let raw = u64::from_le_bytes(buf[at..at + 8].try_into().expect("eight bytes"));
        found(Pid::from_raw(raw).ok_or(WireError::BadPid(at))?);
    }
    Ok(())
}

/// Where the pids of the message `buf` are, which must be well formed.
fn pids_of(buf: &[u8]) -> Result<Pids, WireError> {
    match scalar_pids(buf) {
        Some(pids) => Ok(pids),
        None => Ok(walk_with(buf, |_| ())?.pids),
    }
}

/// (Inline for a few: nearly every message crossing to another node
/// carries one or two, and is walked on both sides.)
type Pids = smallvec::SmallVec<[usize; 4]>;

/// Where the pids are in a message of scalars alone (nil, booleans,
/// numbers, strings and pids), as nearly every message between processes
/// is, in one pass over its tags; None for any other message (a table, a
/// function, a shared value, or junk), which [`walk_with`] then reads. A
/// message crossing to another node is walked for its pids on both sides:
/// through `Walk::value`, ~100 instructions a value, a tenth of what a
/// small message's hop costs a node besides its encryption.
fn scalar_pids(buf: &[u8]) -> Option<Pids> {
    let (mut r, count) = Reader::message(buf).ok()?;
    let mut pids = Pids::new();
    for _ in 0..count {
        match r.tag().ok()? {
            Tag::Nil | Tag::False | Tag::True => {}
            Tag::Int => {
                r.varint().ok()?;
            }
            Tag::Float => {
                r.u64().ok()?;
            }
            Tag::Str => {
                r.bytes().ok()?;
            }
            Tag::Pid => {
                pids.push(r.position());
                r.u64().ok()?;
            }
            _ => return None,
        }
    }
    r.finish().ok()?;
    Some(pids)
}

/// Walks every value of the message `buf`, which must be well formed: what
/// the walk found, and the values' shapes.
fn walk(buf: &[u8]) -> Result<(Walk<'static>, Vec<Shape<'_>>), WireError> {
    let mut shapes = Vec::new();
    let walk = walk_with(buf, |shape| shapes.push(shape))?;
    Ok((walk, shapes))
}

/// [`walk`], handing each value's shape to `shape` rather than keeping
/// them: a walk for the pids alone allocates no list of shapes (every
/// message that crosses to another node is walked on both sides).
fn walk_with<'a>(buf: &'a [u8], mut shape: impl FnMut(Shape<'a>)) -> Result<Walk<'static>, WireError> {
    let (mut r, count) = Reader::message(buf)?;
    let mut walk = Walk::default();
    for _ in 0..count {
        shape(walk.value(&mut r, 0)?);
    }
    r.finish()?;
    Ok(walk)
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
    Ok(walk_with(buf, |_| ())?.shared)
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
pub(super) struct Walk<'w> {
    pids: Pids,
    pub(super) objects: Vec<bool>,
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
    pub(super) fn value<'a>(&mut self, r: &mut Reader<'a>, depth: usize) -> Result<Shape<'a>, WireError> {
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
