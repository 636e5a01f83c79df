//! What the dashboard agent (`lualib/dashboard.lua`) needs of its node
//! beyond what the console does: the tuple scope's hold (`scope`), the
//! node's figures (`node_stats`), the proof of the cookie that actions
//! require (`proof_ok`, `token`), and the page's files (`asset`), built
//! into the binary so the page loads nothing from the network.

use std::ffi::c_int;

use mlua_sys as ffi;
use synodic_core::scope::Held;

use crate::vm::ctx::ctx;
use crate::vm::util::{pid_arg, push_bytes, push_pid, raise, to_bytes};

use super::set_int;

/// The page's files: path, content type, bytes.
const ASSETS: &[(&str, &str, &[u8])] = &[
    ("/", "text/html; charset=utf-8", include_bytes!("../../../assets/dashboard/index.html")),
    ("/app.js", "text/javascript; charset=utf-8", include_bytes!("../../../assets/dashboard/app.js")),
    ("/style.css", "text/css; charset=utf-8", include_bytes!("../../../assets/dashboard/style.css")),
];

/// `scope(what [, arg])`: the tuple scope's hold on this node (see the
/// module table in `mod.rs`).
pub(super) unsafe extern "C-unwind" fn scope(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1), whose context is entered; the arguments' bytes
    // stay on the stack while read; `raise` drops its message.
    unsafe {
        let rt = ctx(L).rt().clone();
        let gate = rt.scope();
        match to_bytes(L, 1).unwrap_or(b"view") {
            b"view" => {}
            b"stop" => gate.stop(),
            b"continue" => {
                let held = gate.view().held;
                gate.resume();
                for h in held {
                    rt.nudge(h.pid);
                }
            }
            b"step" => {
                let pid = match ffi::lua_isnoneornil(L, 2) != 0 {
                    true => None,
                    false => match pid_arg(L, 2, "scope") {
                        Ok(p) => Some(p),
                        Err(e) => return raise(L, e),
                    },
                };
                return match gate.step(pid) {
                    Some(h) => {
                        rt.nudge(h.pid);
                        push_held(L, &h);
                        1
                    }
                    None => 0,
                };
            }
            b"break" => gate.set_condition(to_bytes(L, 2).map(String::from_utf8_lossy).as_deref()),
            other => return raise(L, format!("scope: {} is not view, stop, continue, step or break", String::from_utf8_lossy(other))),
        }
        let mut v = gate.view();
        // A process killed while held is held no more.
        v.held.retain(|h| {
            let alive = rt.is_alive(h.pid);
            if !alive {
                gate.forget(h.pid);
            }
            alive
        });
        ffi::lua_createtable(L, 0, 5);
        ffi::lua_pushboolean(L, v.stopped as c_int);
        ffi::lua_setfield(L, -2, c"stopped".as_ptr());
        if let Some(c) = &v.condition {
            push_bytes(L, c.as_bytes());
            ffi::lua_setfield(L, -2, c"condition".as_ptr());
        }
        set_int(L, c"steps", v.steps as i64);
        ffi::lua_createtable(L, v.held.len() as c_int, 0);
        for (i, h) in v.held.iter().enumerate() {
            push_held(L, h);
            ffi::lua_rawseti(L, -2, i as ffi::lua_Integer + 1);
        }
        ffi::lua_setfield(L, -2, c"held".as_ptr());
        if let Some(h) = &v.hit {
            push_held(L, h);
            ffi::lua_setfield(L, -2, c"hit".as_ptr());
        }
    }
    1
}

/// `synodic._role(name)`: says what the calling process is, for the
/// dashboard ("skeleton", "entity"; nil: nothing), which finds such
/// processes with `roles()` and asks them to describe themselves (their
/// `registry["synodic.stats"]` function adds its line then: `vm/process.rs`).
pub(crate) unsafe extern "C-unwind" fn role(L: *mut ffi::lua_State) -> c_int {
    use synodic_core::process::Role;
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1), whose context is entered; the argument's bytes
    // stay on the stack while read.
    unsafe {
        let role = match to_bytes(L, 1) {
            Some(b"skeleton") => Role::Skeleton,
            Some(b"entity") => Role::Entity,
            _ => Role::None,
        };
        ctx(L).proc().set_role(role);
    }
    0
}

/// `roles()`: this node's processes that have a role: `{{pid =, role =}, ...}`.
pub(super) unsafe extern "C-unwind" fn roles(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1), whose context is entered.
    let list = unsafe { ctx(L) }.rt().roles();
    // NOT KEPT: lib.rs invariant 2, `list` is alive through these
    // allocating calls (a memory error would leak it).
    // SAFETY: as above; the list is built at -1, each entry above it.
    unsafe {
        ffi::lua_createtable(L, list.len() as c_int, 0);
        for (i, (pid, role)) in list.iter().enumerate() {
            ffi::lua_createtable(L, 0, 2);
            push_pid(L, *pid);
            ffi::lua_setfield(L, -2, c"pid".as_ptr());
            push_bytes(L, role.name().as_bytes());
            ffi::lua_setfield(L, -2, c"role".as_ptr());
            ffi::lua_rawseti(L, -2, i as ffi::lua_Integer + 1);
        }
    }
    drop(list);
    1
}

