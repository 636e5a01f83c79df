//! What the API layer's unit tests run on: a node of their own, in the
//! test's OS process (no binary, no sockets), and two ways to use it.
//!
//! - [`on_node`] runs a Rust check as the node's main process, with the
//!   runtime and that process in hand; [`ProcState`] is a Lua state of that
//!   process (as `vm::codec::tests::TestState`, but its context entered as a
//!   resume enters it), where Lua code and the API's Rust functions run as
//!   they do in a process, except that nothing can block (a call that
//!   would, raises: the state's main thread cannot yield).
//! - [`script`] runs Lua source as a real main process, for what blocks
//!   (receive, sleep, a `take` that waits, a future's `get`).
//!
//! Each call starts a node and shuts it down: tests do not share one.

use std::ffi::c_int;

use mlua_sys as ffi;
use synodic_core::{Config, ExitReason, Process, RunEnd, Runtime, Step};

use crate::vm::ctx::{Boot, Ctx};
use crate::vm::heap::Heap;

/// A node of two workers, with the pool workers futures need.
fn node() -> Runtime {
    crate::start::ready();
    let config = Config { workers: 2, node_name: "test".into(), pool_worker: Some(crate::start::pool_worker), ..Config::default() };
    Runtime::start(config).expect("a node starts")
}

/// A check, run in a process of the node.
type CheckFn = Box<dyn FnOnce(&Runtime, &'static Process) + Send>;

/// A body that runs a check once and ends: normally, or with the check's
/// panic as its error.
struct Check(Option<CheckFn>);

impl synodic_core::Body for Check {
    fn resume(&mut self, rt: &Runtime, me: &'static Process) -> Step {
        let Some(check) = self.0.take() else { return Step::Exited(ExitReason::Normal) };
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(rt, me))) {
            Ok(()) => Step::Exited(ExitReason::Normal),
            Err(e) => {
                let text = e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()));
                Step::Exited(ExitReason::Error(text.unwrap_or_else(|| "the check panicked".into())))
            }
        }
    }
}

/// Runs `check` as the main process of a node of its own; fails the test
/// if the check does.
pub(crate) fn on_node(check: impl FnOnce(&Runtime, &'static Process) + Send + 'static) {
    let rt = node();
    let end = rt.run_main(Box::new(Check(Some(Box::new(check)))));
    rt.shutdown();
    assert_eq!(end, RunEnd::Exited(ExitReason::Normal));
}

/// Runs Lua `source` as the main script of a node of its own and says how
/// the run ended.
pub(crate) fn script(source: &str) -> RunEnd {
    static SEQ: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("synodic-lua-unit-{}-{n}.lua", std::process::id()));
    std::fs::write(&path, source).expect("the script is written");
    let rt = node();
    let end = rt.run_main(crate::vm::process::LuaProcess::main_script(path.to_string_lossy().into_owned(), Vec::new()));
    rt.shutdown();
    let _ = std::fs::remove_file(&path);
    end
}

/// Runs Lua `source` as a main script; fails the test unless it ends normally.
pub(crate) fn script_ok(source: &str) {
    assert_eq!(script(source), RunEnd::Exited(ExitReason::Normal));
}

/// A Lua state of the running process `me` of `rt` (see the module doc).
pub(crate) struct ProcState {
    pub(crate) L: *mut ffi::lua_State,
    _ctx: Box<Ctx>,
    heap: Box<Heap>,
}

impl ProcState {
    pub(crate) fn new(rt: &Runtime, me: &'static Process) -> ProcState {
        let mut ctx = Box::new(Ctx::new(Boot::Spawned(None)));
        let mut heap = Box::new(Heap::new());
        // SAFETY: the context and heap are boxed and live as long as the state (dropped after it, in `drop`).
        let L = unsafe { crate::vm::state::new_state(&mut *ctx, &mut *heap, None) }.expect("a state");
        ctx.enter(rt, me);
        ProcState { L, _ctx: ctx, heap }
    }

    /// Runs Lua `code`; its results stay on the stack (the stack is emptied
    /// first). `Err`: the error it raised, as text.
    pub(crate) fn eval(&self, code: &str) -> Result<c_int, String> {
        let L = self.L;
        // SAFETY: `L` is this state's, valid until drop; the chunk runs
        // protected (`lua_pcall`), so nothing it raises unwinds through here.
        unsafe {
            ffi::lua_settop(L, 0);
            if ffi::luaL_loadbufferx(L, code.as_ptr().cast(), code.len(), c"=unit".as_ptr(), c"t".as_ptr()) != ffi::LUA_OK
                || ffi::lua_pcall(L, 0, ffi::LUA_MULTRET, 0) != ffi::LUA_OK
            {
                let e = crate::vm::util::pop_error(L);
                ffi::lua_settop(L, 0);
                return Err(e);
            }
            Ok(ffi::lua_gettop(L))
        }
    }

    /// Runs Lua `code`, which must not raise; panics with its error.
    pub(crate) fn check(&self, code: &str) {
        if let Err(e) = self.eval(code) {
            panic!("{e}\nin:\n{code}");
        }
    }

    /// The error `code` raises; panics if it raises none.
    pub(crate) fn error_of(&self, code: &str) -> String {
        match self.eval(code) {
            Ok(_) => panic!("no error from:\n{code}"),
            Err(e) => e,
        }
    }
}

impl Drop for ProcState {
    fn drop(&mut self) {
        // SAFETY: the state was made by `new_state` with this heap, and is closed once.
        unsafe { crate::vm::state::close_state(self.L, &mut self.heap) }
    }
}
