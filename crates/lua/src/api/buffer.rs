//! `synodic.buffer`: fixed-size arrays of bytes or numbers for large data.
//! A buffer's payload crosses between processes of a node without being
//! copied: a message carries it as an attachment shared with the sender. To
//! keep processes isolated, writing to a payload that is shared copies it
//! first (copy on write), so nobody ever sees another process's writes.
//!
//! Elements are numbered from 1 and viewed as `u8`, `i64` or `f64`;
//! `b:view(kind)` gives the same bytes as other elements, without a copy;
//! like any sharing it is copy on write, so a later write to either one
//! is not seen by the other. `fromtable` and
//! `totable` move whole arrays in and out in one call.

use std::ffi::{c_int, CStr};
use std::sync::Arc;

use mlua_sys as ffi;
use synodic_core::Attachment;

use crate::vm::codec::Sendable;
use crate::vm::util::*;

#[cfg(test)]
mod tests;

/// A buffer's bytes, shared between the buffers that view them.
pub(crate) type Payload = Arc<synodic_core::payload::Payload>;

/// A buffer crosses as its bytes, shared (see `codec::Sendable`); the
/// variant byte is its element kind.
pub(crate) static SENDABLE: Sendable = Sendable { kind: 1, share, rebuild };

unsafe fn share(L: *mut ffi::lua_State, idx: c_int) -> Option<(u8, Attachment)> {
    // SAFETY: `L` is a process's state and `idx` a stack index (the
    // encoder's contract); `to_buffer` checks the userdata is a buffer.
    let b = unsafe { to_buffer(L, idx)? };
    Some((b.kind as u8, b.payload.clone()))
}

unsafe fn rebuild(L: *mut ffi::lua_State, variant: u8, shared: &Attachment) -> Result<(), String> {
    let kind = Kind::from_byte(variant).ok_or("unknown buffer kind")?;
    let payload = shared.clone().downcast::<synodic_core::payload::Payload>().map_err(|_| "not a buffer's bytes")?;
    // SAFETY: `L` is the decoder's state (a process's), with room for a value.
    unsafe { push_new(L, payload, kind, "buffer") }
}

const BUFFER: &CStr = c"synodic.buffer";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub(crate) enum Kind {
    U8 = 0,
    I64 = 1,
    F64 = 2,
}

impl Kind {
    pub(crate) fn from_byte(b: u8) -> Option<Kind> {
        [Kind::U8, Kind::I64, Kind::F64].into_iter().find(|k| *k as u8 == b)
    }

    fn width(self) -> usize {
        match self {
            Kind::U8 => 1,
            _ => 8,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::U8 => "u8",
            Kind::I64 => "i64",
            Kind::F64 => "f64",
        }
    }

    fn parse(name: &[u8]) -> Option<Kind> {
        [Kind::U8, Kind::I64, Kind::F64].into_iter().find(|k| k.name().as_bytes() == name)
    }
}

/// What a buffer userdata holds.
pub(crate) struct Buffer {
    pub payload: Payload,
    pub kind: Kind,
}

pub(crate) const FUNCTIONS: &[(&CStr, ffi::lua_CFunction)] = &[(c"new", new), (c"from", from), (c"fromtable", fromtable), (c"shares", shares)];

const METHODS: &[(&CStr, ffi::lua_CFunction)] = &[
    (c"get", get),
    (c"set", set),
    (c"kind", kind),
    (c"size", size),
    (c"view", view),
    (c"bytes", bytes),
    (c"fill", fill),
    (c"totable", totable),
];

crate::vm::lazy::lazy_module!(b"synodic.buffer");

/// Zeroed bytes for a new payload, or an error when there is no memory.
fn zeroed(bytes: usize, fname: &str) -> Result<Vec<u8>, String> {
    let mut v = try_vec(bytes).map_err(|e| format!("{fname}: {e}"))?;
    v.resize(bytes, 0);
    Ok(v)
}

/// The payload of `b`, to write: its own, or a copy of a shared one (copy
/// on write), or an error when there is no memory for the copy.
fn writable<'a>(b: &'a mut Buffer, fname: &str) -> Result<&'a mut Vec<u8>, String> {
    if Arc::get_mut(&mut b.payload).is_none() {
        // The same size as the shared bytes it replaces: counted already.
        let mut copy = zeroed(b.payload.len(), fname)?;
        copy.copy_from_slice(&b.payload);
        b.payload = Arc::new(copy.into());
    }
    Ok(Arc::get_mut(&mut b.payload).expect("not shared any more"))
}

