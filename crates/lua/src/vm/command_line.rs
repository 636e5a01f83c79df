//! The main process as the `lua` command starts it (SPEC §8): the global
//! `arg` (the script at 0, its arguments after, the interpreter and the
//! options before it at negative indices, so that a program can run its
//! interpreter again), and what `synodic`'s own command line asked for
//! besides the script (`-e`, `-l`, `-i`, `-v`, `-W`, `LUA_INIT`), handed to
//! a driver module written in Lua, which the caller names.

use std::ffi::c_int;

use mlua_sys as ffi;

use crate::vm::util::push_bytes;

/// Where the script comes from.
#[derive(Clone, Debug, Default)]
pub enum Script {
    /// None: only the options' work, or a prompt.
    #[default]
    None,
    /// A file, by path.
    File(String),
    /// Source already read (from standard input: `-`).
    Source(Vec<u8>),
}

/// `-e STAT` and `-l [G=]MOD`, in the order given.
#[derive(Clone, Debug)]
pub enum Action {
    Execute(String),
    /// The global to set, and the module to require.
    Require(String, String),
}

/// What `synodic [options] [script [args]]` asked for.
#[derive(Clone, Debug, Default)]
pub struct CommandLine {
    /// `arg[-n] .. arg[-1]`: the interpreter, then the options before the script.
    pub before: Vec<String>,
    /// `arg[0]`: the script's name as given (`-` for standard input).
    pub script_name: Option<String>,
    pub script: Script,
    pub args: Vec<String>,
    pub actions: Vec<Action>,
    /// `-i`, or no script and a terminal: a prompt after the rest.
    pub interactive: bool,
    /// `-v`: the version line first.
    pub version: bool,
    /// `-W`: warnings on.
    pub warnings: bool,
    /// `LUA_INIT_5_4` or `LUA_INIT` runs first (not under `-E`).
    pub init: bool,
    /// The port a prompt asks for its lines on (see the driver).
    pub prompt_port: u64,
    /// The version line (`-v`, and above a prompt).
    pub banner: String,
}

impl CommandLine {
    /// The main process of `synodic run SCRIPT ARGS`.
    pub fn script(path: String, args: Vec<String>) -> CommandLine {
        CommandLine { before: vec![interpreter()], script_name: Some(path.clone()), script: Script::File(path), args, ..Default::default() }
    }
}

/// How this process was started (`argv[0]`), so that `arg[-1]` can run it again.
pub fn interpreter() -> String {
    std::env::args().next().unwrap_or_else(|| "synodic".into())
}

/// Sets the global `arg` as `lua` does.
///
/// # Safety
/// `L` is a process's running state (lib.rs invariant 1). NOT KEPT: lib.rs
/// invariant 2, `cl` is alive through these allocating calls, and a memory
/// error in them unwinds over it (in practice a leak).
pub(crate) unsafe fn set_arg(L: *mut ffi::lua_State, cl: &CommandLine) {
    // SAFETY: the contract; the table is on top while filled, then set.
    unsafe {
        ffi::lua_createtable(L, cl.args.len() as c_int, cl.before.len() as c_int + 1);
        // No script: the interpreter is at 0 and the options after it, as
        // `lua` has them.
        let first = match cl.script_name {
            Some(_) => -(cl.before.len() as i64),
            None => 0,
        };
        for (i, a) in cl.before.iter().enumerate() {
            push_bytes(L, a.as_bytes());
            ffi::lua_rawseti(L, -2, first + i as i64);
        }
        if let Some(name) = &cl.script_name {
            push_bytes(L, name.as_bytes());
            ffi::lua_rawseti(L, -2, 0);
        }
        for (i, a) in cl.args.iter().enumerate() {
            push_bytes(L, a.as_bytes());
            ffi::lua_rawseti(L, -2, i as i64 + 1);
        }
        ffi::lua_setglobal(L, c"arg".as_ptr());
    }
}

/// Pushes the driver's description of `cl`: a table with `actions` (a list
/// of `{"e", code}` and `{"l", global, module}`), `script` (a path),
/// `source` (read from standard input), `name`, `args` (with `n`),
/// `interactive`, `version`, `warnings`, `init` and `port`.
///
/// # Safety
/// As [`set_arg`].
pub(crate) unsafe fn push_description(L: *mut ffi::lua_State, cl: &CommandLine) {
    // SAFETY: the contract; the description is on top while filled, each
    // nested table above it while filled.
    unsafe {
        ffi::lua_createtable(L, 0, 10);
        ffi::lua_createtable(L, cl.actions.len() as c_int, 0);
        for (i, a) in cl.actions.iter().enumerate() {
            let parts: Vec<&str> = match a {
                Action::Execute(code) => vec!["e", code],
                Action::Require(global, module) => vec!["l", global, module],
            };
            ffi::lua_createtable(L, parts.len() as c_int, 0);
            for (j, p) in parts.iter().enumerate() {
                push_bytes(L, p.as_bytes());
                ffi::lua_rawseti(L, -2, j as i64 + 1);
            }
            ffi::lua_rawseti(L, -2, i as i64 + 1);
        }
        ffi::lua_setfield(L, -2, c"actions".as_ptr());
        match &cl.script {
            Script::None => {}
            Script::File(path) => {
                push_bytes(L, path.as_bytes());
                ffi::lua_setfield(L, -2, c"script".as_ptr());
            }
            Script::Source(source) => {
                push_bytes(L, source);
                ffi::lua_setfield(L, -2, c"source".as_ptr());
            }
        }
        ffi::lua_createtable(L, cl.args.len() as c_int, 1);
        for (i, a) in cl.args.iter().enumerate() {
            push_bytes(L, a.as_bytes());
            ffi::lua_rawseti(L, -2, i as i64 + 1);
        }
        ffi::lua_pushinteger(L, cl.args.len() as ffi::lua_Integer);
        ffi::lua_setfield(L, -2, c"n".as_ptr());
        ffi::lua_setfield(L, -2, c"args".as_ptr());
        for (flag, name) in [(cl.interactive, c"interactive"), (cl.version, c"version"), (cl.warnings, c"warnings"), (cl.init, c"init")] {
            ffi::lua_pushboolean(L, flag as c_int);
            ffi::lua_setfield(L, -2, name.as_ptr());
        }
        ffi::lua_pushinteger(L, cl.prompt_port as ffi::lua_Integer);
        ffi::lua_setfield(L, -2, c"port".as_ptr());
        push_bytes(L, cl.banner.as_bytes());
        ffi::lua_setfield(L, -2, c"banner".as_ptr());
    }
}
