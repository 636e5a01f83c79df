//! The transport knows a service's frame only as a kind and bytes: no
//! file of `crates/net/src` names a distributed service, a service's frame
//! kind or the runtime's notices, but for the two services the cluster
//! starts (`spawn`: it installs the spawner; `pool`: its load reports are
//! what `join` waits on). A new distributed feature is then a service in
//! `crates/core/src/dist/` alone.

use std::path::{Path, PathBuf};

const ALLOWED: &[&str] = &["dist::carry", "dist::pool", "dist::spawn", "dist::Outgoing", "dist::Transport", "dist::Peer", "dist::Services", "dist::{"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a source folder") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn the_transport_names_no_service_but_the_two_it_starts() {
    let mut files = Vec::new();
    rust_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut files);
    assert!(files.len() > 10, "found the sources");
    let mut named = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("a source file");
        for (i, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            let mut rest = line;
            while let Some(at) = rest.find("dist::") {
                let tail = &rest[at..];
                if !ALLOWED.iter().any(|a| tail.starts_with(a)) {
                    named.push(format!("{}:{}: {}", file.display(), i + 1, line.trim()));
                }
                rest = &rest[at + 6..];
            }
            // `use synodic_core::dist::{...}` lists only traits and types of mod.rs.
            if let Some(list) = line.split("dist::{").nth(1).and_then(|l| l.split('}').next()) {
                for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                    if !["Outgoing", "Outgoing as ServiceFrame", "Transport", "Peer", "Services", "ATTACHMENTS_MAX", "MESSAGE_MAX"].contains(&item) && !item.starts_with("self") {
                        named.push(format!("{}:{}: names {item}", file.display(), i + 1));
                    }
                }
            }
        }
    }
    assert!(named.is_empty(), "the transport names a service:\n{}", named.join("\n"));
}
