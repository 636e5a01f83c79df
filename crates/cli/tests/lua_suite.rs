//! Lua 5.4.8's own test suite (`vendor/lua-5.4.8-tests`, unchanged) under
//! `synodic run`: every file, in the main process and in a spawned one, as
//! `tests/lua-suite/driver.lua` runs it (all.lua's settings, with `_soft`
//! and `_port` on). A process must behave as a plain Lua 5.4.8 state.

mod common;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use common::{output_within, scratch_dir, synodic_command, text};

/// A copy of the suite to run in (its files write scratch files beside them).
fn suite_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let dir = scratch_dir("lua-suite");
        copy_dir(&root.join("vendor/lua-5.4.8-tests"), &dir);
        std::fs::copy(root.join("tests/lua-suite/driver.lua"), dir.join("driver.lua")).unwrap();
        dir
    })
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

fn run(file: &str, mode: &str) {
    let mut cmd = synodic_command();
    cmd.current_dir(suite_dir()).args(["run", "driver.lua", &format!("{file}.lua"), mode]);
    let out = output_within(cmd, Duration::from_secs(300), &format!("{file}.lua ({mode})"));
    let stdout = text(&out.stdout);
    assert!(
        out.status.success() && stdout.contains(&format!("SUITE OK {file}.lua")),
        "{file}.lua in the {mode} process failed ({}):\n{}\n{}",
        out.status,
        stdout.lines().rev().take(10).collect::<Vec<_>>().join("\n"),
        text(&out.stderr)
    );
}

macro_rules! suite {
    ($($file:ident),* $(,)?) => {
        mod main_process {
            $( #[test] fn $file() { super::run(stringify!($file), "main") } )*
        }
        mod spawned_process {
            $( #[test] fn $file() { super::run(stringify!($file), "spawn") } )*
        }

        #[test]
        fn every_file_of_the_suite_is_listed() {
            let listed = [$(stringify!($file)),*];
            let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../vendor/lua-5.4.8-tests");
            for entry in std::fs::read_dir(dir).unwrap() {
                let name = entry.unwrap().file_name().to_string_lossy().into_owned();
                if let Some(stem) = name.strip_suffix(".lua") {
                    // all.lua runs the others; these it never runs itself.
                    if ["all", "bwcoercion", "heavy", "tracegc"].contains(&stem) {
                        continue;
                    }
                    assert!(listed.contains(&stem), "{name} is not run by lua_suite.rs");
                }
            }
        }
    };
}

suite!(
    main, gc, db, calls, strings, literals, tpack, attrib, gengc, locals, constructs, code, big, cstack, nextvar, pm, utf8, api,
    events, vararg, closure, coroutine, goto, errors, math, sort, bitwise, verybig, files,
);
