//! The one list of Synodic's Lua API: every module, as it declares itself
//! to the VM layer (see `crate::vm::module`). A new module is a file in
//! `api/` and one entry here.

use crate::api::{buffer, chan, control, coroutine, future, http, kernel, linda, log, socket};
use crate::vm::module::{Code, Module, Registry, Sharing};

/// The bytecode of `lualib/NAME.lua`, compiled by build.rs (or its
/// source, where no compiler could be built there).
macro_rules! lualib {
    ($name:literal) => {
        include_bytes!(concat!(env!("OUT_DIR"), "/lualib/", $name, ".luac"))
    };
}

/// The registry, as the VM layer reads it (installed by `start.rs`).
pub(crate) static REGISTRY: Registry = Registry {
    modules: MODULES,
    frozen_sees: &[c"synodic", c"synodic.socket.raw", c"synodic.http.raw"],
    strings: include_bytes!(concat!(env!("OUT_DIR"), "/lualib/strings.bin")),
};

/// Every module. Native modules with a lazy table come first in the order
/// their tables are numbered; the bundled Lua ones are numbered in the
/// order they appear.
pub(crate) static MODULES: &[Module] = &[
    native(c"synodic", kernel::open, Some(kernel::FUNCTIONS)),
    native(c"synodic.chan", chan::open, Some(chan::FUNCTIONS)),
    Module { sendable: Some(&linda::SENDABLE), ..native(c"synodic.linda", linda::open, None) },
    Module { sendable: Some(&buffer::SENDABLE), ..native(c"synodic.buffer", buffer::open, Some(buffer::FUNCTIONS)) },
    native(c"synodic.control", control::open, Some(control::FUNCTIONS)),
    Module { sendable: Some(&socket::SENDABLE), ..native(c"synodic.socket.raw", socket::open, Some(socket::FUNCTIONS)) },
    native(c"synodic.http.raw", http::open, Some(http::FUNCTIONS)),
    native(c"synodic.log.raw", log::open, Some(log::FUNCTIONS)),
    lua(c"synodic.alua", c"@lualib/alua.lua", lualib!("alua")),
    private(c"synodic.cli", c"@lualib/cli.lua", lualib!("cli")),
    private(c"synodic.repl", c"@lualib/repl.lua", lualib!("repl")),
    lua(c"synodic.gather", c"@lualib/gather.lua", lualib!("gather")),
    private(c"synodic.console", c"@lualib/console.lua", lualib!("console")),
    lua(c"synodic.dashboard", c"@lualib/dashboard.lua", lualib!("dashboard")),
    lua(c"synodic.dashboard.data", c"@lualib/dashboard_data.lua", lualib!("dashboard_data")),
    lua(c"synodic.entity", c"@lualib/entity.lua", lualib!("entity")),
    Module {
        name: c"synodic.entity.loop",
        code: Code::Lua { chunk: c"@lualib/entity_loop.lua", source: lualib!("entity_loop"), sharing: Sharing::Frozen },
        sendable: None,
    },
    Module { sendable: Some(&future::SENDABLE), ..lua(c"synodic.future", c"@lualib/future.lua", lualib!("future")) },
    lua(c"synodic.future.wait", c"@lualib/future_wait.lua", lualib!("future_wait")),
    lua(c"synodic.skel", c"@lualib/skel.lua", lualib!("skel")),
    Module {
        name: c"synodic.socket.core",
        code: Code::Lua { chunk: c"@lualib/socket_core.lua", source: lualib!("socket_core"), sharing: Sharing::Frozen },
        sendable: None,
    },
    lua(c"synodic.socket", c"@lualib/socket.lua", lualib!("socket")),
    Module {
        name: c"synodic.http.core",
        code: Code::Lua { chunk: c"@lualib/http_core.lua", source: lualib!("http_core"), sharing: Sharing::Frozen },
        sendable: None,
    },
    lua(c"synodic.http", c"@lualib/http.lua", lualib!("http")),
    lua(c"synodic.log", c"@lualib/log.lua", lualib!("log")),
    lua(c"synodic.supervisor", c"@lualib/supervisor.lua", lualib!("supervisor")),
    lua(c"synodic.skel.balance", c"@lualib/skel_balance.lua", lualib!("skel_balance")),
    lua(c"synodic.skel.watch", c"@lualib/skel_watch.lua", lualib!("skel_watch")),
    Module { name: c"coroutine", code: Code::Replaces(coroutine::REPLACED), sendable: None },
    Module { name: c"os", code: Code::Replaces(&[(c"clock", crate::vm::cputime::os_clock)]), sendable: None },
];

const fn native(name: &'static std::ffi::CStr, open: mlua_sys::lua_CFunction, lazy: Option<&'static crate::vm::util::Functions>) -> Module {
    Module { name, code: Code::Native { open, lazy }, sendable: None }
}

const fn lua(name: &'static std::ffi::CStr, chunk: &'static std::ffi::CStr, source: &'static [u8]) -> Module {
    Module { name, code: Code::Lua { chunk, source, sharing: Sharing::Shared }, sendable: None }
}

/// A bundled module that one process of a run uses (see `Sharing::Private`).
const fn private(name: &'static std::ffi::CStr, chunk: &'static std::ffi::CStr, source: &'static [u8]) -> Module {
    Module { name, code: Code::Lua { chunk, source, sharing: Sharing::Private }, sendable: None }
}
