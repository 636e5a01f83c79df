//! Lazy library tables. A process that calls `s.send` and `s.receive` must
//! not pay, in memory and start-up time, for every function of every
//! library it never touches (an idle process must stay under 8 KB), and no
//! program may be able to tell (Lua 5.4.8's own test suite must pass).
//!
//! So the global table, `package.loaded`, the standard libraries and
//! Synodic's native modules are *lazy tables* of the vendored Lua (see
//! `ltable.h`, [Synodic]): a table with no metatable and no visible trick,
//! whose missing entries are made the first time a read looks for them (raw
//! or not), whose entries a write replaces unmade, and which makes every
//! entry before a traversal (`next`, `pairs`). Which entries a table has is
//! its [`Template`]; which of them a table has made or lost to a write, the
//! process's context records (`made`, one bit per entry).
//!
//! The templates, all in one place, are read once per OS process: the
//! standard libraries' entries from a template state that opens them
//! (their functions are `static` in Lua's C sources), Synodic's from its
//! modules' function lists.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

use mlua_sys as ffi;

use crate::vm::ctx::ctx;
use crate::vm::util::{push_bytes, raise, to_bytes};

mod list;
mod templates;
#[cfg(test)]
mod tests;

pub(crate) use list::{Built, LazyList};

use templates::build_templates;
pub(crate) use templates::original;

/// How an entry of a lazy table is made.
pub(crate) enum Entry {
    Function(ffi::lua_CFunction),
    Integer(i64),
    Number(f64),
    Str(Box<[u8]>),
    /// Pushes the value of the entry called `name` (it may do anything a C
    /// function may: open a library, load a module).
    Make(unsafe fn(*mut ffi::lua_State, name: &[u8]) -> Result<(), String>),
    /// Made with every entry of the same opener: the opener runs into a
    /// table of its own, and all those entries are copied from it (closures
    /// that share state, fields that need the opener's set-up).
    Opened(ffi::lua_CFunction),
}

/// The entries of one lazy table, and the module it is (for the codec).
pub(crate) struct Template {
    pub module: &'static str,
    entries: Vec<(Box<[u8]>, Entry)>,
}

impl Template {
    fn new(module: &'static str) -> Template {
        Template { module, entries: Vec::new() }
    }

    /// A template of `entries`, whose names differ (a table's keys).
    fn of_entries(module: &'static str, entries: Vec<(Vec<u8>, Entry)>) -> Template {
        assert!(entries.len() <= 64, "a lazy table has at most 64 entries (one bit each)");
        Template { module, entries: entries.into_iter().map(|(name, entry)| (name.into_boxed_slice(), entry)).collect() }
    }

    fn with(mut self, name: &[u8], entry: Entry) -> Template {
        self.entries.retain(|(n, _)| &**n != name);
        self.entries.push((name.into(), entry));
        assert!(self.entries.len() <= 64, "a lazy table has at most 64 entries (one bit each)");
        self
    }

    fn with_functions(self, functions: &[(&CStr, ffi::lua_CFunction)]) -> Template {
        functions.iter().fold(self, |t, (name, f)| t.with(name.to_bytes(), Entry::Function(*f)))
    }

    fn position(&self, name: &[u8]) -> Option<usize> {
        self.entries.iter().position(|(n, _)| &**n == name)
    }

    /// The functions of the template, with their names (for the codec).
    pub(crate) fn functions(&self) -> impl Iterator<Item = (&[u8], ffi::lua_CFunction)> {
        self.entries.iter().filter_map(|(n, e)| match e {
            Entry::Function(f) => Some((&**n, *f)),
            _ => None,
        })
    }
}

/// The template of the global table (index 0 in `templates()`).
const GLOBALS: u8 = 0;
/// The template of `package.loaded` (index 1).
const LOADED: u8 = 1;

/// Every lazy table's template, built once per OS process.
pub(crate) fn templates() -> &'static [Template] {
    static T: OnceLock<Vec<Template>> = OnceLock::new();
    // SAFETY: `build_templates` has no precondition: it reads a state of its own.
    T.get_or_init(|| unsafe { build_templates() })
}

/// Whether module `name` is one of the lazy tables: a standard library
/// or one of Synodic's native modules (made without running any code).
pub(crate) fn is_lazy_module(name: &[u8]) -> bool {
    template_of(name).is_some()
}

/// The index of the template of module `name`.
fn template_of(name: &[u8]) -> Option<u8> {
    templates().iter().position(|t| t.module.as_bytes() == name).map(|i| i as u8)
}

// Makers of `Entry::Make` entries. Each is called by `make` with a
// process's state `L` (lib.rs invariant 1) and pushes one value.

