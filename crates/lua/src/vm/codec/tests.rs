//! The codec's tests, and `TestState`, a process-less state other modules' tests use too.
use super::*;
use crate::vm::ctx::{Boot, Ctx};
use crate::vm::heap::Heap;

/// A process-less state to encode and decode in.
pub(crate) struct TestState {
    pub(crate) L: *mut ffi::lua_State,
    _ctx: Box<Ctx>,
    _heap: Box<Heap>,
}

impl TestState {
    pub(crate) fn new() -> TestState {
        let mut ctx = Box::new(Ctx::new(Boot::Spawned(None)));
        let mut heap = Box::new(Heap::new());
        // SAFETY: `ctx` and `heap` are boxed into the `TestState`, whose
        // `Drop` closes the state before they drop; `heap` is new (empty).
        let L = unsafe { crate::vm::state::new_state(&mut *ctx, &mut *heap, None) }.expect("state");
        TestState { L, _ctx: ctx, _heap: heap }
    }

    /// Encodes the values that `source` returns.
    pub(crate) fn encode(&self, source: &str) -> Vec<u8> {
        // SAFETY: `encode_with` gives the state with the values at `1..=top`.
        self.encode_with(source, |L, top| unsafe { encode(L, 1, top) }.map(|msg| (msg, None))).0.to_vec()
    }

    /// Encodes the values that `source` returns as a spawn message.
    pub(crate) fn encode_spawn(&self, source: &str) -> (Message, Option<Leading>) {
        // SAFETY: as in `encode`.
        self.encode_with(source, |L, top| unsafe { encode_spawn(L, 1, top) })
    }

    fn encode_with(&self, source: &str, how: impl FnOnce(*mut ffi::lua_State, c_int) -> Result<(Message, Option<Leading>), Error>) -> (Message, Option<Leading>) {
        // SAFETY: `self.L` is this test state's, at rest on this thread; the
        // source runs protected, its values left for `how`, then dropped.
        unsafe {
            let L = self.L;
            ffi::lua_settop(L, 0);
            assert_eq!(ffi::luaL_loadbufferx(L, source.as_ptr().cast(), source.len(), c"t".as_ptr(), std::ptr::null()), 0);
            assert_eq!(ffi::lua_pcall(L, 0, ffi::LUA_MULTRET, 0), 0);
            let encoded = how(L, ffi::lua_gettop(L)).expect("encodable");
            ffi::lua_settop(L, 0);
            encoded
        }
    }
}

impl Drop for TestState {
    fn drop(&mut self) {
        // SAFETY: the state is not used again; its heap and context (the
        // fields) drop after this, so the close still allocates from them.
        unsafe { ffi::lua_close(self.L) }
    }
}

const SAMPLES: &[&str] = &[
    "return 1, 2.5, 'three', true, nil, -7",
    "local t = {1, 2, {x = 'y'}, [true] = 0.5} t.self = t return t, t",
    "local up = {n = 1} return function(a) return a + up.n end, up",
    "local c = 0 local function inc() c = c + 1 return c end return {inc, function() return c end}",
    "return string.format, _G, math",
];

#[test]
fn round_trip_keeps_structure() {
    let st = TestState::new();
    let msg = st.encode(SAMPLES[1]);
    // SAFETY: `st.L` is this test's state, at rest on this thread.
    unsafe {
        assert_eq!(decode_parts(st.L, &msg, &[]).unwrap(), 2);
        assert!(ffi::lua_rawequal(st.L, 1, 2) != 0, "the same table twice stays one table");
        ffi::lua_getfield(st.L, 1, c"self".as_ptr());
        assert!(ffi::lua_rawequal(st.L, 1, -1) != 0, "the cycle is kept");
    }
}

/// References stay right across many objects: a table met again after
/// forty others.
#[test]
fn references_hold_across_many_objects() {
    let st = TestState::new();
    let msg = st.encode("local t = {} for i = 1, 40 do t[i] = {i} end t.again = t[3] t.late = t[39] return t");
    // SAFETY: `st.L` is this test's state, at rest on this thread.
    unsafe {
        assert_eq!(decode_parts(st.L, &msg, &[]).unwrap(), 1);
        ffi::lua_setglobal(st.L, c"t".as_ptr());
    }
    // SAFETY: as above.
    assert!(unsafe { crate::vm::template::tests::run(st.L, "return t.again == t[3] and t.late == t[39] and t[40][1] == 40 and t[3] ~= t[39]") });
}

/// Encoding reuses its thread's buffer and reference maps: each message
/// numbers its references afresh, and a large one neither keeps the
/// buffer grown nor loses bytes.
#[test]
fn each_message_starts_afresh() {
    let st = TestState::new();
    let source = "T = T or {1, {2}, function() return 3 end} return T, T";
    let first = st.encode(source);
    assert_eq!(st.encode(source), first, "the second encoding of the same values is the same");
    let large = st.encode("return string.rep('x', 100000), {string.rep('y', 200)}");
    assert!(large.len() > 100000);
    // SAFETY: `st.L` is this test's state, at rest on this thread.
    unsafe {
        assert_eq!(decode_parts(st.L, &large, &[]).unwrap(), 2);
        assert_eq!(ffi::luaL_len(st.L, 1), 100000);
        ffi::lua_settop(st.L, 0);
    }
    let kept = SCRATCH.with(|s| {
        let scratch = s.take();
        let capacity = scratch.bytes.capacity();
        s.set(scratch);
        capacity
    });
    assert!(kept <= SCRATCH_KEPT, "a large message does not leave the buffer grown ({kept} bytes)");
    assert_eq!(st.encode(source), first);
}

