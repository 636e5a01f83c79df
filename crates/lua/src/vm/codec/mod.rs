//! Copies Lua values between states through the wire format
//! (`docs/wire-format.md`). Encoding walks values on the sender's stack;
//! decoding pushes fresh copies on the receiver's stack.
//!
//! - Tables and Lua functions get a reference id when first met, so shared
//!   references and cycles survive; upvalue cells shared by two closures are
//!   joined again on the receiving side.
//! - The sender's global table, loaded modules, their C functions and the
//!   functions of Synodic's bundled modules (`lualib/`, the same code on
//!   every node) travel by name and resolve to the receiver's own
//!   (`Globals`, `Library`).
//! - Pids travel as their 64-bit value.
//! - Userdata of the kinds the registry lists (`vm::module::sendable`) (buffers, tuple-space
//!   handles) travel as attachments shared with the sender.
//! - Anything else (threads, other userdata, unknown C functions) is refused
//!   with the path of the offending value, e.g. `(at [2].conn)`.
//!
//! Decoding never raises a Lua error on junk: it returns `Error::Decode`
//! and leaves the stack as it found it.
//!
//! The codec in files: this one has the entry points (encode and decode a
//! message, a spawn's leading values, templates' prefixes); `encoder.rs`
//! walks values into bytes, `decoder.rs` reads bytes into values,
//! `names.rs` finds the names that modules and their functions travel by.

mod decoder;
mod encoder;
mod memo;
mod names;
#[cfg(test)]
pub(crate) mod tests;

use std::collections::HashSet;
use std::ffi::{c_int, c_void};

use mlua_sys as ffi;
use synodic_core::wire::{Reader, Tag, Writer};
use synodic_core::hash::FastBuild;
use synodic_core::{Attachment, Message, Pid};

use crate::vm::peek::Plain;
use crate::vm::util::{push_bytes, push_pid};
use crate::Error;

use decoder::Decoder;
use encoder::{Encoder, Failure, Segment};

fn junk(msg: impl Into<String>) -> Error {
    Error::Decode(msg.into())
}

/// A kind of userdata that crosses between processes: what it shares (an
/// attachment of the message) and how the receiver rebuilds it. A module
/// with such a userdata declares one in the registry (`vm::module::sendable`
/// lists them), so the codec knows none of their types.
pub(crate) struct Sendable {
    /// Its number on the wire (`docs/wire-format.md`, tag 13).
    pub kind: u8,
    /// The variant byte and the attachment of the userdata at `idx`, if it is of this kind.
    pub share: unsafe fn(*mut ffi::lua_State, c_int) -> Option<(u8, Attachment)>,
    /// Pushes a userdata of this kind for a received attachment.
    pub rebuild: unsafe fn(*mut ffi::lua_State, u8, &Attachment) -> Result<(), String>,
}

/// Its address is the registry key of the reverse map {module table =
/// name} (built on demand). Keys by address, not by name: a lookup then
/// interns no string.
static MODULE_NAMES: u8 = 1;
/// Its address is the registry key of the reverse map {function =
/// "module\0field"}: C functions of loaded modules, Lua functions of
/// bundled ones (built on demand).
static FUNCTION_NAMES: u8 = 2;

fn key_of(anchor: &'static u8) -> *const c_void {
    std::ptr::from_ref(anchor).cast()
}

