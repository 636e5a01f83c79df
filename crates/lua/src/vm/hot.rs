//! Hot-line hints: which memory a blocked Lua process will touch when it is
//! next resumed, handed to its core slot so a waker can start loading it
//! early (`Process::set_hot_lines`). With thousands of processes a woken one
//! has left the caches, and resuming it is a chain of dependent misses (state,
//! frame, closure, prototype, code, upvalues); loaded together ahead of time,
//! they cost about one miss instead of a dozen in a row. The walk over Lua's
//! internal structures is in `csrc/hot.c`; it runs again only when the
//! process blocks somewhere new.

use std::ffi::c_int;

use mlua_sys as ffi;
use synodic_core::process::HOT_WINDOW;
use synodic_core::Process;

use crate::vm::heap::{Heap, FIRST_CHUNK};
use crate::vm::template::Template;

extern "C" {
    /// Marks in `map` the lines of the 128-line window at `base` that `L`,
    /// blocked, will touch when resumed; returns 0 and leaves `map` alone
    /// when `L` blocks at the place `last` recorded.
    fn synodic_hot_lines(L: *mut ffi::lua_State, base: *const u8, map: *mut [u64; 2], last: *mut usize) -> c_int;
    /// Where `L` stands, blocked: what `last` records (offsets from `base`
    /// where they lie in its window, so copies of one template compare).
    fn synodic_hot_place(L: *mut ffi::lua_State, base: *const u8) -> usize;
}

// The hint window must cover the first heap chunk (from the start of its
// first line), where a process's hot objects live.
const _: () = assert!(FIRST_CHUNK + 63 <= HOT_WINDOW);

/// Where a process last blocked, so the hint is recomputed only when that changes.
#[derive(Default)]
pub(crate) struct HotPlace(usize);

impl HotPlace {
    /// Updates `me`'s hint for the blocked state `L` whose memory is `heap`.
    /// A state that blocks for the first time since it started as a copy
    /// of `template` takes the hint of the template's first copy when it
    /// blocks where that one did (every entity blocks first at the same
    /// place, with the same layout: the walk was 3% of an entity's fork),
    /// or gives the template its own.
    ///
    /// # Safety
    /// `L` must be a state created over `heap`, blocked in a yield.
    pub(crate) unsafe fn note(&mut self, L: *mut ffi::lua_State, heap: &Heap, me: &Process, template: Option<&Template>) {
        let base = heap.first_chunk_line();
        if let (Some(t), false) = (template, base.is_null()) {
            // SAFETY: `L` is blocked in a yield (the contract), so the C walk
            // finds its frames at rest; it only reads them.
            let place = unsafe { synodic_hot_place(L, base) };
            if let Some(&(first, map)) = t.hot_hint().get().filter(|(first, _)| *first == place) {
                self.0 = first;
                me.set_hot_lines(base, map);
                return;
            }
            // SAFETY: this function's contract, passed on.
            if let Some(map) = unsafe { self.lines(L, heap) } {
                me.set_hot_lines(base, map);
                let _ = t.hot_hint().set((self.0, map));
            }
            return;
        }
        // SAFETY: this function's contract, passed on.
        if let Some(map) = unsafe { self.lines(L, heap) } {
            me.set_hot_lines(base, map);
        }
    }

    /// The new map, or `None` when it has not changed (or there is no chunk yet).
    ///
    /// # Safety
    /// As [`HotPlace::note`]'s.
    unsafe fn lines(&mut self, L: *mut ffi::lua_State, heap: &Heap) -> Option<[u64; 2]> {
        let base = heap.first_chunk_line();
        let mut map = [0u64; 2];
        // SAFETY: `L` is blocked in a yield (the contract); the C walk only
        // reads its structures and writes `map` and `self.0`, both ours.
        (!base.is_null() && unsafe { synodic_hot_lines(L, base, &mut map, &mut self.0) } != 0).then_some(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vm::codec::tests::TestState;

    /// Copies of one template stand at the same place relative to their
    /// first chunk, where their state, frame and stack are (so copies that
    /// block alike may share the template's hint), though at different
    /// addresses.
    #[test]
    fn copies_of_a_template_stand_at_one_place() {
        let t = crate::vm::template::base().expect("a template");
        let copies: Vec<_> = (0..2).map(|_| crate::vm::template::tests::Copy::of(t, Heap::new()).unwrap()).collect();
        // SAFETY: each `c.L` is a live copy at rest on this thread.
        let places: Vec<usize> = copies.iter().map(|c| unsafe { synodic_hot_place(c.L, c.heap.first_chunk_line()) }).collect();
        assert_ne!(copies[0].L, copies[1].L);
        assert_eq!(places[0], places[1]);
    }

    /// A bit of `map` for the line holding `p`, if it lies in the window.
    fn marked(map: [u64; 2], base: *const u8, p: *const u8) -> Option<bool> {
        let line = (p as usize).checked_sub(base as usize)? / 64;
        (line < 128).then(|| map[line / 64] >> (line % 64) & 1 == 1)
    }

    #[test]
    fn a_blocked_thread_marks_its_state_and_is_not_walked_twice() {
        let st = TestState::new();
        // SAFETY: `L` is this test's `TestState` and `co` a thread of it,
        // yielded before each walk.
        unsafe {
            let L = st.L;
            let src = "local step = {by = 1}
                       return coroutine.create(function()
                         local n = 0
                         while true do n = n + step.by; coroutine.yield(n) end
                       end)";
            assert_eq!(ffi::luaL_loadstring(L, std::ffi::CString::new(src).unwrap().as_ptr()), 0);
            assert_eq!(ffi::lua_pcall(L, 0, 1, 0), 0);
            let co = ffi::lua_tothread(L, -1);
            let mut nres = 0;
            assert_eq!(ffi::lua_resume(co, L, 0, &mut nres), ffi::LUA_YIELD);
            ffi::lua_pop(co, nres);

            let heap = crate::vm::heap::of_state(L).unwrap();
            let base = heap.first_chunk_line();
            let mut place = HotPlace::default();
            let map = place.lines(co, heap).expect("a first walk gives a map");
            assert!(map[0] | map[1] != 0, "some line of the blocked thread is hot");
            if let Some(bit) = marked(map, base, co as *const u8) {
                assert!(bit, "the thread's own state is among its hot lines");
            }
            assert_eq!(place.lines(co, heap), None, "blocked at the same place: no second walk");

            assert_eq!(ffi::lua_resume(co, L, 0, &mut nres), ffi::LUA_YIELD);
            ffi::lua_pop(co, nres);
            assert_eq!(place.lines(co, heap), None, "a loop blocks at the same place each time");
        }
    }
}
