//! Templates for spawn messages that start alike. A program that spawns in
//! a loop sends the same function every time, and often the same first
//! argument: an entity's spawn sends the loop's `main` and the entity's
//! code (its `init`, methods and procedures). Decoding them, loading each
//! function's bytecode and making its tables, was a third of an entity's
//! fork. So a node keeps, for a spawn message's leading values (its
//! function and first argument, as encoded), the template of a state that
//! has decoded them (`template.rs`, `codec::keep_prefix`), built the second
//! time they come; a process spawned with them starts as a copy of it, the
//! values on its stack, and decodes only the rest
//! (`codec::decode_after_prefix`; a rest that refers to one of the leading
//! values' tables or functions, which is rare, is decoded whole). Each
//! copy holds values of its own, as decoding would have made them, but
//! for the prototypes of their functions, which every copy shares
//! (`template_code`).
//!
//! Only a first argument that is a table gets a template: decoding one
//! (with functions in it, as an entity's code) is what costs, and what a
//! template holds beyond a plain process's state (the kept values) then
//! stays within the memory the decoding would have taken. With a scalar
//! first argument (a ring's `s.spawn(member, main, ...)`) the copy's first
//! chunk would grow from 4 to 5 KB, and every message a ring passes got
//! ~10% slower.
//!
//! Leading values that share (hold a buffer, a tuple space or a future:
//! attachments, not bytes) or name a module that only a process may load
//! get no template, nor do values over [`MAX_BYTES`]. A node builds at most
//! [`TEMPLATES`] of them in its life (kept for good: booting processes
//! refer to them) and watches at most [`WATCHED`] leading values it has met
//! once.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::{LazyLock, Mutex};

use mlua_sys as ffi;
use synodic_core::hash::FastBuild;
use synodic_core::wire::Shape;
use synodic_core::Message;

use crate::vm::codec::{keep_prefix, Functions};
use crate::vm::template::Template;
use crate::vm::template_code;

/// How many of a message's values lead: the function and its first argument.
pub(crate) const LEADING: usize = 2;
const TEMPLATES: usize = 64;
const WATCHED: usize = 256;
/// Leading values longer than this are not kept (nor compared).
pub(crate) const MAX_BYTES: usize = 8 << 10;

enum Seen {
    /// Met once: a template is built if they come again.
    Once,
    /// Built from these bytes (None: they could not be; see `Template::build`).
    Built(&'static [u8], Option<&'static Template>),
}

/// Leading values by their hash: meeting values once stores nothing else,
/// so spawns whose first argument always differs (a ring's next pid) pay
/// no allocation here.
#[derive(Default)]
struct Cache {
    seen: HashMap<u64, Seen, FastBuild>,
    built: usize,
}

static CACHE: LazyLock<Mutex<Cache>> = LazyLock::new(Default::default);

thread_local! {
    /// The leading values and template this thread found last in [`CACHE`].
    static LAST: std::cell::Cell<Option<(&'static [u8], &'static Template)>> = const { std::cell::Cell::new(None) };
}

/// Where the leading values of a message from elsewhere (another node)
/// lie, if they may have a template: a walk over its bytes, where a spawn
/// made here has its encoder say (`codec::encode_spawn`).
pub(crate) fn leading_values(msg: &Message) -> Option<crate::vm::codec::Leading> {
    let (leading, last) = synodic_core::wire::leading_values(msg, LEADING)?;
    let start = leading.as_ptr() as usize - msg.as_ptr() as usize;
    (last == Shape::Table).then_some(start..start + leading.len())
}

/// The template a process spawned with message `msg` starts as a copy of,
/// when its leading values have one (built now if they come for the
/// second time).
#[cfg(test)]
pub(crate) fn for_message(msg: &[u8]) -> Option<&'static Template> {
    let range = leading_values(&Message::from_slice(msg))?;
    for_leading(msg, &msg[range])
}

