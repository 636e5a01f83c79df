//! The code a prefix template's copies share. A spawn's leading values
//! (`prefix`) often hold Lua functions: an entity's `init` and methods.
//! Decoded into the template, each copy held their prototypes (bytecode,
//! constants, debug information): for the three small functions of
//! `bench/entities`, 528 of the 4,736 bytes an entity's state was copied
//! from, and 1.2 of the 7.4 KB it held resident. Here they are loaded
//! once, into a state of their own that shares the node's strings, frozen
//! as the node's shared code is (`csrc/code.c`), and the template holds
//! closures over them.
//!
//! Building a template with shared code, step by step (`prefix::build`):
//!
//! 1. a dry run decodes the leading values once, noting the bytecode of
//!    every function met (`codec::Functions::LoadAndNote`);
//! 2. the functions are loaded into a new code state, which is frozen and
//!    kept for good, as the template is ([`load`]);
//! 3. each build of the template looks its strings up in the code state's
//!    table before making its own ([`Code::enter`]), and its decoding takes
//!    a closure over the loaded prototype for each function
//!    (`codec::Functions::Share`, [`Code::push`]);
//! 4. a build with a string of its own that the code state also holds
//!    gets no template ([`apart`]: that string would have two addresses in
//!    a copy).
//!
//! A copy looks its strings up there too (the table's pointer is in the
//! image), so a string it makes at run time is the prototype's constant.

use std::collections::HashMap;
use std::ffi::{c_int, c_void};

use mlua_sys as ffi;
use synodic_core::hash::FastBuild;

extern "C" {
    fn synodic_code_strings(L: *mut ffi::lua_State) -> *const c_void;
    fn synodic_use_code_strings(L: *mut ffi::lua_State, strings: *const c_void);
    fn synodic_code_strings_apart(L: *mut ffi::lua_State) -> c_int;
    fn synodic_freeze_loaded(L: *mut ffi::lua_State);
}

/// Functions loaded and frozen in a code state of their own.
pub(crate) struct Code {
    /// Bytecode, as a message carries it -> its frozen prototype.
    protos: HashMap<Box<[u8]>, usize, FastBuild>,
    /// The code state's string table (`SharedStrings`, kept for good).
    strings: *const c_void,
}

// SAFETY: a `Code` is read, never written, once loaded; its prototypes and
// strings are frozen (nothing writes them) and live for good.
unsafe impl Send for Code {}
unsafe impl Sync for Code {}

/// Step 2: the functions of `bytecode` loaded and frozen in a new code
/// state, kept for good; None when one does not load (or no memory).
pub(crate) fn load(bytecode: Vec<Box<[u8]>>) -> Option<&'static Code> {
    let L = crate::vm::loader::stopped_state();
    if L.is_null() {
        return None;
    }
    let mut protos = HashMap::default();
    // The state is never closed: a failed load leaves it, with what it
    // made, unused.
    // SAFETY: `L` is a new state of this thread, at rest, its collector
    // stopped, so what the loads make stays where it is. Each function
    // loaded stays on its stack (room checked) until the state is frozen,
    // after which it never runs again.
    unsafe {
        for code in bytecode {
            if protos.contains_key(&code) {
                continue;
            }
            if ffi::lua_checkstack(L, 1) == 0 || ffi::luaL_loadbufferx(L, code.as_ptr().cast(), code.len(), c"=message".as_ptr(), c"b".as_ptr()) != ffi::LUA_OK {
                return None;
            }
            let proto = crate::vm::shared::synodic_proto_of(L, -1) as usize;
            protos.insert(code, proto);
        }
        synodic_freeze_loaded(L);
        let strings = synodic_code_strings(L);
        (!strings.is_null()).then(|| &*Box::leak(Box::new(Code { protos, strings })))
    }
}

impl Code {
    /// Step 3: makes `L`, a template's build state, look its strings up
    /// among this code's from now on (a string it made before that the
    /// code holds too is found by [`apart`]).
    ///
    /// # Safety
    /// `L` is a live state at rest on this thread, made after the node's
    /// shared strings were published (so both hash with the same seed).
    pub(crate) unsafe fn enter(&self, L: *mut ffi::lua_State) {
        // SAFETY: the contract; `strings` is a code state's table, kept for good.
        unsafe { synodic_use_code_strings(L, self.strings) };
    }

    /// Step 3, for the decoder: pushes a closure over this code's prototype
    /// of `bytecode` (true), or nothing if it has none. Its upvalues are
    /// fresh, the first holding the globals (as `lua_load` leaves them);
    /// the decoder sets them.
    ///
    /// # Safety
    /// `L` is a state with room for one value.
    pub(crate) unsafe fn push(&self, L: *mut ffi::lua_State, bytecode: &[u8]) -> bool {
        let Some(proto) = self.protos.get(bytecode) else { return false };
        // SAFETY: the contract; `proto` is a frozen prototype, kept for good.
        unsafe { crate::vm::shared::synodic_push_shared(L, *proto as *const c_void) };
        true
    }
}

/// Step 4: whether `L` (a build state that entered its code) holds no
/// string of its own that its code holds too.
///
/// # Safety
/// As [`Code::enter`]'s.
pub(crate) unsafe fn apart(L: *mut ffi::lua_State) -> bool {
    // SAFETY: the contract; the walk only reads both tables.
    unsafe { synodic_code_strings_apart(L) != 0 }
}