/// Pushes a buffer over `payload`, counted against the process's memory
/// limit; an error (nothing pushed) when it does not fit.
pub(crate) unsafe fn push_new(L: *mut ffi::lua_State, payload: Payload, kind: Kind, fname: &str) -> Result<(), String> {
    if !crate::vm::heap::charge(L, payload.len() as i64) {
        return Err(format!("{fname}: not enough memory (over the process's memory limit)"));
    }
    // SAFETY: `L` is a process's state (lib.rs invariant 1), with a context
    // (borrowed for these two lines only).
    let c = unsafe { crate::vm::ctx::ctx(L) };
    c.payload_kib = c.payload_kib.saturating_add((payload.len() >> 10) as u32);
    // SAFETY: as above; the payload was counted just above. (A memory error
    // in `push` leaves it counted: see `push`.)
    unsafe { push(L, payload, kind) };
    Ok(())
}

/// Pushes a buffer over `payload` (already counted).
unsafe fn push(L: *mut ffi::lua_State, payload: Payload, kind: Kind) {
    // NOT KEPT: lib.rs invariant 2, `payload` is alive through the allocation,
    // and the buffer has no `__gc` until `set_class` sets the metatable: a
    // memory error in either leaks the payload (and its charge).
    // SAFETY: `L` is a process's state (lib.rs invariant 1). The userdata is
    // `size_of::<Buffer>()` bytes, aligned by Lua for any C type (enough for a
    // `Buffer`: a pointer and a byte), and written whole before anything reads
    // it; its metatable gives it `__gc`, which drops it.
    unsafe {
        let p = ffi::lua_newuserdatauv(L, std::mem::size_of::<Buffer>(), 0) as *mut Buffer;
        p.write(Buffer { payload, kind });
        let meta: &Functions = &[(c"__index", index), (c"__newindex", newindex), (c"__len", len), (c"__gc", gc), (c"__tostring", tostring)];
        set_class(L, BUFFER, meta, c"methods", METHODS);
    }
}

/// The buffer at `idx`, if it is one. The reference lives while the
/// userdata does and its `__gc` has not run; callers use it within the
/// native call that found it, the userdata on the stack.
pub(crate) unsafe fn to_buffer<'a>(L: *mut ffi::lua_State, idx: c_int) -> Option<&'a mut Buffer> {
    // NOT UPHELD: two calls on one userdata give two `&mut` to it at once
    // (`shares(b, b)` does).
    // SAFETY: `L` is a process's state (lib.rs invariant 1). A userdata with
    // the buffer metatable holds a `Buffer` written by `push`; `gc` takes the
    // metatable off when it drops it, so a dropped one is never found here.
    unsafe { (ffi::luaL_testudata(L, idx, BUFFER.as_ptr()) as *mut Buffer).as_mut() }
}

unsafe fn this<'a>(L: *mut ffi::lua_State, fname: &str) -> Result<&'a mut Buffer, String> {
    // SAFETY: `L` is the running state of a buffer method (lib.rs invariant
    // 1), `self` at 1; both calls read it.
    unsafe { to_buffer(L, 1) }.ok_or_else(|| format!("bad self to '{fname}' (buffer expected, got {})", unsafe { type_name(L, 1) }))
}

fn elements(b: &Buffer) -> usize {
    b.payload.len() / b.kind.width()
}

/// The byte offset of element `i` (1-based).
unsafe fn offset(L: *mut ffi::lua_State, b: &Buffer, idx: c_int) -> Result<usize, String> {
    let mut ok = 0;
    // SAFETY: `L` is the running state and `idx` an argument (lib.rs invariant 1).
    let i = unsafe { ffi::lua_tointegerx(L, idx, &mut ok) };
    let n = elements(b);
    if ok == 0 || i < 1 || i as u64 > n as u64 {
        // SAFETY: as above; the argument's bytes are copied into the message.
        return Err(format!("buffer index {} out of range (1..{n})", String::from_utf8_lossy(unsafe { to_bytes(L, idx) }.unwrap_or(b"?"))));
    }
    Ok((i as usize - 1) * b.kind.width())
}

unsafe fn push_element(L: *mut ffi::lua_State, b: &Buffer, at: usize) {
    let bytes = &b.payload[at..at + b.kind.width()];
    // SAFETY: `L` is the running state, with room for one value (the caller's).
    unsafe {
        match b.kind {
            Kind::U8 => ffi::lua_pushinteger(L, bytes[0] as ffi::lua_Integer),
            Kind::I64 => ffi::lua_pushinteger(L, i64::from_le_bytes(bytes.try_into().expect("8 bytes"))),
            Kind::F64 => ffi::lua_pushnumber(L, f64::from_le_bytes(bytes.try_into().expect("8 bytes"))),
        }
    }
}

