//! Bundled modules compiled into the node's shared code on their first
//! require, not at start (the node's shared state, `vm::shared`, interns
//! their strings and compiles none): a run pays for the modules it uses.
//! Each is compiled once per node, in a loader state that shares the
//! node's strings; the node's state interned,
//! before it froze, every string the bundled bytecode holds (a list
//! build.rs makes), so the compiled code names only shared strings, and its
//! prototypes, frozen as the node state's are, serve every process alike.
//!
//! A module whose code would hold a string of the loader's own (a list out
//! of step with the bytecode) is not shared: each process then loads it
//! itself, as a private module, and a fresh loader takes the next one. A
//! unit test checks that no bundled module comes to that.
//!
//! The frozen modules (`vm::shared`) are made here too, all at once on the
//! first require of one: compiled as the others, their main chunks run in
//! a state of their own that shares the node's strings (with the standard
//! libraries and the functions of the modules they may require), which is
//! then frozen and never runs again. The check that admits their values
//! (`synodic_freezable`) admits only strings of the node's, so a string
//! that state made for itself never reaches a process.

use std::ffi::c_int;
use std::sync::{Mutex, OnceLock};

use mlua_sys as ffi;

use crate::vm::module::{bundled, Sharing};
use crate::vm::shared::{proto_tree, synodic_proto_of, synodic_push_shared, FrozenSet, Module};
use crate::vm::util::to_bytes;

extern "C" {
    fn synodic_own_strings(L: *mut ffi::lua_State) -> c_int;
    fn synodic_freeze_loaded(L: *mut ffi::lua_State);
}

/// A module compiled later, and its prototypes' addresses, sorted.
struct Loaded {
    module: Module,
    protos: Box<[usize]>,
}

/// The loader state, used under the lock by one thread at a time.
struct Loader(*mut ffi::lua_State);

// SAFETY: the state is used only while `LOADER` is locked, by the thread
// holding the lock; it is never closed.
unsafe impl Send for Loader {}

/// The loader. Every slot is filled under this lock (so a thread filling
/// one never waits for another that waits for the lock).
static LOADER: Mutex<Option<Loader>> = Mutex::new(None);

type Guard = std::sync::MutexGuard<'static, Option<Loader>>;

fn lock() -> Guard {
    LOADER.lock().unwrap_or_else(|e| e.into_inner())
}

/// One slot per bundled module, in the registry's order.
fn slots() -> &'static [OnceLock<Loaded>] {
    static SLOTS: OnceLock<Box<[OnceLock<Loaded>]>> = OnceLock::new();
    SLOTS.get_or_init(|| bundled().iter().map(|_| OnceLock::new()).collect())
}

/// Bundled module `i`, compiled on the first call (never `Module::Later`).
/// The node's shared code is built already (the caller's, through
/// `shared::push_module_chunk`).
pub(super) fn module(i: usize) -> &'static Module {
    if let Some(loaded) = slots()[i].get() {
        return &loaded.module;
    }
    let mut loader = lock();
    &slots()[i].get_or_init(|| load(&mut loader, i)).module
}

/// Whether `proto` is a prototype of a module compiled later.
pub(super) fn holds(proto: usize) -> bool {
    slots().iter().filter_map(OnceLock::get).any(|l| l.protos.binary_search(&proto).is_ok())
}

fn broken(why: String) -> Loaded {
    Loaded { module: Module::Broken(why), protos: Box::new([]) }
}

/// The loader state, made on first use; null when out of memory.
fn state(loader: &mut Guard) -> *mut ffi::lua_State {
    if let Some(Loader(L)) = &**loader {
        return *L;
    }
    let L = stopped_state();
    if !L.is_null() {
        **loader = Some(Loader(L));
    }
    L
}

/// A new state sharing the node's strings, whose collector never runs (so
/// what it makes stays, and stays where it is); null when out of memory.
pub(crate) fn stopped_state() -> *mut ffi::lua_State {
    let L = crate::vm::state::loader_state();
    if !L.is_null() {
        // SAFETY: the new state, on this thread, at rest.
        unsafe { ffi::lua_gc(L, ffi::LUA_GCSTOP, 0) };
    }
    L
}

