//! `buffer.rs`: buffers' bounds and bad arguments, element kinds and their
//! value ranges, views and copy on write, the memory limit, a buffer
//! crossing a message (its payload shared, not copied), and the C API for
//! modules. None of this needs a runtime: a process-less state does.

use mlua_sys as ffi;

use super::*;
use crate::vm::codec::tests::TestState;
use crate::vm::heap::Heap;
use crate::vm::template::tests::{run, Copy};

/// Runs Lua `code` (with `buffer` the module) in `L`; true when it ran
/// without error and returned true.
fn lua(L: *mut ffi::lua_State, code: &str) -> bool {
    // SAFETY: `L` is a test's live state; `run` runs the chunk protected.
    unsafe { run(L, &format!("buffer = require('synodic.buffer') {code}")) }
}

/// The error `code` raises in `L` (with `buffer` the module).
fn error_of(L: *mut ffi::lua_State, code: &str) -> String {
    let code = format!("buffer = require('synodic.buffer') {code}");
    // SAFETY: `L` is a test's live state; the chunk runs protected, and its error is popped.
    unsafe {
        ffi::lua_settop(L, 0);
        assert_eq!(ffi::luaL_loadbufferx(L, code.as_ptr().cast(), code.len(), c"=unit".as_ptr(), c"t".as_ptr()), ffi::LUA_OK);
        assert_ne!(ffi::lua_pcall(L, 0, 0, 0), ffi::LUA_OK, "no error from: {code}");
        crate::vm::util::pop_error(L)
    }
}

fn refused(st: &TestState, code: &str, expected: &str) {
    let e = error_of(st.L, code);
    assert!(e.contains(expected), "{code}\nraised: {e}\nexpected: {expected}");
}

#[test]
fn new_takes_an_element_count_within_bounds_and_a_known_kind() {
    let st = TestState::new();
    assert!(lua(st.L, "local b = buffer.new(0) return #b == 0 and b:size() == 0 and b:kind() == 'f64'"), "an empty buffer is a buffer");
    assert!(lua(st.L, "return #buffer.new(3, 'u8') == 3 and buffer.new(3, 'i64'):size() == 24 and buffer.new(3):size() == 24"));
    for bad in ["-1", "'many'", "1.5", "nil", "(1 << 34) + 1"] {
        refused(&st, &format!("buffer.new({bad})"), "bad argument #1 to 'new' (element count expected");
    }
    refused(&st, "buffer.new(2, 'f32')", "buffer kind must be \"u8\", \"i64\" or \"f64\"");
    refused(&st, "buffer.new(2, 8)", "buffer kind must be");
}

#[test]
fn elements_are_numbered_from_one_to_the_length_and_nothing_else() {
    let st = TestState::new();
    assert!(lua(st.L, "b = buffer.new(3, 'i64') b[1] = 10 b:set(3, 30) return b[1] == 10 and b:get(3) == 30 and b[2] == 0"));
    for (code, shown) in [("local _ = b[0]", "0"), ("local _ = b[4]", "4"), ("b:get(-1)", "-1"), ("b:get(1.5)", "1.5"), ("b[4] = 1", "4"), ("b:set(0, 1)", "0")] {
        refused(&st, code, &format!("buffer index {shown} out of range (1..3)"));
    }
    refused(&st, "b:get()", "buffer index ? out of range (1..3)");
    refused(&st, "local _ = buffer.new(0)[1]", "out of range (1..0)");
    assert!(lua(st.L, "return b.nothing == nil and b.get ~= nil"), "a string key looks up a method");
}

#[test]
fn each_kind_takes_the_values_it_can_hold() {
    let st = TestState::new();
    assert!(lua(st.L, "u = buffer.new(2, 'u8') u[1] = 0 u[2] = 255 return u[1] == 0 and u[2] == 255 and math.type(u[2]) == 'integer'"));
    for bad in ["256", "-1", "1.5", "'x'", "true"] {
        refused(&st, &format!("u[1] = {bad}"), "u8 buffer values are integers 0..255");
    }
    assert!(lua(st.L, "i = buffer.new(1, 'i64') i[1] = math.mininteger return i[1] == math.mininteger"));
    assert!(lua(st.L, "i[1] = 2.0 return math.type(i[1]) == 'integer' and i[1] == 2"), "a float with an integer value is one");
    refused(&st, "i[1] = 2.5", "i64 buffer values are integers (got number)");
    refused(&st, "i[1] = {}", "i64 buffer values are integers (got table)");
    assert!(lua(st.L, "f = buffer.new(1) f[1] = 7 return math.type(f[1]) == 'float' and f[1] == 7.0"));
    assert!(lua(st.L, "f[1] = 1/0 return f[1] == math.huge"));
    refused(&st, "f[1] = 'not a number'", "f64 buffer values are numbers (got string)");
}

#[test]
fn from_and_fromtable_check_what_they_are_given() {
    let st = TestState::new();
    assert!(lua(st.L, "local b = buffer.from('A\\0B') return b:kind() == 'u8' and #b == 3 and b[2] == 0 and b:bytes() == 'A\\0B'"));
    assert!(lua(st.L, "return #buffer.from('') == 0"));
    refused(&st, "buffer.from(65)", "bad argument #1 to 'from' (string expected, got number)");
    assert!(lua(st.L, "local b = buffer.fromtable({1, 2.5, 3}) return b:kind() == 'f64' and b[2] == 2.5 and #b == 3"));
    assert!(lua(st.L, "local b = buffer.fromtable({}, 'u8') return #b == 0"));
    refused(&st, "buffer.fromtable('x')", "bad argument #1 to 'fromtable' (table expected, got string)");
    refused(&st, "buffer.fromtable({1, 300}, 'u8')", "fromtable: element 2: u8 buffer values are integers 0..255");
    refused(&st, "buffer.fromtable({1, 2}, 'i8')", "buffer kind must be");
}

