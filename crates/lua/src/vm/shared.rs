//! What every process of a node shares instead of holding a copy: the
//! compiled code of Synodic's bundled Lua modules and the strings it and
//! the standard libraries name (see `SharedStrings` in the vendored
//! `lstring.h`, and `csrc/shared.c`).
//!
//! Built once per OS process, before its first process state: a Lua state
//! opens the standard libraries, interns the native modules' names and
//! every string of the bundled modules' bytecode, then is frozen and never
//! runs again. The bundled modules join the shared code on their first
//! require (`vm::loader`): compiling all of them took half of `synodic -e
//! ''`, and the frozen ones (below) a tenth of what was left. Its
//! strings and prototypes become read-only for every state made afterwards:
//! loading an entity's loop is then one closure (about 100 bytes) instead
//! of its prototypes and constants (7 to 12 KB), and a new state takes the
//! metamethod names as they are instead of interning 25 strings.
//!
//! Some bundled modules are *frozen* (`Sharing::Frozen` in the registry):
//! their main chunks run once per node, all together on the first require
//! of one, in the loader's state, which is then frozen again, and every
//! process shares the functions they made, closures and upvalues included, as it shares the
//! code (`csrc/shared.c` checks that no process could write them). A
//! process's `require` of one gets a table of its own holding the shared
//! functions, and a function of one arrives in a message as the shared
//! one, without loading the module: an entity's state holds nothing of
//! its loop (it held ~3.5 KB of closures and upvalues).

use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

use mlua_sys as ffi;

use crate::vm::module::{bundled, lazy_functions, Sharing};
use crate::vm::util::to_bytes;

extern "C" {
    fn synodic_share(L: *mut ffi::lua_State);
    pub(super) fn synodic_proto_of(L: *mut ffi::lua_State, idx: c_int) -> *const c_void;
    fn synodic_maybe_frozen(o: *const c_void) -> c_int;
    pub(super) fn synodic_push_shared(L: *mut ffi::lua_State, proto: *const c_void);
    fn synodic_proto_tree(proto: *const c_void, out: *mut *const c_void, cap: usize) -> usize;
    fn synodic_freezable(L: *mut ffi::lua_State, idx: c_int) -> c_int;
    fn synodic_push_frozen(L: *mut ffi::lua_State, f: *const c_void);
    fn synodic_push_frozen_table(L: *mut ffi::lua_State, t: *const c_void);
    fn synodic_intern_strings(L: *mut ffi::lua_State, buf: *const u8, len: usize);
}

/// The functions a frozen module's main chunk finds in each module it may
/// require (`vm::module::frozen_sees`). Its main chunk may only define
/// functions (no global read, no table kept: see `lualib/entity_loop.lua`).
fn frozen_sees() -> impl Iterator<Item = (&'static std::ffi::CStr, &'static crate::vm::util::Functions)> {
    crate::vm::module::frozen_sees().iter().map(|name| (*name, lazy_functions(name).unwrap_or(&[])))
}

/// A frozen module's function or table: its field name and its address.
type FrozenField = (Box<[u8]>, usize);

/// A frozen module's shared values, by field name: its functions, and its
/// read-only tables (classes: metatables, given only to userdata, whose
/// `__metatable` field hides them from programs; see `csrc/shared.c`).
pub(super) struct Frozen {
    functions: Vec<FrozenField>,
    tables: Vec<FrozenField>,
}

/// The frozen modules' shared values, once they are made.
pub(super) struct FrozenSet {
    /// Each bundled module's, if it is frozen, in the registry's order.
    modules: Vec<Option<Frozen>>,
    /// Every frozen function's address, sorted, with its module's index in
    /// the bundled modules and its field's in the module's `Frozen`.
    functions: Vec<(usize, usize, usize)>,
}

impl FrozenSet {
    pub(super) fn new(modules: Vec<Option<Frozen>>) -> FrozenSet {
        let mut functions: Vec<_> = modules
            .iter()
            .enumerate()
            .filter_map(|(i, f)| Some((i, f.as_ref()?)))
            .flat_map(|(i, f)| f.functions.iter().enumerate().map(move |(j, (_, g))| (*g, i, j)))
            .collect();
        functions.sort_unstable();
        FrozenSet { modules, functions }
    }
}

/// What the node's shared code holds of a bundled module.
pub(super) enum Module {
    /// Its main chunk's prototype.
    Shared(*const c_void),
    /// Nothing yet: it is compiled on its first require (`vm::loader`).
    Later,
    /// Nothing: each process that requires it loads it (`Sharing::Private`,
    /// or a module the loader could not share).
    Private,
    /// Why it did not compile.
    Broken(String),
}