/// The template for the leading values `leading` of message `msg` (see
/// `leading_values`), if they have one (built now if they come for the
/// second time).
pub(crate) fn for_leading(msg: &[u8], leading: &[u8]) -> Option<&'static Template> {
    if leading.len() > MAX_BYTES {
        return None;
    }
    // A loop spawns alike: the last template this thread found, without
    // hashing the values or taking the lock.
    if let Some((_, t)) = LAST.get().filter(|(bytes, _)| *bytes == leading) {
        return Some(t);
    }
    let key = {
        let mut h = FastBuild::default().build_hasher();
        h.write(leading);
        h.finish()
    };
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    match cache.seen.get(&key) {
        Some(Seen::Built(bytes, t)) => {
            let t = t.filter(|_| **bytes == *leading)?;
            LAST.set(Some((bytes, t)));
            return Some(t);
        }
        Some(Seen::Once) if cache.built < TEMPLATES => {}
        Some(Seen::Once) => return None,
        None => {
            if cache.seen.len() >= WATCHED {
                cache.seen.retain(|_, s| matches!(s, Seen::Built(..)));
            }
            cache.seen.insert(key, Seen::Once);
            return None;
        }
    }
    // Built under the lock: once per leading values, and a spawn that comes
    // meanwhile with the same ones waits for it rather than building again.
    let function = crate::vm::codec::leading_library(msg);
    let stack_slots = crate::vm::template::stack_slots(function.map(|(module, _)| module));
    let preparer = function.and_then(|(module, field)| PREPARED.iter().find(|(m, f, _)| (*m, *f) == (module, field)));
    // SAFETY: `build` asks that decoding `leading` and preparing need no
    // process: `keep_prefix` refuses modules only a process may load, and
    // the preparers of `PREPARED` are Lua functions of a frozen module that
    // need none.
    let template = unsafe { build(leading, stack_slots, preparer) }.map(|t| &*Box::leak(Box::new(t)));
    cache.built += 1;
    // Kept for good, as the templates are (and the last one found refers to them).
    cache.seen.insert(key, Seen::Built(Box::leak(leading.into()), template));
    template
}

/// The template of a state that has decoded `leading` (see
/// `codec::keep_prefix`) and prepared them with `preparer` if given (see
/// [`PREPARED`]), its main stack starting with `stack_slots` slots (see
/// `template::stack_slots`), if it can be built.
///
/// # Safety
/// As [`Template::build`]'s: `preparer`, if given, needs no process.
unsafe fn build(leading: &[u8], stack_slots: std::ffi::c_int, preparer: Option<&Preparer>) -> Option<Template> {
    // The functions among the values, loaded once for every copy (see
    // `template_code`).
    let noted = std::cell::RefCell::new(Vec::new());
    // SAFETY: decoding needs no process (`keep_prefix` refuses what would).
    let decoded = unsafe { Template::dry_run(stack_slots, |L| keep_prefix(L, leading, Functions::LoadAndNote(&noted)).is_ok()) };
    let bytecode = noted.into_inner();
    let code = if decoded && !bytecode.is_empty() { template_code::load(bytecode) } else { None };
    // SAFETY: decoding needs no process (`keep_prefix` refuses what
    // would), nor does `preparer` (the contract). Each build is a new
    // state of this thread, made after the node's strings were published.
    unsafe {
        Template::build_with_stack(stack_slots, |L| {
            if let Some(code) = code {
                code.enter(L);
            }
            let functions = code.map_or(Functions::Load, Functions::Share);
            let kept = keep_prefix(L, leading, functions).is_ok() && preparer.is_none_or(|p| prepare(L, p));
            if kept {
                crate::vm::util::hold_pids(L);
            }
            kept && (code.is_none() || template_code::apart(L))
        })
    }
}

