//! The `synodic` module: processes and messages (SPEC §2). Each function
//! checks its arguments, does its work through the core runtime, and blocks
//! (receive, sleep) by yielding to the scheduler with a continuation that
//! re-checks its condition when the process is resumed.

use std::ffi::{c_int, CStr};

use mlua_sys as ffi;
use synodic_core::{ExitReason, Pid};

use synodic_core::linda::Field;
use synodic_core::wire::{Reader, Tag};

use crate::vm::codec;
use crate::vm::ctx::{ctx, Pending};
use crate::vm::peek::{peek, Plain};
use crate::vm::process::LuaProcess;
use crate::vm::util::*;
use crate::vm::wait::{self, block_on_mailbox};

mod inbox;
pub(crate) mod links;
mod timers;
#[cfg(test)]
mod tests;

use inbox::{receive, receive_match};

pub(crate) const FUNCTIONS: &[(&CStr, ffi::lua_CFunction)] = &[
    (c"spawn", spawn),
    (c"spawn_on", spawn_on),
    (c"spawn_opt", spawn_opt),
    (c"self", self_pid),
    (c"send", send),
    (c"receive", receive),
    (c"receive_match", receive_match),
    (c"sleep", sleep),
    (c"monitor", monitor),
    (c"demonitor", demonitor),
    (c"monitor_node", monitor_node),
    (c"register", register),
    (c"whereis", whereis),
    (c"exit", exit),
    (c"link", links::link),
    (c"unlink", links::unlink),
    (c"spawn_link", links::spawn_link),
    (c"spawn_link_on", links::spawn_link_on),
    (c"trap_exit", links::trap_exit),
    (c"kill", links::kill),
    (c"wait", wait_futures),
    (c"send_after", timers::send_after),
    (c"cancel_timer", timers::cancel_timer),
    (c"node", node),
    (c"nodes", nodes),
    (c"is_alive", is_alive),
    (c"clock", clock),
    (c"halt", halt),
    (c"main", main_pid),
    (c"async", crate::api::future::async_),
    (c"async_on", crate::api::future::async_on),
    (c"_submit", crate::api::future::submit_),
    (c"_pool_take", crate::api::future::pool_take),
    (c"_resolve", crate::api::future::resolve),
    (c"_pool_load", crate::api::future::pool_load),
    (c"_is_future", crate::api::future::is_future),
    (c"_fetched", crate::api::future::fetched),
    (c"_futures_held", crate::api::future::futures_held),
    (c"_store", crate::api::future::store),
    (c"_cpu_clock", crate::vm::cputime::cpu_clock),
    (c"_isatty", crate::api::future::isatty),
    (c"_role", crate::api::control::role),
];

crate::vm::lazy::lazy_module!(b"synodic");

/// Encodes `f, args...` from `first` and starts a process running it.
///
/// The functions of this file are `unsafe` (or native functions) over the
/// calling process's running thread `L` (lib.rs invariant 1), its context
/// entered for this resume; each does its Rust work in an inner function
/// or closure that returns a `Result`, dropped before it raises or blocks
/// (lib.rs invariant 2). Their notes say "the contract" for that.
unsafe fn spawn_from(L: *mut ffi::lua_State, first: c_int, fname: &str) -> Result<Pid, String> {
    // SAFETY: the contract (a type read).
    if unsafe { ffi::lua_type(L, first) } != ffi::LUA_TFUNCTION {
        // SAFETY: the contract.
        return Err(format!("bad argument #{first} to '{fname}' (function expected, got {})", unsafe { type_name(L, first) }));
    }
    // SAFETY: the contract.
    unsafe { spawn_encoded(L, first, None, fname) }
}

/// Encodes `f, args...` from `first` and starts a process running it, with
/// a memory limit if given.
pub(crate) unsafe fn spawn_encoded(L: *mut ffi::lua_State, first: c_int, max_memory: Option<u64>, fname: &str) -> Result<Pid, String> {
    // SAFETY: the contract; `f, args...` are from `first` to the top.
    let (msg, leading) = unsafe { codec::encode_spawn(L, first, ffi::lua_gettop(L)) }.map_err(|e| format!("{fname}: {e}"))?;
    // SAFETY: the contract (the context's runtime, a plain borrow).
    LuaProcess::spawn_marked(unsafe { ctx(L) }.rt(), msg, leading, max_memory).map_err(|e| format!("{fname}: {e}"))
}

