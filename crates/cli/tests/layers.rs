//! The layers stay apart, checked on the sources themselves (see
//! ARCHITECTURE.md, "Checks that keep this map true"):
//!
//! - crates/lua: the VM layer (`src/vm/`, subfolders included) names
//!   nothing of the API layer (`src/api/`) nor of the entry points above
//!   both (`src/start.rs`); it reads what it needs of the modules through
//!   `vm/module.rs`. Every public API module is in the registry.
//! - crates/net: the transport knows a service's frame only as a kind and
//!   bytes. No file names a distributed service, a service's frame kind or
//!   the runtime's notices, but for the two services the cluster starts
//!   (`spawn`: it installs the spawner; `pool`: its load reports are what
//!   `join` waits on). A new distributed feature is then a service in
//!   `crates/core/src/dist/` alone.

mod common;

use common::sources::{code_lines, crate_src, rust_files};

#[test]
fn the_lua_vm_layer_names_no_api_module() {
    let vm = rust_files(&crate_src("lua").join("vm"));
    assert!(vm.len() > 15 && vm.iter().any(|f| f.ends_with("codec/encoder.rs")), "the VM layer's files are found, subfolders too");
    let mut crossings = Vec::new();
    for file in vm {
        for (n, code) in code_lines(&file) {
            let names_api = code.contains("crate::api") || code.contains("super::super::api") || code.contains("crate::start");
            // Unit tests make states without the entry points: the
            // registry's accessor installs it itself under cfg(test).
            let allowed = file.ends_with("vm/module.rs") && code.trim() == "crate::start::ready();";
            if names_api && !allowed {
                crossings.push(format!("{}:{n}: {}", file.display(), code.trim()));
            }
        }
    }
    assert!(crossings.is_empty(), "VM files that name the API layer (read it through vm::module instead):\n{}", crossings.join("\n"));
}

#[test]
fn every_lua_api_module_is_in_the_registry() {
    let src = crate_src("lua").join("api");
    let registry = std::fs::read_to_string(src.join("registry.rs")).expect("the registry");
    let api = std::fs::read_to_string(src.join("mod.rs")).expect("api/mod.rs");
    // Every file or folder of api/ is declared in api/mod.rs, and every
    // public module (a `synodic.*` module's Rust side) is used by the registry.
    let mut modules: Vec<String> = std::fs::read_dir(&src).expect("api/").map(|e| e.expect("an entry").path()).filter_map(|p| match p.is_dir() {
        true => p.join("mod.rs").exists().then(|| p.file_name().unwrap().to_string_lossy().into_owned()),
        false => p.extension().is_some_and(|e| e == "rs").then(|| p.file_stem().unwrap().to_string_lossy().into_owned()),
    }).filter(|m| m != "mod").collect();
    modules.sort();
    assert!(modules.len() > 8, "the API modules are found");
    for stem in modules {
        assert!(api.contains(&format!("mod {stem};")), "api/{stem} is not declared in api/mod.rs");
        if api.contains(&format!("pub mod {stem};")) {
            assert!(registry.contains(&format!("{stem}::")), "api/{stem} is a public module the registry does not list");
        }
    }
}

/// What of `synodic_core::dist` the transport may name.
const TRANSPORT_MAY_NAME: &[&str] = &["dist::kind::transport", "dist::carry", "dist::pool", "dist::spawn", "dist::Outgoing", "dist::Head", "dist::Transport", "dist::Peer", "dist::Services", "dist::{"];
/// What a `dist::{...}` list in the transport may hold.
const TRANSPORT_MAY_LIST: &[&str] = &["Outgoing", "Outgoing as ServiceFrame", "Head", "Transport", "Peer", "Services", "ATTACHMENTS_MAX", "MESSAGE_MAX"];

#[test]
fn the_transport_names_no_service_but_the_two_it_starts() {
    let files = rust_files(&crate_src("net"));
    assert!(files.len() > 10, "found the sources");
    let mut named = Vec::new();
    for file in files {
        for (n, code) in code_lines(&file) {
            let mut rest = code.as_str();
            while let Some(at) = rest.find("dist::") {
                if !TRANSPORT_MAY_NAME.iter().any(|a| rest[at..].starts_with(a)) {
                    named.push(format!("{}:{n}: {}", file.display(), code.trim()));
                }
                rest = &rest[at + 6..];
            }
            if let Some(list) = code.split("dist::{").nth(1).and_then(|l| l.split('}').next()) {
                for item in list.split(',').map(str::trim).filter(|s| !s.is_empty() && !s.starts_with("self")) {
                    if !TRANSPORT_MAY_LIST.contains(&item) {
                        named.push(format!("{}:{n}: names {item}", file.display()));
                    }
                }
            }
        }
    }
    assert!(named.is_empty(), "the transport names a service:\n{}", named.join("\n"));
}