/// Compiles bundled module `i` in the loader state.
fn load(loader: &mut Guard, i: usize) -> Loaded {
    let L = state(loader);
    if L.is_null() {
        return broken("not enough memory".into());
    }
    let crate::vm::module::Bundled { chunk, source, .. } = bundled()[i];
    // SAFETY: `L` is the loader state, used only under the lock held here.
    // A chunk that loads stays on its stack for good (room checked first);
    // a failed load's message is read and popped.
    unsafe {
        if ffi::lua_checkstack(L, 1) == 0 {
            return broken("no stack left to compile it".into());
        }
        if ffi::luaL_loadbufferx(L, source.as_ptr().cast(), source.len(), chunk.as_ptr(), c"b".as_ptr()) != ffi::LUA_OK {
            let why = String::from_utf8_lossy(to_bytes(L, -1).unwrap_or_default()).into_owned();
            ffi::lua_settop(L, -2);
            return broken(why);
        }
        if synodic_own_strings(L) != 0 {
            // Its code holds a string no process shares: each loads it
            // itself. This loader holds that string now; the next module
            // gets a new one (this one is left as it is).
            **loader = None;
            return Loaded { module: Module::Private, protos: Box::new([]) };
        }
        synodic_freeze_loaded(L);
        let proto = synodic_proto_of(L, -1);
        let mut protos = proto_tree(proto);
        protos.sort_unstable();
        Loaded { module: Module::Shared(proto), protos: protos.into() }
    }
}

/// Makes the frozen modules: compiles each (if no require did yet), runs
/// its main chunk in a state made for them, and freezes what they made. A
/// module that cannot be frozen gets `None` (each process then runs its
/// chunk).
pub(super) fn freeze_frozen() -> FrozenSet {
    let mut loader = lock();
    let mut frozen: Vec<_> = bundled().iter().map(|_| None).collect();
    let L = stopped_state();
    if L.is_null() {
        return FrozenSet::new(frozen);
    }
    // The state is used on this thread alone (the lock serializes the
    // makers of frozen values), frozen at the end, and never runs again.
    // SAFETY: `L` is that new state, its collector stopped so what the
    // chunks make stays put; each closure is pushed with room checked,
    // and `freeze` leaves the module's table on the stack.
    unsafe {
        ffi::luaL_openlibs(L);
        crate::vm::shared::provide_frozen_sees(L);
        for (i, b) in bundled().iter().enumerate() {
            if b.sharing != Sharing::Frozen || ffi::lua_checkstack(L, 4) == 0 {
                continue;
            }
            if let Module::Shared(proto) = slots()[i].get_or_init(|| load(&mut loader, i)).module {
                synodic_push_shared(L, proto);
                frozen[i] = crate::vm::shared::freeze(L, i, ffi::lua_gettop(L));
            }
        }
        synodic_freeze_loaded(L);
    }
    FrozenSet::new(frozen)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vm::module::Sharing;

    #[test]
    fn every_module_compiled_later_is_shared() {
        crate::vm::shared::ensure();
        if crate::vm::module::bundled_strings().is_empty() {
            return; // no bytecode compiler at build time: all compiled at start
        }
        let mut later = 0;
        for (i, b) in bundled().iter().enumerate() {
            if b.sharing != Sharing::Shared {
                continue;
            }
            later += 1;
            match module(i) {
                Module::Shared(proto) => assert!(holds(*proto as usize), "{:?}: its prototype is listed", b.name),
                Module::Private => panic!("{:?} holds a string the build's list lacks (build.rs, tools/luadump.c)", b.name),
                Module::Broken(why) => panic!("{:?} did not compile: {why}", b.name),
                Module::Later => unreachable!(),
            }
        }
        assert!(later > 0, "some bundled modules are compiled later");
    }
}
