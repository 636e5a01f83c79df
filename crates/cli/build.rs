//! Exports the Lua C API (and the buffer API of include/synodic.h) from the
//! `synodic` binary so that C modules loaded with `require` (package.cpath)
//! link against the embedded Lua: exactly the symbols `exports.list` names.
fn main() {
    let list = std::path::Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("exports.list");
    println!("cargo:rerun-if-changed={}", list.display());
    println!("cargo:rustc-link-arg-bins=-Wl,--dynamic-list={}", list.display());
}