#[test]
fn fill_totable_and_the_descriptions_cover_every_element() {
    let st = TestState::new();
    assert!(lua(
        st.L,
        "local b = buffer.new(4, 'i64') b:fill(-3)
         local t = b:totable()
         return #t == 4 and t[1] == -3 and t[4] == -3 and b:size() == 32
            and tostring(b) == 'buffer: 4 i64 (32 bytes)'"
    ));
    refused(&st, "buffer.new(2, 'u8'):fill(999)", "u8 buffer values are integers 0..255");
    refused(&st, "buffer.new(2).kind(5)", "bad self to 'kind' (buffer expected, got number)");
    for method in ["get", "set", "size", "view", "bytes", "fill", "totable"] {
        refused(&st, &format!("buffer.new(1).{method}('x', 1)"), &format!("bad self to '{method}' (buffer expected, got string)"));
    }
}

#[test]
fn a_view_shares_the_bytes_until_either_side_writes() {
    let st = TestState::new();
    assert!(lua(
        st.L,
        "b = buffer.fromtable({1, 2}, 'i64')
         v = b:view('u8')
         return #v == 16 and v[1] == 1 and buffer.shares(b, v) and b:view() ~= nil and b:view():kind() == 'i64'"
    ));
    assert!(lua(st.L, "v[1] = 9 return b[1] == 1 and v[1] == 9 and not buffer.shares(b, v)"), "a write copies first");
    assert!(lua(st.L, "local w = b:view('f64') b[2] = 5 return w:get(2) ~= 5 and not buffer.shares(b, w)"), "either side");
    refused(&st, "buffer.from('abc'):view('i64')", "view: 3 bytes do not make whole i64 elements");
    assert!(lua(st.L, "return not buffer.shares(b, {}) and not buffer.shares(nil, nil)"));
}

#[test]
fn a_buffer_past_the_processs_memory_limit_is_refused_not_made() {
    let copy = Copy::of(crate::vm::template::base().expect("the base template"), Heap::limited(512 << 10)).expect("a limited state");
    let e = error_of(copy.L, "buffer.new(1 << 20, 'u8')");
    assert!(e.contains("new: not enough memory (over the process's memory limit)"), "{e}");
    assert!(lua(copy.L, "return #buffer.new(1000, 'u8') == 1000"), "a small one still fits");
}

#[test]
fn a_buffer_crosses_a_message_as_its_shared_bytes() {
    let st = TestState::new();
    assert!(lua(st.L, "b = buffer.fromtable({1, 2, 3}, 'i64') return true"));
    // SAFETY: the test's state: `b` pushed, encoded, then the message decoded onto the stack.
    unsafe {
        ffi::lua_settop(st.L, 0);
        ffi::lua_getglobal(st.L, c"b".as_ptr());
        let msg = crate::vm::codec::encode(st.L, 1, 1).expect("a buffer encodes");
        ffi::lua_settop(st.L, 0);
        assert_eq!(crate::vm::codec::decode(st.L, &msg).expect("and decodes"), 1);
        ffi::lua_setglobal(st.L, c"c".as_ptr());
    }
    assert!(lua(st.L, "return c:kind() == 'i64' and c[3] == 3 and buffer.shares(b, c)"), "the same bytes, not a copy");
    assert!(lua(st.L, "c[3] = 30 return b[3] == 3"), "and copied on write, so the sender never sees it");
}

#[test]
fn the_c_api_reads_writes_and_makes_buffers_without_raising() {
    let st = TestState::new();
    assert!(lua(st.L, "b = buffer.from('abcd') v = b:view() return true"));
    // SAFETY: the test's state; the C API functions take a stack index and raise nothing.
    unsafe {
        ffi::lua_settop(st.L, 0);
        ffi::lua_getglobal(st.L, c"b".as_ptr());
        let mut len = 0;
        let read = synodic_buffer_bytes(st.L, 1, &mut len);
        assert_eq!((std::slice::from_raw_parts(read, len), len), (&b"abcd"[..], 4));
        let write = synodic_buffer_bytes_mut(st.L, 1, &mut len);
        assert_ne!(write.cast_const(), read, "b's bytes were shared with v: a write gets a copy");
        *write = b'z';
        ffi::lua_pushinteger(st.L, 7);
        assert!(synodic_buffer_bytes(st.L, -1, &mut len).is_null() && synodic_buffer_bytes_mut(st.L, -1, std::ptr::null_mut()).is_null(), "not a buffer: null");
        ffi::lua_settop(st.L, 0);
        let made = synodic_buffer_new(st.L, 3);
        assert!(!made.is_null());
        *made.add(2) = 42;
        ffi::lua_setglobal(st.L, c"n".as_ptr());
    }
    assert!(lua(st.L, "return b:bytes() == 'zbcd' and v:bytes() == 'abcd'"), "the copy was written, the view kept its bytes");
    assert!(lua(st.L, "return n:kind() == 'u8' and #n == 3 and n[1] == 0 and n[3] == 42"));
}
