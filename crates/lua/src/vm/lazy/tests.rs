//! Lazy library tables (`lazy.rs`), as a program sees them: entries made
//! on first read, raw or not; a write that replaces an entry before it is
//! made, for good; a traversal that makes every entry first; libraries that
//! are the same table wherever they are reached; the io library made whole;
//! `package.loaded` watched for modules stored in it. And the lookups the
//! codec relies on: which module a table or a function is. Each test runs
//! on a process-less state (`codec::tests::TestState`).

use super::*;
use crate::vm::codec::tests::TestState;
use crate::vm::template::tests::run;

/// Runs Lua `code` in the test's state; true when it returned true.
fn lua(st: &TestState, code: &str) -> bool {
    // SAFETY: the test's live state; `run` runs the chunk protected.
    unsafe { run(st.L, code) }
}

#[test]
fn an_entry_is_there_for_a_raw_read_before_anything_used_it() {
    let st = TestState::new();
    assert!(lua(&st, "return type(rawget(_G, 'print')) == 'function' and type(rawget(math, 'floor')) == 'function'"));
    assert!(lua(&st, "return rawget(math, 'pi') == 3.141592653589793 and math.maxinteger == 0x7fffffffffffffff"), "constants too");
    assert!(lua(&st, "return rawget(_G, '_VERSION') == 'Lua 5.4' and rawget(math, 'no_such_entry') == nil"));
}

#[test]
fn a_write_replaces_an_entry_before_it_is_made_and_it_is_never_made_again() {
    let st = TestState::new();
    assert!(lua(&st, "math.floor = nil return math.floor == nil and rawget(math, 'floor') == nil"));
    assert!(lua(&st, "local n = 0 for k in pairs(math) do if k == 'floor' then n = n + 1 end end return n == 0"), "not even by a traversal");
    assert!(lua(&st, "print = 5 return print == 5 and rawget(_G, 'print') == 5"));
    assert!(lua(&st, "return type(math.ceil) == 'function'"), "the other entries are still made");
}

#[test]
fn a_traversal_sees_every_entry_once() {
    let st = TestState::new();
    assert!(lua(
        &st,
        "local keys, n = {}, 0
         for k, v in pairs(string) do assert(not keys[k], k) keys[k] = true n = n + 1 end
         return n >= 17 and keys.format and keys.rep and keys.pack"
    ));
    assert!(lua(&st, "return next(table) ~= nil and next({}) == nil"), "next on a lazy table that nothing read yet");
    assert!(lua(&st, "local n = 0 for _ in pairs(utf8) do n = n + 1 end local m = 0 for _ in pairs(utf8) do m = m + 1 end return n == m and n >= 6"), "twice, the same");
}

#[test]
fn a_library_is_one_table_however_it_is_reached() {
    let st = TestState::new();
    assert!(lua(&st, "return string == package.loaded.string and string == require('string') and ('x'):upper() == 'X'"));
    assert!(lua(&st, "return _G._G == _G and package.loaded._G == _G and _G.package == package"));
    assert!(lua(&st, "return ('10' + 1) == 11 and ('3' * '4') == 12"), "the string metatable, made on first use, has the library's arithmetic");
}

#[test]
fn the_io_library_is_made_whole_but_a_field_written_over_stays_written() {
    let st = TestState::new();
    assert!(lua(&st, "io.write = 'mine' return type(io.read) == 'function' and io.write == 'mine'"), "making io's other entries keeps the written one");
    assert!(lua(&st, "return io.stdout ~= nil and io.type(io.stdout) == 'file'"));
}

#[test]
fn a_native_module_is_a_lazy_table_of_its_functions() {
    let st = TestState::new();
    assert!(lua(
        &st,
        "local b = require('synodic.buffer')
         local names = {}
         for k in pairs(b) do names[#names + 1] = k end
         table.sort(names)
         return table.concat(names, ',') == 'from,fromtable,new,shares'"
    ));
    assert!(is_lazy_module(b"string") && is_lazy_module(b"synodic.buffer") && is_lazy_module(b"synodic"));
    assert!(!is_lazy_module(b"synodic.skel") && !is_lazy_module(b"no.such"), "a Lua module, and nothing, are not");
}

#[test]
fn storing_a_module_in_package_loaded_is_noticed_even_after_a_traversal() {
    let st = TestState::new();
    assert!(lua(&st, "for _ in pairs(package.loaded) do end return true"));
    // SAFETY: the test's state and its context.
    unsafe { ctx(st.L) }.modules_changed = false;
    assert!(lua(&st, "package.loaded.mine = {} return true"));
    // SAFETY: as above.
    assert!(unsafe { ctx(st.L) }.modules_changed, "package.loaded stays lazy: the codec is told its module maps are stale");
}

#[test]
fn the_codec_finds_the_module_of_a_table_and_of_a_function() {
    let st = TestState::new();
    // SAFETY: the test's state; tables pushed from globals and their addresses read.
    let (math, globals, plain) = unsafe {
        ffi::lua_settop(st.L, 0);
        ffi::lua_getglobal(st.L, c"math".as_ptr());
        ffi::lua_rawgeti(st.L, ffi::LUA_REGISTRYINDEX, ffi::LUA_RIDX_GLOBALS);
        ffi::lua_createtable(st.L, 0, 0);
        let found = (module_of(st.L, ffi::lua_topointer(st.L, 1)), module_of(st.L, ffi::lua_topointer(st.L, 2)), module_of(st.L, ffi::lua_topointer(st.L, 3)));
        ffi::lua_settop(st.L, 0);
        found
    };
    assert_eq!(math, Some("math"));
    assert_eq!(globals, None, "the global table is no module");
    assert_eq!(plain, None);
    let floor = original("math", b"floor").expect("math.floor of Lua's own library");
    assert_eq!(function_name(floor), Some(("math", &b"floor"[..])));
    assert_eq!(function_name(crate::vm::state::print), Some(("_G", &b"print"[..])), "Synodic's print replaces Lua's in the globals");
    assert!(templates().iter().all(|t| t.entries.len() <= 64), "one bit per entry");
}
