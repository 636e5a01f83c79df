//! The `synodic.control` module: what tools written in Lua (the console
//! agent, `lualib/console.lua`) need from the runtime. The console endpoint
//! itself is the I/O layer's (`synodic_net::console`): it starts a console
//! agent per connection and gives it a port to write to.
//!
//! | function | does |
//! |---|---|
//! | `write(port, kind, text)` | `kind text` to a console, as one protocol line (see `synodic_net::console`); false when it is gone |
//! | `processes()` | the live processes: a list of `{pid =, state =, mailbox =, names = {...}}` |
//! | `probe(pid)` | asks `pid` to describe itself: the caller receives `"probe", pid, text`; false when there is no such process |

use std::ffi::{c_int, CStr};

use mlua_sys as ffi;

use crate::ctx::ctx;
use crate::util::{push_bytes, push_pid, raise, to_bytes, to_pid, type_name};

pub(crate) const FUNCTIONS: &[(&CStr, ffi::lua_CFunction)] = &[(c"write", write), (c"processes", processes), (c"probe", probe)];

crate::lazy::lazy_module!(b"synodic.control");

/// `write(port, kind, text)`: sends `kind text` to a console, which makes it
/// one protocol line; false when the console is gone.
unsafe extern "C-unwind" fn write(L: *mut ffi::lua_State) -> c_int {
    let port = ffi::lua_tointegerx(L, 1, std::ptr::null_mut());
    let (Some(kind), Some(text)) = (to_bytes(L, 2), to_bytes(L, 3)) else {
        return raise(L, "bad arguments to 'write' (port, kind, text expected)".into());
    };
    let line = [kind, b" ", text].concat();
    let ok = ctx(L).rt().ports().write(port as u64, &line);
    drop(line);
    ffi::lua_pushboolean(L, ok as c_int);
    1
}

/// `processes()`: the live processes of this node.
unsafe extern "C-unwind" fn processes(L: *mut ffi::lua_State) -> c_int {
    let list = ctx(L).rt().processes();
    ffi::lua_createtable(L, list.len() as c_int, 0);
    for (i, p) in list.iter().enumerate() {
        ffi::lua_createtable(L, 0, 4);
        push_pid(L, p.pid);
        ffi::lua_setfield(L, -2, c"pid".as_ptr());
        push_bytes(L, p.state.as_bytes());
        ffi::lua_setfield(L, -2, c"state".as_ptr());
        ffi::lua_pushinteger(L, p.mailbox as ffi::lua_Integer);
        ffi::lua_setfield(L, -2, c"mailbox".as_ptr());
        ffi::lua_createtable(L, p.names.len() as c_int, 0);
        for (k, name) in p.names.iter().enumerate() {
            push_bytes(L, name.as_bytes());
            ffi::lua_rawseti(L, -2, k as ffi::lua_Integer + 1);
        }
        ffi::lua_setfield(L, -2, c"names".as_ptr());
        ffi::lua_rawseti(L, -2, i as ffi::lua_Integer + 1);
    }
    drop(list);
    1
}

/// `probe(pid)`: asks the process to describe itself to the caller.
unsafe extern "C-unwind" fn probe(L: *mut ffi::lua_State) -> c_int {
    let Some(pid) = to_pid(L, 1) else {
        return raise(L, format!("bad argument #1 to 'probe' (pid expected, got {})", type_name(L, 1)));
    };
    let c = ctx(L);
    let asked = c.rt().probe(pid, c.proc().pid());
    ffi::lua_pushboolean(L, asked as c_int);
    1
}
