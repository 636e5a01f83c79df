//! `LuaProcess`: the core `Body` of a Lua process. Its state is created on
//! the first resume (so spawning only encodes the function and arguments, and
//! the new state is built on whichever worker runs it), then driven with
//! `lua_resume` until it ends.
//!
//! One resume, step by step:
//!
//! 1. point the context at this resume's runtime and process;
//! 2. on the first resume, create the state and push the `boot` function,
//!    which decodes the spawn message (or loads the main script) and calls it;
//! 3. `lua_resume`; a yield means what the context's `pending` says
//!    (preempted, blocked, exiting); a return is a normal end;
//! 4. an error is reported on stderr with the pid and a traceback, and
//!    becomes the exit reason.

use std::ffi::{c_int, CString};

use mlua_sys as ffi;
use synodic_core::{Body, ExitReason, Message, Pid, Process, Runtime, Spawn, Step};

use crate::vm::codec;
use crate::vm::ctx::{ctx, Boot, Ctx, Pending};
use crate::vm::heap::Heap;
use crate::vm::hot::HotPlace;
use crate::vm::state::new_state;
use crate::vm::util::{push_bytes, raise, to_bytes};

/// `repr(C)`: the state pointer and the context come first, in the two lines
/// a waker warms (see `Runtime::warm` in synodic-core).
#[repr(C)]
pub struct LuaProcess {
    L: *mut ffi::lua_State,
    /// The context and heap are reached by pointer from the state; they live
    /// inside this (boxed, so never moving) struct, and the state is closed first.
    ctx: Ctx,
    hot: HotPlace,
    heap: Heap,
}

// SAFETY: the state is only touched by the worker currently running the process.
unsafe impl Send for LuaProcess {}

impl LuaProcess {
    /// Starts a process running the function and arguments of the spawn
    /// message `msg`, with a memory limit in bytes if given (else the node's).
    pub(crate) fn spawn_message(rt: &Runtime, msg: Message, max_memory: Option<u64>) -> Result<Pid, synodic_core::Error> {
        let leading = crate::vm::prefix::leading_values(&msg);
        LuaProcess::spawn_marked(rt, msg, leading, max_memory)
    }

    /// [`LuaProcess::spawn_message`] of a message whose leading values are known
    /// (`codec::encode_spawn`).
    pub(crate) fn spawn_marked(rt: &Runtime, msg: Message, leading: Option<crate::vm::codec::Leading>, max_memory: Option<u64>) -> Result<Pid, synodic_core::Error> {
        let heap = max_memory.map_or_else(Heap::new, Heap::limited);
        let template = leading
            .and_then(|range| crate::vm::prefix::for_leading(&msg, msg.get(range)?))
            .or_else(|| crate::vm::codec::leading_module(&msg).and_then(crate::vm::template::of_module));
        rt.spawn_with(LuaProcess::booting(Boot::Spawned(template), heap), Spawn { first: Some(msg), max_memory })
    }

    /// The main process: runs `path` with `args` as the `lua` command would.
    pub(crate) fn script_body(path: String, args: Vec<String>) -> Box<dyn Body> {
        LuaProcess::booting(Boot::Script(Box::new((path, args))), Heap::new())
    }

    /// A process running `require(module).main(arg)`.
    pub(crate) fn module_body(module: &'static str, arg: i64) -> Box<dyn Body> {
        LuaProcess::booting(Boot::Module(Box::new((module, arg))), Heap::new())
    }

    fn booting(boot: Boot, heap: Heap) -> Box<dyn Body> {
        Box::new(LuaProcess { L: std::ptr::null_mut(), ctx: Ctx::new(boot), hot: HotPlace::default(), heap })
    }
}

impl Drop for LuaProcess {
    fn drop(&mut self) {
        if !self.L.is_null() {
            unsafe { crate::vm::state::close_state(self.L, &mut self.heap) };
            self.L = std::ptr::null_mut();
        }
    }
}

impl Body for LuaProcess {
    fn describe(&mut self) -> String {
        if self.L.is_null() {
            return "not started yet".into();
        }
        let doing = match self.ctx.pending {
            Pending::Block if self.ctx.blocked.is_some() => "waiting on a channel or a tuple space",
            Pending::Block => "waiting for a message or the clock",
            Pending::Preempt => "computing (preempted)",
            _ => "ready to run",
        };
        // SAFETY: between resumes the state is suspended and only this worker holds it.
        format!("{doing}\n{}", unsafe { self.traceback() })
    }

