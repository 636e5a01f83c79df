//! What every process of a node shares instead of holding a copy: the
//! compiled code of Synodic's bundled Lua modules and the strings it and
//! the standard libraries name (see `SharedStrings` in the vendored
//! `lstring.h`, and `csrc/shared.c`).
//!
//! Built once per OS process, before its first process state: a Lua state
//! opens the standard libraries, interns the native modules' names and
//! compiles each bundled module, then is frozen and never runs again. Its
//! strings and prototypes become read-only for every state made afterwards:
//! loading an entity's loop is then one closure (about 100 bytes) instead
//! of its prototypes and constants (7 to 12 KB), and a new state takes the
//! metamethod names as they are instead of interning 25 strings.

use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

use mlua_sys as ffi;

use crate::lualib::BUNDLED;
use crate::util::to_bytes;

extern "C" {
    fn synodic_share(L: *mut ffi::lua_State);
    fn synodic_proto_of(L: *mut ffi::lua_State, idx: c_int) -> *const c_void;
    fn synodic_push_shared(L: *mut ffi::lua_State, proto: *const c_void);
    fn synodic_proto_tree(proto: *const c_void, out: *mut *const c_void, cap: usize) -> usize;
}

/// A bundled module's main-chunk prototype, or why it did not compile.
struct Module(Result<*const c_void, String>);

// The prototypes are frozen: no thread ever writes them (csrc/shared.c).
unsafe impl Send for Module {}
unsafe impl Sync for Module {}

/// The node's shared code.
struct Shared {
    /// Each bundled module's, in `BUNDLED`'s order.
    modules: Vec<Module>,
    /// Every shared prototype's address, sorted.
    protos: Vec<usize>,
}

static SHARED: OnceLock<Shared> = OnceLock::new();

/// Builds and publishes the node's shared strings and code, once; every
/// state made after this returns shares them.
pub(crate) fn ensure() {
    shared();
}

fn shared() -> &'static Shared {
    SHARED.get_or_init(|| unsafe { build() })
}

unsafe fn build() -> Shared {
    let L = ffi::luaL_newstate();
    assert!(!L.is_null(), "cannot create the node's shared Lua state");
    ffi::lua_gc(L, ffi::LUA_GCSTOP, 0);
    ffi::luaL_openlibs(L);
    for (name, _) in crate::kernel::FUNCTIONS {
        ffi::lua_pushstring(L, name.as_ptr());
    }
    let modules: Vec<Module> = BUNDLED
        .iter()
        .map(|(_, chunk, source)| {
            if ffi::luaL_loadbufferx(L, source.as_ptr().cast(), source.len(), chunk.as_ptr(), c"t".as_ptr()) != ffi::LUA_OK {
                return Module(Err(String::from_utf8_lossy(to_bytes(L, -1).unwrap_or_default()).into_owned()));
            }
            Module(Ok(synodic_proto_of(L, -1)))
        })
        .collect();
    synodic_share(L);
    let mut protos = Vec::new();
    for proto in modules.iter().filter_map(|m| m.0.as_ref().ok()) {
        let n = synodic_proto_tree(*proto, std::ptr::null_mut(), 0);
        let mut tree = vec![std::ptr::null(); n];
        synodic_proto_tree(*proto, tree.as_mut_ptr(), n);
        protos.extend(tree.into_iter().map(|p| p as usize));
    }
    protos.sort_unstable();
    Shared { modules, protos }
}

/// Whether the value at `idx` is a Lua function whose code is shared: a
/// function of a bundled module.
pub(crate) unsafe fn is_shared_function(L: *mut ffi::lua_State, idx: c_int) -> bool {
    let proto = synodic_proto_of(L, idx);
    !proto.is_null() && shared().protos.binary_search(&(proto as usize)).is_ok()
}

/// Pushes a fresh closure of bundled module `i`'s main chunk (as loading
/// it would), or returns why it did not compile.
pub(crate) unsafe fn push_module_chunk(L: *mut ffi::lua_State, i: usize) -> Result<(), &'static str> {
    match &shared().modules[i].0 {
        Ok(proto) => {
            synodic_push_shared(L, *proto);
            Ok(())
        }
        Err(why) => Err(why),
    }
}