// SAFETY: the prototypes are frozen: no thread ever writes them
// (csrc/shared.c), and the node's state that holds them is never closed.
unsafe impl Send for Module {}
unsafe impl Sync for Module {}

/// The node's shared code.
struct Shared {
    /// Each bundled module's, in the registry's order.
    modules: Vec<Module>,
    /// Every shared prototype's address, sorted.
    protos: Vec<usize>,
    /// The frozen modules, when they were made with the rest (a build
    /// without the list of strings); otherwise [`FROZEN`] has them.
    frozen: Option<FrozenSet>,
}

static SHARED: OnceLock<Shared> = OnceLock::new();

/// The frozen modules, made on first use by the loader (`vm::loader`).
static FROZEN: OnceLock<FrozenSet> = OnceLock::new();

/// The frozen modules' shared values, made on the first call.
fn frozen_set() -> &'static FrozenSet {
    match &shared().frozen {
        Some(set) => set,
        None => FROZEN.get_or_init(crate::vm::loader::freeze_frozen),
    }
}

/// The frozen modules' shared values if they are made (no function is
/// frozen before).
fn frozen_set_if_made() -> Option<&'static FrozenSet> {
    shared().frozen.as_ref().or_else(|| FROZEN.get())
}

/// Builds and publishes the node's shared strings and code, once; every
/// state made after this returns shares them.
pub(crate) fn ensure() {
    shared();
}

fn shared() -> &'static Shared {
    // SAFETY: `build` runs once, inside the `OnceLock`.
    SHARED.get_or_init(|| unsafe { build() })
}

/// Builds the node's shared state.
///
/// # Safety
/// Runs once per OS process (its state is frozen into every later one).
/// Lua errors here are not caught: a memory error in this unprotected state
/// goes to the node's panic handler, which aborts, so nothing unwinds over the
/// vectors built here.
unsafe fn build() -> Shared {
    // A new state of its own, used on this thread only.
    let L = crate::vm::state::shared_state();
    assert!(!L.is_null(), "cannot create the node's shared Lua state");
    // SAFETY: `L` is the new state (checked above); the stack is checked
    // for room before the names are pushed.
    let strings = crate::vm::module::bundled_strings();
    let names = unsafe {
        ffi::lua_gc(L, ffi::LUA_GCSTOP, 0);
        ffi::luaL_openlibs(L);
        synodic_intern_strings(L, strings.as_ptr(), strings.len());
        // Room for the names, the modules' chunks and what freezing pushes.
        let room = frozen_sees().map(|(_, f)| f.len()).sum::<usize>() + bundled().len() + 8;
        assert!(ffi::lua_checkstack(L, room as c_int) != 0, "no stack for the node's shared Lua state");
        for (_, functions) in frozen_sees() {
            for (name, _) in functions {
                ffi::lua_pushstring(L, name.as_ptr());
            }
        }
        ffi::lua_gettop(L)
    };
    let modules: Vec<Module> = bundled()
        .iter()
        // SAFETY: as above; a chunk that loads is left on the stack (one
        // slot a module, reserved above), its error message read before
        // anything else is pushed.
        .map(|&crate::vm::module::Bundled { chunk, source, sharing, .. }| unsafe {
            // (Without the list of their strings, every module is compiled
            // now: one compiled later would hold strings no process shares.)
            if sharing == Sharing::Private || !strings.is_empty() {
                ffi::lua_pushnil(L);
                return if sharing == Sharing::Private { Module::Private } else { Module::Later };
            }
            // Bytecode that build.rs compiled (or the source, if it could not).
            if ffi::luaL_loadbufferx(L, source.as_ptr().cast(), source.len(), chunk.as_ptr(), c"bt".as_ptr()) != ffi::LUA_OK {
                return Module::Broken(String::from_utf8_lossy(to_bytes(L, -1).unwrap_or_default()).into_owned());
            }
            Module::Shared(synodic_proto_of(L, -1))
        })
        .collect();
    // SAFETY: as above; module `i`'s chunk (or error) is at `names + 1 + i`
    // (none is, when the loader makes the frozen modules). Then the whole
    // state is shared and frozen; `L` is never used again.
    let frozen = unsafe {
        let frozen = strings.is_empty().then(|| {
            provide_frozen_sees(L);
            FrozenSet::new((0..bundled().len()).map(|i| freeze(L, i, names + 1 + i as c_int)).collect())
        });
        synodic_share(L);
        frozen
    };
    let mut protos: Vec<usize> = modules.iter().filter_map(|m| if let Module::Shared(proto) = m { Some(proto_tree(*proto)) } else { None }).flatten().collect();
    protos.sort_unstable();
    Shared { modules, protos, frozen }
}