    fn resume(&mut self, rt: &Runtime, me: &'static Process) -> Step {
        self.ctx.enter(rt, me);
        let mut nargs = 0;
        unsafe {
            if self.L.is_null() {
                self.heap.attach(me, rt.max_process_memory());
                let template = match self.ctx.boot {
                    Some(Boot::Spawned(t)) => t,
                    _ => None,
                };
                match new_state(&mut self.ctx, &mut self.heap, template) {
                    Some(L) => self.L = L,
                    None if self.heap.is_limited() => return Step::Exited(ExitReason::Error(synodic_core::MEMORY_LIMIT.into())),
                    None => return Step::Exited(ExitReason::Error("cannot create a Lua state: out of memory".into())),
                }
                // A copy of a prefix template starts with values on its
                // stack: `boot` gets them as its arguments (see `prepare_spawned`).
                nargs = ffi::lua_gettop(self.L);
                ffi::lua_pushcfunction(self.L, boot);
                ffi::lua_rotate(self.L, 1, 1);
            }
            let L = self.L;
            let mut nres = 0;
            if self.ctx.timed {
                crate::vm::cputime::run_starts(L);
            }
            crate::vm::preempt::enter(L);
            let status = ffi::lua_resume(L, std::ptr::null_mut(), nargs, &mut nres);
            crate::vm::preempt::leave(L);
            // (A process's clock may start during a run: it is counted from then.)
            if self.ctx.timed {
                crate::vm::cputime::run_ends(L);
            }
            match status {
                ffi::LUA_YIELD => {
                    if nres > 0 {
                        ffi::lua_settop(L, -nres - 1);
                    }
                    match self.ctx.pending {
                        Pending::Block => {
                            if rt.wakes_cold() {
                                self.hot.note(L, &self.heap, me, self.ctx.take_started());
                            }
                            Step::Blocked
                        }
                        Pending::Exit => Step::Exited(self.ctx.exit.take().map_or(ExitReason::Normal, |r| *r)),
                        Pending::Preempt | Pending::None => Step::Preempted,
                    }
                }
                ffi::LUA_OK => Step::Exited(ExitReason::Normal),
                // An `exit` that unwound ends the process with its reason
                // (whatever error a closing method raised on the way).
                _ if self.ctx.exit.is_some() => Step::Exited(self.ctx.exit.take().map_or(ExitReason::Normal, |r| *r)),
                ffi::LUA_ERRMEM if self.heap.is_limited() => Step::Exited(ExitReason::Error(synodic_core::MEMORY_LIMIT.into())),
                _ => Step::Exited(self.failure(me)),
            }
        }
    }
}

impl LuaProcess {
    /// Where the process stands and its call stack: the traceback of its
    /// suspended main thread.
    unsafe fn traceback(&mut self) -> String {
        let L = self.L;
        let Some(T) = helper_thread(L) else { return String::new() };
        let text = traceback_of(T, L);
        ffi::lua_settop(L, -2);
        text
    }

    /// Reports the error on top of the dead state and turns it into an exit reason.
    unsafe fn failure(&mut self, me: &Process) -> ExitReason {
        let L = self.L;
        let Some(T) = helper_thread(L) else { return ExitReason::Error("not enough memory".into()) };
        // The error object, on the helper thread (the dead one may not call).
        ffi::lua_pushvalue(L, -2);
        ffi::lua_xmove(L, T, 1);
        let text = match ffi::lua_type(T, 1) {
            ffi::LUA_TSTRING | ffi::LUA_TNUMBER => to_bytes(T, 1).map(|b| String::from_utf8_lossy(b).into_owned()),
            _ => None,
        };
        let reason = match &text {
            Some(t) => ExitReason::Error(t.clone()),
            // A nil error says so: a DOWN reason is never nil.
            None if ffi::lua_isnil(T, 1) != 0 => ExitReason::Error(String::new()),
            None => codec::encode(T, 1, 1).map(|m| ExitReason::Value(m.to_vec())).unwrap_or_else(|_| ExitReason::Error(String::new())),
        };
        let text = text.unwrap_or_else(|| format!("(error object is a {} value)", crate::vm::util::type_name(T, 1)));
        if self.ctx.load_error {
            eprintln!("synodic: {text}");
        } else {
            let tb = traceback_of(T, L);
            eprintln!("synodic: error in process {}: {text}\n{tb}", me.pid());
        }
        match reason {
            ExitReason::Error(e) if e.is_empty() => ExitReason::Error(text),
            r => r,
        }
    }
}

/// A fresh thread of `L`'s state, pushed on `L`: a suspended or dead thread
/// may not call anything itself, so work that may (a traceback finds
/// function names in the loaded modules, which may be made then; the codec)
/// runs on this one. `None` when there is no memory for it.
unsafe fn helper_thread(L: *mut ffi::lua_State) -> Option<*mut ffi::lua_State> {
    if ffi::lua_checkstack(L, 3) == 0 {
        return None;
    }
    Some(ffi::lua_newthread(L))
}

/// The traceback of `L`, made by `T`.
unsafe fn traceback_of(T: *mut ffi::lua_State, L: *mut ffi::lua_State) -> String {
    ffi::luaL_traceback(T, L, std::ptr::null(), 0);
    let text = to_bytes(T, -1).map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or_default();
    ffi::lua_settop(T, -2);
    text
}