/// `spawn_opt(opts, f, ...)`: `spawn` with options; `opts.max_memory` is the
/// process's memory limit in bytes (its state and its queued messages).
unsafe extern "C-unwind" fn spawn_opt(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: the contract.
    let started = (|| unsafe {
        let max_memory = spawn_options(L)?;
        if ffi::lua_type(L, 2) != ffi::LUA_TFUNCTION {
            return Err(format!("bad argument #2 to 'spawn_opt' (function expected, got {})", type_name(L, 2)));
        }
        spawn_encoded(L, 2, max_memory, "spawn_opt")
    })();
    // SAFETY: the contract; `raise` drops `e` before unwinding.
    unsafe {
        match started {
            Ok(pid) => {
                push_pid(L, pid);
                1
            }
            Err(e) => raise(L, e),
        }
    }
}

/// The options table of `spawn_opt` (argument 1): the memory limit, if any.
unsafe fn spawn_options(L: *mut ffi::lua_State) -> Result<Option<u64>, String> {
    // SAFETY: the contract; a walk of the options table (checked at 1): a
    // key is read as bytes only when it is a string (so `lua_next` goes
    // on), and the stack is cut back to where it began before returning.
    unsafe {
        if ffi::lua_type(L, 1) != ffi::LUA_TTABLE {
            return Err(format!("bad argument #1 to 'spawn_opt' (options table expected, got {})", type_name(L, 1)));
        }
        let mut max_memory = None;
        ffi::lua_pushnil(L);
        while ffi::lua_next(L, 1) != 0 {
            let key = (ffi::lua_type(L, -2) == ffi::LUA_TSTRING).then(|| to_bytes(L, -2)).flatten().unwrap_or_default();
            if key != b"max_memory" {
                let shown = String::from_utf8_lossy(key).into_owned();
                ffi::lua_settop(L, -3);
                return Err(format!("spawn_opt: unknown option '{shown}' (known: max_memory)"));
            }
            let mut is_int = 0;
            let n = ffi::lua_tointegerx(L, -1, &mut is_int);
            ffi::lua_settop(L, -2);
            if is_int == 0 || n <= 0 {
                ffi::lua_settop(L, -2);
                return Err("spawn_opt: max_memory must be a positive number of bytes".into());
            }
            max_memory = Some(n as u64);
        }
        Ok(max_memory)
    }
}

unsafe extern "C-unwind" fn spawn(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: the contract; `raise` drops `e` before unwinding.
    unsafe {
        match spawn_from(L, 1, "spawn") {
            Ok(pid) => {
                push_pid(L, pid);
                1
            }
            Err(e) => raise(L, e),
        }
    }
}

/// `spawn_on(node, f, ...)`: here, or on another node (`"any"`: the least
/// loaded), where the call waits for the new pid (see `remote`).
unsafe extern "C-unwind" fn spawn_on(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: the contract; the node name (at 1, checked to be a string)
    // stays on the stack while `asked` borrows it.
    unsafe {
        let Some(asked) = (ffi::lua_type(L, 1) == ffi::LUA_TSTRING).then(|| to_bytes(L, 1)).flatten() else {
            return raise(L, format!("bad argument #1 to 'spawn_on' (node name expected, got {})", type_name(L, 1)));
        };
        if ffi::lua_type(L, 2) != ffi::LUA_TFUNCTION {
            return raise(L, format!("bad argument #2 to 'spawn_on' (function expected, got {})", type_name(L, 2)));
        }
        spawn_somewhere(L, asked, 2, "spawn_on")
    }
}