/// Pushes `{pid =, op =, space =, args =}`.
unsafe fn push_held(L: *mut ffi::lua_State, h: &Held) {
    // SAFETY: `L` is the running state with room for a table (the caller's).
    unsafe {
        ffi::lua_createtable(L, 0, 4);
        push_pid(L, h.pid);
        ffi::lua_setfield(L, -2, c"pid".as_ptr());
        for (key, text) in [(c"op", &h.op), (c"space", &h.space), (c"args", &h.args)] {
            push_bytes(L, text.as_bytes());
            ffi::lua_setfield(L, -2, key.as_ptr());
        }
    }
}

/// `node_stats()`: this node's figures.
pub(super) unsafe extern "C-unwind" fn node_stats(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1), whose context is entered.
    let rt = unsafe { ctx(L) }.rt().clone();
    let links = rt.transport().map(|t| t.traffic()).unwrap_or_default();
    let members = rt.transport().map(|t| t.membership()).unwrap_or_default();
    let (queued, idle) = rt.pool_counts();
    let mut cpu = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: writes the clock into `cpu`.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut cpu) };
    // NOT KEPT: lib.rs invariant 2, `links` and `members` are alive
    // through these allocating calls (a memory error would leak them).
    // SAFETY: as above; the table is built at -1 (each link's above it).
    unsafe {
        ffi::lua_createtable(L, 0, 9);
        set_int(L, c"messages", synodic_core::stats::messages() as i64);
        set_int(L, c"rss", resident_bytes() as i64);
        ffi::lua_pushnumber(L, cpu.tv_sec as f64 + cpu.tv_nsec as f64 * 1e-9);
        ffi::lua_setfield(L, -2, c"cpu".as_ptr());
        set_int(L, c"processes", rt.process_count() as i64);
        set_int(L, c"workers", rt.workers() as i64);
        set_int(L, c"load", rt.load() as i64);
        set_int(L, c"pool_queued", queued as i64);
        set_int(L, c"pool_idle", idle as i64);
        ffi::lua_createtable(L, links.len() as c_int, 0);
        for (i, (node, sent, received)) in links.iter().enumerate() {
            ffi::lua_createtable(L, 0, 3);
            push_bytes(L, node.as_bytes());
            ffi::lua_setfield(L, -2, c"node".as_ptr());
            set_int(L, c"sent", *sent as i64);
            set_int(L, c"received", *received as i64);
            ffi::lua_rawseti(L, -2, i as ffi::lua_Integer + 1);
        }
        ffi::lua_setfield(L, -2, c"links".as_ptr());
        ffi::lua_createtable(L, members.len() as c_int, 0);
        for (i, (node, live, member, linked)) in members.iter().enumerate() {
            ffi::lua_createtable(L, 0, 4);
            push_bytes(L, node.as_bytes());
            ffi::lua_setfield(L, -2, c"node".as_ptr());
            for (key, on) in [(c"live", *live), (c"member", *member), (c"linked", *linked)] {
                ffi::lua_pushboolean(L, on as c_int);
                ffi::lua_setfield(L, -2, key.as_ptr());
            }
            ffi::lua_rawseti(L, -2, i as ffi::lua_Integer + 1);
        }
        ffi::lua_setfield(L, -2, c"membership".as_ptr());
    }
    drop((links, members));
    1
}

/// The node's resident memory, from `/proc/self/statm` (0 where there is none).
fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|n| n.parse().ok()).unwrap_or(0);
    // SAFETY: sysconf reads a constant of the system.
    pages * unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(0) as u64
}

fn unhex(text: &[u8]) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    text.chunks(2).map(|pair| std::str::from_utf8(pair).ok().and_then(|p| u8::from_str_radix(p, 16).ok())).collect()
}

/// `proof_ok(key, nonce, proof)`: whether `proof` is the HMAC-SHA256 of
/// `nonce` under `key` (both hex), checked in constant time by `ring`.
pub(super) unsafe extern "C-unwind" fn proof_ok(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1); the arguments' bytes stay on the stack while read.
    let ok = unsafe {
        match (to_bytes(L, 1).and_then(unhex), to_bytes(L, 2), to_bytes(L, 3).and_then(unhex)) {
            (Some(key), Some(nonce), Some(proof)) => ring::hmac::verify(&ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &key), nonce, &proof).is_ok(),
            _ => false,
        }
    };
    // SAFETY: as above.
    unsafe { ffi::lua_pushboolean(L, ok as c_int) };
    1
}

/// `token()`: 128 random bits as hex, from the system's generator.
pub(super) unsafe extern "C-unwind" fn token(L: *mut ffi::lua_State) -> c_int {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 16];
    let text = match ring::rand::SystemRandom::new().fill(&mut bytes) {
        Ok(()) => bytes.iter().map(|b| format!("{b:02x}")).collect::<String>(),
        // SAFETY: Lua calls this native function with its running state
        // `L` (lib.rs invariant 1); `raise` drops its message.
        Err(_) => return unsafe { raise(L, "token: the system's random generator failed".into()) },
    };
    // SAFETY: as above.
    unsafe { push_bytes(L, text.as_bytes()) };
    1
}

/// `asset(path)`: the page's file and its content type, or nil.
pub(super) unsafe extern "C-unwind" fn asset(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1); the argument's bytes stay on the stack while read.
    unsafe {
        let path = to_bytes(L, 1).unwrap_or(b"");
        match ASSETS.iter().find(|(p, ..)| p.as_bytes() == path) {
            Some((_, kind, bytes)) => {
                push_bytes(L, bytes);
                push_bytes(L, kind.as_bytes());
                2
            }
            None => {
                ffi::lua_pushnil(L);
                1
            }
        }
    }
}
