//! The one list of Synodic's Lua API: every module, as it declares itself
//! to the VM layer (see `crate::vm::module`). A new module is a file in
//! `api/` and one entry here.

use crate::api::{buffer, chan, control, coroutine, future, http, kernel, linda, log, socket};
use crate::vm::module::{Code, Module, Registry};

/// The registry, as the VM layer reads it (installed by `start.rs`).
pub(crate) static REGISTRY: Registry = Registry { modules: MODULES, frozen_sees: &[c"synodic", c"synodic.socket.raw", c"synodic.http.raw"] };

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
    lua(c"synodic.alua", c"@lualib/alua.lua", include_str!("../../../../lualib/alua.lua")),
    lua(c"synodic.cli", c"@lualib/cli.lua", include_str!("../../../../lualib/cli.lua")),
    lua(c"synodic.repl", c"@lualib/repl.lua", include_str!("../../../../lualib/repl.lua")),
    lua(c"synodic.console", c"@lualib/console.lua", include_str!("../../../../lualib/console.lua")),
    lua(c"synodic.entity", c"@lualib/entity.lua", include_str!("../../../../lualib/entity.lua")),
    Module {
        name: c"synodic.entity.loop",
        code: Code::Lua { chunk: c"@lualib/entity_loop.lua", source: include_str!("../../../../lualib/entity_loop.lua"), frozen: true },
        sendable: None,
    },
    Module { sendable: Some(&future::SENDABLE), ..lua(c"synodic.future", c"@lualib/future.lua", include_str!("../../../../lualib/future.lua")) },
    lua(c"synodic.future.wait", c"@lualib/future_wait.lua", include_str!("../../../../lualib/future_wait.lua")),
    lua(c"synodic.skel", c"@lualib/skel.lua", include_str!("../../../../lualib/skel.lua")),
    Module {
        name: c"synodic.socket.core",
        code: Code::Lua { chunk: c"@lualib/socket_core.lua", source: include_str!("../../../../lualib/socket_core.lua"), frozen: true },
        sendable: None,
    },
    lua(c"synodic.socket", c"@lualib/socket.lua", include_str!("../../../../lualib/socket.lua")),
    Module {
        name: c"synodic.http.core",
        code: Code::Lua { chunk: c"@lualib/http_core.lua", source: include_str!("../../../../lualib/http_core.lua"), frozen: true },
        sendable: None,
    },
    lua(c"synodic.http", c"@lualib/http.lua", include_str!("../../../../lualib/http.lua")),
    lua(c"synodic.log", c"@lualib/log.lua", include_str!("../../../../lualib/log.lua")),
    lua(c"synodic.supervisor", c"@lualib/supervisor.lua", include_str!("../../../../lualib/supervisor.lua")),
    lua(c"synodic.skel.balance", c"@lualib/skel_balance.lua", include_str!("../../../../lualib/skel_balance.lua")),
    Module { name: c"coroutine", code: Code::Replaces(coroutine::REPLACED), sendable: None },
    Module { name: c"os", code: Code::Replaces(&[(c"clock", crate::vm::cputime::os_clock)]), sendable: None },
];

const fn native(name: &'static std::ffi::CStr, open: mlua_sys::lua_CFunction, lazy: Option<&'static crate::vm::util::Functions>) -> Module {
    Module { name, code: Code::Native { open, lazy }, sendable: None }
}

const fn lua(name: &'static std::ffi::CStr, chunk: &'static std::ffi::CStr, source: &'static str) -> Module {
    Module { name, code: Code::Lua { chunk, source, frozen: false }, sendable: None }
}
