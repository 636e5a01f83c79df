//! The VM layer: Lua states made, run, copied and kept small, and Lua
//! values carried as the core's messages. Nothing here names a module of
//! the API layer (`crate::api`): what the VM needs to know of them (their
//! names, openers, functions, the userdata kinds they let cross, the hooks
//! they run) it reads from the one registry, `crate::api::registry`. A
//! test (`the_lua_vm_layer_names_no_api_module` in `crates/cli/tests/layers.rs`) holds that boundary.

pub(crate) mod arena;
pub(crate) mod bundled;
pub mod codec;
pub mod command_line;
pub(crate) mod cputime;
pub(crate) mod ctx;
pub(crate) mod dumps;
pub(crate) mod heap;
pub(crate) mod hot;
pub(crate) mod lazy;
pub(crate) mod loader;
pub(crate) mod module;
pub(crate) mod peek;
pub(crate) mod plain;
pub mod preempt;
pub(crate) mod prefault;
pub(crate) mod prefix;
pub mod process;
pub(crate) mod shared;
pub mod state;
pub(crate) mod template;
pub(crate) mod template_code;
pub(crate) mod util;
pub(crate) mod wait;