unsafe fn make_globals(L: *mut ffi::lua_State, _name: &[u8]) -> Result<(), String> {
    // SAFETY: `L` is a process's state (see above); the registry holds the globals.
    unsafe { ffi::lua_rawgeti(L, ffi::LUA_REGISTRYINDEX, ffi::LUA_RIDX_GLOBALS) };
    Ok(())
}

/// A library global: the same table as `package.loaded[name]`.
unsafe fn make_loaded(L: *mut ffi::lua_State, name: &[u8]) -> Result<(), String> {
    // SAFETY: `L` is a process's state (see above); `package.loaded` is read
    // raw (a lazy table makes the library), and dropped from under the value.
    unsafe {
        ffi::lua_getfield(L, ffi::LUA_REGISTRYINDEX, ffi::LUA_LOADED_TABLE);
        push_bytes(L, name);
        ffi::lua_rawget(L, -2);
        ffi::lua_rotate(L, -2, 1);
        ffi::lua_settop(L, -2);
    }
    Ok(())
}

unsafe fn make_library(L: *mut ffi::lua_State, name: &[u8]) -> Result<(), String> {
    let template = template_of(name).ok_or("no such library")?;
    // SAFETY: `L` is a process's state (see above).
    unsafe { push_lazy(L, template) };
    Ok(())
}

unsafe fn make_package(L: *mut ffi::lua_State, _name: &[u8]) -> Result<(), String> {
    // SAFETY: `L` is a process's state (see above); the opener's errors
    // unwind through frames that own nothing (`make`'s callers keep to it).
    unsafe {
        ffi::lua_pushcfunction(L, crate::vm::state::open_package);
        ffi::lua_call(L, 0, 1);
    }
    Ok(())
}

unsafe fn make_module(L: *mut ffi::lua_State, name: &[u8]) -> Result<(), String> {
    let module: &[u8] = if name == b"alua" { b"synodic.alua" } else { name };
    // SAFETY: `L` is a process's state (see above).
    unsafe { crate::vm::state::push_module(L, module) }
}

/// Pushes a new, empty lazy table of `template`.
pub(crate) unsafe fn push_lazy(L: *mut ffi::lua_State, template: u8) {
    // SAFETY: `L` is a process's state, with a context (lib.rs invariant 1).
    unsafe {
        ffi::lua_createtable(L, 0, 0);
        make_lazy(L, -1, template);
    }
}

/// Makes the (empty) table at `idx` a lazy table of `template`.
unsafe fn make_lazy(L: *mut ffi::lua_State, idx: c_int, template: u8) {
    // SAFETY: `L` is a process's state, with a context, and `idx` a table's
    // index (the caller's); the context's borrow ends before the mark, which
    // calls nothing that reaches it.
    unsafe {
        let idx = ffi::lua_absindex(L, idx);
        let table = ffi::lua_topointer(L, idx);
        ctx(L).lazy.add(table, template);
        synodic_lazy_mark(L, idx, 1);
    }
}

/// Pushes a new lazy table for the library or native module `name`;
/// false (nothing pushed) when it has no template.
pub(crate) unsafe fn push_library(L: *mut ffi::lua_State, name: &[u8]) -> bool {
    match template_of(name) {
        Some(t) => {
            // SAFETY: `L` is a process's state, with a context (lib.rs invariant 1).
            unsafe { push_lazy(L, t) };
            true
        }
        None => false,
    }
}

/// Makes the state's global table and `package.loaded` lazy, with the string
/// library behind the string metatable, which the state makes the first
/// time it is looked up (`basicmt` in the vendored `ltm.h`). Called on a
/// new state.
pub(crate) unsafe fn set_up(L: *mut ffi::lua_State) {
    // SAFETY: `L` is a new state whose extra space points at its context
    // (`fresh_state`); the globals and `package.loaded`, both empty and
    // plain yet, become lazy; the stack is then [loaded, globals].
    unsafe {
        ffi::lua_rawgeti(L, ffi::LUA_REGISTRYINDEX, ffi::LUA_RIDX_GLOBALS);
        make_lazy(L, -1, GLOBALS);
        ffi::luaL_getsubtable(L, ffi::LUA_REGISTRYINDEX, ffi::LUA_LOADED_TABLE);
        make_lazy(L, -1, LOADED);
        ffi::lua_rotate(L, -2, 1);
        ffi::lua_setfield(L, -2, c"_G".as_ptr());
    }
    // SAFETY: as above; the string library (lazy) is stored in `loaded` (at
    // -3 once it is copied), then becomes the string metatable's `__index`
    // to be (popped); the stack ends as it began.
    unsafe {
        push_library(L, b"string");
        ffi::lua_pushvalue(L, -1);
        ffi::lua_setfield(L, -3, c"string".as_ptr());
        synodic_string_index(L);
    }
}

