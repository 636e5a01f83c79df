//! Exports the Lua C API from the `synodic` binary so that C modules loaded
//! with `require` (package.cpath) link against the embedded Lua.
fn main() {
    println!("cargo:rustc-link-arg-bins=-Wl,--export-dynamic");
}