/// A function of a frozen module whose spawns are prepared (module,
/// function, preparer): the preparer, a function of the same module, turns
/// the spawn's first argument into what the function starts from, and a
/// template runs it once for all the copies (an entity's state table, made
/// from its code, was a quarter of its start). The function takes its
/// first argument prepared or not (a spawn without a template).
type Preparer = (&'static [u8], &'static [u8], &'static [u8]);
const PREPARED: [Preparer; 1] = [(b"synodic.entity.loop", b"main", b"prepare")];

/// Replaces the first argument among the values `codec::keep_prefix` kept
/// in `L` by what `preparer` makes of it; false when it fails.
unsafe fn prepare(L: *mut ffi::lua_State, (module, _, preparer): &Preparer) -> bool {
    // SAFETY: `L` is a template's build state holding what `keep_prefix`
    // kept (the caller's); `with_kept_argument` gives the closure the kept
    // argument on top, under which the preparer goes, and it runs protected.
    unsafe {
        crate::vm::codec::with_kept_argument(L, |L| {
            if !crate::vm::shared::push_frozen_field(L, module, preparer) {
                return false;
            }
            ffi::lua_rotate(L, -2, 1);
            ffi::lua_pcall(L, 1, 1, 0) == ffi::LUA_OK
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vm::codec::tests::TestState;
    use crate::vm::heap::Heap;
    use crate::vm::template::tests::{run, Copy};
    use mlua_sys as ffi;
    use synodic_core::Message;

    /// Makes the values on `L`'s stack globals named `names`, in order, and
    /// empties the stack.
    unsafe fn name_values(L: *mut ffi::lua_State, names: &[&std::ffi::CStr]) {
        // SAFETY: `L` is a test's copy, at rest, with at least `names.len()` values on its stack.
        unsafe {
            for (i, name) in names.iter().enumerate() {
                ffi::lua_pushvalue(L, i as i32 + 1);
                ffi::lua_setglobal(L, name.as_ptr());
            }
            ffi::lua_settop(L, 0);
        }
    }

    /// A message of the values `code` returns, and the template of its
    /// leading values (kept for good, as a node keeps its templates: a
    /// copy reads its records).
    fn template_of(code: &str) -> (Vec<u8>, &'static Template) {
        let msg = TestState::new().encode(code);
        let (leading, _) = synodic_core::wire::leading_values(&msg, LEADING).expect("no shared values");
        // SAFETY: no preparer; decoding needs no process.
        let t = unsafe { build(leading, 0, None) }.expect("a template");
        (msg, Box::leak(Box::new(t)))
    }

    #[test]
    fn a_copy_holds_the_leading_values_and_decodes_the_rest() {
        let (msg, t) = template_of("local t = {7} local function f() return t end return f, {t = t, g = f}, {8}, 'x'");
        let plain = Copy::of(crate::vm::template::base().unwrap(), Heap::new()).unwrap();
        // SAFETY: `plain.L` is a live copy, at rest on this thread.
        let decoded_whole = unsafe {
            assert_eq!(ffi::lua_gettop(plain.L), 0, "a plain state starts with an empty stack");
            let before = plain.heap.used();
            assert_eq!(crate::vm::codec::decode(plain.L, &Message::from_slice(&msg)).unwrap(), 4);
            plain.heap.used() - before
        };
        for _ in 0..2 {
            let c = Copy::of(t, Heap::new()).unwrap();
            // SAFETY: `c.L` is a live copy, at rest on this thread.
            unsafe {
                assert_eq!(ffi::lua_gettop(c.L), 4, "the two values, their length and how many objects they hold");
                let before = c.heap.used();
                assert_eq!(crate::vm::codec::decode_after_prefix(c.L, &Message::from_slice(&msg)).unwrap(), 4);
                assert!(c.heap.used() - before < decoded_whole / 2, "only the rest is decoded");
                name_values(c.L, &[c"f", c"a", c"u", c"x"]);
                assert!(run(c.L, "local t = f() return a.t == t and a.g == f and t[1] == 7 and u[1] == 8 and x == 'x'"));
                assert!(run(c.L, "f()[1] = 9 return true"), "a copy's values are its own");
            }
        }
    }

    /// The leading values' functions are closures over prototypes every
    /// copy shares (`template_code`), and a string a copy makes is their
    /// constant where the text is the same.
    #[test]
    fn copies_share_the_prototypes_of_the_leading_functions() {
        let (_, t) = template_of("local k = 'a needle' return function(x) return x == k, 'a haystack' end, {}");
        let protos: Vec<_> = (0..2)
            .map(|_| {
                let c = Copy::of(t, Heap::new()).unwrap();
                // SAFETY: `c.L` is a live copy, at rest on this thread, with the function at 1.
                unsafe {
                    let proto = crate::vm::shared::synodic_proto_of(c.L, 1) as usize;
                    name_values(c.L, &[c"f"]);
                    assert!(run(c.L, "local yes, hay = f(string.format('%s %s', 'a', 'needle')) return yes and hay == 'a ' .. 'haystack'"));
                    assert!(run(c.L, "collectgarbage() return f('a needle') and not f('a needles')"), "after a collection too");
                    proto
                }
            })
            .collect();
        assert!(protos[0] != 0 && protos[0] == protos[1], "one prototype for both copies");
    }

    /// A rest that refers to a table of the leading values gets that table:
    /// the copy decodes the message whole.
    #[test]
    fn a_rest_that_refers_to_the_leading_values_is_decoded_whole() {
        let (msg, t) = template_of("local t = {7} local function f() return t end return f, {t = t, g = f}, t, f, 'x'");
        let c = Copy::of(t, Heap::new()).unwrap();
        // SAFETY: `c.L` is a live copy, at rest on this thread.
        unsafe {
            assert_eq!(crate::vm::codec::decode_after_prefix(c.L, &Message::from_slice(&msg)).unwrap(), 5);
            assert_eq!(ffi::lua_gettop(c.L), 5, "the values alone");
            name_values(c.L, &[c"f", c"a", c"t", c"g", c"x"]);
            assert!(run(c.L, "return f() == t and a.t == t and a.g == f and g == f and t[1] == 7 and x == 'x'"), "references across the leading values and the rest hold");
        }
    }

    #[test]
    fn values_that_need_a_process_or_share_get_no_template() {
        let st = TestState::new();
        let msg = st.encode("return require('synodic.skel').farm, 1");
        let (leading, _) = synodic_core::wire::leading_values(&msg, LEADING).unwrap();
        // SAFETY: no preparer; decoding needs no process.
        assert!(unsafe { build(leading, 0, None) }.is_none(), "a bundled module that may need a process to load");
        let msg = st.encode("return require('synodic.entity.loop').main, {string.format, math}");
        let (leading, _) = synodic_core::wire::leading_values(&msg, LEADING).unwrap();
        // SAFETY: as above.
        assert!(unsafe { build(leading, 0, None) }.is_some(), "the entity loop and the libraries load anywhere");
        let msg = st.encode("return function() end, require('synodic.buffer').new(4)");
        assert!(synodic_core::wire::leading_values(&msg, LEADING).is_none(), "a buffer is an attachment");
    }

    /// An entity's spawn starts from a copy of a state where the loop's
    /// `prepare` made its state table from its code; code that `prepare`
    /// fails on gets no template (its spawn fails in the process instead).
    #[test]
    fn a_prepared_spawn_starts_from_what_its_preparer_made() {
        let st = TestState::new();
        let preparer = PREPARED.iter().find(|(m, f, _)| (*m, *f) == (&b"synodic.entity.loop"[..], &b"main"[..]));
        let msg = st.encode("return require('synodic.entity.loop').main, {methods = {m = function() return 7 end}, frame_rate = 4}, 'own'");
        let (leading, _) = synodic_core::wire::leading_values(&msg, LEADING).unwrap();
        let stack = crate::vm::template::stack_slots(Some(b"synodic.entity.loop"));
        // SAFETY: the entity loop's `prepare` needs no process.
        let t: &'static Template = Box::leak(Box::new(unsafe { build(leading, stack, preparer) }.expect("a template")));
        let c = Copy::of(t, Heap::new()).unwrap();
        // SAFETY: `c.L` is a live copy, at rest on this thread.
        unsafe {
            assert_eq!(crate::vm::codec::decode_after_prefix(c.L, &Message::from_slice(&msg)).unwrap(), 3);
            name_values(c.L, &[c"f", c"st", c"own"]);
            let prepared = "return st[1] == false and st[9].m() == 7 and st[12] == 0.25 and own == 'own' \
                and require('debug').getregistry()['synodic.entity.running'] == st";
            assert!(run(c.L, prepared), "the first argument is the prepared state table, made the running entity's");
        }
        let msg = st.encode("return require('synodic.entity.loop').main, {persist = 5}");
        let (leading, _) = synodic_core::wire::leading_values(&msg, LEADING).unwrap();
        // SAFETY: the entity loop's `prepare` needs no process.
        assert!(unsafe { build(leading, stack, preparer) }.is_none(), "a preparer that fails");
        // SAFETY: no preparer.
        assert!(unsafe { build(leading, stack, None) }.is_some(), "the same values unprepared");
    }

    /// A spawn made here has its encoder mark the leading values that a
    /// spawn from elsewhere has walked: the same bytes, or none for both.
    #[test]
    fn the_encoder_marks_what_a_walk_finds() {
        let st = TestState::new();
        let sources = [
            "return function() end, {1, {2}, f = print, g = function() return 1 end}, 3",
            "return print, {}, {}",
            "local t = {} return function() return t end, t, 1",
            "return function() end, 'x', {}",
            "return function() end",
            "return function() end, {require('synodic.buffer').new(4)}",
            "return function() end, {}, require('synodic.buffer').new(4)",
            "return function() end, _G",
            "return function() end, string",
        ];
        let mut marked = 0;
        for source in sources {
            let (msg, leading) = st.encode_spawn(source);
            assert_eq!(leading, leading_values(&msg), "{source}");
            marked += leading.is_some() as usize;
        }
        assert_eq!(marked, 5, "leading tables without shared values");
    }

    #[test]
    fn the_second_spawn_alike_builds_and_later_ones_reuse() {
        let st = TestState::new();
        let msg = st.encode("return function(x) return x + 12345 end, {k = 'the_second_spawn_alike'}, 1");
        assert!(for_message(&msg).is_none(), "not the first time");
        let t = for_message(&msg).expect("built the second time");
        let other = st.encode("return function(x) return x + 12345 end, {k = 'the_second_spawn_alike'}, 2, 3");
        assert!(std::ptr::eq(t, for_message(&other).unwrap()), "the same leading values, other values after");
        let c = Copy::of(t, Heap::new()).unwrap();
        assert!(c.ctx.pid_meta && crate::vm::template::tests::has_pid_metatable(c.L), "a copy starts with pids' metatable made");
        let scalar = st.encode("return function(x) return x + 12345 end, 'the_second_spawn_alike'");
        assert!(for_message(&scalar).is_none() && for_message(&scalar).is_none(), "a scalar first argument gets none");
    }
}
