//! Link settings of the `synodic` binary.
//!
//! 1. It exports the Lua C API (and the buffer API of include/synodic.h) so
//!    that C modules loaded with `require` (package.cpath) link against the
//!    embedded Lua: exactly the symbols `exports.list` names.
//! 2. It takes the unwinder from GCC's static `libgcc_eh.a` instead of the
//!    shared `libgcc_s.so.1`, as `gcc -static-libgcc` does: one shared
//!    library fewer to find, map and relocate at every start, and no
//!    `libgcc_s` constructor probing the CPU (CPUID traps to the hypervisor
//!    on a VM). Rust's standard library asks for `-lgcc_s` by name; a linker
//!    script of that name in a directory searched first points it at the
//!    archive. The unwinder only serves backtraces here (panics abort).
//!    Where the compiler has no `libgcc_eh.a`, the binary links as before.
use std::path::{Path, PathBuf};

fn main() {
    let list = Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("exports.list");
    println!("cargo:rerun-if-changed={}", list.display());
    println!("cargo:rustc-link-arg-bins=-Wl,--dynamic-list={}", list.display());
    if let Some(dir) = static_unwinder() {
        println!("cargo:rustc-link-search=native={}", dir.display());
    }
}

/// A directory whose `libgcc_s.so` is a linker script naming the compiler's
/// `libgcc_eh.a`, on Linux with glibc when the compiler has one.
fn static_unwinder() -> Option<PathBuf> {
    let target = std::env::var("TARGET").ok()?;
    if !target.ends_with("-linux-gnu") {
        return None;
    }
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = std::process::Command::new(cc).arg("-print-file-name=libgcc_eh.a").output().ok()?;
    let archive = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    // Without the archive, the compiler prints the bare name back.
    if !out.status.success() || !archive.is_absolute() || !archive.exists() {
        return None;
    }
    let dir = PathBuf::from(std::env::var("OUT_DIR").ok()?).join("unwinder");
    std::fs::create_dir_all(&dir).ok()?;
    std::fs::write(dir.join("libgcc_s.so"), format!("INPUT(\"{}\")\n", archive.display())).ok()?;
    Some(dir)
}