/// The value at `idx` as the element bytes of `kind`.
unsafe fn element_bytes(L: *mut ffi::lua_State, kind: Kind, idx: c_int) -> Result<[u8; 8], String> {
    let mut ok = 0;
    let mut out = [0u8; 8];
    // SAFETY: `L` is the running state and `idx` a valid index (the
    // caller's); these calls read the value there, converting nothing on
    // the stack.
    unsafe {
        match kind {
            Kind::U8 => {
                let v = ffi::lua_tointegerx(L, idx, &mut ok);
                if ok == 0 || !(0..=255).contains(&v) {
                    return Err(format!("u8 buffer values are integers 0..255 (got {})", type_name(L, idx)));
                }
                out[0] = v as u8;
            }
            Kind::I64 => {
                let v = ffi::lua_tointegerx(L, idx, &mut ok);
                if ok == 0 {
                    return Err(format!("i64 buffer values are integers (got {})", type_name(L, idx)));
                }
                out = v.to_le_bytes();
            }
            Kind::F64 => {
                let v = ffi::lua_tonumberx(L, idx, &mut ok);
                if ok == 0 {
                    return Err(format!("f64 buffer values are numbers (got {})", type_name(L, idx)));
                }
                out = v.to_le_bytes();
            }
        }
    }
    Ok(out)
}

unsafe fn kind_arg(L: *mut ffi::lua_State, idx: c_int, default: Kind) -> Result<Kind, String> {
    // SAFETY: `L` is the running state and `idx` an argument (lib.rs
    // invariant 1); its bytes are compared while on the stack.
    unsafe {
        if ffi::lua_isnoneornil(L, idx) != 0 {
            return Ok(default);
        }
        to_bytes(L, idx).and_then(Kind::parse).ok_or_else(|| "buffer kind must be \"u8\", \"i64\" or \"f64\"".to_string())
    }
}

/// Returns `r`'s count, or raises its error. (A safe function over a raw
/// `L`: its callers are the native functions below, with their running state.)
fn done(L: *mut ffi::lua_State, r: Result<c_int, String>) -> c_int {
    match r {
        Ok(n) => n,
        // SAFETY: not checked here: every caller is a native function
        // passing its running state, in a frame that owns nothing but `r`,
        // consumed here; `raise` drops `e` before unwinding.
        Err(e) => unsafe { raise(L, e) },
    }
}

/// `buffer.new(n [, kind])`: n zeroed elements (kind "f64" by default).
///
/// The native functions below share one note: Lua calls them with its
/// running state `L` (lib.rs invariant 1), the buffer (for a method) at 1;
/// each does its work in a closure that returns a `Result`, its values
/// dropped before `done` may raise.
unsafe extern "C-unwind" fn new(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: see above; `bytes` moves into the new buffer's payload.
    let r = (|| unsafe {
        let mut ok = 0;
        let n = ffi::lua_tointegerx(L, 1, &mut ok);
        if ok == 0 || !(0..=1 << 34).contains(&n) {
            return Err(format!("bad argument #1 to 'new' (element count expected, got {})", type_name(L, 1)));
        }
        let kind = kind_arg(L, 2, Kind::F64)?;
        push_new(L, Arc::new(zeroed(n as usize * kind.width(), "new")?.into()), kind, "new")?;
        Ok(1)
    })();
    done(L, r)
}

/// `buffer.from(string)`: a u8 buffer holding the string's bytes.
unsafe extern "C-unwind" fn from(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: see `new`; the string at 1 is read only once checked, its
    // bytes copied while on the stack.
    let r = (|| unsafe {
        let Some(b) = (ffi::lua_type(L, 1) == ffi::LUA_TSTRING).then(|| to_bytes(L, 1)).flatten() else {
            return Err(format!("bad argument #1 to 'from' (string expected, got {})", type_name(L, 1)));
        };
        let mut bytes = zeroed(b.len(), "from")?;
        bytes.copy_from_slice(b);
        push_new(L, Arc::new(bytes.into()), Kind::U8, "from")?;
        Ok(1)
    })();
    done(L, r)
}