/// Continuation stages of `boot` (its `lua_KContext`).
const SPAWNED: ffi::lua_KContext = 0;
const MAIN_CHUNK: ffi::lua_KContext = 1;
const MAIN_EVENTS: ffi::lua_KContext = 2;

/// The first function a process runs: unpacks its boot data and calls it.
unsafe extern "C-unwind" fn boot(L: *mut ffi::lua_State) -> c_int {
    let (prepared, stage) = match ctx(L).boot.take() {
        Some(Boot::Spawned(template)) => {
            ctx(L).boot = template.map(Boot::Started);
            (prepare_spawned(L), SPAWNED)
        }
        Some(Boot::Script(script)) => {
            let (path, args) = *script;
            (prepare_script(L, path, args), MAIN_CHUNK)
        }
        Some(Boot::Module(m)) => (prepare_module(L, m.0, m.1), SPAWNED),
        Some(Boot::Started(_)) | None => (Err("process started twice".into()), SPAWNED),
    };
    match prepared {
        Ok(nargs) => {
            ffi::lua_callk(L, nargs, 0, stage, Some(boot_k));
            boot_k(L, ffi::LUA_OK, stage)
        }
        Err(e) => raise(L, e),
    }
}

/// After the main chunk returns: if it used the agents module, the main
/// script goes on handling events (SPEC §3).
unsafe extern "C-unwind" fn boot_k(L: *mut ffi::lua_State, _status: c_int, stage: ffi::lua_KContext) -> c_int {
    if stage == MAIN_CHUNK {
        ffi::lua_getfield(L, ffi::LUA_REGISTRYINDEX, ffi::LUA_LOADED_TABLE);
        if ffi::lua_getfield(L, -1, c"synodic.alua".as_ptr()) == ffi::LUA_TTABLE
            && ffi::lua_getfield(L, -1, c"_main_loop".as_ptr()) == ffi::LUA_TFUNCTION
        {
            ffi::lua_callk(L, 0, 0, MAIN_EVENTS, Some(boot_k));
        }
    }
    0
}

/// Pushes the spawned function and its arguments (the spawn message, first
/// in the mailbox); returns the argument count. A copy of a prefix template
/// has the message's leading values decoded already: `boot`'s arguments.
unsafe fn prepare_spawned(L: *mut ffi::lua_State) -> Result<c_int, String> {
    let kept = ffi::lua_gettop(L) > 0;
    let Some(msg) = ctx(L).proc().pop_message() else {
        ffi::lua_settop(L, 0);
        return Err("spawn: the spawn message is missing".into());
    };
    let n = if kept { codec::decode_after_prefix(L, &msg) } else { codec::decode(L, &msg) };
    let n = n.map_err(|e| format!("spawn: {e}"))?;
    if n < 1 || ffi::lua_type(L, 1) != ffi::LUA_TFUNCTION {
        return Err("spawn: the message does not start with a function".into());
    }
    Ok(n - 1)
}

/// Pushes `require(module).main` and `arg`.
unsafe fn prepare_module(L: *mut ffi::lua_State, module: &str, arg: i64) -> Result<c_int, String> {
    ffi::lua_settop(L, 0);
    crate::vm::state::push_module(L, module.as_bytes())?;
    if ffi::lua_getfield(L, -1, c"main".as_ptr()) != ffi::LUA_TFUNCTION {
        return Err(format!("module {module} has no main function"));
    }
    ffi::lua_pushinteger(L, arg);
    Ok(1)
}

/// Loads the main script, sets `arg`, pushes the chunk and its arguments.
unsafe fn prepare_script(L: *mut ffi::lua_State, path: String, args: Vec<String>) -> Result<c_int, String> {
    ffi::lua_settop(L, 0);
    let cpath = CString::new(path.clone()).map_err(|_| format!("cannot open {path}: the name contains a NUL byte"))?;
    if ffi::luaL_loadfilex(L, cpath.as_ptr(), std::ptr::null()) != ffi::LUA_OK {
        ctx(L).load_error = true;
        let msg = to_bytes(L, -1).map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or_default();
        return Err(msg);
    }
    ffi::lua_createtable(L, args.len() as c_int, 2);
    push_bytes(L, b"synodic");
    ffi::lua_rawseti(L, -2, -1);
    push_bytes(L, path.as_bytes());
    ffi::lua_rawseti(L, -2, 0);
    for (i, a) in args.iter().enumerate() {
        push_bytes(L, a.as_bytes());
        ffi::lua_rawseti(L, -2, i as i64 + 1);
    }
    ffi::lua_setglobal(L, c"arg".as_ptr());
    for a in &args {
        push_bytes(L, a.as_bytes());
    }
    Ok(args.len() as c_int)
}

#[cfg(test)]
mod size_tests {
    /// A process's own record must stay within the allocator's 512-byte
    /// class: it is paid by every idle process.
    #[test]
    fn a_process_record_stays_small() {
        let size = std::mem::size_of::<super::LuaProcess>();
        assert!(size <= 512, "LuaProcess is {size} bytes");
    }
}
