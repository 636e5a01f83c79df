//! The API layer: the `synodic.*` modules a Lua program requires, each in
//! its own file, each declared once in `registry`. Modules here build on
//! the VM layer (`crate::vm`) and on each other; the VM layer knows them
//! only through the registry.

pub mod buffer;
pub mod chan;
pub mod control;
pub mod coroutine;
pub(crate) mod deferred;
pub mod future;
pub(crate) mod http;
pub mod kernel;
pub mod linda;
pub(crate) mod log;
pub(crate) mod registry;
pub(crate) mod remote;
pub(crate) mod socket;
#[cfg(test)]
pub(crate) mod testkit;
