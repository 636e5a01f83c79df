//! Decoding: reads the wire format into fresh values on the receiver's
//! stack, joining shared references and upvalues again; junk is an error,
//! never a Lua error, and leaves the stack as it found it.

use std::ffi::{c_int, c_void};

use mlua_sys as ffi;
use synodic_core::wire::{Reader, Tag, MAX_DEPTH};
use synodic_core::Attachment;

use crate::vm::util::{push_bytes, to_bytes};
use crate::Error;

use super::*;

pub(super) struct Decoder<'a> {
    pub(super) L: *mut ffi::lua_State,
    pub(super) r: Reader<'a>,
    pub(super) attachments: &'a [Attachment],
    /// Stack top when decoding started.
    pub(super) base: c_int,
    /// Stack slot of the table {id = object}: 0 until a table or function
    /// appears, then just above `base` (inserted below the values so far).
    pub(super) refs: c_int,
    pub(super) next_ref: i64,
    /// The first id `refs` holds: objects numbered before it are not held
    /// (a template's leading values, see `decode_after_prefix`; or all of
    /// them while `keep_prefix` tries without).
    pub(super) first_ref: i64,
    /// A reference to one of those was met.
    pub(super) needs_leading: bool,
    pub(super) depth: usize,
    /// Decoding outside any process (building a template): only modules
    /// whose loading needs none may be named.
    pub(super) outside: bool,
    pub(super) functions: Functions<'a>,
}