/// Starts `f, args...` (from `first`) on the node named `asked`, or the
/// least loaded one for `"any"`; returns its pid, waiting for it if the
/// node is another.
pub(crate) unsafe fn spawn_somewhere(L: *mut ffi::lua_State, asked: &[u8], first: c_int, fname: &str) -> c_int {
    // SAFETY: the contract.
    let rt = unsafe { ctx(L) }.rt();
    let node = match asked {
        b"any" => rt.least_loaded_node(),
        named => String::from_utf8_lossy(named).into(),
    };
    if node != rt.node_name() {
        // SAFETY: the contract; `node` moves into `spawn_on`, which drops it
        // before it waits for the reply (a yield) or raises.
        return unsafe { crate::api::remote::spawn_on(L, node, first, fname == "spawn_link_on") };
    }
    drop(node);
    // SAFETY: the contract; this frame owns nothing when a local spawn's
    // error is raised or its pid pushed.
    unsafe {
        match spawn_from(L, first, fname) {
            Ok(pid) if fname == "spawn_link_on" => {
                push_pid(L, pid);
                links::link_to(L, pid, fname, 1)
            }
            Ok(pid) => {
                push_pid(L, pid);
                1
            }
            Err(e) => raise(L, e),
        }
    }
}

unsafe extern "C-unwind" fn self_pid(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: the contract.
    unsafe { push_pid(L, ctx(L).proc().pid()) };
    1
}

/// A destination: a pid, or a registered name (`None` when the name is free).
unsafe fn destination(L: *mut ffi::lua_State, idx: c_int, fname: &str) -> Result<Option<Pid>, String> {
    // SAFETY: the contract; the value at `idx` is read (a name's bytes only
    // once it is checked to be a string).
    unsafe {
        if let Some(pid) = to_pid(L, idx) {
            return Ok(Some(pid));
        }
        if ffi::lua_type(L, idx) == ffi::LUA_TSTRING {
            return Ok(ctx(L).rt().whereis(to_bytes(L, idx).unwrap_or_default()));
        }
        Err(format!("bad argument #{idx} to '{fname}' (pid or name expected, got {})", type_name(L, idx)))
    }
}

// (Always inlined: left to the compiler, it was inlined or not as
// unrelated code changed, and the call with its `Result` of a `String`
// cost ~40 instructions a send: a ring's hop, callgrind.)
#[inline(always)]
unsafe fn send_inner(L: *mut ffi::lua_State) -> Result<Option<Pid>, String> {
    // SAFETY: the contract.
    let dest = unsafe { destination(L, 1, "send")? };
    // SAFETY: the contract.
    let top = unsafe { ffi::lua_gettop(L) };
    if top < 2 {
        return Err("send: nothing to send (give at least one value)".into());
    }
    // SAFETY: the contract; the values are from 2 to the top.
    let msg = unsafe { codec::encode(L, 2, top) }.map_err(|e| format!("send: {e}"))?;
    let Some(pid) = dest else {
        // SAFETY: the contract; the name (a string, for `dest` to be
        // `None`) is read as it is.
        return Err(format!("no such name: {}", String::from_utf8_lossy(unsafe { to_bytes(L, 1) }.unwrap_or_default())));
    };
    let remote = pid.node() != 0;
    if remote {
        synodic_core::dist::carry::crossing(&msg).map_err(|e| format!("send: {e}"))?;
    }
    // SAFETY: the contract.
    let ctx = unsafe { ctx(L) };
    ctx.rt().send_from(ctx.proc(), pid, msg);
    // A sender to a node that cannot keep up waits here for room.
    // SAFETY: the contract.
    let full = remote && unsafe { ffi::lua_isyieldable(L) } != 0 && ctx.rt().transport().is_some_and(|t| !t.room_for(pid, ctx.proc().pid()));
    Ok(full.then_some(pid))
}

unsafe extern "C-unwind" fn send(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: the contract; `send_inner`'s values are dropped when it
    // returns, so this frame owns nothing when it blocks or raises.
    unsafe {
        match send_inner(L) {
            Ok(None) => 0,
            Ok(Some(full)) => block_on_mailbox(L, send_k, full.raw() as ffi::lua_KContext, "send"),
            Err(e) => raise(L, e),
        }
    }
}

/// A sender slowed until the link to `to`'s node has room again.
unsafe extern "C-unwind" fn send_k(L: *mut ffi::lua_State, _status: c_int, to: ffi::lua_KContext) -> c_int {
    let to = Pid::from_raw(to as u64).expect("the pid send_inner gave");
    // SAFETY: the contract (a continuation of `send`).
    let ctx = unsafe { ctx(L) };
    match ctx.rt().transport().is_some_and(|t| !t.room_for(to, ctx.proc().pid())) {
        // SAFETY: the contract; this frame owns nothing (`to` is a number).
        true => unsafe { block_on_mailbox(L, send_k, to.raw() as ffi::lua_KContext, "send") },
        false => 0,
    }
}

