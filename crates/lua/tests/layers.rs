//! The crate's layers stay apart: the VM layer (`src/vm/`) names nothing
//! of the API layer (`src/api/`) nor of the entry points above both
//! (`src/start.rs`, which installs the API's registry into the VM); it
//! reads what it needs of the modules through `vm/module.rs`.

use std::path::Path;

fn rust_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir).expect("the source folder").map(|e| e.expect("an entry").path()).filter(|p| p.extension().is_some_and(|e| e == "rs")).collect();
    files.sort();
    files
}

#[test]
fn vm_names_no_api_module() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let vm = rust_files(&src.join("vm"));
    assert!(vm.len() > 10, "the VM layer's files are found");
    let mut crossings = Vec::new();
    for file in vm {
        let text = std::fs::read_to_string(&file).expect("a source file");
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            let names_api = code.contains("crate::api") || code.contains("super::super::api") || code.contains("crate::start");
            // Unit tests make states without the entry points: the
            // registry's accessor installs it itself under cfg(test).
            let allowed = name == "module.rs" && code.trim() == "crate::start::ready();";
            if names_api && !allowed {
                crossings.push(format!("src/vm/{name}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(crossings.is_empty(), "VM files that name the API layer (read it through vm::module instead):\n{}", crossings.join("\n"));
}

#[test]
fn every_api_module_is_in_the_registry() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let registry = std::fs::read_to_string(src.join("api/registry.rs")).expect("the registry");
    let api = std::fs::read_to_string(src.join("api/mod.rs")).expect("api/mod.rs");
    // Every file of api/ is declared in api/mod.rs, and every public module
    // (a `synodic.*` module's Rust side) is used by the registry.
    for file in rust_files(&src.join("api")) {
        let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
        if stem == "mod" {
            continue;
        }
        assert!(api.contains(&format!("mod {stem};")), "api/{stem}.rs is not declared in api/mod.rs");
        if api.contains(&format!("pub mod {stem};")) {
            assert!(registry.contains(&format!("{stem}::")), "api/{stem}.rs is a public module the registry does not list");
        }
    }
}