/// A bundled module's function crosses by name, and a spawn message
/// that starts with one names the module its process's template loads;
/// a user's function crosses as code, and names none.
#[test]
fn a_bundled_function_names_its_module() {
    let st = TestState::new();
    let msg = st.encode("return require('synodic.entity.loop').main, 1");
    assert_eq!(leading_module(&msg), Some(&b"synodic.entity.loop"[..]));
    let msg = st.encode("return require('synodic.skel').farm");
    assert_eq!(leading_module(&msg), Some(&b"synodic.skel"[..]));
    assert_eq!(leading_module(&st.encode("return function() end, 1")), None);
    assert_eq!(leading_module(&st.encode("return 1, require('synodic.skel').farm")), None);
    assert_eq!(leading_module(b"junk"), None);
}

/// An idle process (a ring member: the synodic module and one function)
/// must fit in its heap's first chunk: that is what keeps a process
/// near 5 KB.
#[test]
fn an_idle_process_fits_in_the_first_chunk() {
    let st = TestState::new();
    let member = st.encode(
        "local s = require 'synodic'
         return function(main)
           local next = s.receive()
           while true do
             local hops = s.receive()
             if hops == 0 then s.send(main, 'done') else s.send(next, hops - 1) end
           end
         end",
    );
    let idle = TestState::new();
    // SAFETY: `idle.L` is this test's state, at rest on this thread.
    unsafe {
        decode_parts(idle.L, &member, &[]).unwrap();
        ffi::lua_settop(idle.L, 0);
        let used = crate::vm::heap::of_state(idle.L).unwrap().used();
        assert!(used <= crate::vm::heap::FIRST_CHUNK - 16, "an idle process takes {used} bytes");
    }
}

#[test]
fn junk_is_an_error_never_a_crash() {
    let st = TestState::new();
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for source in SAMPLES {
        let msg = st.encode(source);
        // SAFETY: `st.L` is this test's state, at rest on this thread.
        unsafe {
            for cut in 0..msg.len() {
                assert!(decode_parts(st.L, &msg[..cut], &[]).is_err(), "{source}: a {cut}-byte prefix decoded");
                assert_eq!(ffi::lua_gettop(st.L), 0, "a failed decode leaves the stack as it was");
            }
            for _ in 0..3000 {
                let mut junk = msg.clone();
                for _ in 0..1 + next() % 4 {
                    let i = (next() as usize) % junk.len();
                    junk[i] = next() as u8;
                }
                match decode_parts(st.L, &junk, &[]) {
                    Ok(n) => ffi::lua_settop(st.L, -n - 1),
                    Err(_) => assert_eq!(ffi::lua_gettop(st.L), 0),
                }
            }
            let random: Vec<u8> = (0..64).map(|_| next() as u8).collect();
            let _ = decode_parts(st.L, &random, &[]);
            ffi::lua_settop(st.L, 0);
        }
    }
}

/// A spawn like the last is written from the process's memo (`memo`), with
/// the bytes encoding would write; a change anywhere in its leading values
/// is seen, and a later value still refers to their objects.
#[test]
fn spawning_alike_reuses_the_memo_and_sees_changes() {
    let st = TestState::new();
    let source = "CODE = CODE or {list = {1, 2}, f = function() return 1 end} return print, CODE, CODE.list, 'rest'";
    // SAFETY: `st.L` is this test's state, at rest on this thread, with a
    // context (borrowed for the read only).
    let hits = || unsafe { crate::vm::ctx::ctx(st.L) }.sent.as_ref().map_or(0, |s| s.spawns.hits);
    let (first, leading) = st.encode_spawn(source);
    assert!(leading.is_some(), "a table first argument leads");
    assert_eq!(hits(), 0);
    let (second, _) = st.encode_spawn(source);
    assert_eq!(hits(), 1, "the second spawn used the memo");
    assert_eq!(&first[..], &second[..], "with the bytes encoding writes");
    let changed = format!("CODE.list[1] = 5 {source}");
    let (third, _) = st.encode_spawn(&changed);
    assert_eq!(hits(), 1, "a changed element misses the memo");
    assert_ne!(&first[..], &third[..]);
    // SAFETY: `st.L` is this test's state, at rest on this thread.
    unsafe {
        assert_eq!(decode_parts(st.L, &third, &[]).unwrap(), 4);
        ffi::lua_getfield(st.L, 2, c"list".as_ptr());
        assert!(ffi::lua_rawequal(st.L, -1, 3) != 0, "the third value is the second's list");
        ffi::lua_settop(st.L, 0);
    }
    // The miss made the changed values the memo: after the spawns it lets
    // go by, they are written from it.
    let mut hit_again = false;
    for _ in 0..4 {
        let (again, _) = st.encode_spawn(source);
        assert_eq!(&again[..], &third[..]);
        hit_again |= hits() == 2;
    }
    assert!(hit_again, "the new memo served");
    // SAFETY: as above.
    unsafe {
        assert_eq!(decode_parts(st.L, &third, &[]).unwrap(), 4);
        ffi::lua_getfield(st.L, 2, c"list".as_ptr());
        assert!(ffi::lua_rawequal(st.L, -1, 3) != 0, "from the memo too, the third value refers to the second's list");
        ffi::lua_rawgeti(st.L, 3, 1);
        assert_eq!(ffi::lua_tointegerx(st.L, -1, std::ptr::null_mut()), 5);
        ffi::lua_settop(st.L, 0);
    }
}
