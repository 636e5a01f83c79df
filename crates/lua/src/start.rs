//! The crate's ways in: every Lua process a program starts begins here,
//! and each of these installs the API layer's registry into the VM layer
//! first (once per OS process), so that the VM can open the modules a
//! process requires without naming any of them.

use synodic_core::{Body, Message, Pid, Runtime};

use crate::vm::process::LuaProcess;

/// Installs the API registry into the VM layer (idempotent, cheap).
pub(crate) fn ready() {
    crate::vm::module::install(&crate::api::registry::REGISTRY);
}

impl LuaProcess {
    /// Starts a process running the function and arguments of the spawn
    /// message `msg`, with a memory limit in bytes if given (else the node's).
    pub fn spawn(rt: &Runtime, msg: Message, max_memory: Option<u64>) -> Result<Pid, synodic_core::Error> {
        ready();
        LuaProcess::spawn_message(rt, msg, max_memory)
    }

    /// The main process: runs `path` with `args` as the `lua` command would.
    pub fn main_script(path: String, args: Vec<String>) -> Box<dyn Body> {
        ready();
        LuaProcess::script_body(path, args)
    }

    /// The main process of `synodic [options] [script [args]]`, the `lua`
    /// command's interface (`lualib/cli.lua` does what it asks).
    pub fn command_line(cl: crate::vm::command_line::CommandLine) -> Box<dyn Body> {
        ready();
        LuaProcess::driven_body("synodic.cli", cl)
    }

    /// A process running `require(module).main(arg)`.
    pub fn module(module: &'static str, arg: i64) -> Box<dyn Body> {
        ready();
        LuaProcess::module_body(module, crate::vm::ctx::ModuleArg::Int(arg))
    }

    /// A process running `require(module).main(text)`.
    pub fn module_text(module: &'static str, text: String) -> Box<dyn Body> {
        ready();
        LuaProcess::module_body(module, crate::vm::ctx::ModuleArg::Text(text))
    }
}

/// The body of the node's pool workers (`Config::pool_worker`).
pub fn pool_worker() -> Box<dyn Body> {
    ready();
    LuaProcess::module_body("synodic.future", crate::vm::ctx::ModuleArg::Int(0))
}
