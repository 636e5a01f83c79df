//! Synodic's Lua layer: each process is one Lua 5.4 state, driven as a
//! coroutine by the core's scheduler. This crate creates those states, maps
//! Lua values onto the core's wire format, and gives Lua its API. Blocking
//! calls never block a thread: they yield the process back to the scheduler
//! and resume in a continuation. "SPEC §n" in comments is a section of
//! `docs/spec.md`, the contract programs rely on.
//!
//! Two layers, each a folder:
//!
//! - **`vm/`, the VM layer**: Lua states made, copied, run and kept
//!   small; Lua values carried as the core's messages; blocking as
//!   yielding. It names no API module: what it needs of them it reads from
//!   the registry through `vm::module` (a test, `crates/cli/tests/layers.rs`, holds
//!   that).
//! - **`api/`, the API layer**: the `synodic.*` modules, one file each,
//!   declared once in `api/registry.rs` (name, opener, lazy functions,
//!   bundled Lua source, userdata kinds that cross). A new module is a
//!   file in `api/` and one entry in the registry.
//!
//! | file | Lua name | gives |
//! |---|---|---|
//! | `api/kernel` | `synodic` | spawn, spawn_opt, spawn_on, self, main, send, receive, receive_match, sleep, monitor, demonitor, monitor_node, register, whereis, exit, halt, node, nodes, is_alive, clock |
//! | `api/chan` | `synodic.chan` | new, send, receive, delete |
//! | `api/linda` | `synodic.linda` | open, new, default, formals, where; space methods out, take/in, rd, inp, rdp, take_within, rd_within, count, take_all, clear, eval |
//! | `api/linda/remote` | – | space methods on another node's space: requests, and waiting for their answers |
//! | `api/buffer` | `synodic.buffer` | new, from, fromtable, shares; get/set/`[i]`, #, kind, size, view, bytes, fill, totable |
//! | `api/control` | `synodic.control` | write (to a console), processes, probe |
//! | `api/coroutine` | `coroutine.resume`, `wrap`, `yield`, `isyieldable` | scheduler-aware replacements |
//! | `api/future` | (`synodic.future`'s natives) | future handles, the node's pool workers |
//! | `api/remote` | – | requests another node answers (`spawn_on` elsewhere): sent, then the reply awaited by its tag |
//! | `api/deferred` | – | large buffers of tuples left on their producer's node, and fetching them before a tuple is decoded |
//! | `api/registry` | `synodic.alua`, `synodic.console`, `synodic.entity`, `synodic.entity.loop`, `synodic.future`, `synodic.skel`, `synodic.skel.balance` | the list of modules; the Lua ones bundled from `lualib/` |
//! | `vm/module` | – | what the VM knows of a module, read from the registry |
//! | `vm/bundled` | – | `require` of the bundled Lua modules (`package.preload` loaders) |
//! | `vm/codec` | – | Lua values ⇄ wire format; `Sendable`, the userdata kinds that cross |
//! | `vm/wait` | – | what a blocked process waits for, and withdrawing it |
//! | `vm/state` | – | state creation, `require`, `print`, `warn`; a new state's first collection (`csrc/gc.c`) |
//! | `vm/lazy` | – | lazy library tables (the vendored Lua's hooks, `csrc/lazy.c`); every library's template |
//! | `vm/preempt` | – | the signal handler and hook that make an overrunning process yield (`csrc/preempt.c`) |
//! | `vm/heap` | – | the per-process allocator of a Lua state, and its memory limit |
//! | `vm/prefault` | – | fresh memory for new states, made ready by spinning workers (`synodic_core::idle`) |
//! | `vm/hot` | – | hints of the memory a blocked process will touch, for its wakers (`csrc/hot.c`) |
//! | `vm/peek` | – | one-call reads of plain stack values (`csrc/peek.c`) |
//! | `vm/plain` | – | the codec's short path: messages of plain values in one C call each way (`csrc/plain.c`) |
//! | `vm/dumps` | – | the bytecode of functions a process has sent, kept for its next sends |
//! | `vm/shared` | – | the code and strings every process of a node shares: the bundled modules, compiled once (`csrc/shared.c`) |
//! | `vm/template` | – | prebuilt states that new processes start as copies of (`csrc/template.c`) |
//! | `vm/prefix` | – | templates of states that have decoded a spawn message's leading values, for spawns that start alike |
//! | `vm/cputime` | – | a process's processor time across its runs, for those that ask |
//! | `vm/process` | – | `LuaProcess`, the core `Body` of a Lua process |
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
//!
//! Every `unsafe` block and `unsafe impl` says what it relies on in a
//! `// SAFETY:` note on it or just above (`crates/cli/tests/unsafe_notes.rs`
//! checks); `unsafe_op_in_unsafe_fn` is denied, so the unsafe steps of an
//! `unsafe fn` are blocks with notes of their own. "lib.rs invariant n" in
//! a note is one of the three above. Where a rule is known not to hold, a
//! note says so: `NOT KEPT` for invariant 2 (a value with a destructor
//! alive across a call that may raise or yield: in practice a leak, but
//! `longjmp` over such a frame is undefined behaviour in Rust), `NOT
//! UPHELD` for anything else.

#![deny(unsafe_op_in_unsafe_fn)]
#![allow(non_snake_case)] // `L` is the Lua state, as in the C API.
#![allow(clippy::missing_safety_doc)]

pub mod api;
mod error;
mod start;
pub mod vm;

pub use error::Error;
pub use start::pool_worker;
pub use vm::process::LuaProcess;
