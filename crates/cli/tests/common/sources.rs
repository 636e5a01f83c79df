//! The workspace's own sources, for the tests that check rules on the code
//! itself (layers, safety notes).

use std::path::{Path, PathBuf};

/// `crates/NAME/src`.
pub fn crate_src(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(name).join("src")
}

/// Every `.rs` file under `dir`, subfolders included, sorted.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    walk(dir, &mut out);
    out.sort();
    out
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a source folder") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Each line of `file` without its `//` comment, numbered from 1.
pub fn code_lines(file: &Path) -> Vec<(usize, String)> {
    let text = std::fs::read_to_string(file).expect("a source file");
    text.lines().enumerate().map(|(i, l)| (i + 1, l.split("//").next().unwrap_or("").to_string())).collect()
}
