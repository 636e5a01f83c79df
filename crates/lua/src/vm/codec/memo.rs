//! A spawner's memo of the leading values it encoded last (a spawn's
//! function and first argument, `prefix::LEADING`), so that a process
//! spawning alike in a loop does not encode them again. An entity's spawn
//! sends the loop's `main` and the entity's code: a table with its `init`
//! and methods, made anew for each spawn, the methods table the same one.
//! Encoding them was a quarter of a local fork's instructions (6,300 of
//! 23,000), spent in Lua's API: pushing each value, finding each key
//! again for `lua_next`, looking each table up among the modules.
//!
//! The memo keeps their bytes with a fingerprint (`csrc/fingerprint.c`):
//! words that hold all the encoder's output depends on. A spawn walks its
//! leading values against the words (~1,400 instructions for an entity's
//! code, against 6,300 to encode it; stopped at the first difference);
//! when all match, the bytes are the encoding, and
//! the encoder goes on from the next value with the references the
//! leading values' objects would have had. Three things keep that true:
//!
//! 1. Every object whose address is a word is pinned (held by a table in
//!    the registry) while the memo lives, so no address is reused: a
//!    string, a prototype (through its closure), a C closure, a table or
//!    function sent by name.
//! 2. Names come from the record: the objects the encoder sent by name
//!    when it recorded are the only ones the walk takes as names. A table
//!    it walks into must then be no module, lazy or loaded, as the
//!    encoder's own test says (`names::surely_plain`); a function the node
//!    might share stops the walk.
//! 3. A module loaded since (the maps of names dropped) drops the memo.
//!
//! Leading values longer than a template's (`prefix::MAX_BYTES`) get no
//! memo. A spawn whose leading values differ from the memo's records its own; a
//! memo missed again and again is tried less and less often (at least once
//! every [`MAX_SKIP`] + 1 spawns), so a loop whose first argument
//! always differs (`s.spawn(worker, {i = i})`) pays next to nothing.

use std::ffi::{c_int, c_void};

use mlua_sys as ffi;

use super::encoder::Encoder;

/// What `csrc/fingerprint.c` is told and tells (its `SynodicWalk`).
#[repr(C)]
struct Walk {
    named: *const *const c_void,
    nnamed: usize,
    pins: c_int,
    npins: c_int,
    out: *mut u64,
    expect: *const u64,
    len: usize,
    cap: usize,
    objects: *mut *const c_void,
    nobjects: usize,
    objcap: usize,
    cells: *mut *const c_void,
    ncells: usize,
    cellcap: usize,
    globals: *const c_void,
}

extern "C" {
    fn synodic_fingerprint(L: *mut ffi::lua_State, first: c_int, count: c_int, w: *mut Walk) -> c_int;
}

/// Words of a fingerprint, objects and upvalue cells a memo may hold.
const MAX_WORDS: usize = 1024;
const MAX_OBJECTS: usize = 32;
const MAX_CELLS: usize = 32;
/// The most spawns a missed memo lets go by before it is tried again.
const MAX_SKIP: u32 = 64;

/// The leading values a process encoded last (see the module's doc).
struct Memo {
    words: Box<[u64]>,
    /// Their encoding.
    bytes: Box<[u8]>,
    /// The addresses of the objects they sent by name, sorted.
    named: Box<[*const c_void]>,
    /// For each object the walk numbers, in its order, the encoder's id.
    ids: Box<[u32]>,
    /// For each upvalue cell the walk meets, in its order, the encoder's
    /// (owner's id, upvalue number).
    cells: Box<[(u32, u32)]>,
    /// The registry reference of the table pinning the objects of `words`.
    pins: c_int,
}

/// A process's memo, and how often it is tried.
#[derive(Default)]
pub(crate) struct Spawns {
    memo: Option<Memo>,
    /// Spawns to let go by before the memo is tried again.
    skip: u32,
    /// How many spawns it served (for tests).
    pub(crate) hits: u64,
    /// What `skip` is set to at the next miss: doubled by each miss (up
    /// to [`MAX_SKIP`]), cleared by a hit.
    penalty: u32,
}

impl Spawns {
    /// The memo was missed, or could not be made: it is tried again after
    /// twice as many spawns as last time.
    fn missed(&mut self) {
        self.penalty = (self.penalty * 2 + 1).min(MAX_SKIP);
        self.skip = self.penalty;
    }
}