/// Every `unsafe` method below has one contract: `self.L` is the state
/// being decoded into (a process's, or a template build's), `self.base` at
/// or below its top. The decoder checks the stack for room before each
/// value and level, and owns nothing while it calls the API: a memory
/// error unwinds only over borrows. The notes on its blocks say "the
/// contract" for that.
impl<'a> Decoder<'a> {
    pub(super) fn new(L: *mut ffi::lua_State, r: Reader<'a>, attachments: &'a [Attachment], base: c_int) -> Decoder<'a> {
        Decoder { L, r, attachments, base, refs: 0, next_ref: 0, first_ref: 0, needs_leading: false, depth: 0, outside: false, functions: Functions::Load }
    }

    /// Pushes the next `count` values, which must end the reader's bytes.
    pub(super) unsafe fn values(&mut self, count: usize) -> Result<(), Error> {
        // SAFETY: the contract; `lua_checkstack` reports failure, never raises.
        if unsafe { ffi::lua_checkstack(self.L, count as c_int + 8) } == 0 {
            return Err(Error::Decode(format!("too many values ({count})")));
        }
        for _ in 0..count {
            // SAFETY: the contract; room for every value was made above.
            unsafe { self.value()? };
        }
        Ok(self.r.finish()?)
    }

    /// Removes the reference table, if one was made: the values alone stay.
    pub(super) unsafe fn drop_refs(&mut self) {
        if self.refs != 0 {
            // SAFETY: the contract; `refs` is the slot of the reference
            // table, moved to the top and popped.
            unsafe {
                ffi::lua_rotate(self.L, self.refs, -1);
                ffi::lua_settop(self.L, -2);
            }
            self.refs = 0;
        }
    }

    /// Pushes the values of a reader of bare fields, to its end.
    pub(super) unsafe fn fields(&mut self) -> Result<(), Error> {
        while self.r.remaining() > 0 {
            // SAFETY: the contract; room is made before each value.
            unsafe {
                if ffi::lua_checkstack(self.L, 8) == 0 {
                    return Err(junk("stack overflow"));
                }
                self.value()?;
            }
        }
        Ok(())
    }

    /// Pushes one value.
    pub(super) unsafe fn value(&mut self) -> Result<(), Error> {
        let L = self.L;
        let tag = self.r.tag()?;
        // SAFETY: the contract (room for the value was made by the caller).
        if unsafe { read_plain(L, &mut self.r, tag)? } {
            return Ok(());
        }
        match tag {
            Tag::Nil | Tag::False | Tag::True | Tag::Int | Tag::Float | Tag::Str | Tag::Pid => unreachable!("plain values are read above"),
            Tag::Globals => {
                // SAFETY: the contract; the registry holds the globals.
                unsafe { ffi::lua_rawgeti(L, ffi::LUA_REGISTRYINDEX, ffi::LUA_RIDX_GLOBALS) };
            }
            Tag::Ref => {
                let id = self.r.varint()?;
                self.needs_leading |= id < self.first_ref as u64;
                if self.refs == 0 || id < self.first_ref as u64 || id >= self.next_ref as u64 {
                    return Err(Error::Wire(synodic_core::wire::WireError::BadRef(id)));
                }
                // SAFETY: the contract; `refs` is the slot of the reference
                // table, and `id` was checked to be one it holds.
                unsafe { ffi::lua_rawgeti(L, self.refs, id as i64 + 1) };
            }
            // SAFETY: the contract (this arm and the next two).
            Tag::Table => unsafe { self.table()? },
            Tag::Function => unsafe { self.function()? },
            Tag::Library => unsafe { self.library()? },
            Tag::SharedUpvalue => return Err(junk("shared upvalue outside a function")),
            Tag::Shared => {
                let kind = self.r.byte_value()?;
                let variant = self.r.byte_value()?;
                let index = self.r.varint()?;
                let sendable = crate::vm::module::sendable().iter().find(|s| s.kind == kind).ok_or_else(|| junk(format!("unknown kind of shared value {kind}")))?;
                let shared = self.attachments.get(index as usize).ok_or_else(|| junk("shared value without its attachment"))?;
                // SAFETY: the contract; `shared` is an attachment of this message.
                unsafe { (sendable.rebuild)(L, variant, shared).map_err(junk)? };
            }
        }
        Ok(())
    }

    /// Enters a table or function: checks depth and makes room for its parts.
    pub(super) unsafe fn enter(&mut self) -> Result<(), Error> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Error::Wire(synodic_core::wire::WireError::TooDeep));
        }
        // SAFETY: the contract; `lua_checkstack` reports failure, never raises.
        if unsafe { ffi::lua_checkstack(self.L, 8) } == 0 {
            return Err(junk("stack overflow"));
        }
        Ok(())
    }

    /// Records the object on top of the stack under the next reference id.
    pub(super) unsafe fn remember(&mut self) {
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
            // SAFETY: the contract; `base + 1` is at or below the top (the
            // object is above it), so the rotation stays in the stack.
            unsafe {
                ffi::lua_createtable(L, 4, 0);
                self.refs = self.base + 1;
                ffi::lua_rotate(L, self.refs, 1);
            }
        }
        // SAFETY: the contract; a copy of the object on top goes into the
        // reference table at `refs`.
        unsafe {
            ffi::lua_pushvalue(L, -1);
            ffi::lua_rawseti(L, self.refs, id + 1);
        }
    }

    pub(super) unsafe fn table(&mut self) -> Result<(), Error> {
        let L = self.L;
        // SAFETY: the contract.
        unsafe { self.enter()? };
        let narr = self.r.varint()?;
        let nhash = self.r.u32()? as u64;
        if narr.saturating_add(nhash) > self.r.remaining() as u64 {
            return Err(junk("table larger than its message"));
        }
        // SAFETY: the contract; sizes are bounded by the bytes left (checked
        // above), and the new table is at `t` while its fields, each value
        // pushed above it (room made by `enter`), are set raw.
        unsafe {
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
        }
        self.depth -= 1;
        Ok(())
    }

    pub(super) unsafe fn function(&mut self) -> Result<(), Error> {
        let L = self.L;
        // SAFETY: the contract.
        unsafe { self.enter()? };
        let len = self.r.u32()? as usize;
        if len > self.r.remaining() {
            return Err(junk("function code runs past the message"));
        }
        let start = self.r.position();
        let code = self.r.bytes_raw(len)?;
        // SAFETY: the contract (`enter` made room for the function).
        let shared = matches!(self.functions, Functions::Share(shared) if unsafe { shared.push(L, code) });
        if !shared {
            if let Functions::LoadAndNote(noted) = self.functions {
                noted.borrow_mut().push(code.into());
            }
            // SAFETY: the contract.
            unsafe { load_function(L, code, start)? };
        }
        // SAFETY: the contract; the loaded function is on top, at `f`.
        let f = unsafe {
            self.remember();
            ffi::lua_gettop(L)
        };
        let nups = self.r.varint()?;
        for n in 1..=nups {
            // SAFETY: the contract; upvalue `n` of the function at `f` is
            // checked to exist before it is set or joined: a shared one to
            // upvalue `m` (checked to exist) of a Lua function the reference
            // table holds; anything pushed for a check is popped.
            unsafe {
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
        }
        self.depth -= 1;
        Ok(())
    }

    pub(super) unsafe fn library(&mut self) -> Result<(), Error> {
        let L = self.L;
        let module = self.r.bytes()?;
        let field = self.r.bytes()?;
        // SAFETY: the contract.
        if unsafe { crate::vm::shared::push_frozen_field(L, module, field) } {
            return Ok(());
        }
        if self.outside && !crate::vm::template::loads_outside_a_process(module) {
            return Err(junk(format!("module '{}' is loaded in a process only", String::from_utf8_lossy(module))));
        }
        // SAFETY: the contract; `push_module` runs `require` protected.
        unsafe { crate::vm::state::push_module(L, module) }.map_err(|e| junk(format!("module '{}': {e}", String::from_utf8_lossy(module))))?;
        if !field.is_empty() {
            // Not a raw get (library tables fill themselves on first use),
            // but protected: a module's own __index may raise.
            // SAFETY: the contract; `index_field` gets the module (under
            // it) and the field name as its two arguments.
            unsafe {
                ffi::lua_pushcfunction(L, index_field);
                ffi::lua_rotate(L, -2, 1);
                push_bytes(L, field);
                if crate::vm::util::protected(L, 2, 1).is_err() {
                    let why = crate::vm::util::pop_error(L);
                    return Err(junk(format!("library field {}.{}: {why}", String::from_utf8_lossy(module), String::from_utf8_lossy(field))));
                }
            }
        }
        Ok(())
    }
}

