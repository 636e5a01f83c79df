//! Builds Lua 5.4 from `vendor/lua-5.4.8` with Synodic's compile-time
//! options, plus the C helpers in `csrc/` that need Lua's internal headers.
//! mlua-sys only declares the API (its `external` feature); this is where the
//! library itself comes from.
use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let lua = manifest.join("../../vendor/lua-5.4.8");
    let mut build = cc::Build::new();
    build.include(&lua);
    lua_options(&mut build);
    build
        // Lua's sources are vendored as they are: their warnings are not ours.
        .warnings(false)
        .flag("-w");
    if std::env::var("PROFILE").as_deref() == Ok("debug") {
        build.define("LUA_USE_APICHECK", None);
    }
    for entry in std::fs::read_dir(&lua).expect("vendor/lua-5.4.8 is part of the tree") {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "c") {
            build.file(&path);
        }
    }
    build.compile("lua5.4");

    let mut ours = cc::Build::new();
    ours.include(&lua).include(manifest.join("csrc")).warnings(true).warnings_into_errors(true).file(manifest.join("csrc/hot.c"))
        .file(manifest.join("csrc/peek.c"))
        .file(manifest.join("csrc/plain.c"))
        .file(manifest.join("csrc/gc.c"))
        .file(manifest.join("csrc/preempt.c"))
        .file(manifest.join("csrc/lazy.c"))
        .file(manifest.join("csrc/shared.c"))
        .file(manifest.join("csrc/template.c"));
    lua_options(&mut ours);
    ours.compile("synodic_csrc");
    println!("cargo:rerun-if-changed=../../vendor/lua-5.4.8");
    println!("cargo:rerun-if-changed=csrc");
}

/// The compile-time options of Lua, which code reading its internals must share.
fn lua_options(build: &mut cc::Build) {
    build
        .define("LUA_USE_LINUX", None)
        .define("LUA_COMPAT_5_3", None)
        // The vendored sources' hooks for Synodic (marked [Synodic]) are on.
        .define("LUAI_SYNODIC", None)
        // Each Lua state is a process, a million of them must fit: the
        // per-state cache of C-string lookups (53x2 pointers) shrinks to one
        // entry, and the string table starts at 8 buckets instead of 128
        // (the keywords, metamethod and library names are the node's,
        // shared: see src/shared.rs; a state's own are its program's).
        .define("STRCACHE_N", "1")
        .define("STRCACHE_M", "1")
        .define("MINSTRTABSIZE", "8")
        // Lua's errors and yields unwind with setjmp/longjmp; glibc's save
        // and restore the signal mask and walk cleanup handlers, the
        // compiler's builtins only restore the frame (~70 fewer instructions
        // per yield-and-resume of a process).
        .define("luai_jmpbuf", "jmp_buf")
        .define("LUAI_THROW(L,c)", "__builtin_longjmp((void **)(c)->b, 1)")
        .define("LUAI_TRY(L,c,a)", "if (__builtin_setjmp((void **)(c)->b) == 0) { a }")
        .flag_if_supported("-fno-common");
}
