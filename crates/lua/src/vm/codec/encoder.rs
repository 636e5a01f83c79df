//! Encoding: walks the values on the sender's stack into the wire format,
//! numbering tables and functions as it meets them; a value that cannot
//! cross fails with its path (`(at [2].conn)`).

use std::collections::HashMap;
use std::ffi::{c_int, c_void, CStr};

use mlua_sys as ffi;
use synodic_core::wire::{Tag, Writer, MAX_DEPTH};
use synodic_core::hash::FastBuild;
use synodic_core::Attachment;

use crate::vm::peek::{peek, Object};
use crate::vm::util::{to_bytes, type_name};
use crate::Error;

use super::names::{function_name, library_name, module_name, Name};
use super::*;

/// One step of the path to an unsendable value.
pub(super) enum Segment {
    Index(i64),
    Field(String),
    Key,
    Upvalue(String),
}

pub(super) struct Failure {
    pub(super) kind: Option<String>,
    /// A failure of the writer itself (a message too large).
    pub(super) wire: Option<synodic_core::wire::WireError>,
    pub(super) path: Vec<Segment>,
}

impl Failure {
    pub(super) fn unsendable(kind: impl Into<String>) -> Failure {
        Failure { kind: Some(kind.into()), wire: None, path: Vec::new() }
    }

    pub(super) fn too_deep() -> Failure {
        Failure { kind: None, wire: None, path: Vec::new() }
    }

    pub(super) fn wire(e: synodic_core::wire::WireError) -> Failure {
        Failure { kind: None, wire: Some(e), path: Vec::new() }
    }

    pub(super) fn under(mut self, seg: Segment) -> Failure {
        self.path.push(seg);
        self
    }

