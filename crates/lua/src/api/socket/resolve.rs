//! `resolve(host)`: the numeric addresses of a host name, as a list, or
//! `nil, "host not found"`. A numeric address or `localhost` is answered at
//! once; any other name is looked up by the system's resolver on a thread
//! of its own (it blocks, and must not block a worker), while the process
//! waits as for anything else. At most `LOOKUPS` run at once on a node; a
//! process that finds them all busy waits for one to end.

use std::ffi::c_int;
use std::net::{IpAddr, Ipv4Addr, ToSocketAddrs};
use std::sync::atomic::{AtomicUsize, Ordering::*};
use std::sync::{Arc, Mutex};

use mlua_sys as ffi;
use synodic_core::waiting::{Completion, Waiter};

use crate::vm::ctx::ctx;
use crate::vm::util::*;
use crate::vm::wait::{self, Poll};

/// Lookups running at once, at most.
const LOOKUPS: usize = 16;
static RUNNING: AtomicUsize = AtomicUsize::new(0);

type Answer = Arc<Mutex<Option<Result<Vec<IpAddr>, String>>>>;

/// A process waiting for a lookup's answer.
struct Lookup(Answer);

impl wait::Queue for Lookup {
    unsafe fn withdraw(&self, _L: *mut ffi::lua_State, _waiter: Waiter) {
        // The lookup runs to its end; its completion then finds no waiter.
    }
    fn as_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}

/// Pushes the list of addresses, or `nil, why`.
unsafe fn answer(L: *mut ffi::lua_State, found: Result<Vec<IpAddr>, String>) -> c_int {
    // SAFETY: `L` is the running state in a native function; `found` is
    // consumed before anything can raise (only pushes follow).
    unsafe {
        match found {
            Ok(ips) if !ips.is_empty() => {
                let texts: Vec<String> = ips.iter().map(|ip| ip.to_string()).collect();
                drop(ips);
                ffi::lua_createtable(L, texts.len() as c_int, 0);
                for (i, t) in texts.iter().enumerate() {
                    push_bytes(L, t.as_bytes());
                    ffi::lua_rawseti(L, -2, i as ffi::lua_Integer + 1);
                }
                1
            }
            Ok(_) => {
                ffi::lua_pushnil(L);
                ffi::lua_pushstring(L, c"host not found".as_ptr());
                2
            }
            Err(why) => {
                ffi::lua_pushnil(L);
                push_bytes(L, why.as_bytes());
                2
            }
        }
    }
}

/// What can be answered without the resolver.
fn at_once(host: &str) -> Option<Vec<IpAddr>> {
    if let Ok(ip) = host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
        return Some(vec![ip]);
    }
    (host.eq_ignore_ascii_case("localhost") || host == "*").then(|| vec![IpAddr::V4(if host == "*" { Ipv4Addr::UNSPECIFIED } else { Ipv4Addr::LOCALHOST })])
}

pub(super) unsafe extern "C-unwind" fn resolve(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this native function with its running state `L`
    // (lib.rs invariant 1), the host name at 1; what is owned here is
    // dropped before a raise or the yield.
    unsafe {
        let Some(host) = (ffi::lua_type(L, 1) == ffi::LUA_TSTRING).then(|| to_bytes(L, 1)).flatten() else {
            return raise(L, format!("bad argument #1 to 'resolve' (string expected, got {})", type_name(L, 1)));
        };
        let host = String::from_utf8_lossy(host).into_owned();
        if let Some(ips) = at_once(&host) {
            drop(host);
            return answer(L, Ok(ips));
        }
        if RUNNING.fetch_add(1, AcqRel) >= LOOKUPS {
            RUNNING.fetch_sub(1, AcqRel);
            drop(host);
            return answer(L, Err("too many name lookups at once".into()));
        }
        let slot: Answer = Arc::default();
        let waiter = wait::begin(L, Box::new(Lookup(slot.clone())));
        let rt = ctx(L).rt().clone();
        let started = std::thread::Builder::new().name("synodic-resolve".into()).spawn(move || {
            let found = (host.as_str(), 0).to_socket_addrs().map(|addrs| addrs.map(|a| a.ip()).collect()).map_err(|_| "host not found".to_string());
            *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(found);
            RUNNING.fetch_sub(1, AcqRel);
            rt.complete((waiter, Completion::Notified));
        });
        if let Err(e) = started {
            RUNNING.fetch_sub(1, AcqRel);
            wait::end::<Lookup>(L);
            return answer(L, Err(format!("cannot start a name lookup: {e}")));
        }
        wait::block(L, resolve_k, "resolve")
    }
}

unsafe extern "C-unwind" fn resolve_k(L: *mut ffi::lua_State, _status: c_int, _k: ffi::lua_KContext) -> c_int {
    // SAFETY: Lua runs this continuation with the process's running state
    // (lib.rs invariant 1); the answer is moved out before it is pushed.
    unsafe {
        ffi::lua_settop(L, 0);
        match wait::poll(L) {
            Poll::Waiting => wait::block(L, resolve_k, "resolve"),
            Poll::Withdrawn => {
                wait::end::<Lookup>(L);
                wait::cannot_block(L, "resolve")
            }
            Poll::Done(_) => {
                let found = wait::end::<Lookup>(L).and_then(|l| l.0.lock().unwrap_or_else(|e| e.into_inner()).take()).unwrap_or_else(|| Err("host not found".into()));
                answer(L, found)
            }
        }
    }
}
