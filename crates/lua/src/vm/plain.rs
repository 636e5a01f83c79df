//! The codec's short path (`csrc/plain.c`): a message of a few plain values
//! (nil, booleans, numbers, strings, pids) that fits inline is written from
//! the stack, and pushed back onto it, in one C call each way. Everything
//! else, and every malformed message, is refused here and taken by the
//! general encoder and decoder in [`crate::vm::codec`], which write the same
//! bytes and report the errors. The tests below hold the two paths to the
//! same bytes and the same values.

use std::ffi::c_int;

use mlua_sys as ffi;
use synodic_core::Message;

/// `MAX_SCALAR` in `csrc/plain.c`: the longest value but a string.
const MAX_SCALAR: usize = 11;

extern "C" {
    fn synodic_encode_plain(L: *mut ffi::lua_State, first: c_int, last: c_int, buf: *mut u8, limit: c_int) -> c_int;
    fn synodic_decode_plain(L: *mut ffi::lua_State, buf: *const u8, len: usize, pids: *mut c_int) -> c_int;
}

/// The values at stack positions `first..=last` as an inline message, or
/// `None` when they are not all plain or do not fit.
#[inline]
pub(crate) unsafe fn encode(L: *mut ffi::lua_State, first: c_int, last: c_int) -> Option<Message> {
    // The encoder may write one value past the limit before it refuses the message.
    let mut bytes = [0u8; Message::INLINE + MAX_SCALAR];
    // SAFETY: `L` is a valid state (lib.rs invariant 1); the C side reads
    // only stack slots it checks, and writes at most `INLINE + MAX_SCALAR`
    // bytes, the size of `bytes`.
    let len = unsafe { synodic_encode_plain(L, first, last, bytes.as_mut_ptr(), Message::INLINE as c_int) };
    if len < 0 {
        return None;
    }
    let mut inline = [0u8; Message::INLINE];
    inline.copy_from_slice(&bytes[..Message::INLINE]);
    Some(Message::inline(inline, len as usize))
}

