//! Every `unsafe` block and `unsafe impl` in the workspace's crates (core,
//! net, lua, cli) states the invariant it relies on: a `// SAFETY:` comment
//! on it or within the four lines above it. (crates/lua states the shared
//! invariants of its `unsafe fn`s over a `lua_State` once, in its lib.rs,
//! and denies `unsafe_op_in_unsafe_fn`, so every unsafe step there is a
//! block with a note that may refer to them.)

mod common;

use std::path::Path;

use common::sources::{crate_src, rust_files};

/// The unsafe blocks and impls of the sources under `dir` without a note.
fn unexplained(dir: &Path) -> (usize, Vec<String>) {
    let files = rust_files(dir);
    let (mut sites, mut missing) = (0, Vec::new());
    for file in files {
        let text = std::fs::read_to_string(&file).expect("a source file");
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            let words: Vec<&str> = code.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '{')).filter(|w| !w.is_empty()).collect();
            let is_site = words.windows(2).any(|w| w[0] == "unsafe" && (w[1] == "{" || w[1] == "impl")) || words.contains(&"unsafe{");
            if !is_site {
                continue;
            }
            sites += 1;
            if !lines[i.saturating_sub(4)..=i].iter().any(|l| l.contains("SAFETY")) {
                missing.push(format!("{}:{}: {}", file.display(), i + 1, line.trim()));
            }
        }
    }
    (sites, missing)
}

#[test]
fn every_unsafe_block_says_why_it_is_sound() {
    let mut all = Vec::new();
    for name in ["core", "net", "lua", "cli"] {
        let (sites, missing) = unexplained(&crate_src(name));
        assert!(sites > 0 || name == "cli", "unsafe sites of crates/{name} are found");
        all.extend(missing);
    }
    assert!(all.is_empty(), "unsafe without a `// SAFETY:` note on it or just above:\n{}", all.join("\n"));
}
