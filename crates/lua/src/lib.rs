//! Synodic's Lua layer: each process is one Lua 5.4 state, driven as a
//! coroutine by the core's scheduler. This crate creates those states, maps
//! Lua values onto the core's wire format, and gives Lua its API. Blocking
//! calls never block a thread: they yield the process back to the scheduler
//! and resume in a continuation.
//!
//! The native surface, in one place:
//!
//! | module | Lua name | gives |
//! |---|---|---|
//! | [`kernel`] | `synodic` | spawn, spawn_on, self, main, send, receive, sleep, monitor, register, whereis, exit, halt, node, nodes, is_alive, clock |
//! | [`chan`] | `synodic.chan` | new, send, receive, delete |
//! | [`linda`] | `synodic.linda` | open, new, default, formals, where; space methods out, take/in, rd, inp, rdp, take_within, rd_within, count, take_all, clear, eval |
//! | [`buffer`] | `synodic.buffer` | new, from, shares; get/set/[i], #, kind, size, view, bytes, fill, totable |
//! | [`codec`] | – | Lua values ⇄ wire format |
//! | [`control`] | `synodic.control` | the console endpoint: cookie, listener, `write` |
//! | [`coroutine`] | `coroutine.resume`, `coroutine.wrap` | scheduler-aware replacements |
//! | [`state`] | – | state creation, lazy standard libraries, `print`; a new state's first collection (`csrc/gc.c`) |
//! | [`preempt`] | – | the signal handler and hook that make an overrunning process yield |
//! | `lazy` | – | library tables filled on first use |
//! | `heap` | – | the per-process allocator of a Lua state |
//! | `hot` | – | hints of the memory a blocked process will touch, for its wakers (`csrc/hot.c`) |
//! | `peek` | – | one-call reads of plain stack values (`csrc/peek.c`) |
//! | `plain` | – | the codec's short path: messages of plain values in one C call each way (`csrc/plain.c`) |
//! | `dumps` | – | the bytecode of functions a process has sent, kept for its next sends |
//! | `lualib` | `synodic.alua`, `synodic.console` | modules written in Lua, bundled from `lualib/` |
//! | [`process`] | – | `LuaProcess`, the core `Body` of a Lua process |

#![allow(non_snake_case)] // `L` is the Lua state, as in the C API.
#![allow(clippy::missing_safety_doc)]

pub mod buffer;
pub mod chan;
pub mod codec;
pub mod control;
pub mod coroutine;
mod ctx;
mod dumps;
mod error;
mod heap;
mod hot;
pub mod kernel;
mod lazy;
pub mod linda;
mod lualib;
mod peek;
mod plain;
pub mod preempt;
pub mod process;
pub mod state;
mod util;
mod wait;

pub use error::Error;
pub use process::LuaProcess;