/// `t[k]` with metamethods, for a protected call.
unsafe extern "C-unwind" fn index_field(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: called (protected) by `Decoder::library` with the table at 1
    // and the key at 2, on top.
    unsafe { ffi::lua_gettable(L, 1) };
    1
}

/// Loads the function whose bytecode `code` begins at byte `start` of its
/// message, leaving it on top.
///
/// # Safety
/// `L` is a process's state (or a template's build) with room for a value.
unsafe fn load_function(L: *mut ffi::lua_State, code: &[u8], start: usize) -> Result<(), Error> {
    let mut chunk = Some(code);
    // A real chunk needs no block much larger than itself (16 bytes per byte covers constants).
    let previous_cap = crate::vm::heap::of_state(L).map(|h| h.limit_blocks(16 * code.len() + 4096));
    // SAFETY: the contract; `lua_load` is protected (it returns a status,
    // never raises), and `chunk_reader` is given `chunk`, alive (and not
    // otherwise used) through the call; mode "b" takes binary code only.
    let status = unsafe { ffi::lua_load(L, chunk_reader, (&mut chunk as *mut Option<&[u8]>).cast(), c"=message".as_ptr(), c"b".as_ptr()) };
    if let (Some(h), Some(cap)) = (crate::vm::heap::of_state(L), previous_cap) {
        h.limit_blocks(cap);
    }
    if status != ffi::LUA_OK {
        // SAFETY: the contract; the load's error message is on top,
        // copied, then popped.
        let why = unsafe {
            let why = to_bytes(L, -1).map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or_default();
            ffi::lua_settop(L, -2);
            why
        };
        return Err(junk(format!("bad function code at byte {start}: {why}")));
    }
    Ok(())
}

unsafe extern "C-unwind" fn chunk_reader(_L: *mut ffi::lua_State, ud: *mut c_void, size: *mut usize) -> *const std::ffi::c_char {
    // SAFETY: `lua_load` passes back the user data `load_function` gave
    // it, its `chunk`, alive through the load; `size` is Lua's to write.
    // The bytes returned live in the message, which outlives the load.
    unsafe {
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
}

