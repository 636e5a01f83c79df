//! What the VM layer knows of a module of the API layer: its name, how it
//! is made, and the userdata kinds it lets cross between processes. Each
//! module declares itself once, as a [`Module`] in the API layer's
//! registry, which the crate's entry points install here ([`install`])
//! before the first Lua state is made; the VM reads that list (to open
//! modules on `require`, to build lazy tables, to compile bundled Lua once
//! per node, to encode userdata) and names no module itself.

use std::ffi::CStr;

use mlua_sys as ffi;

use crate::vm::codec::Sendable;
use crate::vm::util::Functions;

/// One module of the API.
pub(crate) struct Module {
    /// The name `require` knows it by.
    pub name: &'static CStr,
    pub code: Code,
    /// Userdata kinds of this module that messages may carry.
    pub sendable: Option<&'static Sendable>,
}

/// How a module is made.
pub(crate) enum Code {
    /// Written in Rust: `open` makes its table. With `lazy`, the table is
    /// a lazy one (see `vm::lazy`): these functions are its entries, made
    /// on first use, and `open` runs only for a program that reads the
    /// whole table some other way.
    Native { open: ffi::lua_CFunction, lazy: Option<&'static Functions> },
    /// Written in Lua, bundled into the binary. `source` is its bytecode,
    /// compiled at build time (or its text); `chunk` names its source for
    /// tracebacks; `sharing` says how processes get its code.
    Lua { chunk: &'static CStr, source: &'static [u8], sharing: Sharing },
    /// Scheduler-aware replacements of some functions of the standard
    /// library `name` (the rest stay Lua's own).
    Replaces(&'static Functions),
}

/// How the processes of a node get a bundled module's code.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Sharing {
    /// Loaded by each process that requires it, as a program's own module
    /// is: for a module that one process of a run uses (the command line's
    /// main process, the prompt, the console). Sharing it saves nothing,
    /// and compiling `synodic.cli` in the loader's state (`vm::loader`)
    /// would make that state at every start.
    Private,
    /// Compiled once per node into the code every process shares
    /// (`vm::shared`), on its first require (`vm::loader`).
    Shared,
    /// Shared, and its main chunk runs once, in the node's shared state:
    /// every process shares its functions too.
    Frozen,
}

/// The modules of the API, as its registry lists them.
pub struct Registry {
    pub(crate) modules: &'static [Module],
    /// The modules a frozen module's main chunk may require (it gets their
    /// lazy functions, and nothing else).
    pub(crate) frozen_sees: &'static [&'static CStr],
    /// Every short string the bundled modules' bytecode holds, each a
    /// length byte and its bytes, listed by build.rs (empty where it could
    /// not compile them): what lets a module join the shared code on its
    /// first require (`vm::loader`).
    pub(crate) strings: &'static [u8],
}

static REGISTRY: std::sync::OnceLock<&'static Registry> = std::sync::OnceLock::new();

/// Installs the registry the VM reads; the first one installed stays.
pub(crate) fn install(registry: &'static Registry) {
    REGISTRY.get_or_init(|| registry);
}

fn registry() -> &'static Registry {
    // Unit tests make states without going through the entry points.
    #[cfg(test)]
    crate::start::ready();
    REGISTRY.get().expect("the API registry is installed before the first Lua state (the crate's entry points in start.rs do it)")
}

/// The modules a frozen module's main chunk may require.
pub(crate) fn frozen_sees() -> &'static [&'static CStr] {
    registry().frozen_sees
}

/// The strings of the bundled modules' bytecode (see [`Registry::strings`]).
pub(crate) fn bundled_strings() -> &'static [u8] {
    registry().strings
}

/// Every module, in the registry's order.
pub(crate) fn modules() -> &'static [Module] {
    registry().modules
}

/// The native modules, with their openers and lazy functions.
pub(crate) fn native() -> impl Iterator<Item = (&'static CStr, ffi::lua_CFunction, Option<&'static Functions>)> {
    modules().iter().filter_map(|m| match m.code {
        Code::Native { open, lazy } => Some((m.name, open, lazy)),
        _ => None,
    })
}

/// The functions of the native module `name`, if it has a lazy table.
pub(crate) fn lazy_functions(name: &CStr) -> Option<&'static Functions> {
    native().find(|(n, _, _)| *n == name).and_then(|(_, _, lazy)| lazy)
}

/// A bundled Lua module.
pub(crate) struct Bundled {
    pub name: &'static CStr,
    pub chunk: &'static CStr,
    pub source: &'static [u8],
    pub sharing: Sharing,
}

/// The bundled Lua modules, in the registry's order (their index is their
/// place in this list).
pub(crate) fn bundled() -> &'static [Bundled] {
    static B: std::sync::OnceLock<Vec<Bundled>> = std::sync::OnceLock::new();
    B.get_or_init(|| {
        modules()
            .iter()
            .filter_map(|m| match m.code {
                Code::Lua { chunk, source, sharing } => Some(Bundled { name: m.name, chunk, source, sharing }),
                _ => None,
            })
            .collect()
    })
}

/// The standard libraries some of whose functions are replaced, with the
/// replacements.
pub(crate) fn replacements() -> impl Iterator<Item = (&'static str, &'static Functions)> {
    modules().iter().filter_map(|m| match m.code {
        Code::Replaces(functions) => Some((m.name.to_str().expect("a library's name is ASCII"), functions)),
        _ => None,
    })
}

/// Every userdata kind that crosses between processes.
pub(crate) fn sendable() -> &'static [&'static Sendable] {
    static S: std::sync::OnceLock<Vec<&'static Sendable>> = std::sync::OnceLock::new();
    S.get_or_init(|| modules().iter().filter_map(|m| m.sendable).collect())
}