/// The template and the made entries of the lazy table at `table`, if the
/// state has one there.
fn find(L: *mut ffi::lua_State, table: *const c_void) -> Option<(u8, u64)> {
    // SAFETY: not checked (a safe function over a raw `L`): every caller
    // passes a process's state (lazy tables exist only there), with a context.
    unsafe { ctx(L) }.lazy.find(table)
}

/// Records entry `i` of the lazy table at `table` as made (or written over).
fn set_made(L: *mut ffi::lua_State, table: *const c_void, i: usize) {
    // SAFETY: as in `find`.
    unsafe { ctx(L) }.lazy.set_made(table, i);
}

/// The module and field of a plain C function of a lazy table's template
/// (for the codec, which sends such functions by name).
pub(crate) fn function_name(f: ffi::lua_CFunction) -> Option<(&'static str, &'static [u8])> {
    type ByAddress = std::collections::HashMap<usize, (&'static str, &'static [u8]), synodic_core::hash::FastBuild>;
    static BY_ADDRESS: OnceLock<ByAddress> = OnceLock::new();
    let map = BY_ADDRESS.get_or_init(|| {
        let mut map = ByAddress::default();
        for t in templates().iter().filter(|t| t.module != "_LOADED") {
            for (name, f) in t.functions() {
                map.entry(f as usize).or_insert((t.module, name));
            }
        }
        map
    });
    map.get(&(f as usize)).copied()
}

/// The module whose lazy table is `table`, if it is one (for the codec).
pub(crate) fn module_of(L: *mut ffi::lua_State, table: *const c_void) -> Option<&'static str> {
    let (template, _) = find(L, table)?;
    templates().get(template as usize).filter(|t| !t.module.starts_with('_')).map(|t| t.module)
}

/// Called by `csrc/lazy.c`: whether `key` is an entry of the lazy table
/// `table` still to be made; with `claim`, it will not be made any more (it
/// is being written).
#[no_mangle]
unsafe extern "C-unwind" fn synodic_lazy_entry(L: *mut ffi::lua_State, table: *const c_void, key: *const c_char, len: usize, claim: c_int) -> c_int {
    let Some((template, made)) = find(L, table) else { return 0 };
    if template == LOADED && claim != 0 {
        // A module is being stored: the codec's maps of modules are stale.
        // SAFETY: `L` has a lazy table (found above), so it is a process's
        // state, with a context.
        unsafe { ctx(L) }.modules_changed = true;
    }
    // SAFETY: `csrc/lazy.c` passes a string key's bytes and length, alive
    // during this call.
    let key = unsafe { std::slice::from_raw_parts(key as *const u8, len) };
    let Some(i) = templates()[template as usize].position(key) else { return 0 };
    if claim != 0 {
        set_made(L, table, i);
    }
    (made & (1 << i) == 0) as c_int
}

/// Called by `csrc/lazy.c`, as a C function, with a lazy table and one of
/// its entries still to be made: makes it, stores it and returns it.
#[no_mangle]
unsafe extern "C-unwind" fn synodic_lazy_make(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: `csrc/lazy.c` calls this as a C function of a process's state
    // (lib.rs invariant 1), with the table at 1 and the key at 2.
    let made = unsafe { make(L, 1, 2) };
    match made {
        Ok(()) => 1,
        // SAFETY: as above; `raise` drops `e` before unwinding.
        Err(e) => unsafe { raise(L, e) },
    }
}

/// Makes the entry whose key is at `key` of the lazy table at `table`,
/// stores it, and pushes it.
///
/// # Safety
/// `L` is a process's state (lib.rs invariant 1), `table` and `key` stack
/// indices (absolute) of a table and a string key. What the entry's maker
/// raises unwinds through this frame, which owns nothing.
unsafe fn make(L: *mut ffi::lua_State, table: c_int, key: c_int) -> Result<(), String> {
    // SAFETY: the contract; `name` borrows the key, which stays at `key`
    // while it is used.
    let (template, name) = unsafe {
        let template = find(L, ffi::lua_topointer(L, table)).map(|(t, _)| &templates()[t as usize]);
        (template, to_bytes(L, key).unwrap_or_default())
    };
    let Some((template, i)) = template.and_then(|t| Some((t, t.position(name)?))) else {
        // SAFETY: the contract.
        unsafe { ffi::lua_pushnil(L) };
        return Ok(());
    };
    // SAFETY: the contract.
    if unsafe { ffi::lua_checkstack(L, 8) } == 0 {
        return Err("not enough memory".into());
    }
    // SAFETY: the contract; room for the pushes was checked above. A
    // maker's error unwinds this frame, which owns nothing (its `Err` is
    // returned, not raised).
    unsafe {
        match &template.entries[i].1 {
            Entry::Function(f) => ffi::lua_pushcfunction(L, *f),
            Entry::Integer(n) => ffi::lua_pushinteger(L, *n),
            Entry::Number(n) => ffi::lua_pushnumber(L, *n),
            Entry::Str(s) => push_bytes(L, s),
            Entry::Make(f) => f(L, name)?,
            Entry::Opened(opener) => return make_opened(L, table, key, template, *opener),
        }
    }
    // SAFETY: the contract; the value made is on top, stored raw under the
    // key and left pushed.
    unsafe {
        ffi::lua_pushvalue(L, key);
        ffi::lua_pushvalue(L, -2);
        ffi::lua_rawset(L, table);
    }
    Ok(())
}