unsafe extern "C-unwind" fn sleep(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: the contract; this frame owns nothing when it raises, yields
    // or blocks.
    unsafe {
        let timeout = match opt_seconds(L, 1, "sleep") {
            Ok(Some(t)) => t,
            Ok(None) => return raise(L, "bad argument #1 to 'sleep' (number expected, got no value)".into()),
            Err(e) => return raise(L, e),
        };
        if timeout.is_zero() {
            ctx(L).deadline = None;
            return yield_to_scheduler(L, Pending::Preempt, sleep_k, "sleep");
        }
        start_deadline(L, Some(timeout));
        block_on_mailbox(L, sleep_k, 0, "sleep")
    }
}

unsafe extern "C-unwind" fn sleep_k(L: *mut ffi::lua_State, _status: c_int, _k: ffi::lua_KContext) -> c_int {
    // SAFETY: the contract (a continuation of `sleep`); as in `sleep`.
    unsafe {
        if ctx(L).deadline.is_none() || deadline_passed(L) {
            return 0;
        }
        if wait::take_withdrawn(L) {
            return wait::cannot_block(L, "sleep");
        }
        block_on_mailbox(L, sleep_k, 0, "sleep")
    }
}

unsafe extern "C-unwind" fn monitor(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: the contract; `raise` drops `e` before unwinding.
    unsafe {
        match pid_arg(L, 1, "monitor") {
            Ok(target) => {
                let c = ctx(L);
                c.rt().monitor(c.proc().pid(), target);
                0
            }
            Err(e) => raise(L, e),
        }
    }
}

/// `demonitor(pid)`: removes one of the caller's monitors of `pid`. True
/// when one was in place (no DOWN will come for it); false when none was
/// (the DOWN of one it set is in its mailbox or on its way).
unsafe extern "C-unwind" fn demonitor(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: the contract; `raise` drops `e` before unwinding.
    unsafe {
        match pid_arg(L, 1, "demonitor") {
            Ok(target) => {
                let c = ctx(L);
                ffi::lua_pushboolean(L, c.rt().demonitor(c.proc().pid(), target) as c_int);
                1
            }
            Err(e) => raise(L, e),
        }
    }
}

/// `monitor_node(node)`: the caller receives `"nodedown", node` when the
/// connection to `node` is lost, at once if it is not connected. On a node
/// alone, every other node is not connected, and its own is never lost.
unsafe extern "C-unwind" fn monitor_node(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: the contract; the name (at 1, checked to be a string) stays
    // on the stack while `node` borrows it; `raise` drops its message.
    let Some(node) = (unsafe { (ffi::lua_type(L, 1) == ffi::LUA_TSTRING).then(|| to_bytes(L, 1)).flatten() }) else {
        return unsafe { raise(L, format!("bad argument #1 to 'monitor_node' (node name expected, got {})", type_name(L, 1))) };
    };
    // SAFETY: the contract; nothing below calls into Lua.
    let c = unsafe { ctx(L) };
    let here = node == c.rt().node_name().as_bytes();
    let watched = here || c.rt().service::<synodic_core::dist::monitors::Monitors>().monitor_node(c.rt(), c.proc().pid(), &String::from_utf8_lossy(node));
    if !watched {
        c.rt().send(c.proc().pid(), synodic_core::dist::notice::nodedown(node));
    }
    0
}