/// The addresses of the prototypes under `proto` (itself included), a
/// frozen main-chunk prototype, which lives for good.
pub(super) fn proto_tree(proto: *const c_void) -> Vec<usize> {
    // SAFETY: `proto` is a frozen prototype (the contract); the walk writes
    // at most `n` addresses into `tree`.
    let tree = unsafe {
        let n = synodic_proto_tree(proto, std::ptr::null_mut(), 0);
        let mut tree = vec![std::ptr::null(); n];
        synodic_proto_tree(proto, tree.as_mut_ptr(), n);
        tree
    };
    tree.into_iter().map(|p| p as usize).collect()
}

/// Makes `require` of the modules frozen modules see give their functions
/// in state `L` (the loader's, or the node's), for frozen modules' main
/// chunks (which keep only functions).
pub(super) unsafe fn provide_frozen_sees(L: *mut ffi::lua_State) {
    // SAFETY: `L` is the node's state being built (the caller's); each new
    // table is filled at -1, stored in `package.loaded` (at -2), which is
    // popped at the end.
    unsafe {
        ffi::lua_getfield(L, ffi::LUA_REGISTRYINDEX, ffi::LUA_LOADED_TABLE);
        for (module, functions) in frozen_sees() {
            ffi::lua_createtable(L, 0, functions.len() as c_int);
            for (field, f) in functions {
                ffi::lua_pushcfunction(L, *f);
                ffi::lua_setfield(L, -2, field.as_ptr());
            }
            ffi::lua_setfield(L, -2, module.as_ptr());
        }
        ffi::lua_settop(L, -2);
    }
}

/// Runs bundled module `i`'s main chunk (at `chunk` on the stack) if it is
/// frozen, and returns its functions if they may be shared. The module
/// table stays on the stack, to be frozen with the rest.
///
/// # Safety
/// `L` shares the node's strings and is used by this thread alone (the
/// loader's, under its lock, or the node's being built), with its
/// collector stopped; `chunk` is a stack index.
pub(super) unsafe fn freeze(L: *mut ffi::lua_State, i: usize, chunk: c_int) -> Option<Frozen> {
    let module = &bundled()[i];
    let name = module.name.to_bytes();
    // SAFETY: the contract above.
    if module.sharing != Sharing::Frozen || unsafe { ffi::lua_type(L, chunk) } != ffi::LUA_TFUNCTION {
        return None;
    }
    // SAFETY: as above; the chunk runs protected, and its result (a table
    // `synodic_freezable` accepted) stays on top.
    unsafe {
        ffi::lua_pushvalue(L, chunk);
        crate::vm::util::push_bytes(L, name);
        if ffi::lua_pcall(L, 1, 1, 0) != ffi::LUA_OK || synodic_freezable(L, -1) == 0 {
            ffi::lua_settop(L, -2);
            return None;
        }
    }
    // SAFETY: as above: the module table, on top, is what a later frozen
    // module's main chunk gets when it requires this one (its functions
    // then are frozen ones, which it may keep).
    unsafe {
        ffi::lua_getfield(L, ffi::LUA_REGISTRYINDEX, ffi::LUA_LOADED_TABLE);
        ffi::lua_pushvalue(L, -2);
        ffi::lua_setfield(L, -2, module.name.as_ptr());
        ffi::lua_settop(L, -2);
    }
    let (mut functions, mut tables) = (Vec::new(), Vec::new());
    // SAFETY: as above; a walk of the table on top (its keys are strings,
    // and its values functions or tables, as `synodic_freezable` checks;
    // `to_bytes` on a key keeps it a string, so `lua_next` goes on). No
    // error can arise: `build`'s contract.
    unsafe {
        ffi::lua_pushnil(L);
        while ffi::lua_next(L, -2) != 0 {
            let field = (to_bytes(L, -2).unwrap_or_default().into(), ffi::lua_topointer(L, -1) as usize);
            if ffi::lua_type(L, -1) == ffi::LUA_TTABLE { tables.push(field) } else { functions.push(field) }
            ffi::lua_settop(L, -2);
        }
    }
    Some(Frozen { functions, tables })
}