/// `buffer.fromtable(t [, kind])`: elements `t[1..#t]` (kind "f64" by default).
unsafe extern "C-unwind" fn fromtable(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: see `new`; the table at 1 is checked and read raw, each
    // element pushed and popped (raw reads raise nothing while `bytes` is
    // alive).
    let r = (|| unsafe {
        if ffi::lua_type(L, 1) != ffi::LUA_TTABLE {
            return Err(format!("bad argument #1 to 'fromtable' (table expected, got {})", type_name(L, 1)));
        }
        let kind = kind_arg(L, 2, Kind::F64)?;
        let n = ffi::lua_rawlen(L, 1);
        let w = kind.width();
        let mut bytes = zeroed(n.saturating_mul(w), "fromtable")?;
        for i in 0..n {
            ffi::lua_rawgeti(L, 1, i as ffi::lua_Integer + 1);
            let v = element_bytes(L, kind, -1);
            ffi::lua_settop(L, -2);
            bytes[i * w..(i + 1) * w].copy_from_slice(&v.map_err(|e| format!("fromtable: element {}: {e}", i + 1))?[..w]);
        }
        push_new(L, Arc::new(bytes.into()), kind, "fromtable")?;
        Ok(1)
    })();
    done(L, r)
}

/// `buffer.shares(a, b)`: whether two buffers share one payload (nothing was copied).
unsafe extern "C-unwind" fn shares(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: see `new`. NOT UPHELD: `shares(b, b)` holds two `&mut` to
    // one userdata at once (only read here).
    unsafe {
        let same = match (to_buffer(L, 1), to_buffer(L, 2)) {
            (Some(a), Some(b)) => Arc::ptr_eq(&a.payload, &b.payload),
            _ => false,
        };
        ffi::lua_pushboolean(L, same as c_int);
    }
    1
}

unsafe extern "C-unwind" fn index(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls `__index` with the buffer at 1 and the key at 2
    // (lib.rs invariant 1); a buffer's metatable (at -1 once got) holds the
    // `methods` table, read raw.
    unsafe {
        if ffi::lua_type(L, 2) == ffi::LUA_TNUMBER {
            return get(L);
        }
        ffi::lua_getmetatable(L, 1);
        ffi::lua_getfield(L, -1, c"methods".as_ptr());
        ffi::lua_pushvalue(L, 2);
        ffi::lua_rawget(L, -2);
    }
    1
}

unsafe extern "C-unwind" fn newindex(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls `__newindex` with the buffer, key and value at
    // 1..3, as `set` takes them.
    unsafe { set(L) }
}

unsafe extern "C-unwind" fn get(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: see `new`.
    let r = (|| unsafe {
        let b = this(L, "get")?;
        let at = offset(L, b, 2)?;
        push_element(L, b, at);
        Ok(1)
    })();
    done(L, r)
}

unsafe extern "C-unwind" fn set(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: see `new`.
    let r = (|| unsafe {
        let b = this(L, "set")?;
        let at = offset(L, b, 2)?;
        let v = element_bytes(L, b.kind, 3)?;
        let w = b.kind.width();
        writable(b, "set")?[at..at + w].copy_from_slice(&v[..w]);
        Ok(0)
    })();
    done(L, r)
}

unsafe extern "C-unwind" fn fill(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: see `new`.
    let r = (|| unsafe {
        let b = this(L, "fill")?;
        let v = element_bytes(L, b.kind, 2)?;
        let w = b.kind.width();
        for chunk in writable(b, "fill")?.chunks_exact_mut(w) {
            chunk.copy_from_slice(&v[..w]);
        }
        Ok(0)
    })();
    done(L, r)
}

unsafe extern "C-unwind" fn len(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: see `new`.
    unsafe {
        let n = to_buffer(L, 1).map_or(0, |b| elements(b));
        ffi::lua_pushinteger(L, n as ffi::lua_Integer);
    }
    1
}

unsafe extern "C-unwind" fn kind(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: see `new`.
    let r = unsafe { this(L, "kind") }.map(|b| {
        // SAFETY: see `new`; the name is static.
        unsafe { push_bytes(L, b.kind.name().as_bytes()) };
        1
    });
    done(L, r)
}

unsafe extern "C-unwind" fn size(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: see `new`.
    let r = unsafe { this(L, "size") }.map(|b| {
        // SAFETY: see `new`.
        unsafe { ffi::lua_pushinteger(L, b.payload.len() as ffi::lua_Integer) };
        1
    });
    done(L, r)
}

/// `b:view(kind)`: the same bytes seen as other elements (shared until either is written).
unsafe extern "C-unwind" fn view(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: see `new`; the payload's clone moves into the new buffer.
    let r = (|| unsafe {
        let b = this(L, "view")?;
        let kind = kind_arg(L, 2, b.kind)?;
        if b.payload.len() % kind.width() != 0 {
            return Err(format!("view: {} bytes do not make whole {} elements", b.payload.len(), kind.name()));
        }
        let payload = b.payload.clone();
        push_new(L, payload, kind, "view")?;
        Ok(1)
    })();
    done(L, r)
}