/// `register(name, pid)`: on a node alone, at once; in a cluster, the node
/// that arbitrates the name decides, and the caller waits for its answer
/// (see `remote`).
unsafe extern "C-unwind" fn register(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: the contract; the name (at 1, checked to be a string) stays
    // on the stack while `name` borrows it; `raise` drops its message.
    let (name, pid) = unsafe {
        let Some(name) = (ffi::lua_type(L, 1) == ffi::LUA_TSTRING).then(|| to_bytes(L, 1)).flatten() else {
            return raise(L, format!("bad argument #1 to 'register' (string expected, got {})", type_name(L, 1)));
        };
        let pid = match pid_arg(L, 2, "register") {
            Ok(pid) => pid,
            Err(e) => return raise(L, e),
        };
        (name, pid)
    };
    // SAFETY: the contract (a read of the context; the request, if any,
    // owns nothing here when it waits).
    unsafe {
        if ctx(L).rt().transport().is_some() {
            return crate::api::remote::register(L, name, pid);
        }
    }
    // SAFETY: the contract (the context's runtime, a plain borrow).
    let failed = unsafe { ctx(L) }.rt().register(name, pid).err().map(|e| format!("register: {e}"));
    // SAFETY: the contract; `msg` moves into `raise`, which drops it first.
    unsafe {
        match failed {
            None => {
                ffi::lua_pushboolean(L, 1);
                1
            }
            Some(msg) => raise(L, msg),
        }
    }
}

unsafe extern "C-unwind" fn whereis(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: the contract; the name's bytes are read while it stays at 1.
    unsafe {
        match to_bytes(L, 1).and_then(|name| ctx(L).rt().whereis(name)) {
            Some(pid) => push_pid(L, pid),
            None => ffi::lua_pushnil(L),
        }
    }
    1
}

unsafe extern "C-unwind" fn is_alive(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: the contract.
    unsafe {
        let alive = to_pid(L, 1).is_some_and(|pid| ctx(L).rt().is_alive(pid));
        ffi::lua_pushboolean(L, alive as c_int);
    }
    1
}

unsafe extern "C-unwind" fn exit(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: the contract; `e` moves into `raise`, so this frame owns
    // nothing when it yields or raises.
    unsafe {
        match exit_reason(L, 1, "exit") {
            Ok(r) => end_with(L, r),
            Err(e) => raise(L, e),
        }
    }
}

/// The reason at `idx` (nothing or `"normal"`: a normal end).
pub(crate) unsafe fn exit_reason(L: *mut ffi::lua_State, idx: c_int, fname: &str) -> Result<ExitReason, String> {
    // SAFETY: the contract (reads of the value at `idx`).
    unsafe {
        let normal = ffi::lua_isnoneornil(L, idx) != 0 || (ffi::lua_type(L, idx) == ffi::LUA_TSTRING && to_bytes(L, idx) == Some(b"normal"));
        if normal {
            return Ok(ExitReason::Normal);
        }
        codec::encode(L, idx, idx).map(|m| ExitReason::Value(m.to_vec())).map_err(|e| format!("{fname}: {e}"))
    }
}

/// Ends the calling process with `reason` (which the context keeps while
/// the process ends).
pub(crate) unsafe fn end_with(L: *mut ffi::lua_State, reason: ExitReason) -> c_int {
    // SAFETY: the contract; the reason moves into the context.
    unsafe {
        ctx(L).exit = Some(Box::new(reason));
        end_process(L, exit_k)
    }
}

/// `wait(futures [, n [, timeout]])`: policy in Lua (`lualib/future_wait.lua`),
/// called from here so that it sits in the `synodic` table.
unsafe extern "C-unwind" fn wait_futures(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: the contract; the bundled module is required as the VM
    // requires modules (protected, whatever the program did to its global
    // `require`), and the function it is goes under the arguments, called
    // with a continuation, since it may block. `raise` drops its message first.
    unsafe {
        let nargs = ffi::lua_gettop(L);
        if let Err(e) = crate::vm::state::push_module(L, b"synodic.future.wait") {
            return raise(L, format!("wait: {e}"));
        }
        ffi::lua_rotate(L, 1, 1);
        ffi::lua_callk(L, nargs, ffi::LUA_MULTRET, 0, Some(wait_k));
        wait_k(L, ffi::LUA_OK, 0)
    }
}

unsafe extern "C-unwind" fn wait_k(L: *mut ffi::lua_State, _status: c_int, _k: ffi::lua_KContext) -> c_int {
    // SAFETY: the contract: the results are all that is on the stack.
    unsafe { ffi::lua_gettop(L) }
}

/// Ends the calling process here, whose `exit` reason is set, by an error
/// that no `pcall` keeps (for a caller that cannot yield).
pub(crate) unsafe fn end_process_here(L: *mut ffi::lua_State) -> ! {
    // SAFETY: the contract; the sentinel (a static's address) is the error
    // object, raised through frames that own nothing (the callers'
    // contract); `synodic_uncatchable` keeps any `pcall` from stopping it.
    unsafe {
        ffi::lua_pushlightuserdata(L, exit_sentinel());
        ffi::lua_error(L);
    }
}