/// Whether the value at `idx` is a Lua function whose code is shared: a
/// function of a bundled module.
pub(crate) unsafe fn is_shared_function(L: *mut ffi::lua_State, idx: c_int) -> bool {
    // SAFETY: `L` is valid and `idx` a stack index (lib.rs invariant 1);
    // `synodic_maybe_frozen` only reads the mark of the prototype given
    // (null when the value is not a Lua function).
    unsafe {
        let proto = synodic_proto_of(L, idx);
        synodic_maybe_frozen(proto) != 0 && (shared().protos.binary_search(&(proto as usize)).is_ok() || crate::vm::loader::holds(proto as usize))
    }
}

/// Pushes a fresh closure of bundled module `i`'s main chunk (as loading
/// it would: a private module is loaded here), or returns why it did not
/// compile.
pub(crate) unsafe fn push_module_chunk(L: *mut ffi::lua_State, i: usize) -> Result<(), String> {
    let module = match &shared().modules[i] {
        Module::Later => crate::vm::loader::module(i),
        module => module,
    };
    match module {
        Module::Shared(proto) => {
            // SAFETY: `L` is valid (lib.rs invariant 1); `proto` is a frozen
            // main-chunk prototype of the node's state, which lives for good.
            unsafe { synodic_push_shared(L, *proto) };
            Ok(())
        }
        Module::Private => {
            let crate::vm::module::Bundled { chunk, source, .. } = bundled()[i];
            // SAFETY: as above; a failed load leaves its message on top,
            // read and popped before returning.
            unsafe {
                if ffi::luaL_loadbufferx(L, source.as_ptr().cast(), source.len(), chunk.as_ptr(), c"bt".as_ptr()) == ffi::LUA_OK {
                    return Ok(());
                }
                let why = String::from_utf8_lossy(to_bytes(L, -1).unwrap_or_default()).into_owned();
                ffi::lua_settop(L, -2);
                Err(why)
            }
        }
        Module::Broken(why) => Err(why.clone()),
        Module::Later => Err("not compiled (the loader gives no module for later)".into()),
    }
}

/// Bundled module `i`'s shared values, if it is frozen (the frozen
/// modules are made now if they are not yet; another module's require
/// never makes them).
fn frozen_module(i: usize) -> Option<&'static Frozen> {
    if bundled().get(i)?.sharing != Sharing::Frozen {
        return None;
    }
    frozen_set().modules[i].as_ref()
}

/// Bundled module `i`'s shared functions, if it is frozen.
fn frozen_fields(i: usize) -> Option<&'static [FrozenField]> {
    frozen_module(i).map(|f| &f.functions[..])
}

/// The address of the shared table `field` of frozen module `module` (a
/// class), if there is one: what [`push_frozen_table`] takes, and what a
/// userdata's metatable is compared with.
pub(crate) fn frozen_table(module: &[u8], field: &[u8]) -> Option<usize> {
    let i = crate::vm::bundled::index_of(module)?;
    let tables = &frozen_module(i)?.tables;
    tables.iter().find(|(n, _)| &**n == field).map(|(_, t)| *t)
}

/// Pushes the shared table at `address`, which [`frozen_table`] gave. It
/// is read-only: the caller only makes it a userdata's metatable, never
/// gives it to the program.
pub(crate) unsafe fn push_frozen_table(L: *mut ffi::lua_State, address: usize) {
    // SAFETY: `L` is valid (lib.rs invariant 1) with room for a value (the
    // caller's); `address` is a frozen table of the node's state, which
    // lives for good.
    unsafe { synodic_push_frozen_table(L, address as *const c_void) }
}

/// Pushes a new table of bundled module `i`'s shared functions, as loading
/// it would return, if it is frozen; false (nothing pushed) otherwise.
pub(crate) unsafe fn push_frozen_module(L: *mut ffi::lua_State, i: usize) -> bool {
    let Some(fields) = frozen_fields(i) else { return false };
    // SAFETY: `L` is valid (lib.rs invariant 1); each `f` is the address of
    // a frozen closure of the node's state, which lives for good; the
    // table is at -3 when each name and function are set in it.
    unsafe {
        ffi::lua_createtable(L, 0, fields.len() as c_int);
        for (name, f) in fields {
            ffi::luaL_checkstack(L, 2, std::ptr::null());
            crate::vm::util::push_bytes(L, name);
            synodic_push_frozen(L, *f as *const c_void);
            ffi::lua_rawset(L, -3);
        }
    }
    true
}

/// Pushes the shared function `field` of frozen module `module`; false
/// (nothing pushed) when there is none.
pub(crate) unsafe fn push_frozen_field(L: *mut ffi::lua_State, module: &[u8], field: &[u8]) -> bool {
    let found = crate::vm::bundled::index_of(module).and_then(frozen_fields).and_then(|fields| fields.iter().find(|(n, _)| &**n == field));
    let Some((_, f)) = found else { return false };
    // SAFETY: `L` is valid (lib.rs invariant 1), checked for a free slot;
    // `f` is a frozen closure of the node's state, which lives for good.
    unsafe {
        if ffi::lua_checkstack(L, 1) == 0 {
            return false;
        }
        synodic_push_frozen(L, *f as *const c_void);
    }
    true
}

