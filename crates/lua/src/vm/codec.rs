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

use std::collections::HashMap;
use std::ffi::{c_int, c_void, CStr};

use mlua_sys as ffi;
use synodic_core::wire::{Reader, Tag, Writer, MAX_DEPTH};
use synodic_core::hash::FastBuild;
use synodic_core::{Attachment, Message, Pid};

use crate::vm::peek::{peek, Object, Plain};
use crate::vm::util::{push_bytes, push_pid, to_bytes, type_name};
use crate::Error;

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

/// What encoding keeps between messages on a thread: the output buffer and
/// the reference maps, so that encoding a message allocates nothing but
/// the message (a spawn's, with its tables and functions, used to grow all
/// three each time).
#[derive(Default)]
struct Scratch {
    bytes: Vec<u8>,
    ids: HashMap<*const c_void, u32, FastBuild>,
    upvalues: HashMap<*mut c_void, (u32, u32), FastBuild>,
}

/// A scratch grown past this many bytes (or references) is not kept.
const SCRATCH_KEPT: usize = 64 << 10;

thread_local! {
    static SCRATCH: std::cell::Cell<Scratch> = std::cell::Cell::new(Scratch::default());
}

impl Scratch {
    /// Kept for the thread's next message, emptied, unless it grew large.
    fn keep(mut self) {
        if self.bytes.capacity() <= SCRATCH_KEPT && self.ids.capacity() <= SCRATCH_KEPT / 16 && self.upvalues.capacity() <= SCRATCH_KEPT / 16 {
            self.bytes.clear();
            self.ids.clear();
            self.upvalues.clear();
            SCRATCH.with(|s| s.set(self));
        }
    }
}

/// Encodes the values at stack positions `first..=last` as one message.
#[inline]
pub(crate) unsafe fn encode(L: *mut ffi::lua_State, first: c_int, last: c_int) -> Result<Message, Error> {
    match crate::vm::plain::encode(L, first, last) {
        Some(msg) => Ok(msg),
        None => encode_general(L, first, last),
    }
}

