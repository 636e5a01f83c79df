//! The `synodic.control` module: what tools written in Lua (the console
//! agent, `lualib/console.lua`) need from the runtime. The console endpoint
//! itself is the I/O layer's (`synodic_net::console`): it starts a console
//! agent per connection and gives it a port to write to.
//!
//! | function | does |
//! |---|---|
//! | `write(port, kind, text)` | `kind text` to a console, as one protocol line (see `synodic_net::console`); false when it is gone |
//! | `processes([max [, by]])` | the live processes (with `max`, the top `max` by `"cpu"`, `"memory"` or `"mailbox"`), and how many live: a list of `{pid =, state =, on =, mailbox =, memory =, cpu =, names = {...}}` (`on`: what a waiting process waits on; memory in bytes, cpu in seconds counted in whole time slices) |
//! | `probe(pid)` | asks `pid` to describe itself: the caller receives `"probe", pid, text`; false when there is no such process |
//! | `spaces()` | the tuple spaces that live on this node: a list of `{id =, name =, tuples =, waiting =, outs =, takes =, reads =, classes = {{arity =, first =, count =}, ...}, waiters = {{pid =, mode =, template =}, ...}}` (`first` nil for a class of first fields that are not plain values; operations counted since the space was made; at most 100 waiters, oldest first) |
//! | `scope(what [, arg])` | the tuple scope's hold on this node's tuple operations: `"view"` gives `{stopped =, condition =, steps =, held = {{pid =, op =, space =, args =}, ...}, hit =}`; `"stop"`, `"continue"`, `"step"` (the oldest held, or `arg`'s; gives what it let through), `"break"` (sets the condition `arg`, or clears it) |
//! | `node_stats()` | `{messages =, rss =, cpu =, processes =, links = {{node =, sent =, received =}, ...}}`: messages delivered here, resident bytes, processor seconds, live processes, bytes to and from each linked node |
//! | `proof_ok(key, nonce, proof)` | whether `proof` (hex) is HMAC-SHA256 of `nonce` under `key` (hex), compared in constant time |
//! | `token()` | 32 random hex digits from the system's generator |
//! | `roles()` | this node's processes that said what they are (`synodic._role`: skeleton evaluators, entities): `{{pid =, role =}, ...}` |
//! | `asset(path)` | the dashboard page's file at `path` (`"/"`, `"/app.js"`...) and its content type, or nil |
//! | `pid(text)` | the pid printed as `text` (`"<0.4.0>"`), or nil |
//! | `node_cpu()` | the processor time of the whole node (every thread), in seconds (`os.clock` is the caller's own) |
//! | `tuples(id, arity, first [, max])` | up to `max` (default 100) tuples of that class of the space `id` of this node, oldest first, each a list of its fields |

use std::ffi::{c_int, CStr};

use mlua_sys as ffi;

use synodic_core::linda::Field;
use synodic_core::Pid;

use crate::vm::ctx::ctx;
use crate::vm::util::{pid_arg, push_bytes, push_pid, raise, to_bytes};

mod dashboard;

pub(crate) use dashboard::role;

pub(crate) const FUNCTIONS: &[(&CStr, ffi::lua_CFunction)] = &[
    (c"write", write),
    (c"processes", processes),
    (c"probe", probe),
    (c"spaces", spaces),
    (c"tuples", tuples),
    (c"pid", pid),
    (c"node_cpu", node_cpu),
    (c"scope", dashboard::scope),
    (c"node_stats", dashboard::node_stats),
    (c"proof_ok", dashboard::proof_ok),
    (c"token", dashboard::token),
    (c"asset", dashboard::asset),
    (c"roles", dashboard::roles),
];

crate::vm::lazy::lazy_module!(b"synodic.control");

/// `write(port, kind, text)`: sends `kind text` to a console, which makes it
/// one protocol line; false when the console is gone.
unsafe extern "C-unwind" fn write(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1); the arguments' bytes stay on the stack while
    // used; `raise` drops its message before unwinding.
    let (port, kind, text) = unsafe {
        let port = ffi::lua_tointegerx(L, 1, std::ptr::null_mut());
        let (Some(kind), Some(text)) = (to_bytes(L, 2), to_bytes(L, 3)) else {
            return raise(L, "bad arguments to 'write' (port, kind, text expected)".into());
        };
        (port, kind, text)
    };
    let line = [kind, b" ", text].concat();
    // SAFETY: as above; the context is entered for this resume.
    let ok = unsafe { ctx(L) }.rt().ports().write(port as u64, &line);
    drop(line);
    // SAFETY: as above; nothing is owned now.
    unsafe { ffi::lua_pushboolean(L, ok as c_int) };
    1
}