/// Runs `opener` and stores every entry of `template` made with it.
///
/// # Safety
/// As [`make`]'s.
unsafe fn make_opened(L: *mut ffi::lua_State, table: c_int, key: c_int, template: &Template, opener: ffi::lua_CFunction) -> Result<(), String> {
    // SAFETY: the contract; the opener's table lands at `opened` (its
    // errors unwind frames that own nothing).
    let opened = unsafe {
        ffi::lua_pushcfunction(L, opener);
        ffi::lua_call(L, 0, 1);
        ffi::lua_gettop(L)
    };
    for (name, entry) in &template.entries {
        if matches!(entry, Entry::Opened(o) if *o as usize == opener as usize) {
            // SAFETY: the contract; [name, name, value] above `opened`: both
            // stored raw in `table`, or dropped; `name` is the template's.
            unsafe {
                push_bytes(L, name);
                ffi::lua_pushvalue(L, -1);
                ffi::lua_rawget(L, opened);
                // Only entries still to be made: one the program wrote over stays.
                let table_ptr = ffi::lua_topointer(L, table);
                if synodic_lazy_entry(L, table_ptr, name.as_ptr() as *const c_char, name.len(), 0) != 0 {
                    ffi::lua_rawset(L, table);
                } else {
                    ffi::lua_settop(L, -3);
                }
            }
        }
    }
    // SAFETY: the contract; drops the opener's table and pushes the entry asked for.
    unsafe {
        ffi::lua_settop(L, opened - 1);
        ffi::lua_pushvalue(L, key);
        ffi::lua_rawget(L, table);
    }
    Ok(())
}

/// Called by `csrc/lazy.c` before a traversal, as a C function, with a
/// lazy table: makes every entry still to be made, then the table is an
/// ordinary one.
#[no_mangle]
unsafe extern "C-unwind" fn synodic_lazy_make_all(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: `csrc/lazy.c` calls this as a C function of a process's state
    // (lib.rs invariant 1) with the lazy table at 1; each name is pushed as
    // the key `make` asks for, the stack cut back to the table after. The
    // closure owns nothing while `make` may raise.
    let made = (|| unsafe {
        let Some((template, _)) = find(L, ffi::lua_topointer(L, 1)) else { return Ok(()) };
        let template = &templates()[template as usize];
        for (i, (name, _)) in template.entries.iter().enumerate() {
            let still = find(L, ffi::lua_topointer(L, 1)).is_some_and(|(_, made)| made & (1 << i) == 0);
            if still {
                push_bytes(L, name);
                make(L, 1, ffi::lua_gettop(L))?;
                ffi::lua_settop(L, 1);
            }
        }
        Ok::<(), String>(())
    })();
    if let Err(e) = made {
        // SAFETY: as above; `raise` drops `e` before unwinding.
        return unsafe { raise(L, e) };
    }
    // `package.loaded` stays lazy, so that storing a module is still seen.
    // SAFETY: as above; the table is still at 1.
    unsafe {
        if find(L, ffi::lua_topointer(L, 1)).is_some_and(|(template, _)| template != LOADED) {
            synodic_lazy_mark(L, 1, 0);
        }
    }
    0
}

extern "C" {
    fn synodic_lazy_mark(L: *mut ffi::lua_State, idx: c_int, lazy: c_int);
    /// Pops the table on top: the string metatable's `__index` once made.
    fn synodic_string_index(L: *mut ffi::lua_State);
    /// `lua_next` that leaves a lazy table's entries unmade.
    pub(crate) fn synodic_next_raw(L: *mut ffi::lua_State, idx: c_int) -> c_int;
}

/// Defines a native module's `open` function: a lazy table of the module's
/// template (see `native_libraries`).
macro_rules! lazy_module {
    ($name:expr) => {
        pub unsafe extern "C-unwind" fn open(L: *mut mlua_sys::lua_State) -> std::ffi::c_int {
            // SAFETY: Lua calls this opener (as `require` does) with a
            // process's running state `L` (lib.rs invariant 1).
            unsafe {
                if !$crate::vm::lazy::push_library(L, $name) {
                    mlua_sys::lua_createtable(L, 0, 0);
                }
            }
            1
        }
    };
}
pub(crate) use lazy_module;
