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
use crate::vm::command_line::{self, CommandLine, Script};
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
        LuaProcess::booting(Boot::Script(Box::new(CommandLine::script(path, args))), Heap::new())
    }

    /// The main process of a `lua`-style command line: `driver`'s `main`
    /// does what it asks (see `command_line`).
    pub(crate) fn driven_body(driver: &'static str, cl: CommandLine) -> Box<dyn Body> {
        LuaProcess::booting(Boot::Driven(Box::new((driver, cl))), Heap::new())
    }

    /// A process running `require(module).main(arg)`.
    pub(crate) fn module_body(module: &'static str, arg: crate::vm::ctx::ModuleArg) -> Box<dyn Body> {
        LuaProcess::booting(Boot::Module(Box::new((module, arg))), Heap::new())
    }

    fn booting(boot: Boot, heap: Heap) -> Box<dyn Body> {
        Box::new(LuaProcess { L: std::ptr::null_mut(), ctx: Ctx::new(boot), hot: HotPlace::default(), heap })
    }
}

impl Drop for LuaProcess {
    fn drop(&mut self) {
        if !self.L.is_null() {
            // SAFETY: `L` was made over `self.heap` by `resume` and is not
            // running (the body is being dropped); it is not used again.
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
        let (trace, stats) = unsafe { (self.traceback(), self.stats()) };
        match stats {
            Some(stats) => format!("{doing}\n{trace}\nstats: {stats}"),
            None => format!("{doing}\n{trace}"),
        }
    }

    fn resume(&mut self, rt: &Runtime, me: &'static Process) -> Step {
        self.ctx.enter(rt, me);
        let mut nargs = 0;
        if self.L.is_null() {
            self.heap.attach(me, rt.max_process_memory());
            let template = match self.ctx.boot {
                Some(Boot::Spawned(t)) => t,
                _ => None,
            };
            // SAFETY: `ctx` and `heap` live in this boxed body (it never
            // moves) and outlive the state (`Drop` closes it first); `heap`
            // is empty (a state is made on the first resume only).
            match unsafe { new_state(&mut self.ctx, &mut self.heap, template) } {
                Some(L) => self.L = L,
                None if self.heap.is_limited() => return Step::Exited(ExitReason::Error(synodic_core::MEMORY_LIMIT.into())),
                None => return Step::Exited(ExitReason::Error("cannot create a Lua state: out of memory".into())),
            }
            // A copy of a prefix template starts with values on its
            // stack: `boot` gets them as its arguments (see `prepare_spawned`).
            // SAFETY: the new state, at rest on this worker; `boot` goes
            // under the values it starts with. (An error here, memory, has
            // no protected call to go to: the panic handler aborts.)
            unsafe {
                nargs = ffi::lua_gettop(self.L);
                ffi::lua_pushcfunction(self.L, boot);
                ffi::lua_rotate(self.L, 1, 1);
            }
        }
        let L = self.L;
        let mut nres = 0;
        // NOT UPHELD: the run writes `self.ctx` (and `self.heap`, through the
        // allocator) through the raw pointers the state keeps, while `&mut
        // self` is live (and marked `noalias`) across `lua_resume`; reading
        // `pending`, `timed` and `exit` after it relies on the compiler not
        // assuming the call left them unchanged.
        // SAFETY: `L` is this process's main thread, at rest between resumes
        // and run only by the worker running this body; its context was
        // entered above. `lua_resume` catches what the run raises.
        let status = unsafe {
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
            status
        };
        // What a listing shows of it (`lua_gc` only reads two counters).
        // SAFETY: the state is at rest after the resume, on this worker.
        me.note_memory(unsafe { ffi::lua_gc(L, ffi::LUA_GCCOUNT, 0) } as u64 * 1024);
        match status {
            ffi::LUA_YIELD => {
                if nres > 0 {
                    // SAFETY: the thread yielded `nres` values on top; they are dropped.
                    unsafe { ffi::lua_settop(L, -nres - 1) };
                }
                match self.ctx.pending {
                    Pending::Block => {
                        if rt.wakes_cold() {
                            // SAFETY: `L` was made over `self.heap` and is blocked in a yield.
                            unsafe { self.hot.note(L, &self.heap, me, self.ctx.take_started()) };
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
            // SAFETY: the thread died with its error on top, as `failure` asks.
            _ => Step::Exited(unsafe { self.failure(me) }),
        }
    }
}

impl LuaProcess {
    /// Where the process stands and its call stack: the traceback of its
    /// suspended main thread.
    ///
    /// # Safety
    /// `self.L` is a live state, not running.
    unsafe fn traceback(&mut self) -> String {
        let L = self.L;
        // SAFETY: `L` is live and not running (the contract). No protected
        // call is active between resumes: an error (memory) in these calls
        // goes to the panic handler, which aborts, so nothing unwinds.
        unsafe {
            let Some(T) = helper_thread(L) else { return String::new() };
            let text = traceback_of(T, L);
            ffi::lua_settop(L, -2);
            text
        }
    }

    /// What the process's `registry["synodic.stats"]` function (set by a
    /// skeleton evaluator or an entity, see `synodic._role`) says of it, if
    /// it has one; run protected, on a helper thread.
    ///
    /// # Safety
    /// As [`LuaProcess::traceback`]'s.
    unsafe fn stats(&mut self) -> Option<String> {
        let L = self.L;
        // SAFETY: `L` is live and not running (the contract); the function
        // runs in protected mode on the helper thread (an error, or a yield
        // it cannot make, gives nothing); what is pushed is popped.
        unsafe {
            let T = helper_thread(L)?;
            let text = if ffi::lua_getfield(T, ffi::LUA_REGISTRYINDEX, c"synodic.stats".as_ptr()) == ffi::LUA_TFUNCTION && ffi::lua_pcall(T, 0, 1, 0) == ffi::LUA_OK {
                to_bytes(T, -1).map(|b| String::from_utf8_lossy(b).into_owned())
            } else {
                None
            };
            ffi::lua_settop(T, 0);
            ffi::lua_settop(L, -2);
            text
        }
    }

    /// Reports the error on top of the dead state and turns it into an exit reason.
    ///
    /// # Safety
    /// `self.L` is a thread that died of an error, with it on top.
    unsafe fn failure(&mut self, me: &Process) -> ExitReason {
        let L = self.L;
        // SAFETY: the contract; as in `traceback`, an error here aborts
        // rather than unwinds (no protected call is active after a resume).
        let Some(T) = (unsafe { helper_thread(L) }) else { return ExitReason::Error("not enough memory".into()) };
        // The error object, on the helper thread (the dead one may not call).
        // SAFETY: as above; the error is under the helper thread pushed on `L`.
        let text = unsafe {
            ffi::lua_pushvalue(L, -2);
            ffi::lua_xmove(L, T, 1);
            match ffi::lua_type(T, 1) {
                ffi::LUA_TSTRING | ffi::LUA_TNUMBER => to_bytes(T, 1).map(|b| String::from_utf8_lossy(b).into_owned()),
                _ => None,
            }
        };
        let reason = match &text {
            Some(t) => ExitReason::Error(t.clone()),
            // A nil error says so: a DOWN reason is never nil.
            // SAFETY: as above (the error is at 1 on `T`).
            None if unsafe { ffi::lua_isnil(T, 1) } != 0 => ExitReason::Error(String::new()),
            // SAFETY: as above; `T` is a thread of the process's state, able to call.
            None => unsafe { codec::encode(T, 1, 1) }.map(|m| ExitReason::Value(m.to_vec())).unwrap_or_else(|_| ExitReason::Error(String::new())),
        };
        // SAFETY: as above.
        let text = text.unwrap_or_else(|| format!("(error object is a {} value)", unsafe { crate::vm::util::type_name(T, 1) }));
        if self.ctx.load_error {
            eprintln!("synodic: {text}");
        } else {
            // SAFETY: as above; `T` makes the traceback of the dead `L`.
            let tb = unsafe { traceback_of(T, L) };
            let node = self.ctx.rt().node_name();
            synodic_core::log::write(synodic_core::log::Level::Error, &node, Some(me.pid()), &text, Some(&tb));
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
    // SAFETY: `L` is a live state, not running (the caller's); the stack is
    // checked for room before the thread is pushed.
    unsafe {
        if ffi::lua_checkstack(L, 3) == 0 {
            return None;
        }
        Some(ffi::lua_newthread(L))
    }
}

/// The traceback of `L`, made by `T`.
unsafe fn traceback_of(T: *mut ffi::lua_State, L: *mut ffi::lua_State) -> String {
    // SAFETY: `T` is a helper thread of `L`'s state (the caller's), able
    // to call; the traceback pushed on it is copied, then popped.
    unsafe {
        ffi::luaL_traceback(T, L, std::ptr::null(), 0);
        let text = to_bytes(T, -1).map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or_default();
        ffi::lua_settop(T, -2);
        text
    }
}

/// Continuation stages of `boot` (its `lua_KContext`).
const SPAWNED: ffi::lua_KContext = 0;
const MAIN_CHUNK: ffi::lua_KContext = 1;
const MAIN_EVENTS: ffi::lua_KContext = 2;

/// The first function a process runs: unpacks its boot data and calls it.
unsafe extern "C-unwind" fn boot(L: *mut ffi::lua_State) -> c_int {
    // NOT KEPT: lib.rs invariant 2, the boot data (the script's box, path and
    // arguments, a module's box, a spawn's message) is alive in these frames
    // while the `prepare_*` functions call the API, and a memory error (or a
    // module's `__index`, in `prepare_module`) would unwind over it: in
    // practice a leak.
    // SAFETY: Lua calls this native function (pushed by `resume`) with the
    // process's running state `L` (lib.rs invariant 1), with a context; each
    // borrow of it ends within its statement.
    let (prepared, stage) = unsafe {
        match ctx(L).boot.take() {
            Some(Boot::Spawned(template)) => {
                ctx(L).boot = template.map(Boot::Started);
                (prepare_spawned(L), SPAWNED)
            }
            Some(Boot::Script(script)) => (prepare_script(L, *script), MAIN_CHUNK),
            Some(Boot::Driven(driven)) => {
                let (driver, cl) = *driven;
                (prepare_driven(L, driver, cl), MAIN_CHUNK)
            }
            Some(Boot::Module(m)) => {
                let (module, arg) = *m;
                (prepare_module(L, module, arg), SPAWNED)
            }
            Some(Boot::Started(_)) | None => (Err("process started twice".into()), SPAWNED),
        }
    };
    match prepared {
        // SAFETY: as above; the function and its `nargs` arguments are on
        // the stack. The call (and a yield in it, resumed in `boot_k`)
        // unwinds this frame, which owns nothing now (`Ok` holds a count).
        Ok(nargs) => unsafe {
            ffi::lua_callk(L, nargs, 0, stage, Some(boot_k));
            boot_k(L, ffi::LUA_OK, stage)
        },
        // SAFETY: as above; `raise` drops `e` before unwinding.
        Err(e) => unsafe { raise(L, e) },
    }
}

/// After the main chunk returns: if it used the agents module, the main
/// script goes on handling events (SPEC §3).
unsafe extern "C-unwind" fn boot_k(L: *mut ffi::lua_State, _status: c_int, stage: ffi::lua_KContext) -> c_int {
    if stage == MAIN_CHUNK {
        // SAFETY: Lua runs this continuation (or `boot` calls it) with the
        // process's running state (lib.rs invariant 1); the loop, called only
        // when it is a function, may yield (continuing here) or raise through
        // this frame, which owns nothing.
        unsafe {
            ffi::lua_getfield(L, ffi::LUA_REGISTRYINDEX, ffi::LUA_LOADED_TABLE);
            if ffi::lua_getfield(L, -1, c"synodic.alua".as_ptr()) == ffi::LUA_TTABLE
                && ffi::lua_getfield(L, -1, c"_main_loop".as_ptr()) == ffi::LUA_TFUNCTION
            {
                ffi::lua_callk(L, 0, 0, MAIN_EVENTS, Some(boot_k));
            }
        }
    }
    0
}

/// Pushes the spawned function and its arguments (the spawn message, first
/// in the mailbox); returns the argument count. A copy of a prefix template
/// has the message's leading values decoded already: `boot`'s arguments.
unsafe fn prepare_spawned(L: *mut ffi::lua_State) -> Result<c_int, String> {
    // SAFETY: `L` is the running process's state (lib.rs invariant 1), in
    // `boot`, with a context entered for this resume.
    let kept = unsafe { ffi::lua_gettop(L) } > 0;
    // SAFETY: as above.
    let Some(msg) = unsafe { ctx(L) }.proc().pop_message() else {
        // SAFETY: as above.
        unsafe { ffi::lua_settop(L, 0) };
        return Err("spawn: the spawn message is missing".into());
    };
    // SAFETY: as above; a kept prefix means `L` is a copy of a prefix
    // template. NOT KEPT: lib.rs invariant 2, `msg` is alive while the
    // values are pushed, and a memory error there unwinds over it.
    let n = unsafe { if kept { codec::decode_after_prefix(L, &msg) } else { codec::decode(L, &msg) } };
    let n = n.map_err(|e| format!("spawn: {e}"))?;
    // SAFETY: as above (a type read).
    if n < 1 || unsafe { ffi::lua_type(L, 1) } != ffi::LUA_TFUNCTION {
        return Err("spawn: the message does not start with a function".into());
    }
    Ok(n - 1)
}

/// Pushes `require(module).main` and `arg`.
unsafe fn prepare_module(L: *mut ffi::lua_State, module: &str, arg: crate::vm::ctx::ModuleArg) -> Result<c_int, String> {
    // SAFETY: `L` is the running process's state (lib.rs invariant 1), in
    // `boot`; `push_module` runs `require` protected.
    unsafe {
        ffi::lua_settop(L, 0);
        crate::vm::state::push_module(L, module.as_bytes())?;
    }
    // SAFETY: as above; the module is on top. Its `__index`, if any, may
    // raise here unprotected (see `boot`'s note).
    if unsafe { ffi::lua_getfield(L, -1, c"main".as_ptr()) } != ffi::LUA_TFUNCTION {
        return Err(format!("module {module} has no main function"));
    }
    // SAFETY: as above.
    unsafe {
        match arg {
            crate::vm::ctx::ModuleArg::Int(n) => ffi::lua_pushinteger(L, n),
            crate::vm::ctx::ModuleArg::Text(text) => push_bytes(L, text.as_bytes()),
        }
    }
    Ok(1)
}

/// Loads the main script, sets `arg`, pushes the chunk and its arguments.
unsafe fn prepare_script(L: *mut ffi::lua_State, cl: CommandLine) -> Result<c_int, String> {
    // SAFETY: `L` is the running process's state (lib.rs invariant 1), in `boot`.
    unsafe { ffi::lua_settop(L, 0) };
    let Script::File(path) = &cl.script else { return Err("no script".into()) };
    let cpath = CString::new(path.clone()).map_err(|_| format!("cannot open {path}: the name contains a NUL byte"))?;
    // SAFETY: as above; `luaL_loadfilex` is protected (returns a status)
    // and reads the NUL-terminated `cpath`.
    if unsafe { ffi::luaL_loadfilex(L, cpath.as_ptr(), std::ptr::null()) } != ffi::LUA_OK {
        // SAFETY: as above; the load's error message is on top, copied.
        let msg = unsafe {
            ctx(L).load_error = true;
            to_bytes(L, -1).map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or_default()
        };
        return Err(msg);
    }
    // SAFETY: as above; `arg` is set, then the arguments pushed for the
    // chunk. NOT KEPT: lib.rs invariant 2, `cl` and `cpath` are alive here,
    // and a memory error in these calls unwinds over them (in practice a leak).
    unsafe {
        command_line::set_arg(L, &cl);
        for a in &cl.args {
            push_bytes(L, a.as_bytes());
        }
    }
    Ok(cl.args.len() as c_int)
}

/// Sets `arg`, pushes `require(driver).main` and the description of `cl`.
unsafe fn prepare_driven(L: *mut ffi::lua_State, driver: &str, cl: CommandLine) -> Result<c_int, String> {
    // SAFETY: as in `prepare_module`; then as in `prepare_script`.
    unsafe {
        prepare_module(L, driver, crate::vm::ctx::ModuleArg::Int(0))?;
        ffi::lua_settop(L, -2);
        command_line::set_arg(L, &cl);
        command_line::push_description(L, &cl);
    }
    Ok(1)
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