/// Pushes the values of `msg` and returns how many, or pushes nothing and
/// returns `None` when it is not a well-formed message of plain values.
#[inline]
pub(crate) unsafe fn decode(L: *mut ffi::lua_State, msg: &[u8]) -> Option<c_int> {
    let mut pids = 0;
    // SAFETY: `L` is a valid state (lib.rs invariant 1); the C side reads
    // `msg` within its `len` bytes and pushes nothing unless it is whole.
    let n = unsafe { synodic_decode_plain(L, msg.as_ptr(), msg.len(), &mut pids) };
    if n < 0 {
        return None;
    }
    if pids != 0 {
        // SAFETY: `L` is a process's state (lib.rs invariant 1), with a context.
        unsafe { crate::vm::util::give_pids_their_metatable(L) };
    }
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vm::codec::tests::TestState;
    use crate::vm::codec::{decode_parts, encode_general};

    /// Values the short path takes, at the edges of their encodings.
    const PLAIN: &[&str] = &[
        "nil", "true", "false", "0", "1", "-1", "63", "-64", "64", "-65", "8191", "8192",
        "math.maxinteger", "math.mininteger", "0.0", "-0.0", "1.5", "1/0", "-1/0", "0/0",
        "''", "'a'", "'\\0\\255x'", "string.rep('z', 20)", "pid",
    ];

    fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        }
    }

    /// Pushes the values `source` returns; returns how many.
    unsafe fn push(L: *mut ffi::lua_State, source: &str) -> c_int {
        // SAFETY: `L` is a test's `TestState`, at rest on this thread; the
        // chunk runs protected (a failed assertion panics, and tests abort).
        unsafe {
            // `pid`: a pid, as light userdata (the state runs no process to ask).
            ffi::lua_pushlightuserdata(L, synodic_core::Pid::new(0, 5, 1).raw() as usize as *mut std::ffi::c_void);
            ffi::lua_setglobal(L, c"pid".as_ptr());
            let chunk = format!("return {source}");
            assert_eq!(ffi::luaL_loadbufferx(L, chunk.as_ptr().cast(), chunk.len(), c"t".as_ptr(), std::ptr::null()), 0);
            let base = ffi::lua_gettop(L) - 1;
            assert_eq!(ffi::lua_pcall(L, 0, ffi::LUA_MULTRET, 0), 0);
            ffi::lua_gettop(L) - base
        }
    }

    /// Whether the values at `a..a+n` and `b..b+n` are the same, NaN
    /// included, floats and integers kept apart.
    unsafe fn same(L: *mut ffi::lua_State, a: c_int, b: c_int, n: c_int) -> bool {
        // SAFETY: `L` is a test's `TestState`; these reads raise nothing.
        (0..n).all(|i| unsafe {
            let (x, y) = (a + i, b + i);
            let numbers = ffi::lua_type(L, x) == ffi::LUA_TNUMBER && ffi::lua_type(L, y) == ffi::LUA_TNUMBER;
            if numbers && ffi::lua_isinteger(L, x) != ffi::lua_isinteger(L, y) {
                return false;
            }
            let nan = |i| ffi::lua_type(L, i) == ffi::LUA_TNUMBER && ffi::lua_tonumberx(L, i, std::ptr::null_mut()).is_nan();
            ffi::lua_rawequal(L, x, y) != 0 || (nan(x) && nan(y))
        })
    }

    #[test]
    #[allow(clippy::needless_range_loop)] // `round` also chooses between the two halves
    fn both_paths_write_the_same_bytes_and_read_the_same_values() {
        let st = TestState::new();
        let L = st.L;
        let mut next = xorshift(0x2545_F491_4F6C_DD1D);
        // SAFETY: `L` is this test's `TestState`, at rest on this thread.
        unsafe {
            for round in 0..2000 {
                ffi::lua_settop(L, 0);
                let count = if round < PLAIN.len() { 1 } else { next() as usize % 9 };
                let picks: Vec<&str> = (0..count).map(|_| if round < PLAIN.len() { PLAIN[round] } else { PLAIN[next() as usize % PLAIN.len()] }).collect();
                let n = push(L, &picks.join(", "));
                let general = encode_general(L, 1, n).expect("plain values encode");
                match encode(L, 1, n) {
                    Some(short) => assert_eq!(&*short, &*general, "{picks:?}"),
                    None => assert!(general.len() > Message::INLINE, "{picks:?} fits inline yet was refused"),
                }
                let got = decode(L, &general);
                if general.len() <= Message::INLINE {
                    assert_eq!(got, Some(n), "{picks:?}");
                }
                if got.is_some() {
                    assert!(same(L, 1, n + 1, n), "{picks:?} came back different");
                }
            }
        }
    }

    #[test]
    fn anything_else_is_left_to_the_general_path() {
        let st = TestState::new();
        let L = st.L;
        // SAFETY: `L` is this test's `TestState`, at rest on this thread.
        unsafe {
            for source in ["{}", "print", "function() end", "coroutine.create(print)", "string.rep('x', 40)", "1, 2, 3, 4, 5, 6, 7, 8, 9"] {
                ffi::lua_settop(L, 0);
                let n = push(L, source);
                assert!(encode(L, 1, n).is_none(), "{source}");
            }
            ffi::lua_settop(L, 0);
            ffi::lua_pushlightuserdata(L, 0x1000 as *mut std::ffi::c_void);
            assert!(encode(L, 1, 1).is_none(), "a light userdata that is not a pid");
            assert!(encode(L, 1, 2).is_none(), "an index above the top");
            assert!(encode(L, 0, 1).is_none(), "index 0");
        }
    }

    /// Whatever junk the short path accepts, the general decoder accepts
    /// too, with the same values; what it refuses leaves the stack alone.
    #[test]
    fn junk_is_refused_or_read_as_the_general_decoder_reads_it() {
        let st = TestState::new();
        let L = st.L;
        let mut next = xorshift(0x9E37_79B9_7F4A_7C15);
        // SAFETY: `L` is this test's `TestState`, at rest on this thread.
        unsafe {
            for source in ["1, -300, 'hey', true, nil, pid", "2.5, false, 'xy', 70000, -1/0"] {
                ffi::lua_settop(L, 0);
                let n = push(L, source);
                let msg = encode(L, 1, n).expect("plain").to_vec();
                ffi::lua_settop(L, 0);
                for round in 0..10_000 {
                    let mut junk = msg.clone();
                    if round % 7 == 0 {
                        junk.truncate(next() as usize % msg.len());
                    }
                    for _ in 0..1 + next() % 3 {
                        if !junk.is_empty() {
                            let i = next() as usize % junk.len();
                            junk[i] = next() as u8;
                        }
                    }
                    match decode(L, &junk) {
                        None => assert_eq!(ffi::lua_gettop(L), 0, "a refused message pushes nothing"),
                        Some(k) => {
                            assert_eq!(decode_parts(L, &junk, &[]).ok(), Some(k), "{junk:?}");
                            assert!(same(L, 1, k + 1, k), "{junk:?}");
                        }
                    }
                    ffi::lua_settop(L, 0);
                }
            }
        }
    }
}