/// The module and field names of the Lua closure at address `p`, when it
/// is a frozen module's function.
pub(crate) unsafe fn frozen_name(p: *const c_void) -> Option<(&'static [u8], &'static [u8])> {
    // SAFETY: `p` is a Lua closure's address (the caller's), whose mark the
    // C side reads.
    if unsafe { synodic_maybe_frozen(p) } == 0 {
        return None;
    }
    let p = p as usize;
    let set = frozen_set_if_made()?;
    let at = set.functions.binary_search_by_key(&p, |&(g, _, _)| g).ok()?;
    let (_, module, field) = set.functions[at];
    let (field, _) = &set.modules[module].as_ref()?.functions[field];
    Some((bundled()[module].name.to_bytes(), field))
}

/// Whether module `name` is frozen (its functions shared, as they are).
pub(crate) fn is_frozen_module(name: &[u8]) -> bool {
    crate::vm::bundled::index_of(name).and_then(frozen_fields).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C" {
        fn synodic_is_frozen(f: *const c_void) -> c_int;
    }

    /// Whether the module table that `code` returns may be frozen. (Only
    /// refusals are tried here: an accepted table's closures would stay
    /// recorded as frozen after this state is gone; a refused one records
    /// nothing.)
    unsafe fn freezable(code: &str) -> bool {
        ensure(); // the node's own freezing is over: this one only reads what it recorded
        // SAFETY: `L` is a state this test makes, uses on this thread and closes.
        unsafe {
            let L = ffi::luaL_newstate();
            ffi::luaL_openlibs(L);
            let loaded = ffi::luaL_loadbufferx(L, code.as_ptr().cast(), code.len(), c"=test".as_ptr(), c"t".as_ptr()) == ffi::LUA_OK
                && ffi::lua_pcall(L, 0, 1, 0) == ffi::LUA_OK;
            assert!(loaded, "the test's chunk runs");
            let ok = synodic_freezable(L, -1) != 0;
            if !ok && ffi::lua_istable(L, -1) != 0 {
                ffi::lua_pushnil(L);
                while ffi::lua_next(L, -2) != 0 {
                    assert!(synodic_is_frozen(ffi::lua_topointer(L, -1)) == 0, "a refused module's functions are not recorded");
                    ffi::lua_settop(L, -2);
                }
            }
            ffi::lua_close(L);
            ok
        }
    }

    #[test]
    fn every_module_listed_frozen_is() {
        // A frozen module whose main chunk breaks a rule (or fails) is
        // loaded by each process instead, silently: its memory per process
        // is the symptom. So each is checked here.
        for module in bundled().iter().filter(|m| m.sharing == Sharing::Frozen) {
            assert!(is_frozen_module(module.name.to_bytes()), "{:?} is listed as frozen but could not be frozen", module.name);
        }
        assert!(is_frozen_module(b"synodic.entity.loop"));
        assert!(!is_frozen_module(b"synodic.skel"), "only the modules listed");
    }

    #[test]
    fn only_functions_no_process_could_write_are_frozen() {
        // SAFETY: `freezable` has no precondition: it makes its own state.
        unsafe {
            assert!(!freezable("local n = 0 return {f = function() n = n + 1 end}"), "an upvalue assigned");
            assert!(!freezable("return {f = function() return x end}"), "a global read (the upvalue is the globals)");
            assert!(!freezable("local t = {} return {f = function() return t end}"), "a table kept");
            assert!(!freezable("return {f = function() return function() end end}"), "a closure made");
            assert!(!freezable("local p = print return {f = function() return p end, t = {1}}"), "a table with an array");
            assert!(!freezable("return {t = setmetatable({}, {})}"), "a table with a metatable");
            assert!(!freezable("return {t = {[2.5] = 1}}"), "a table with a key not a string");
            assert!(!freezable("local n = 0 return {t = {m = function() n = n + 1 end}}"), "a table holding a function that assigns");
            assert!(!freezable("return {t = {u = io.stdout}}"), "a table holding a userdata");
            assert!(!freezable("return {1}"), "an array");
            let deep = "local n = 0 local function g() n = 1 end return {f = function() return g end}";
            assert!(!freezable(deep), "a function held by an upvalue is checked too");
        }
    }
}