unsafe extern "C-unwind" fn bytes(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: see `new`.
    let r = unsafe { this(L, "bytes") }.map(|b| {
        // SAFETY: see `new`; Lua copies the payload's bytes.
        unsafe { push_bytes(L, &b.payload) };
        1
    });
    done(L, r)
}

unsafe extern "C-unwind" fn totable(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: see `new`.
    let r = unsafe { this(L, "totable") }.map(|b| {
        // SAFETY: see `new`; the list is at -2 while each element, pushed
        // on top, is stored in it.
        unsafe {
            let n = elements(b);
            ffi::lua_createtable(L, n as c_int, 0);
            for i in 0..n {
                push_element(L, b, i * b.kind.width());
                ffi::lua_rawseti(L, -2, i as ffi::lua_Integer + 1);
            }
        }
        1
    });
    done(L, r)
}

unsafe extern "C-unwind" fn tostring(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: see `new`. NOT KEPT: lib.rs invariant 2, a memory error while
    // pushing would unwind over `s` (in practice a leak).
    unsafe {
        let s = to_buffer(L, 1).map_or_else(String::new, |b| format!("buffer: {} {} ({} bytes)", elements(b), b.kind.name(), b.payload.len()));
        push_bytes(L, s.as_bytes());
    }
    1
}

unsafe extern "C-unwind" fn gc(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls `__gc` with the userdata at 1 (lib.rs invariant 1);
    // a buffer found is dropped once: the metatable is taken off right
    // after, so a resurrected one is found no more.
    unsafe {
        if let Some(b) = to_buffer(L, 1) {
            crate::vm::heap::charge(L, -(b.payload.len() as i64));
            std::ptr::drop_in_place(b as *mut Buffer);
            // Disarm: a resurrected userdata must not drop twice.
            ffi::lua_pushnil(L);
            ffi::lua_setmetatable(L, 1);
        }
    }
    0
}

// The C API for modules (`include/synodic.h`). None of these raises: a
// longjmp must not cross their Rust frames. (NOT UPHELD for
// `synodic_buffer_new`: making the userdata and its metatable may raise a
// memory error, see `push`.)

/// `synodic_buffer_bytes`: the bytes of the buffer at `idx`, to read.
#[no_mangle]
pub unsafe extern "C" fn synodic_buffer_bytes(L: *mut ffi::lua_State, idx: c_int, len: *mut usize) -> *const u8 {
    // SAFETY: the C caller passes the state it runs in (a process's) and a
    // valid index (`include/synodic.h`).
    let Some(b) = (unsafe { to_buffer(L, idx) }) else { return std::ptr::null() };
    if !len.is_null() {
        // SAFETY: a non-null `len` points at a `size_t` of the caller's.
        unsafe { *len = b.payload.len() };
    }
    b.payload.as_ptr()
}

/// `synodic_buffer_bytes_mut`: the bytes of the buffer at `idx`, to write
/// (copied first if they are shared).
#[no_mangle]
pub unsafe extern "C" fn synodic_buffer_bytes_mut(L: *mut ffi::lua_State, idx: c_int, len: *mut usize) -> *mut u8 {
    // SAFETY: as in `synodic_buffer_bytes`.
    let Some(b) = (unsafe { to_buffer(L, idx) }) else { return std::ptr::null_mut() };
    let Ok(bytes) = writable(b, "synodic_buffer_bytes_mut") else { return std::ptr::null_mut() };
    if !len.is_null() {
        // SAFETY: a non-null `len` points at a `size_t` of the caller's.
        unsafe { *len = bytes.len() };
    }
    bytes.as_mut_ptr()
}

/// `synodic_buffer_new`: pushes a new buffer of `len` zeroed bytes.
#[no_mangle]
pub unsafe extern "C" fn synodic_buffer_new(L: *mut ffi::lua_State, len: usize) -> *mut u8 {
    let Ok(bytes) = zeroed(len, "synodic_buffer_new") else { return std::ptr::null_mut() };
    // SAFETY: the C caller passes the state it runs in (a process's), with
    // room for a value. NOT KEPT: this may raise a memory error (see the
    // note above `synodic_buffer_bytes`).
    if unsafe { push_new(L, Arc::new(bytes.into()), Kind::U8, "synodic_buffer_new") }.is_err() {
        return std::ptr::null_mut();
    }
    // SAFETY: as above; the new buffer is on top.
    unsafe { synodic_buffer_bytes_mut(L, -1, std::ptr::null_mut()) }
}