/// `processes()`: the live processes of this node.
unsafe extern "C-unwind" fn processes(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1), whose context is entered.
    let mut list = unsafe { ctx(L) }.rt().processes();
    let total = list.len();
    // SAFETY: as above; the arguments are read, nothing converted on the stack.
    let (max, by) = unsafe { (ffi::lua_tointegerx(L, 1, std::ptr::null_mut()), to_bytes(L, 2).unwrap_or(b"cpu")) };
    if max > 0 {
        // The top `max` by processor time, memory or mailbox (recon's way:
        // the node ranks its own and sends only those).
        match by {
            b"memory" => list.sort_by_key(|p| std::cmp::Reverse(p.memory)),
            b"mailbox" => list.sort_by_key(|p| std::cmp::Reverse(p.mailbox)),
            _ => list.sort_by(|a, b| b.cpu.cmp(&a.cpu).then(b.mailbox.cmp(&a.mailbox))),
        }
        list.truncate(max as usize);
    }
    // SAFETY: as above; the list is built at -1 (each process's table at
    // -1 above it while filled). NOT KEPT: lib.rs invariant 2, `list` is
    // alive through these allocating calls, and a memory error unwinds
    // over it (in practice a leak).
    unsafe {
        ffi::lua_createtable(L, list.len() as c_int, 0);
        for (i, p) in list.iter().enumerate() {
            ffi::lua_createtable(L, 0, 4);
            push_pid(L, p.pid);
            ffi::lua_setfield(L, -2, c"pid".as_ptr());
            push_bytes(L, p.state.as_bytes());
            ffi::lua_setfield(L, -2, c"state".as_ptr());
            push_bytes(L, p.waits_on.as_bytes());
            ffi::lua_setfield(L, -2, c"on".as_ptr());
            ffi::lua_pushinteger(L, p.mailbox as ffi::lua_Integer);
            ffi::lua_setfield(L, -2, c"mailbox".as_ptr());
            ffi::lua_pushinteger(L, p.memory as ffi::lua_Integer);
            ffi::lua_setfield(L, -2, c"memory".as_ptr());
            ffi::lua_pushnumber(L, p.cpu.as_secs_f64());
            ffi::lua_setfield(L, -2, c"cpu".as_ptr());
            ffi::lua_createtable(L, p.names.len() as c_int, 0);
            for (k, name) in p.names.iter().enumerate() {
                push_bytes(L, name.as_bytes());
                ffi::lua_rawseti(L, -2, k as ffi::lua_Integer + 1);
            }
            ffi::lua_setfield(L, -2, c"names".as_ptr());
            ffi::lua_rawseti(L, -2, i as ffi::lua_Integer + 1);
        }
    }
    drop(list);
    // SAFETY: as above.
    unsafe { ffi::lua_pushinteger(L, total as ffi::lua_Integer) };
    2
}

/// `probe(pid)`: asks the process to describe itself to the caller.
unsafe extern "C-unwind" fn probe(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1), whose context is entered; `raise` drops `e`.
    unsafe {
        match pid_arg(L, 1, "probe") {
            Ok(pid) => {
                let c = ctx(L);
                ffi::lua_pushboolean(L, c.rt().probe(pid, c.proc().pid()) as c_int);
                1
            }
            Err(e) => raise(L, e),
        }
    }
}

/// `spaces()`: this node's tuple spaces, their classes and counts (the tuple scope).
unsafe extern "C-unwind" fn spaces(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1), whose context is entered.
    let all = unsafe { ctx(L) }.rt().spaces().all();
    // NOT KEPT: lib.rs invariant 2, `all` and `classes` are alive through
    // these allocating calls, and a memory error unwinds over them (in
    // practice a leak).
    // SAFETY: as above; the list is built at -1, each space's table at -1
    // above it while filled (its classes' list, and each class's table,
    // likewise).
    unsafe {
        ffi::lua_createtable(L, all.len() as c_int, 0);
        for (i, (id, name, space)) in all.iter().enumerate() {
            let (tuples, waiting, classes, waiters, ops) = space.with(|st| (st.len(), st.waiting(), st.classes(), st.waiters(100), st.ops()));
            ffi::lua_createtable(L, 0, 5);
            set_int(L, c"id", *id as i64);
            if let Some(name) = name {
                push_bytes(L, name);
                ffi::lua_setfield(L, -2, c"name".as_ptr());
            }
            set_int(L, c"tuples", tuples as i64);
            set_int(L, c"waiting", waiting as i64);
            set_int(L, c"outs", ops.outs as i64);
            set_int(L, c"takes", ops.takes as i64);
            set_int(L, c"reads", ops.reads as i64);
            ffi::lua_createtable(L, waiters.len() as c_int, 0);
            for (k, w) in waiters.iter().enumerate() {
                ffi::lua_createtable(L, 0, 3);
                push_pid(L, w.waiter.pid);
                ffi::lua_setfield(L, -2, c"pid".as_ptr());
                push_bytes(L, w.mode.as_bytes());
                ffi::lua_setfield(L, -2, c"mode".as_ptr());
                push_bytes(L, w.template.as_bytes());
                ffi::lua_setfield(L, -2, c"template".as_ptr());
                ffi::lua_rawseti(L, -2, k as ffi::lua_Integer + 1);
            }
            ffi::lua_setfield(L, -2, c"waiters".as_ptr());
            ffi::lua_createtable(L, classes.len() as c_int, 0);
            for (k, (arity, first, count)) in classes.iter().enumerate() {
                ffi::lua_createtable(L, 0, 3);
                set_int(L, c"arity", *arity as i64);
                set_int(L, c"count", *count as i64);
                if let Some(f) = first {
                    push_field(L, f);
                    ffi::lua_setfield(L, -2, c"first".as_ptr());
                }
                ffi::lua_rawseti(L, -2, k as ffi::lua_Integer + 1);
            }
            ffi::lua_setfield(L, -2, c"classes".as_ptr());
            ffi::lua_rawseti(L, -2, i as ffi::lua_Integer + 1);
        }
    }
    drop(all);
    1
}