/// [`encode`] for a message whose first `hidden` values the runtime put
/// there: paths in errors count from the caller's first value.
pub(crate) unsafe fn encode_after(L: *mut ffi::lua_State, first: c_int, last: c_int, hidden: i64) -> Result<Message, Error> {
    let shift = |path: String| match path.strip_prefix('[').and_then(|p| p.split_once(']')) {
        Some((n, rest)) => n.parse::<i64>().map_or(path.clone(), |n| format!("[{}]{rest}", n - hidden)),
        None => path,
    };
    encode(L, first, last).map_err(|e| match e {
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
    encode_marking(L, first, last, 0).map(|(msg, _)| msg)
}

/// Encodes a spawn message (its function, then its arguments, at
/// `first..=last`), and says where its leading values end when `prefix`
/// may keep them (see [`Leading`]), as the encoder met them: what the
/// runtime would otherwise walk the message for.
pub(crate) unsafe fn encode_spawn(L: *mut ffi::lua_State, first: c_int, last: c_int) -> Result<(Message, Option<Leading>), Error> {
    encode_marking(L, first, last, crate::vm::prefix::LEADING)
}

/// The bytes of a message's first values (after its header), with nothing
/// shared among them, the last a table (written out, a reference to one
/// written before, or the globals: what `wire::leading_values` calls a table).
pub(crate) type Leading = std::ops::Range<usize>;

const TABLE_TAGS: [u8; 3] = [Tag::Table as u8, Tag::Ref as u8, Tag::Globals as u8];

/// [`encode_general`], marking the message's first `leading` values
/// (none: 0).
unsafe fn encode_marking(L: *mut ffi::lua_State, first: c_int, last: c_int, leading: usize) -> Result<(Message, Option<Leading>), Error> {
    let top = ffi::lua_gettop(L);
    let count = (last - first + 1).max(0) as usize;
    // Taken, not borrowed: a finaliser run during encoding may encode too.
    let Scratch { bytes, ids, upvalues } = SCRATCH.with(|s| s.take());
    let w = Writer::message_into(bytes, count);
    let mut enc = Encoder { L, w, ids, upvalues, attachments: Vec::new(), depth: 0 };
    let mut result = Ok(());
    let start = enc.w.len();
    let mut marked = None;
    for (n, idx) in (first..=last).enumerate() {
        let (at, idx) = (enc.w.len(), ffi::lua_absindex(L, idx));
        if let Err(e) = enc.value(idx) {
            result = Err(e.under(Segment::Index(n as i64 + 1)));
            break;
        }
        if n + 1 == leading && enc.attachments.is_empty() && ffi::lua_type(L, idx) == ffi::LUA_TTABLE && TABLE_TAGS.contains(&enc.w.buffer()[at]) {
            marked = Some(start..enc.w.len());
        }
    }
    if ffi::lua_gettop(L) != top {
        ffi::lua_settop(L, top);
    }
    let Encoder { w, ids, upvalues, attachments, .. } = enc;
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
    Scratch { bytes, ids, upvalues }.keep();
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
pub(crate) unsafe fn decode(L: *mut ffi::lua_State, msg: &Message) -> Result<c_int, Error> {
    if msg.attachments().is_empty() {
        if let Some(n) = crate::vm::plain::decode(L, msg) {
            return Ok(n);
        }
    }
    decode_general(L, msg)
}

/// [`decode`] for messages the short path does not take (kept out of line, as `encode_general`).
#[inline(never)]
unsafe fn decode_general(L: *mut ffi::lua_State, msg: &Message) -> Result<c_int, Error> {
    decode_parts(L, msg, msg.attachments())
}

/// Pushes a plain value whose tag was just read; `Ok(false)` for other tags.
unsafe fn read_plain(L: *mut ffi::lua_State, r: &mut Reader, tag: Tag) -> Result<bool, synodic_core::wire::WireError> {
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
    let base = ffi::lua_gettop(L);
    let result = (|| {
        let (r, count) = Reader::message(msg)?;
        let mut dec = Decoder::new(L, r, attachments, base);
        dec.values(count)?;
        dec.drop_refs();
        Ok(count as c_int)
    })();
    if result.is_err() {
        ffi::lua_settop(L, base);
    }
    result
}

/// Decodes `leading`, the encoded leading values of a message (without its
/// header), onto the empty stack of a state that a template is built from,
/// for [`decode_after_prefix`]: the values, then their byte length and how
/// many objects they numbered. They stay on the stack rather than in a
/// table, and the decoder's reference table is not kept: a copy holds
/// ~360 bytes less, and finds them without a lookup.
pub(crate) unsafe fn keep_prefix(L: *mut ffi::lua_State, leading: &[u8]) -> Result<(), Error> {
    let base = ffi::lua_gettop(L);
    // First without a reference table (no id held): it would stay in every
    // copy's memory, and values that refer to their own objects are rare.
    for first_ref in [i64::MAX, 0] {
        let mut dec = Decoder::new(L, Reader::fields(leading), &[], base);
        (dec.outside, dec.first_ref) = (true, first_ref);
        match dec.fields() {
            Ok(()) => {
                dec.drop_refs();
                ffi::lua_pushinteger(L, leading.len() as i64);
                ffi::lua_pushinteger(L, dec.next_ref);
                return Ok(());
            }
            Err(e) => {
                ffi::lua_settop(L, base);
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

/// Pushes the values of `msg` in a copy of a template made by
/// [`keep_prefix`], whose stack holds only what that left: the leading
/// values, then the rest decoded. A rest that refers to an object of the
/// leading values (their reference table was not kept) is decoded whole.
pub(crate) unsafe fn decode_after_prefix(L: *mut ffi::lua_State, msg: &Message) -> Result<c_int, Error> {
    let top = ffi::lua_gettop(L);
    let n = top - 2;
    let skip = ffi::lua_tointegerx(L, top - 1, std::ptr::null_mut()) as usize;
    let numbered = ffi::lua_tointegerx(L, top, std::ptr::null_mut());
    ffi::lua_settop(L, n);
    let mut needs_leading = false;
    let result = (|| {
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
        ffi::lua_settop(L, 0);
        if needs_leading {
            return decode(L, msg);
        }
    }
    result
}

/// One step of the path to an unsendable value.
enum Segment {
    Index(i64),
    Field(String),
    Key,
    Upvalue(String),
}

struct Failure {
    kind: Option<String>,
    /// A failure of the writer itself (a message too large).
    wire: Option<synodic_core::wire::WireError>,
    path: Vec<Segment>,
}

impl Failure {
    fn unsendable(kind: impl Into<String>) -> Failure {
        Failure { kind: Some(kind.into()), wire: None, path: Vec::new() }
    }

    fn too_deep() -> Failure {
        Failure { kind: None, wire: None, path: Vec::new() }
    }

    fn wire(e: synodic_core::wire::WireError) -> Failure {
        Failure { kind: None, wire: Some(e), path: Vec::new() }
    }

    fn under(mut self, seg: Segment) -> Failure {
        self.path.push(seg);
        self
    }

    fn into_error(self) -> Error {
        let mut path = String::new();
        for seg in self.path.iter().rev() {
            match seg {
                Segment::Index(i) => path.push_str(&format!("[{i}]")),
                Segment::Field(f) if is_identifier(f) => path.push_str(&format!(".{f}")),
                Segment::Field(f) => path.push_str(&format!("[{f:?}]")),
                Segment::Key => path.push_str("(key)"),
                Segment::Upvalue(name) => path.push_str(&format!("<upvalue {name}>")),
            }
        }
        match (self.kind, self.wire) {
            (_, Some(e)) => Error::Wire(e),
            (Some(kind), None) => Error::Unsendable { kind, path },
            (None, None) => Error::TooDeep { path },
        }
    }
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Stack slots one level of the encoder may push: a key and a value (or an
/// upvalue), plus the reverse maps' lookups (`library_name` and the
/// `reverse_map` it may build) made for the next value.
const LEVEL_SLOTS: c_int = 12;

struct Encoder {
    L: *mut ffi::lua_State,
    w: Writer,
    ids: HashMap<*const c_void, u32, FastBuild>,
    upvalues: HashMap<*mut c_void, (u32, u32), FastBuild>,
    attachments: Vec<Attachment>,
    depth: usize,
}



impl Encoder {
    /// Writes the value at the absolute stack index `idx`.
    unsafe fn value(&mut self, idx: c_int) -> Result<(), Failure> {
        let L = self.L;
        if write_plain(&mut self.w, peek(L, idx)) {
            return Ok(());
        }
        match crate::vm::peek::object(L, idx) {
            Object::Table(p) => return self.table(idx, p),
            Object::Globals => {
                self.w.tag(Tag::Globals);
                return Ok(());
            }
            Object::LuaFunction(p) => return self.lua_function(idx, p),
            Object::CFunction => return self.c_function(idx),
            Object::Other => {}
        }
        match ffi::lua_type(L, idx) {
            ffi::LUA_TLIGHTUSERDATA => return Err(Failure::unsendable("light userdata")),
            ffi::LUA_TUSERDATA => {
                let Some((kind, variant, shared)) = crate::vm::module::sendable().iter().find_map(|s| (s.share)(L, idx).map(|(v, a)| (s.kind, v, a))) else {
                    return Err(Failure::unsendable(type_name(L, idx)));
                };
                // What it shares goes beside the bytes, not copied.
                self.w.tag(Tag::Shared);
                self.w.byte(kind);
                self.w.byte(variant);
                self.w.varint(self.attachments.len() as u64);
                self.attachments.push(shared);
            }
            _ => return Err(Failure::unsendable(type_name(L, idx))),
        }
        Ok(())
    }

    /// Writes a reference if the object was seen; otherwise gives it the next id.
    fn seen(&mut self, p: *const c_void) -> bool {
        if let Some(&id) = self.ids.get(&p) {
            self.w.tag(Tag::Ref);
            self.w.varint(id as u64);
            return true;
        }
        self.ids.insert(p, self.ids.len() as u32);
        false
    }

    /// Enters a table or function: checks the depth, and makes room on the
    /// stack for what one level pushes (a key, a value or an upvalue, and
    /// the lookups of `module_name`), since every level adds to the stack.
    unsafe fn enter(&mut self) -> Result<(), Failure> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Failure::too_deep());
        }
        if ffi::lua_checkstack(self.L, LEVEL_SLOTS) == 0 {
            return Err(Failure::unsendable("value (not enough memory for the Lua stack)"));
        }
        Ok(())
    }

    /// Writes the table at `idx`, whose address is `p` (not the globals).
    unsafe fn table(&mut self, idx: c_int, p: *const c_void) -> Result<(), Failure> {
        let L = self.L;
        if let Some(name) = module_name(L, idx, p) {
            self.w.tag(Tag::Library);
            self.w.bytes(&name);
            self.w.bytes(b"");
            return Ok(());
        }
        if self.seen(p) {
            return Ok(());
        }
        self.enter()?;
        let narr = ffi::lua_rawlen(L, idx) as i64;
        self.w.tag(Tag::Table);
        self.w.varint(narr as u64);
        let count_at = self.w.placeholder_u32();
        for i in 1..=narr {
            ffi::lua_rawgeti(L, idx, i);
            self.value(ffi::lua_gettop(L)).map_err(|e| e.under(Segment::Index(i)))?;
            ffi::lua_settop(L, -2);
        }
        let mut nhash: u32 = 0;
        ffi::lua_pushnil(L);
        while ffi::lua_next(L, idx) != 0 {
            let key = ffi::lua_gettop(L) - 1;
            // Not lua_tointegerx alone: it would try to read a string key as a number.
            let in_array = ffi::lua_isinteger(L, key) != 0 && (1..=narr).contains(&ffi::lua_tointegerx(L, key, std::ptr::null_mut()));
            if !in_array {
                self.value(key).map_err(|e| e.under(Segment::Key))?;
                self.value(key + 1).map_err(|e| e.under(key_segment(L, key)))?;
                nhash += 1;
            }
            ffi::lua_settop(L, key);
        }
        self.w.patch_u32(count_at, nhash);
        self.depth -= 1;
        Ok(())
    }

    /// Writes a reference to the library function `module\0field`.
    fn library(&mut self, name: &[u8]) {
        let (module, field) = name.split_at(name.iter().position(|&b| b == 0).unwrap_or(name.len()));
        self.w.tag(Tag::Library);
        self.w.bytes(module);
        self.w.bytes(field.get(1..).unwrap_or_default());
    }

    /// Writes the C function at `idx`: by name, or not at all.
    unsafe fn c_function(&mut self, idx: c_int) -> Result<(), Failure> {
        match function_name(self.L, idx) {
            Some(name) => {
                self.library(&name);
                Ok(())
            }
            None => Err(Failure::unsendable("function (a C function that is not part of a loaded library)")),
        }
    }

    /// Writes the Lua function at `idx`, whose address is `p`.
    unsafe fn lua_function(&mut self, idx: c_int, p: *const c_void) -> Result<(), Failure> {
        let L = self.L;
        if let Some(name) = crate::vm::shared::frozen_name(p) {
            self.library(&name);
            return Ok(());
        }
        if crate::vm::shared::is_shared_function(L, idx) {
            if let Some(name) = library_name(L, idx, &FUNCTION_NAMES, true) {
                self.library(&name);
                return Ok(());
            }
        }
        if self.seen(p) {
            return Ok(());
        }
        let id = self.ids.len() as u32 - 1; // just numbered by `seen`
        self.enter()?;
        self.w.tag(Tag::Function);
        let at = self.w.placeholder_u32();
        let start = self.w.len();
        if !crate::vm::dumps::dump(L, idx, self.w.buffer()) {
            return Err(Failure::wire(synodic_core::wire::WireError::TooLarge));
        }
        let len = (self.w.len() - start) as u32;
        self.w.patch_u32(at, len);
        let nups = crate::vm::peek::upvalue_count(L, idx);
        self.w.varint(nups as u64);
        for n in 1..=nups {
            let cell = ffi::lua_upvalueid(L, idx, n);
            if let Some(&(owner, m)) = self.upvalues.get(&cell) {
                self.w.tag(Tag::SharedUpvalue);
                self.w.varint(owner as u64);
                self.w.varint(m as u64);
                continue;
            }
            self.upvalues.insert(cell, (id, n as u32));
            let name = ffi::lua_getupvalue(L, idx, n);
            let top = ffi::lua_gettop(L);
            self.value(top).map_err(|e| e.under(Segment::Upvalue(CStr::from_ptr(name).to_string_lossy().into_owned())))?;
            ffi::lua_settop(L, top - 1);
        }
        self.depth -= 1;
        Ok(())
    }
}

unsafe fn key_segment(L: *mut ffi::lua_State, key: c_int) -> Segment {
    match ffi::lua_type(L, key) {
        ffi::LUA_TNUMBER if ffi::lua_isinteger(L, key) != 0 => Segment::Index(ffi::lua_tointegerx(L, key, std::ptr::null_mut())),
        ffi::LUA_TSTRING => Segment::Field(String::from_utf8_lossy(to_bytes(L, key).unwrap_or_default()).into_owned()),
        _ => Segment::Field(format!("<{} key>", type_name(L, key))),
    }
}

/// The name under which the table at `idx` (whose address is `p`) is a
/// loaded module, if it is one.
unsafe fn module_name(L: *mut ffi::lua_State, idx: c_int, p: *const c_void) -> Option<Vec<u8>> {
    if let Some(module) = crate::vm::lazy::module_of(L, p) {
        return Some(module.as_bytes().to_vec());
    }
    library_name(L, idx, &MODULE_NAMES, false)
}

/// `module\0field` for a C function that is a field of a loaded module.
unsafe fn function_name(L: *mut ffi::lua_State, idx: c_int) -> Option<Vec<u8>> {
    let plain = ffi::lua_getupvalue(L, idx, 1).is_null() || {
        ffi::lua_settop(L, -2);
        false
    };
    if let Some((module, field)) = ffi::lua_tocfunction(L, idx).filter(|_| plain).and_then(crate::vm::lazy::function_name) {
        return Some([module.as_bytes(), b"\0", field].concat());
    }
    library_name(L, idx, &FUNCTION_NAMES, true)
}

unsafe fn library_name(L: *mut ffi::lua_State, idx: c_int, map: &'static u8, functions: bool) -> Option<Vec<u8>> {
    reverse_map(L, map, functions);
    ffi::lua_pushvalue(L, idx);
    ffi::lua_rawget(L, -2);
    let name = to_bytes(L, -1).map(<[u8]>::to_vec);
    ffi::lua_settop(L, -3);
    name
}

/// Pushes the reverse map stored under `key`, building it from the loaded
/// modules if needed (the library tables' own entries are known without it:
/// see `lazy`). A module loaded since drops both maps (`ctx.modules_changed`).
/// The walk leaves lazy tables' entries unmade.
unsafe fn reverse_map(L: *mut ffi::lua_State, key: &'static u8, functions: bool) {
    if std::mem::take(&mut crate::vm::ctx::ctx(L).modules_changed) {
        for k in [&MODULE_NAMES, &FUNCTION_NAMES] {
            ffi::lua_pushnil(L);
            ffi::lua_rawsetp(L, ffi::LUA_REGISTRYINDEX, key_of(k));
        }
    }
    if ffi::lua_rawgetp(L, ffi::LUA_REGISTRYINDEX, key_of(key)) == ffi::LUA_TTABLE {
        return;
    }
    ffi::lua_settop(L, -2);
    ffi::lua_createtable(L, 0, 16);
    ffi::lua_getfield(L, ffi::LUA_REGISTRYINDEX, ffi::LUA_LOADED_TABLE);
    let loaded = ffi::lua_gettop(L);
    ffi::lua_pushnil(L);
    while crate::vm::lazy::synodic_next_raw(L, loaded) != 0 {
        let (k, v) = (loaded + 1, loaded + 2);
        if ffi::lua_type(L, k) == ffi::LUA_TSTRING && ffi::lua_type(L, v) == ffi::LUA_TTABLE {
            if functions {
                let bundled = crate::vm::bundled::is_bundled(to_bytes(L, k).unwrap_or_default());
                ffi::lua_pushnil(L);
                while crate::vm::lazy::synodic_next_raw(L, v) != 0 {
                    let (fk, fv) = (v + 1, v + 2);
                    let named = ffi::lua_iscfunction(L, fv) != 0 || (bundled && crate::vm::shared::is_shared_function(L, fv));
                    if named && ffi::lua_type(L, fk) == ffi::LUA_TSTRING {
                        ffi::lua_pushvalue(L, fv);
                        ffi::lua_pushvalue(L, k);
                        push_bytes(L, b"\0");
                        ffi::lua_pushvalue(L, fk);
                        ffi::lua_concat(L, 3);
                        ffi::lua_rawset(L, loaded - 1);
                    }
                    ffi::lua_settop(L, fk);
                }
            } else {
                ffi::lua_pushvalue(L, v);
                ffi::lua_pushvalue(L, k);
                ffi::lua_rawset(L, loaded - 1);
            }
        }
        ffi::lua_settop(L, k);
    }
    ffi::lua_settop(L, loaded - 1);
    ffi::lua_pushvalue(L, -1);
    ffi::lua_rawsetp(L, ffi::LUA_REGISTRYINDEX, key_of(key));
}

struct Decoder<'a> {
    L: *mut ffi::lua_State,
    r: Reader<'a>,
    attachments: &'a [Attachment],
    /// Stack top when decoding started.
    base: c_int,
    /// Stack slot of the table {id = object}: 0 until a table or function
    /// appears, then just above `base` (inserted below the values so far).
    refs: c_int,
    next_ref: i64,
    /// The first id `refs` holds: objects numbered before it are not held
    /// (a template's leading values, see `decode_after_prefix`; or all of
    /// them while `keep_prefix` tries without).
    first_ref: i64,
    /// A reference to one of those was met.
    needs_leading: bool,
    depth: usize,
    /// Decoding outside any process (building a template): only modules
    /// whose loading needs none may be named.
    outside: bool,
}

fn junk(msg: impl Into<String>) -> Error {
    Error::Decode(msg.into())
}

impl<'a> Decoder<'a> {
    fn new(L: *mut ffi::lua_State, r: Reader<'a>, attachments: &'a [Attachment], base: c_int) -> Decoder<'a> {
        Decoder { L, r, attachments, base, refs: 0, next_ref: 0, first_ref: 0, needs_leading: false, depth: 0, outside: false }
    }

    /// Pushes the next `count` values, which must end the reader's bytes.
    unsafe fn values(&mut self, count: usize) -> Result<(), Error> {
        if ffi::lua_checkstack(self.L, count as c_int + 8) == 0 {
            return Err(Error::Decode(format!("too many values ({count})")));
        }
        for _ in 0..count {
            self.value()?;
        }
        Ok(self.r.finish()?)
    }

    /// Removes the reference table, if one was made: the values alone stay.
    unsafe fn drop_refs(&mut self) {
        if self.refs != 0 {
            ffi::lua_rotate(self.L, self.refs, -1);
            ffi::lua_settop(self.L, -2);
            self.refs = 0;
        }
    }

    /// Pushes the values of a reader of bare fields, to its end.
    unsafe fn fields(&mut self) -> Result<(), Error> {
        while self.r.remaining() > 0 {
            if ffi::lua_checkstack(self.L, 8) == 0 {
                return Err(junk("stack overflow"));
            }
            self.value()?;
        }
        Ok(())
    }

    /// Pushes one value.
    unsafe fn value(&mut self) -> Result<(), Error> {
        let L = self.L;
        let tag = self.r.tag()?;
        if read_plain(L, &mut self.r, tag)? {
            return Ok(());
        }
        match tag {
            Tag::Nil | Tag::False | Tag::True | Tag::Int | Tag::Float | Tag::Str | Tag::Pid => unreachable!("plain values are read above"),
            Tag::Globals => {
                ffi::lua_rawgeti(L, ffi::LUA_REGISTRYINDEX, ffi::LUA_RIDX_GLOBALS);
            }
            Tag::Ref => {
                let id = self.r.varint()?;
                self.needs_leading |= id < self.first_ref as u64;
                if self.refs == 0 || id < self.first_ref as u64 || id >= self.next_ref as u64 {
                    return Err(Error::Wire(synodic_core::wire::WireError::BadRef(id)));
                }
                ffi::lua_rawgeti(L, self.refs, id as i64 + 1);
            }
            Tag::Table => self.table()?,
            Tag::Function => self.function()?,
            Tag::Library => self.library()?,
            Tag::SharedUpvalue => return Err(junk("shared upvalue outside a function")),
            Tag::Shared => {
                let kind = self.r.byte_value()?;
                let variant = self.r.byte_value()?;
                let index = self.r.varint()?;
                let sendable = crate::vm::module::sendable().iter().find(|s| s.kind == kind).ok_or_else(|| junk(format!("unknown kind of shared value {kind}")))?;
                let shared = self.attachments.get(index as usize).ok_or_else(|| junk("shared value without its attachment"))?;
                (sendable.rebuild)(L, variant, shared).map_err(junk)?;
            }
        }
        Ok(())
    }

    /// Enters a table or function: checks depth and makes room for its parts.
    unsafe fn enter(&mut self) -> Result<(), Error> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Error::Wire(synodic_core::wire::WireError::TooDeep));
        }
        if ffi::lua_checkstack(self.L, 8) == 0 {
            return Err(junk("stack overflow"));
        }
        Ok(())
    }

    /// Records the object on top of the stack under the next reference id.
    unsafe fn remember(&mut self) {
        let L = self.L;
        let id = self.next_ref;
        self.next_ref += 1;
        if id < self.first_ref {
            return;
        }
        if self.refs == 0 {
            // Nothing holds an absolute stack index yet (this is the first
            // table or function decoded, or the first one after a
            // template's leading values, which are not), so shifting the
            // values up by one is safe.
            ffi::lua_createtable(L, 4, 0);
            self.refs = self.base + 1;
            ffi::lua_rotate(L, self.refs, 1);
        }
        ffi::lua_pushvalue(L, -1);
        ffi::lua_rawseti(L, self.refs, id + 1);
    }

    unsafe fn table(&mut self) -> Result<(), Error> {
        let L = self.L;
        self.enter()?;
        let narr = self.r.varint()?;
        let nhash = self.r.u32()? as u64;
        if narr.saturating_add(nhash) > self.r.remaining() as u64 {
            return Err(junk("table larger than its message"));
        }
        ffi::lua_createtable(L, narr as c_int, nhash as c_int);
        self.remember();
        let t = ffi::lua_gettop(L);
        for i in 1..=narr as i64 {
            self.value()?;
            if ffi::lua_type(L, -1) == ffi::LUA_TNIL {
                ffi::lua_settop(L, -2);
            } else {
                ffi::lua_rawseti(L, t, i);
            }
        }
        for _ in 0..nhash {
            self.value()?;
            let bad_key = match ffi::lua_type(L, -1) {
                ffi::LUA_TNIL => true,
                ffi::LUA_TNUMBER => ffi::lua_isinteger(L, -1) == 0 && ffi::lua_tonumber(L, -1).is_nan(),
                _ => false,
            };
            if bad_key {
                return Err(junk("table key is nil or NaN"));
            }
            self.value()?;
            ffi::lua_rawset(L, t);
        }
        self.depth -= 1;
        Ok(())
    }

    unsafe fn function(&mut self) -> Result<(), Error> {
        let L = self.L;
        self.enter()?;
        let len = self.r.u32()? as usize;
        if len > self.r.remaining() {
            return Err(junk("function code runs past the message"));
        }
        let start = self.r.position();
        let code = self.r.bytes_raw(len)?;
        let mut chunk = Some(code);
        // A real chunk needs no block much larger than itself (16 bytes per byte covers constants).
        let heap = crate::vm::heap::of_state(L);
        let previous_cap = heap.map(|h| h.limit_blocks(16 * len + 4096));
        let status = ffi::lua_load(L, chunk_reader, (&mut chunk as *mut Option<&[u8]>).cast(), c"=message".as_ptr(), c"b".as_ptr());
        if let (Some(h), Some(cap)) = (crate::vm::heap::of_state(L), previous_cap) {
            h.limit_blocks(cap);
        }
        if status != ffi::LUA_OK {
            let why = to_bytes(L, -1).map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or_default();
            ffi::lua_settop(L, -2);
            return Err(junk(format!("bad function code at byte {start}: {why}")));
        }
        self.remember();
        let f = ffi::lua_gettop(L);
        let nups = self.r.varint()?;
        for n in 1..=nups {
            if n > 255 || ffi::lua_getupvalue(L, f, n as c_int).is_null() {
                return Err(junk("function has fewer upvalues than the message gives"));
            }
            ffi::lua_settop(L, -2);
            if self.r.peek_tag() == Some(Tag::SharedUpvalue) {
                self.r.tag()?;
                let owner = self.r.varint()?;
                let m = self.r.varint()?;
                self.needs_leading |= owner < self.first_ref as u64;
                if self.refs == 0 || owner < self.first_ref as u64 || owner >= self.next_ref as u64 || m == 0 || m > 255 {
                    return Err(junk("bad shared upvalue"));
                }
                ffi::lua_rawgeti(L, self.refs, owner as i64 + 1);
                let ok = ffi::lua_type(L, -1) == ffi::LUA_TFUNCTION
                    && ffi::lua_iscfunction(L, -1) == 0
                    && !ffi::lua_getupvalue(L, -1, m as c_int).is_null();
                if !ok {
                    return Err(junk("bad shared upvalue"));
                }
                ffi::lua_settop(L, -2);
                ffi::lua_upvaluejoin(L, f, n as c_int, -1, m as c_int);
                ffi::lua_settop(L, -2);
            } else {
                self.value()?;
                ffi::lua_setupvalue(L, f, n as c_int);
            }
        }
        self.depth -= 1;
        Ok(())
    }

    unsafe fn library(&mut self) -> Result<(), Error> {
        let L = self.L;
        let module = self.r.bytes()?;
        let field = self.r.bytes()?;
        if crate::vm::shared::push_frozen_field(L, module, field) {
            return Ok(());
        }
        if self.outside && !crate::vm::template::loads_outside_a_process(module) {
            return Err(junk(format!("module '{}' is loaded in a process only", String::from_utf8_lossy(module))));
        }
        crate::vm::state::push_module(L, module).map_err(|e| junk(format!("module '{}': {e}", String::from_utf8_lossy(module))))?;
        if !field.is_empty() {
            // Not a raw get (library tables fill themselves on first use),
            // but protected: a module's own __index may raise.
            ffi::lua_pushcfunction(L, index_field);
            ffi::lua_rotate(L, -2, 1);
            push_bytes(L, field);
            if crate::vm::util::protected(L, 2, 1).is_err() {
                let why = crate::vm::util::pop_error(L);
                return Err(junk(format!("library field {}.{}: {why}", String::from_utf8_lossy(module), String::from_utf8_lossy(field))));
            }
        }
        Ok(())
    }
}

/// `t[k]` with metamethods, for a protected call.
unsafe extern "C-unwind" fn index_field(L: *mut ffi::lua_State) -> c_int {
    ffi::lua_gettable(L, 1);
    1
}

unsafe extern "C-unwind" fn chunk_reader(_L: *mut ffi::lua_State, ud: *mut c_void, size: *mut usize) -> *const std::ffi::c_char {
    let chunk = &mut *(ud as *mut Option<&[u8]>);
    match chunk.take() {
        Some(b) => {
            *size = b.len();
            b.as_ptr().cast()
        }
        None => {
            *size = 0;
            std::ptr::null()
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::vm::ctx::{Boot, Ctx};
    use crate::vm::heap::Heap;

    /// A process-less state to encode and decode in.
    pub(crate) struct TestState {
        pub(crate) L: *mut ffi::lua_State,
        _ctx: Box<Ctx>,
        _heap: Box<Heap>,
    }

    impl TestState {
        pub(crate) fn new() -> TestState {
            let mut ctx = Box::new(Ctx::new(Boot::Spawned(None)));
            let mut heap = Box::new(Heap::new());
            let L = unsafe { crate::vm::state::new_state(&mut *ctx, &mut *heap, None) }.expect("state");
            TestState { L, _ctx: ctx, _heap: heap }
        }

        /// Encodes the values that `source` returns.
        pub(crate) fn encode(&self, source: &str) -> Vec<u8> {
            self.encode_with(source, |L, top| unsafe { encode(L, 1, top) }.map(|msg| (msg, None))).0.to_vec()
        }

        /// Encodes the values that `source` returns as a spawn message.
        pub(crate) fn encode_spawn(&self, source: &str) -> (Message, Option<Leading>) {
            self.encode_with(source, |L, top| unsafe { encode_spawn(L, 1, top) })
        }

        fn encode_with(&self, source: &str, how: impl FnOnce(*mut ffi::lua_State, c_int) -> Result<(Message, Option<Leading>), Error>) -> (Message, Option<Leading>) {
            unsafe {
                let L = self.L;
                ffi::lua_settop(L, 0);
                assert_eq!(ffi::luaL_loadbufferx(L, source.as_ptr().cast(), source.len(), c"t".as_ptr(), std::ptr::null()), 0);
                assert_eq!(ffi::lua_pcall(L, 0, ffi::LUA_MULTRET, 0), 0);
                let encoded = how(L, ffi::lua_gettop(L)).expect("encodable");
                ffi::lua_settop(L, 0);
                encoded
            }
        }
    }

    impl Drop for TestState {
        fn drop(&mut self) {
            unsafe { ffi::lua_close(self.L) }
        }
    }

    const SAMPLES: &[&str] = &[
        "return 1, 2.5, 'three', true, nil, -7",
        "local t = {1, 2, {x = 'y'}, [true] = 0.5} t.self = t return t, t",
        "local up = {n = 1} return function(a) return a + up.n end, up",
        "local c = 0 local function inc() c = c + 1 return c end return {inc, function() return c end}",
        "return string.format, _G, math",
    ];

    #[test]
    fn round_trip_keeps_structure() {
        let st = TestState::new();
        let msg = st.encode(SAMPLES[1]);
        unsafe {
            assert_eq!(decode_parts(st.L, &msg, &[]).unwrap(), 2);
            assert!(ffi::lua_rawequal(st.L, 1, 2) != 0, "the same table twice stays one table");
            ffi::lua_getfield(st.L, 1, c"self".as_ptr());
            assert!(ffi::lua_rawequal(st.L, 1, -1) != 0, "the cycle is kept");
        }
    }

    /// References stay right across many objects: a table met again after
    /// forty others.
    #[test]
    fn references_hold_across_many_objects() {
        let st = TestState::new();
        let msg = st.encode("local t = {} for i = 1, 40 do t[i] = {i} end t.again = t[3] t.late = t[39] return t");
        unsafe {
            assert_eq!(decode_parts(st.L, &msg, &[]).unwrap(), 1);
            ffi::lua_setglobal(st.L, c"t".as_ptr());
        }
        assert!(unsafe { crate::vm::template::tests::run(st.L, "return t.again == t[3] and t.late == t[39] and t[40][1] == 40 and t[3] ~= t[39]") });
    }

    /// Encoding reuses its thread's buffer and reference maps: each message
    /// numbers its references afresh, and a large one neither keeps the
    /// buffer grown nor loses bytes.
    #[test]
    fn each_message_starts_afresh() {
        let st = TestState::new();
        let source = "T = T or {1, {2}, function() return 3 end} return T, T";
        let first = st.encode(source);
        assert_eq!(st.encode(source), first, "the second encoding of the same values is the same");
        let large = st.encode("return string.rep('x', 100000), {string.rep('y', 200)}");
        assert!(large.len() > 100000);
        unsafe {
            assert_eq!(decode_parts(st.L, &large, &[]).unwrap(), 2);
            assert_eq!(ffi::luaL_len(st.L, 1), 100000);
            ffi::lua_settop(st.L, 0);
        }
        let kept = SCRATCH.with(|s| {
            let scratch = s.take();
            let capacity = scratch.bytes.capacity();
            s.set(scratch);
            capacity
        });
        assert!(kept <= SCRATCH_KEPT, "a large message does not leave the buffer grown ({kept} bytes)");
        assert_eq!(st.encode(source), first);
    }

    /// A bundled module's function crosses by name, and a spawn message
    /// that starts with one names the module its process's template loads;
    /// a user's function crosses as code, and names none.
    #[test]
    fn a_bundled_function_names_its_module() {
        let st = TestState::new();
        let msg = st.encode("return require('synodic.entity.loop').main, 1");
        assert_eq!(leading_module(&msg), Some(&b"synodic.entity.loop"[..]));
        let msg = st.encode("return require('synodic.skel').farm");
        assert_eq!(leading_module(&msg), Some(&b"synodic.skel"[..]));
        assert_eq!(leading_module(&st.encode("return function() end, 1")), None);
        assert_eq!(leading_module(&st.encode("return 1, require('synodic.skel').farm")), None);
        assert_eq!(leading_module(b"junk"), None);
    }

    /// An idle process (a ring member: the synodic module and one function)
    /// must fit in its heap's first chunk: that is what keeps a process
    /// near 5 KB.
    #[test]
    fn an_idle_process_fits_in_the_first_chunk() {
        let st = TestState::new();
        let member = st.encode(
            "local s = require 'synodic'
             return function(main)
               local next = s.receive()
               while true do
                 local hops = s.receive()
                 if hops == 0 then s.send(main, 'done') else s.send(next, hops - 1) end
               end
             end",
        );
        let idle = TestState::new();
        unsafe {
            decode_parts(idle.L, &member, &[]).unwrap();
            ffi::lua_settop(idle.L, 0);
            let used = crate::vm::heap::of_state(idle.L).unwrap().used();
            assert!(used <= crate::vm::heap::FIRST_CHUNK - 16, "an idle process takes {used} bytes");
        }
    }

    #[test]
    fn junk_is_an_error_never_a_crash() {
        let st = TestState::new();
        let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for source in SAMPLES {
            let msg = st.encode(source);
            unsafe {
                for cut in 0..msg.len() {
                    assert!(decode_parts(st.L, &msg[..cut], &[]).is_err(), "{source}: a {cut}-byte prefix decoded");
                    assert_eq!(ffi::lua_gettop(st.L), 0, "a failed decode leaves the stack as it was");
                }
                for _ in 0..3000 {
                    let mut junk = msg.clone();
                    for _ in 0..1 + next() % 4 {
                        let i = (next() as usize) % junk.len();
                        junk[i] = next() as u8;
                    }
                    match decode_parts(st.L, &junk, &[]) {
                        Ok(n) => ffi::lua_settop(st.L, -n - 1),
                        Err(_) => assert_eq!(ffi::lua_gettop(st.L), 0),
                    }
                }
                let random: Vec<u8> = (0..64).map(|_| next() as u8).collect();
                let _ = decode_parts(st.L, &random, &[]);
                ffi::lua_settop(st.L, 0);
            }
        }
    }
}
