//! Synodic's Lua layer: each process is one Lua 5.4 state, driven as a
//! coroutine by the core's scheduler. This crate creates those states, maps
//! Lua values onto the core's wire format, and gives Lua its API. Blocking
//! calls never block a thread: they yield the process back to the scheduler
//! and resume in a continuation. "SPEC §n" in comments is a section of
//! `docs/spec.md`, the contract programs rely on.
//!
//! The native surface, in one place:
//!
//! | module | Lua name | gives |
//! |---|---|---|
//! | [`kernel`] | `synodic` | spawn, spawn_opt, spawn_on, self, main, send, receive, receive_match, sleep, monitor, demonitor, monitor_node, register, whereis, exit, halt, node, nodes, is_alive, clock |
//! | [`chan`] | `synodic.chan` | new, send, receive, delete |
//! | [`linda`] | `synodic.linda` | open, new, default, formals, where; space methods out, take/in, rd, inp, rdp, take_within, rd_within, count, take_all, clear, eval |
//! | [`buffer`] | `synodic.buffer` | new, from, fromtable, shares; get/set/[i], #, kind, size, view, bytes, fill, totable |
//! | [`control`] | `synodic.control` | write (to a console), processes, probe |
//! | [`coroutine`] | `coroutine.resume`, `wrap`, `yield`, `isyieldable` | scheduler-aware replacements |
//! | [`codec`] | – | Lua values ⇄ wire format; `Sendable`, the userdata kinds that cross (buffers, space handles) |
//! | `linda_remote` | – | space methods on another node's space: requests, and waiting for their answers |
//! | `wait` | – | what a blocked process waits for, and withdrawing it |
//! | `remote` | – | requests another node answers (`spawn_on` elsewhere): sent, then the reply awaited by its tag |
//! | [`state`] | – | state creation, `require`, `print`, `warn`; a new state's first collection (`csrc/gc.c`) |
//! | `lazy` | – | lazy library tables (the vendored Lua's hooks, `csrc/lazy.c`); every library's template |
//! | [`preempt`] | – | the signal handler and hook that make an overrunning process yield (`csrc/preempt.c`) |
//! | `heap` | – | the per-process allocator of a Lua state, and its memory limit |
//! | `prefault` | – | fresh memory for new states, made ready by spinning workers (`synodic_core::idle`) |
//! | `hot` | – | hints of the memory a blocked process will touch, for its wakers (`csrc/hot.c`) |
//! | `peek` | – | one-call reads of plain stack values (`csrc/peek.c`) |
//! | `plain` | – | the codec's short path: messages of plain values in one C call each way (`csrc/plain.c`) |
//! | `deferred` | – | large buffers of tuples left on their producer's node, and fetching them before a tuple is decoded |
//! | `dumps` | – | the bytecode of functions a process has sent, kept for its next sends |
//! | `shared` | – | the code and strings every process of a node shares: the bundled modules, compiled once (`csrc/shared.c`) |
//! | `template` | – | prebuilt states that new processes start as copies of (`csrc/template.c`) |
//! | `prefix` | – | templates of states that have decoded a spawn message's leading values, for spawns that start alike |
//! | `lualib` | `synodic.alua`, `synodic.console`, `synodic.entity`, `synodic.entity.loop`, `synodic.future`, `synodic.skel` | modules written in Lua, bundled from `lualib/` |
//! | [`process`] | – | `LuaProcess`, the core `Body` of a Lua process |
//!
//! # Safety
//!
//! Most functions here are `unsafe fn`s over a raw `L: *mut lua_State`.
//! They share three invariants, stated once here:
//!
//! 1. **The state.** `L` is a thread of a state made by
//!    `state::new_state` (its extra space points at the process's `Ctx`),
//!    used by the worker thread that is running the process, or, between
//!    resumes, that holds its body. Stack indices passed in are valid.
//! 2. **Unwinding.** `lua_error` and `lua_yieldk` unwind with `longjmp` and
//!    skip Rust destructors, and so may any API call that raises (a call
//!    into Lua code, a memory error in an allocation). No Rust value with a
//!    destructor may be alive in a frame such a call unwinds through: a
//!    native function does its Rust work in an inner function or closure
//!    that returns a `Result`, drops what it owns, and only then raises
//!    (`util::raise`) or yields (`util::yield_to_scheduler`,
//!    `wait::block`).
//! 3. **Calling Lua.** Rust calls Lua code (which may raise anything) only
//!    through `util::protected`, which also lets an ending process go on
//!    ending.
//!
//! The C helpers in `csrc/` read Lua's internal structures and refuse to
//! compile against any Lua but 5.4.8.

#![allow(non_snake_case)] // `L` is the Lua state, as in the C API.
#![allow(clippy::missing_safety_doc)]

pub mod buffer;
pub mod chan;
pub mod codec;
pub mod control;
pub mod coroutine;
mod ctx;
pub mod future;
mod deferred;
mod dumps;
mod error;
mod heap;
mod hot;
pub mod kernel;
mod lazy;
pub mod linda;
mod linda_remote;
mod lualib;
mod peek;
mod plain;
pub mod preempt;
mod prefault;
mod prefix;
pub mod process;
mod remote;
mod shared;
pub mod state;
mod template;
mod util;
mod wait;

pub use error::Error;
pub use process::LuaProcess;