    pub(super) fn into_error(self) -> Error {
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

pub(super) struct Encoder {
    pub(super) L: *mut ffi::lua_State,
    pub(super) w: Writer,
    /// Tables and Lua functions by address: their reference ids.
    pub(super) ids: Known<u32>,
    /// Upvalue cells by address: the id of the function first met with
    /// each, and its number there.
    pub(super) upvalues: Known<(u32, u32)>,
    /// The tables and Lua functions sent by name (what a spawn's memo
    /// needs to know of them).
    pub(super) named: Vec<*const c_void>,
    pub(super) attachments: Vec<Attachment>,
    pub(super) depth: usize,
}



/// What the encoder has met, by address: in a map, but for the objects of
/// leading values written from a spawn's memo (`memo`), which a list holds
/// (a few, seldom looked for: filling a map with them cost a tenth of what
/// the memo saved).
#[derive(Default)]
pub(super) struct Known<V> {
    pub(super) map: HashMap<*const c_void, V, FastBuild>,
    pub(super) leading: Vec<(*const c_void, V)>,
}

impl<V: Copy> Known<V> {
    pub(super) fn get(&self, p: *const c_void) -> Option<V> {
        match self.map.get(&p) {
            Some(&v) => Some(v),
            None if self.leading.is_empty() => None,
            None => self.leading.iter().find(|&&(q, _)| q == p).map(|&(_, v)| v),
        }
    }

    pub(super) fn insert(&mut self, p: *const c_void, v: V) {
        self.map.insert(p, v);
    }

    pub(super) fn len(&self) -> usize {
        self.map.len() + self.leading.len()
    }

    pub(super) fn clear(&mut self) {
        self.map.clear();
        self.leading.clear();
    }
}

/// Every method below is `unsafe` with one contract: `self.L` is a
/// process's state (lib.rs invariant 1) and `idx` an absolute stack index
/// of a value; the encoder keeps room on the stack for what it pushes
/// (`enter`). The notes on its blocks say "the contract" for that.
impl Encoder {
    /// Writes the value at the absolute stack index `idx`.
    pub(super) unsafe fn value(&mut self, idx: c_int) -> Result<(), Failure> {
        let L = self.L;
        // SAFETY: the contract; a string's bytes are copied while on the stack.
        if write_plain(&mut self.w, unsafe { peek(L, idx) }) {
            return Ok(());
        }
        // SAFETY: the contract.
        match unsafe { crate::vm::peek::object(L, idx) } {
            // SAFETY: the contract; `p` is the table's address.
            Object::Table(p) => return unsafe { self.table(idx, p) },
            Object::Globals => {
                self.w.tag(Tag::Globals);
                return Ok(());
            }
            // SAFETY: the contract; `p` is the function's address.
            Object::LuaFunction(p) => return unsafe { self.lua_function(idx, p) },
            // SAFETY: the contract.
            Object::CFunction => return unsafe { self.c_function(idx) },
            Object::Other => {}
        }
        // SAFETY: the contract.
        match unsafe { ffi::lua_type(L, idx) } {
            ffi::LUA_TLIGHTUSERDATA => return Err(Failure::unsendable("light userdata")),
            ffi::LUA_TUSERDATA => {
                // SAFETY: the contract; each kind's `share` checks the
                // userdata at `idx` is its own (by metatable) before reading it.
                let Some((kind, variant, shared)) = crate::vm::module::sendable().iter().find_map(|s| unsafe { (s.share)(L, idx) }.map(|(v, a)| (s.kind, v, a))) else {
                    // SAFETY: the contract.
                    return Err(Failure::unsendable(unsafe { type_name(L, idx) }));
                };
                // What it shares goes beside the bytes, not copied.
                self.w.tag(Tag::Shared);
                self.w.byte(kind);
                self.w.byte(variant);
                self.w.varint(self.attachments.len() as u64);
                self.attachments.push(shared);
            }
            // SAFETY: the contract.
            _ => return Err(Failure::unsendable(unsafe { type_name(L, idx) })),
        }
        Ok(())
    }

    /// Writes a reference if the object was seen; otherwise gives it the next id.
    pub(super) fn seen(&mut self, p: *const c_void) -> bool {
        if let Some(id) = self.ids.get(p) {
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
    pub(super) unsafe fn enter(&mut self) -> Result<(), Failure> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Failure::too_deep());
        }
        // SAFETY: the contract; `lua_checkstack` reports failure, never raises.
        if unsafe { ffi::lua_checkstack(self.L, LEVEL_SLOTS) } == 0 {
            return Err(Failure::unsendable("value (not enough memory for the Lua stack)"));
        }
        Ok(())
    }

    /// Writes the table at `idx`, whose address is `p` (not the globals).
    pub(super) unsafe fn table(&mut self, idx: c_int, p: *const c_void) -> Result<(), Failure> {
        let L = self.L;
        // SAFETY: the contract; `idx` holds the table whose address is `p`.
        if let Some(name) = unsafe { module_name(L, idx, p) } {
            self.library(&name);
            self.named.push(p);
            return Ok(());
        }
        if self.seen(p) {
            return Ok(());
        }
        // SAFETY: the contract.
        unsafe { self.enter()? };
        // SAFETY: the contract; `idx` holds a table.
        let narr = unsafe { ffi::lua_rawlen(L, idx) } as i64;
        self.w.tag(Tag::Table);
        self.w.varint(narr as u64);
        let count_at = self.w.placeholder_u32();
        for i in 1..=narr {
            // SAFETY: the contract; `enter` made room for the element pushed,
            // popped after it is written (or left for the caller to cut, on
            // failure).
            unsafe {
                ffi::lua_rawgeti(L, idx, i);
                self.value(ffi::lua_gettop(L)).map_err(|e| e.under(Segment::Index(i)))?;
                ffi::lua_settop(L, -2);
            }
        }
        let mut nhash: u32 = 0;
        // SAFETY: the contract; a raw walk of the table at `idx`: the key at
        // `key`, the value above it, cut back to the key for `lua_next`.
        // Only an integer key is read as a number (`lua_tointegerx` on a
        // string key would convert it, and break the walk).
        unsafe {
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
        }
        self.w.patch_u32(count_at, nhash);
        self.depth -= 1;
        Ok(())
    }

    /// Writes a reference to a module, or to a module's function.
    pub(super) fn library(&mut self, name: &Name) {
        let (module, field) = name.parts();
        self.w.tag(Tag::Library);
        self.w.bytes(module);
        self.w.bytes(field);
    }

    /// Writes the C function at `idx`: by name, or not at all.
    pub(super) unsafe fn c_function(&mut self, idx: c_int) -> Result<(), Failure> {
        // SAFETY: the contract; `idx` holds a C function.
        match unsafe { function_name(self.L, idx) } {
            Some(name) => {
                self.library(&name);
                Ok(())
            }
            None => Err(Failure::unsendable("function (a C function that is not part of a loaded library)")),
        }
    }

    /// Writes the Lua function at `idx`, whose address is `p`.
    pub(super) unsafe fn lua_function(&mut self, idx: c_int, p: *const c_void) -> Result<(), Failure> {
        let L = self.L;
        // SAFETY: `p` is the address of the Lua closure at `idx`.
        if let Some((module, field)) = unsafe { crate::vm::shared::frozen_name(p) } {
            self.library(&Name::Parts(module, field));
            self.named.push(p);
            return Ok(());
        }
        // SAFETY: the contract.
        if unsafe { crate::vm::shared::is_shared_function(L, idx) } {
            // SAFETY: the contract.
            if let Some(name) = unsafe { library_name(L, idx, &FUNCTION_NAMES, true) } {
                self.library(&Name::Joined(name));
                self.named.push(p);
                return Ok(());
            }
        }
        if self.seen(p) {
            return Ok(());
        }
        let id = self.ids.len() as u32 - 1; // just numbered by `seen`
        // SAFETY: the contract.
        unsafe { self.enter()? };
        self.w.tag(Tag::Function);
        let at = self.w.placeholder_u32();
        let start = self.w.len();
        // SAFETY: the contract; `L` is a process state with a Lua function
        // at `idx`, as `dump` asks.
        if !unsafe { crate::vm::dumps::dump(L, idx, self.w.buffer()) } {
            return Err(Failure::wire(synodic_core::wire::WireError::TooLarge));
        }
        let len = (self.w.len() - start) as u32;
        self.w.patch_u32(at, len);
        // SAFETY: the contract.
        let nups = unsafe { crate::vm::peek::upvalue_count(L, idx) };
        self.w.varint(nups as u64);
        for n in 1..=nups {
            // SAFETY: the contract; `n` is one of the function's `nups`
            // upvalues. Its value is pushed (room made by `enter`); its name
            // is NUL-terminated and lives with the function, copied here.
            unsafe {
                let cell = ffi::lua_upvalueid(L, idx, n).cast_const();
                if let Some((owner, m)) = self.upvalues.get(cell) {
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
        }
        self.depth -= 1;
        Ok(())
    }
}

/// The path segment of the table key at `key`.
///
/// # Safety
/// As the encoder's methods': `key` an absolute index of a key.
unsafe fn key_segment(L: *mut ffi::lua_State, key: c_int) -> Segment {
    // SAFETY: the contract; a string key is read as it is (no conversion),
    // copied while on the stack.
    unsafe {
        match ffi::lua_type(L, key) {
            ffi::LUA_TNUMBER if ffi::lua_isinteger(L, key) != 0 => Segment::Index(ffi::lua_tointegerx(L, key, std::ptr::null_mut())),
            ffi::LUA_TSTRING => Segment::Field(String::from_utf8_lossy(to_bytes(L, key).unwrap_or_default()).into_owned()),
            _ => Segment::Field(format!("<{} key>", type_name(L, key))),
        }
    }
}