unsafe fn set_int(L: *mut ffi::lua_State, key: &CStr, n: i64) {
    // SAFETY: `L` is the running state with a table on top (the caller's).
    unsafe {
        ffi::lua_pushinteger(L, n as ffi::lua_Integer);
        ffi::lua_setfield(L, -2, key.as_ptr());
    }
}

/// Pushes a plain field as the Lua value it came from.
unsafe fn push_field(L: *mut ffi::lua_State, f: &Field) {
    // SAFETY: `L` is a process's running state (lib.rs invariant 1), with
    // room for one value (the caller's).
    unsafe {
        match f {
            Field::Bool(b) => ffi::lua_pushboolean(L, *b as c_int),
            Field::Int(i) => ffi::lua_pushinteger(L, *i as ffi::lua_Integer),
            Field::Float(x) => ffi::lua_pushnumber(L, *x),
            Field::Str(s) => push_bytes(L, s),
            Field::Pid(p) => push_pid(L, Pid::from_raw(*p).unwrap_or(Pid::new(0, 0, 0))),
            Field::Opaque(_) => ffi::lua_pushnil(L),
        }
    }
}

/// `tuples(id, arity, first [, max])`: the tuples of one class of a space of this node.
unsafe extern "C-unwind" fn tuples(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1), whose context is entered; the arguments are
    // read (`lua_tointegerx` converts nothing on the stack), and nothing
    // that raises is called while `first` is alive.
    let found = (|| unsafe {
        let id = ffi::lua_tointegerx(L, 1, std::ptr::null_mut()) as u64;
        let arity = ffi::lua_tointegerx(L, 2, std::ptr::null_mut()).max(0) as usize;
        let first = match ffi::lua_isnil(L, 3) {
            0 => Some(crate::api::linda::field(L, 3, 1, "tuples")?),
            _ => None,
        };
        let max = match ffi::lua_tointegerx(L, 4, std::ptr::null_mut()) {
            0 => 100,
            n => n.max(0) as usize,
        };
        let space = ctx(L).rt().spaces().get(id).ok_or_else(|| format!("tuples: no space {id} on this node"))?;
        Ok::<_, String>(space.with(|st| st.class(arity, first.as_ref(), max)))
    })();
    let found = match found {
        Ok(t) => t,
        // SAFETY: as above; `raise` drops `e` before unwinding.
        Err(e) => return unsafe { raise(L, e) },
    };
    // NOT KEPT: lib.rs invariant 2, `found` (and an error's text) is alive
    // while values are decoded and pushed, and a memory error unwinds over it
    // (in practice a leak).
    // SAFETY: as above; the list is at -1, each tuple's values decoded above
    // `base` and packed into one table (or an error text) stored in it.
    unsafe {
        ffi::lua_createtable(L, found.len() as c_int, 0);
        for (i, t) in found.iter().enumerate() {
            let base = ffi::lua_gettop(L);
            match crate::vm::codec::decode(L, &t.values) {
                Ok(n) => crate::vm::util::pack(L, n),
                Err(e) => push_bytes(L, format!("(cannot show: {e})").as_bytes()),
            }
            ffi::lua_rawseti(L, base, i as ffi::lua_Integer + 1);
        }
    }
    drop(found);
    1
}

/// `pid(text)`: the pid printed as `text`, or nil.
unsafe extern "C-unwind" fn pid(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1); the text's bytes stay on the stack while read.
    unsafe {
        match to_bytes(L, 1).and_then(|b| std::str::from_utf8(b).ok()).and_then(Pid::parse) {
            Some(p) => push_pid(L, p),
            None => ffi::lua_pushnil(L),
        }
    }
    1
}

/// `node_cpu()`: the node's processor time, every thread's, in seconds.
unsafe extern "C-unwind" fn node_cpu(L: *mut ffi::lua_State) -> c_int {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: writes the clock into `ts`; then Lua calls this native
    // function with its running state `L` (lib.rs invariant 1).
    unsafe {
        libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts);
        ffi::lua_pushnumber(L, ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9);
    }
    1
}