/// What the decoder does with the functions it meets.
#[derive(Clone, Copy)]
pub(crate) enum Functions<'a> {
    /// Loads each into the state decoded into (every decoding but a
    /// template's build).
    Load,
    /// Loads each and notes its bytecode (a template's dry run: see
    /// `template_code`).
    LoadAndNote(&'a std::cell::RefCell<Vec<Box<[u8]>>>),
    /// Makes each a closure over the prototype `code` holds for it (a
    /// template's build), or loads it if `code` holds none.
    Share(&'a crate::vm::template_code::Code),
}

/// What the codec keeps between the sends of one process.
#[derive(Default)]
pub(crate) struct Sent {
    /// The bytecode of the functions it has sent (see `dumps`).
    pub(crate) dumps: crate::vm::dumps::Dumps,
    /// The addresses of the module tables in its reverse map {module table
    /// = name}, while the map stands (see `names::module_name`).
    pub(crate) module_tables: Option<HashSet<*const c_void, FastBuild>>,
    /// The leading values of its last spawns (see `memo`).
    pub(crate) spawns: memo::Spawns,
}

/// What encoding keeps between messages on a thread: the output buffer and
/// the reference maps, so that encoding a message allocates nothing but
/// the message (a spawn's, with its tables and functions, used to grow all
/// three each time).
#[derive(Default)]
struct Scratch {
    bytes: Vec<u8>,
    ids: encoder::Known<u32>,
    upvalues: encoder::Known<(u32, u32)>,
    named: Vec<*const c_void>,
}

/// A scratch grown past this many bytes (or references) is not kept.
const SCRATCH_KEPT: usize = 64 << 10;

thread_local! {
    static SCRATCH: std::cell::Cell<Scratch> = std::cell::Cell::new(Scratch::default());
}

impl Scratch {
    /// Kept for the thread's next message, emptied, unless it grew large.
    fn keep(mut self) {
        if self.bytes.capacity() <= SCRATCH_KEPT && self.ids.map.capacity() <= SCRATCH_KEPT / 16 && self.upvalues.map.capacity() <= SCRATCH_KEPT / 16 {
            self.bytes.clear();
            self.ids.clear();
            self.upvalues.clear();
            self.named.clear();
            SCRATCH.with(|s| s.set(self));
        }
    }
}

/// Encodes the values at stack positions `first..=last` as one message.
#[inline]
pub(crate) unsafe fn encode(L: *mut ffi::lua_State, first: c_int, last: c_int) -> Result<Message, Error> {
    // SAFETY: `L` is a process's state with the values at `first..=last`
    // (lib.rs invariant 1, the caller's).
    match unsafe { crate::vm::plain::encode(L, first, last) } {
        Some(msg) => Ok(msg),
        // SAFETY: as above.
        None => unsafe { encode_general(L, first, last) },
    }
}

/// [`encode`] for a message whose first `hidden` values the runtime put
/// there: paths in errors count from the caller's first value.
pub(crate) unsafe fn encode_after(L: *mut ffi::lua_State, first: c_int, last: c_int, hidden: i64) -> Result<Message, Error> {
    let shift = |path: String| match path.strip_prefix('[').and_then(|p| p.split_once(']')) {
        Some((n, rest)) => n.parse::<i64>().map_or(path.clone(), |n| format!("[{}]{rest}", n - hidden)),
        None => path,
    };
    // SAFETY: `L` is a process's state with the values at `first..=last`
    // (lib.rs invariant 1, the caller's).
    unsafe { encode(L, first, last) }.map_err(|e| match e {
        Error::Unsendable { kind, path } => Error::Unsendable { kind, path: shift(path) },
        Error::TooDeep { path } => Error::TooDeep { path: shift(path) },
        e => e,
    })
}

/// [`encode`] for values the short path does not take: tables, functions,
/// userdata, long messages. Kept out of line so that the short path does not
/// pay for its frame.
#[inline(never)]
pub(crate) unsafe fn encode_general(L: *mut ffi::lua_State, first: c_int, last: c_int) -> Result<Message, Error> {
    // SAFETY: as `encode`'s caller promises.
    unsafe { encode_marking(L, first, last, 0) }.map(|(msg, _)| msg)
}

/// Encodes a spawn message (its function, then its arguments, at
/// `first..=last`), and says where its leading values end when `prefix`
/// may keep them (see [`Leading`]), as the encoder met them: what the
/// runtime would otherwise walk the message for.
pub(crate) unsafe fn encode_spawn(L: *mut ffi::lua_State, first: c_int, last: c_int) -> Result<(Message, Option<Leading>), Error> {
    // SAFETY: `L` is a process's state with the values at `first..=last`
    // (lib.rs invariant 1, the caller's).
    unsafe { encode_marking(L, first, last, crate::vm::prefix::LEADING) }
}

/// The bytes of a message's first values (after its header), with nothing
/// shared among them, the last a table (written out, a reference to one
/// written before, or the globals: what `wire::leading_values` calls a table).
pub(crate) type Leading = std::ops::Range<usize>;

const TABLE_TAGS: [u8; 3] = [Tag::Table as u8, Tag::Ref as u8, Tag::Globals as u8];

/// [`encode_general`], marking the message's first `leading` values
/// (none: 0).
///
/// # Safety
/// `L` is a process's state (lib.rs invariant 1) with values at
/// `first..=last`.
unsafe fn encode_marking(L: *mut ffi::lua_State, first: c_int, last: c_int, leading: usize) -> Result<(Message, Option<Leading>), Error> {
    // SAFETY: the contract.
    let top = unsafe { ffi::lua_gettop(L) };
    let count = (last - first + 1).max(0) as usize;
    // Taken, not borrowed: a finaliser run during encoding may encode too.
    let Scratch { bytes, ids, upvalues, named } = SCRATCH.with(|s| s.take());
    let w = Writer::message_into(bytes, count);
    let mut enc = Encoder { L, w, ids, upvalues, named, attachments: Vec::new(), depth: 0 };
    let mut result = Ok(());
    let start = enc.w.len();
    let mut marked = None;
    // A spawn's leading values may be the ones its process spawned with
    // last: then they are written as they were (see `memo`).
    // SAFETY: the contract: `first` is the index of the first of `count` values.
    let first_abs = unsafe { ffi::lua_absindex(L, first) };
    let memo = match leading {
        // SAFETY: the contract; nothing written yet but the header.
        crate::vm::prefix::LEADING if count >= leading => unsafe { memo::reuse(L, first_abs, &mut enc) },
        _ => memo::Use::Pass,
    };
    let mut written = 0;
    if memo == memo::Use::Reused {
        (marked, written) = (Some(start..enc.w.len()), leading);
    }
    for (n, idx) in (first..=last).enumerate().skip(written) {
        // SAFETY: the contract: `idx` is the index of a value.
        let (at, idx) = (enc.w.len(), unsafe { ffi::lua_absindex(L, idx) });
        // NOT KEPT: lib.rs invariant 2. The encoder's buffer, maps and
        // attachments (and this frame's) are alive while it calls the API, and
        // a memory error there (a lazy table's entries made for `lua_next`,
        // `luaL_ref` in `dumps`, the reverse maps of `names`) unwinds over
        // them: in practice a leak of them.
        // SAFETY: `enc.L` is `L` and `idx` an absolute index of a value.
        if let Err(e) = unsafe { enc.value(idx) } {
            result = Err(e.under(Segment::Index(n as i64 + 1)));
            break;
        }
        // SAFETY: as above (a type read).
        if n + 1 == leading && enc.attachments.is_empty() && unsafe { ffi::lua_type(L, idx) } == ffi::LUA_TTABLE && TABLE_TAGS.contains(&enc.w.buffer()[at]) {
            marked = Some(start..enc.w.len());
        }
    }
    // SAFETY: the contract; back to the caller's top (lowering it raises nothing).
    unsafe {
        if ffi::lua_gettop(L) != top {
            ffi::lua_settop(L, top);
        }
    }
    if let (memo::Use::Record, Ok(()), Some(range)) = (memo, &result, &marked) {
        // SAFETY: the contract; the values are where they were, encoded.
        unsafe { memo::record(L, first_abs, &enc, &enc.w.written()[range.clone()]) };
    }
    let Encoder { w, ids, upvalues, named, attachments, .. } = enc;
    let (bytes, result) = match w.finish() {
        Ok(bytes) => (bytes, result),
        Err((e, bytes)) => (bytes, Err(Failure::wire(e))),
    };
    // A large message takes the buffer over; a smaller one is copied out of
    // it, so the buffer stays for the next.
    let (msg, bytes) = match result {
        Ok(()) if bytes.capacity() > SCRATCH_KEPT => (Ok(Message::with_attachments(bytes, attachments)), Vec::new()),
        Ok(()) if !attachments.is_empty() => (Ok(Message::with_attachments(bytes.to_vec(), attachments)), bytes),
        Ok(()) => (Ok(Message::from_slice(&bytes)), bytes),
        Err(e) => (Err(e.into_error()), bytes),
    };
    Scratch { bytes, ids, upvalues, named }.keep();
    msg.map(|msg| (msg, marked))
}

/// Writes `v` if it is a plain value; false if it is not.
#[inline]
fn write_plain(w: &mut Writer, v: Plain) -> bool {
    match v {
        Plain::Nil => w.tag(Tag::Nil),
        Plain::Bool(b) => w.bool(b),
        Plain::Int(i) => w.int(i),
        Plain::Float(f) => w.float(f),
        Plain::Str(s) => w.str(s),
        Plain::Light(p) => match Pid::from_raw(p as usize as u64) {
            Some(pid) => w.pid(pid),
            None => return false,
        },
        Plain::Other => return false,
    }
    true
}

/// Pushes the values of a message; returns how many.
#[inline]
///
/// Decoding owns nothing while it calls the API; a memory error in it
/// unwinds over the caller's frames, which must keep lib.rs invariant 2
/// (a caller that owns the `Message` it decodes does not: see the "NOT
/// KEPT" notes at those callers).
pub(crate) unsafe fn decode(L: *mut ffi::lua_State, msg: &Message) -> Result<c_int, Error> {
    if msg.attachments().is_empty() {
        // SAFETY: `L` is a process's state (lib.rs invariant 1).
        if let Some(n) = unsafe { crate::vm::plain::decode(L, msg) } {
            return Ok(n);
        }
    }
    // SAFETY: as above.
    unsafe { decode_general(L, msg) }
}

/// [`decode`] for messages the short path does not take (kept out of line, as `encode_general`).
#[inline(never)]
unsafe fn decode_general(L: *mut ffi::lua_State, msg: &Message) -> Result<c_int, Error> {
    // SAFETY: `L` is a process's state (lib.rs invariant 1); the message's
    // attachments are its own.
    unsafe { decode_parts(L, msg, msg.attachments()) }
}

/// Pushes a plain value whose tag was just read; `Ok(false)` for other tags.
unsafe fn read_plain(L: *mut ffi::lua_State, r: &mut Reader, tag: Tag) -> Result<bool, synodic_core::wire::WireError> {
    // SAFETY: `L` is the decoder's state, with room for one value (the
    // decoder checks the stack before each value).
    unsafe {
        match tag {
            Tag::Nil => ffi::lua_pushnil(L),
            Tag::False => ffi::lua_pushboolean(L, 0),
            Tag::True => ffi::lua_pushboolean(L, 1),
            Tag::Int => ffi::lua_pushinteger(L, r.int()?),
            Tag::Float => ffi::lua_pushnumber(L, r.float()?),
            Tag::Str => push_bytes(L, r.bytes()?),
            Tag::Pid => push_pid(L, r.pid()?),
            _ => return Ok(false),
        }
    }
    Ok(true)
}

/// The module of the first value of `msg`, when that value is a library
/// function (a spawn message's function tells how the process starts).
pub(crate) fn leading_module(msg: &[u8]) -> Option<&[u8]> {
    leading_library(msg).map(|(module, _)| module)
}

/// The module and field of the first value of `msg`, when that value is a
/// library function or module (field empty).
pub(crate) fn leading_library(msg: &[u8]) -> Option<(&[u8], &[u8])> {
    let (mut r, count) = Reader::message(msg).ok()?;
    if count == 0 || r.tag().ok()? != Tag::Library {
        return None;
    }
    Some((r.bytes().ok()?, r.bytes().ok()?))
}

/// Pushes the values encoded in `msg`, whose attachments are `attachments`.
pub(crate) unsafe fn decode_parts(L: *mut ffi::lua_State, msg: &[u8], attachments: &[Attachment]) -> Result<c_int, Error> {
    // SAFETY: `L` is a process's state (lib.rs invariant 1, the caller's).
    let base = unsafe { ffi::lua_gettop(L) };
    // SAFETY: as above; the decoder starts at `base` and owns nothing (its
    // reader borrows `msg`) while it calls the API.
    let result = (|| unsafe {
        let (r, count) = Reader::message(msg)?;
        let mut dec = Decoder::new(L, r, attachments, base);
        dec.values(count)?;
        dec.drop_refs();
        Ok(count as c_int)
    })();
    if result.is_err() {
        // SAFETY: as above; back to where decoding began.
        unsafe { ffi::lua_settop(L, base) };
    }
    result
}

/// Decodes `leading`, the encoded leading values of a message (without its
/// header), onto the empty stack of a state that a template is built from,
/// for [`decode_after_prefix`]: the values, then their byte length and how
/// many objects they numbered. They stay on the stack rather than in a
/// table, and the decoder's reference table is not kept: a copy holds
/// ~360 bytes less, and finds them without a lookup.
pub(crate) unsafe fn keep_prefix(L: *mut ffi::lua_State, leading: &[u8], functions: Functions<'_>) -> Result<(), Error> {
    // SAFETY: `L` is a template's build state (the caller's), where an
    // error aborts (no protected call is active).
    let base = unsafe { ffi::lua_gettop(L) };
    // First without a reference table (no id held): it would stay in every
    // copy's memory, and values that refer to their own objects are rare.
    for first_ref in [i64::MAX, 0] {
        let mut dec = Decoder::new(L, Reader::fields(leading), &[], base);
        (dec.outside, dec.first_ref, dec.functions) = (true, first_ref, functions);
        // SAFETY: as above; `outside` makes the decoder refuse modules that
        // only a process may load.
        match unsafe { dec.fields() } {
            Ok(()) => {
                // SAFETY: as above.
                unsafe {
                    dec.drop_refs();
                    ffi::lua_pushinteger(L, leading.len() as i64);
                    ffi::lua_pushinteger(L, dec.next_ref);
                }
                return Ok(());
            }
            Err(e) => {
                // SAFETY: as above; back to where decoding began.
                unsafe { ffi::lua_settop(L, base) };
                if !dec.needs_leading {
                    return Err(e);
                }
            }
        }
    }
    Err(junk("leading values refer to objects they do not hold"))
}

/// Calls `f` with the first argument (the second leading value) that
/// [`keep_prefix`] kept pushed, and keeps the value `f` leaves on top in
/// its place when `f` returns true. False when nothing is kept, or `f`
/// returned false.
pub(crate) unsafe fn with_kept_argument(L: *mut ffi::lua_State, f: impl FnOnce(*mut ffi::lua_State) -> bool) -> bool {
    const FIRST_ARGUMENT: c_int = 2;
    // SAFETY: `L` is a template's build state holding what `keep_prefix`
    // kept (the caller's): the function, the argument at 2, their length
    // and count above (so `top >= 4` is checked before index 2 is read).
    unsafe {
        let top = ffi::lua_gettop(L);
        let done = top >= FIRST_ARGUMENT + 2 && ffi::lua_checkstack(L, 4) != 0 && {
            ffi::lua_pushvalue(L, FIRST_ARGUMENT);
            f(L)
        } && ffi::lua_gettop(L) == top + 1;
        if done {
            ffi::lua_copy(L, -1, FIRST_ARGUMENT);
        }
        ffi::lua_settop(L, top);
        done
    }
}

/// Pushes the values of `msg` in a copy of a template made by
/// [`keep_prefix`], whose stack holds only what that left: the leading
/// values, then the rest decoded. A rest that refers to an object of the
/// leading values (their reference table was not kept) is decoded whole.
pub(crate) unsafe fn decode_after_prefix(L: *mut ffi::lua_State, msg: &Message) -> Result<c_int, Error> {
    // SAFETY: `L` is a copy of a template made by `keep_prefix` (the
    // caller's): its stack holds the leading values, then their byte length
    // and how many objects they numbered (two integers on top).
    let (n, skip, numbered) = unsafe {
        let top = ffi::lua_gettop(L);
        let n = top - 2;
        let skip = ffi::lua_tointegerx(L, top - 1, std::ptr::null_mut()) as usize;
        let numbered = ffi::lua_tointegerx(L, top, std::ptr::null_mut());
        ffi::lua_settop(L, n);
        (n, skip, numbered)
    };
    let mut needs_leading = false;
    // SAFETY: as above; the decoder owns nothing while it calls the API.
    let result = (|| unsafe {
        let (r, count) = Reader::message(msg)?;
        let rest = msg.get(r.position() + skip..).ok_or_else(|| junk("message shorter than its leading values"))?;
        let mut dec = Decoder::new(L, Reader::fields(rest), msg.attachments(), 0);
        (dec.first_ref, dec.next_ref) = (numbered, numbered);
        let result = dec.values(count.saturating_sub(n as usize));
        needs_leading = dec.needs_leading;
        result?;
        dec.drop_refs();
        Ok(count as c_int)
    })();
    if result.is_err() {
        // SAFETY: as above; the stack emptied, the message is decoded whole.
        unsafe {
            ffi::lua_settop(L, 0);
            if needs_leading {
                return decode(L, msg);
            }
        }
    }
    result
}