/// What a spawn's encoding does with the memo.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Use {
    /// Its leading values were the memo's: already written.
    Reused,
    /// Records them once encoded, if they may lead (`encode_marking`).
    Record,
    /// Leaves the memo alone.
    Pass,
}

/// Writes the leading values at `first` (absolute, [`LEADING`] of them)
/// from the memo if they are its own, numbering their objects in `enc` as
/// encoding them would have.
///
/// # Safety
/// `L` is a process's state (lib.rs invariant 1) with `LEADING` values from
/// the absolute index `first`, and `enc` encodes from `L`, with nothing
/// written yet but the message's header.
///
/// [`LEADING`]: crate::vm::prefix::LEADING
pub(super) unsafe fn reuse(L: *mut ffi::lua_State, first: c_int, enc: &mut Encoder) -> Use {
    // The memo is taken out of the context while it is checked (the test of
    // each table the walk entered reads the context too), and put back.
    let memo = {
        // SAFETY: the contract: a process's state, with a context (borrowed
        // for this block only).
        let ctx = unsafe { crate::vm::ctx::ctx(L) };
        let changed = ctx.modules_changed;
        let Some(sent) = ctx.sent.as_deref_mut() else { return Use::Record };
        let spawns = &mut sent.spawns;
        if spawns.skip > 0 {
            spawns.skip -= 1;
            return Use::Pass;
        }
        if changed {
            // SAFETY: the contract.
            unsafe { forget(L, spawns) };
            return Use::Record;
        }
        let Some(memo) = spawns.memo.take() else { return Use::Record };
        memo
    };
    let mut found = Found::new();
    // SAFETY: the contract; a checking walk only reads.
    let same = unsafe { walk(L, first, &memo.named, Words::Check(&memo.words), &mut found) }.is_some()
        && found.objects().len() == memo.ids.len()
        && found.cells().len() == memo.cells.len()
        // SAFETY: the contract.
        && found.objects().iter().all(|&p| p as usize & 1 == 0 || unsafe { super::names::surely_plain(L, untagged(p)) });
    if same {
        enc.ids.leading.extend(found.objects().iter().map(|&p| untagged(p)).zip(memo.ids.iter().copied()));
        enc.upvalues.leading.extend(found.cells().iter().copied().zip(memo.cells.iter().copied()));
        enc.w.raw(&memo.bytes);
    }
    // SAFETY: the contract (the context, for this statement only); the memo
    // goes back where it was taken from (a checking walk runs no Lua).
    let spawns = &mut unsafe { crate::vm::ctx::ctx(L) }.sent.get_or_insert_with(Default::default).spawns;
    spawns.memo = Some(memo);
    if !same {
        spawns.missed();
        return Use::Record;
    }
    spawns.penalty = 0;
    spawns.hits += 1;
    Use::Reused
}

/// Makes the leading values at `first`, just encoded by `enc` as `bytes`,
/// the process's memo, if their walk goes through.
///
/// # Safety
/// As [`reuse`]'s, with `enc` done encoding the message that `bytes` lead.
pub(super) unsafe fn record(L: *mut ffi::lua_State, first: c_int, enc: &Encoder, bytes: &[u8]) {
    // Longer leading values get no template either (`prefix`), and a copy
    // of them would be memory the process holds for nothing.
    if bytes.len() > crate::vm::prefix::MAX_BYTES {
        return;
    }
    let mut named = enc.named.clone();
    named.sort_unstable();
    named.dedup();
    let mut words = vec![0u64; MAX_WORDS];
    // SAFETY: the contract; room for the pin table and one value above it
    // (the walk's pins go through the top).
    let pins = unsafe {
        if ffi::lua_checkstack(L, 2) == 0 {
            return;
        }
        ffi::lua_createtable(L, 0, 0);
        ffi::lua_gettop(L)
    };
    let mut found = Found::new();
    // SAFETY: the contract; the walk pins into the table at `pins`.
    let walked = unsafe { walk(L, first, &named, Words::Record(&mut words, pins), &mut found) };
    let (len, ids, at) = match walked {
        Some(len) => (
            len,
            found.objects().iter().map(|&p| enc.ids.get(untagged(p))).collect::<Option<Box<[u32]>>>(),
            found.cells().iter().map(|&c| enc.upvalues.get(c)).collect::<Option<Box<[(u32, u32)]>>>(),
        ),
        None => (0, None, None),
    };
    // SAFETY: the contract: a process's state, with a context.
    let changed = unsafe { crate::vm::ctx::ctx(L) }.modules_changed;
    let (Some(ids), Some(cells), false) = (ids, at, changed) else {
        // SAFETY: drops the pin table; the context as above.
        unsafe {
            ffi::lua_settop(L, pins - 1);
            crate::vm::ctx::ctx(L).sent.get_or_insert_with(Default::default).spawns.missed();
        }
        return;
    };
    words.truncate(len);
    // SAFETY: takes the pin table on top into the registry.
    let pins = unsafe { ffi::luaL_ref(L, ffi::LUA_REGISTRYINDEX) };
    let memo = Memo { words: words.into(), bytes: bytes.into(), named: named.into(), ids, cells, pins };
    // SAFETY: the contract.
    let spawns = &mut unsafe { crate::vm::ctx::ctx(L) }.sent.get_or_insert_with(Default::default).spawns;
    // SAFETY: the contract.
    unsafe { forget(L, spawns) };
    spawns.memo = Some(memo);
}

