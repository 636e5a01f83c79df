//! The bytecode of the Lua functions a process has sent, kept for its next
//! sends. A process that spawns in a loop sends the same code every time
//! (`s.spawn(function (...) ... end)` makes a new closure of the same
//! prototype), and dumping it was ~3,000 of the ~7,000 instructions a spawn
//! cost its caller. The cache is keyed by the prototype and holds one of its
//! closures in the registry (and so that closure's upvalues), so the
//! prototype cannot be collected and its address reused while its entry
//! lives. It is bounded: a process sending ever new code (loading chunks in a
//! loop) stops caching after [`CAPACITY`] prototypes.

use std::collections::HashMap;
use std::ffi::{c_int, c_void};

use mlua_sys as ffi;
use synodic_core::hash::FastBuild;

extern "C" {
    /// The prototype of the Lua function at `idx`, or null (`csrc/peek.c`).
    fn synodic_proto(L: *mut ffi::lua_State, idx: c_int) -> *const c_void;
}

/// Prototypes kept per process.
const CAPACITY: usize = 64;

#[derive(Default)]
pub(crate) struct Dumps {
    /// Prototype -> (registry reference to a closure of it, its bytecode).
    entries: HashMap<*const c_void, (c_int, Box<[u8]>), FastBuild>,
}

/// Appends the bytecode of the Lua function at stack index `idx` to `out`,
/// dumping it only the first time this process sends its prototype; false
/// when `out` cannot hold it.
///
/// # Safety
/// `L` must be a process state (see `ctx`) with a Lua function at `idx`.
pub(crate) unsafe fn dump(L: *mut ffi::lua_State, idx: c_int, out: &mut Vec<u8>) -> bool {
    // SAFETY: `L` is a process state with a value at `idx` (the contract).
    let proto = unsafe { synodic_proto(L, idx) };
    // SAFETY: `L` is a process state, with a context (the contract).
    let sent = &mut unsafe { crate::vm::ctx::ctx(L) }.sent;
    if let Some((_, bytes)) = sent.as_ref().and_then(|s| s.dumps.entries.get(&proto)) {
        if out.try_reserve(bytes.len()).is_err() {
            return false;
        }
        out.extend_from_slice(bytes);
        return true;
    }
    let start = out.len();
    // SAFETY: the function at `idx` (the contract) is copied to the top and
    // dumped through `writer`, whose user data is `out`, live and not
    // otherwise used during the call; the copy is popped on failure.
    unsafe {
        ffi::lua_pushvalue(L, idx);
        if ffi::lua_dump(L, writer, (out as *mut Vec<u8>).cast(), 0) != 0 {
            ffi::lua_settop(L, -2);
            return false;
        }
    }
    let cache = &mut sent.get_or_insert_with(Default::default).dumps;
    if proto.is_null() || cache.entries.len() >= CAPACITY {
        // SAFETY: pops the copy pushed above.
        unsafe { ffi::lua_settop(L, -2) };
        return true;
    }
    // SAFETY: takes the copy on top into the registry (a plain table).
    let keep = unsafe { ffi::luaL_ref(L, ffi::LUA_REGISTRYINDEX) };
    cache.entries.insert(proto, (keep, out[start..].into()));
    true
}

/// A `lua_Writer` appending to a `Vec<u8>`; stops the dump (non-zero) when
/// the vector cannot grow.
unsafe extern "C-unwind" fn writer(_L: *mut ffi::lua_State, p: *const c_void, sz: usize, ud: *mut c_void) -> c_int {
    // SAFETY: `lua_dump` passes back the user data `dump` gave it: its
    // `out`, a live `Vec<u8>` no one else uses during the dump.
    let buf = unsafe { &mut *(ud as *mut Vec<u8>) };
    if buf.try_reserve(sz).is_err() || buf.len() + sz > synodic_core::wire::MAX_MESSAGE {
        return 1;
    }
    // SAFETY: Lua's writer contract: `p` points at `sz` readable bytes.
    buf.extend_from_slice(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), sz) });
    0
}