/// Ends the calling process, whose `exit` reason is set: by yielding to the
/// scheduler, or where that cannot be, by an error that no `pcall` keeps
/// (see `vm::util::synodic_uncatchable`).
unsafe fn end_process(L: *mut ffi::lua_State, k: ffi::lua_KFunction) -> c_int {
    // SAFETY: the contract; this frame owns nothing.
    unsafe {
        if ffi::lua_isyieldable(L) == 0 {
            end_process_here(L);
        }
        yield_to_scheduler(L, Pending::Exit, k, "exit")
    }
}

/// The error object of an `exit` that had to unwind (its address is unique).
fn exit_sentinel() -> *mut std::ffi::c_void {
    static SENTINEL: u8 = 0;
    &SENTINEL as *const u8 as *mut std::ffi::c_void
}

unsafe extern "C-unwind" fn exit_k(_L: *mut ffi::lua_State, _status: c_int, _k: ffi::lua_KContext) -> c_int {
    0
}

/// `s.node()`: this node's name; `s.node(pid)`: the name of the node the
/// process `pid` runs on.
unsafe extern "C-unwind" fn node(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: the contract; `raise` drops its message before unwinding.
    // NOT KEPT: lib.rs invariant 2, a memory error while pushing would
    // unwind over `name` (an `Arc<str>`; in practice a leak).
    unsafe {
        let rt = ctx(L).rt();
        let name = match ffi::lua_isnoneornil(L, 1) != 0 {
            true => rt.node_name(),
            false => match to_pid(L, 1) {
                Some(pid) => rt.nodes().id(pid.node()).map_or_else(|| "?".into(), |n| n.name),
                None => return raise(L, format!("bad argument #1 to 'node' (pid expected, got {})", type_name(L, 1))),
            },
        };
        push_bytes(L, name.as_bytes());
    }
    1
}

unsafe extern "C-unwind" fn nodes(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: the contract; the list is at -2 while each name, pushed on
    // top, is stored in it. NOT KEPT: lib.rs invariant 2, `nodes` is alive
    // through these allocating calls, and a memory error unwinds over it
    // (in practice a leak).
    unsafe {
        let nodes = ctx(L).rt().live_nodes();
        ffi::lua_createtable(L, nodes.len().min(1 << 16) as c_int, 0);
        for (i, name) in nodes.iter().enumerate() {
            push_bytes(L, name.as_bytes());
            ffi::lua_rawseti(L, -2, i as ffi::lua_Integer + 1);
        }
    }
    1
}

/// Seconds since the node started, on a monotonic clock: the same clock in
/// every process of the node.
unsafe extern "C-unwind" fn clock(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: the contract.
    unsafe { ffi::lua_pushnumber(L, ctx(L).rt().uptime().as_secs_f64()) };
    1
}

/// Ends the whole run with an exit status (default 0), from any process.
unsafe extern "C-unwind" fn halt(L: *mut ffi::lua_State) -> c_int {
    let mut ok = 0;
    // SAFETY: the contract; the reason moves into the context, so this
    // frame owns nothing when the process ends (by a yield or an error).
    unsafe {
        let status = if ffi::lua_isnoneornil(L, 1) != 0 { 0 } else { ffi::lua_tointegerx(L, 1, &mut ok) };
        if ffi::lua_isnoneornil(L, 1) == 0 && (ok == 0 || !(0..=255).contains(&status)) {
            return raise(L, format!("bad argument #1 to 'halt' (exit status 0-255 expected, got {})", type_name(L, 1)));
        }
        ctx(L).rt().halt(status as i32);
        // The run is over: stop this process here rather than let it go on.
        ctx(L).exit = Some(Box::new(ExitReason::Normal));
        end_process(L, exit_k)
    }
}

/// The pid of the main process (the script `synodic run` started).
unsafe extern "C-unwind" fn main_pid(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: the contract.
    unsafe {
        match ctx(L).rt().main_pid() {
            Some(pid) => push_pid(L, pid),
            None => ffi::lua_pushnil(L),
        }
    }
    1
}