/// How a walk takes its words: checks them against a record's, or makes
/// them (pinning their objects in the table at a stack index).
enum Words<'a> {
    Check(&'a [u64]),
    Record(&'a mut [u64], c_int),
}

/// What a walk met besides its words, in its order: the objects it
/// numbered (a table's address with its low bit set), the upvalue cells.
struct Found {
    objects: [*const c_void; MAX_OBJECTS],
    nobjects: usize,
    cells: [*const c_void; MAX_CELLS],
    ncells: usize,
}

impl Found {
    fn new() -> Found {
        Found { objects: [std::ptr::null(); MAX_OBJECTS], nobjects: 0, cells: [std::ptr::null(); MAX_CELLS], ncells: 0 }
    }

    fn objects(&self) -> &[*const c_void] {
        &self.objects[..self.nobjects]
    }

    fn cells(&self) -> &[*const c_void] {
        &self.cells[..self.ncells]
    }
}

/// Walks the leading values at `first` (`csrc/fingerprint.c`), the objects
/// in `named` (sorted) taken as names: how many words it made (what it met
/// in `found`); None when the walk stopped, or found a word not as
/// recorded.
///
/// # Safety
/// As [`reuse`]'s; a recording walk's pin table is on the stack, with a
/// free slot above it.
unsafe fn walk(L: *mut ffi::lua_State, first: c_int, named: &[*const c_void], words: Words, found: &mut Found) -> Option<usize> {
    let (out, expect, cap, pins) = match words {
        Words::Check(w) => (std::ptr::null_mut(), w.as_ptr(), w.len(), 0),
        Words::Record(w, pins) => (w.as_mut_ptr(), std::ptr::null(), w.len(), pins),
    };
    let mut w = Walk {
        named: named.as_ptr(),
        nnamed: named.len(),
        pins,
        npins: 0,
        out,
        expect,
        len: 0,
        cap,
        objects: found.objects.as_mut_ptr(),
        nobjects: 0,
        objcap: MAX_OBJECTS,
        cells: found.cells.as_mut_ptr(),
        ncells: 0,
        cellcap: MAX_CELLS,
        globals: std::ptr::null(),
    };
    // SAFETY: the contract; the walk writes within the buffers it is given
    // (`cap` words, the arrays of `found`), and pins only when recording.
    let walked = unsafe { synodic_fingerprint(L, first, crate::vm::prefix::LEADING as c_int, &mut w) } != 0;
    (found.nobjects, found.ncells) = (w.nobjects, w.ncells);
    walked.then_some(w.len)
}

/// Drops the memo of `spawns`, the process's at `L`.
///
/// # Safety
/// `L` is the process's state.
pub(super) unsafe fn forget(L: *mut ffi::lua_State, spawns: &mut Spawns) {
    if let Some(memo) = spawns.memo.take() {
        // SAFETY: the contract; the reference was taken in its registry.
        unsafe { ffi::luaL_unref(L, ffi::LUA_REGISTRYINDEX, memo.pins) };
    }
}

/// A walk's object address without the mark of a table.
fn untagged(p: *const c_void) -> *const c_void {
    (p as usize & !1) as *const c_void
}
