//! Runs every Lua test script under `tests/lua/` with the `synodic` binary.
//! A script passes when it ends normally (exit status 0); it checks its own
//! behaviour with `assert`. A first line `-- synodic-args: ...` adds flags
//! to `synodic run`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn scripts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/lua")
}

fn run_script(name: &str) {
    let path = scripts_dir().join(format!("{name}.lua"));
    let source = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let flags: Vec<&str> = source
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("-- synodic-args:"))
        .map(|a| a.split_whitespace().collect())
        .unwrap_or_default();
    let out = Command::new(env!("CARGO_BIN_EXE_synodic"))
        .arg("run")
        .args(&flags)
        .arg(&path)
        .output()
        .expect("run synodic");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{name}.lua failed ({}):\n{stdout}\n{stderr}", out.status);
    assert!(stdout.contains(&format!("{name} ok")), "{name}.lua did not reach its end:\n{stdout}\n{stderr}");
}

macro_rules! lua_tests {
    ($($name:ident),* $(,)?) => {
        $( #[test] fn $name() { run_script(stringify!($name)) } )*

        #[test]
        fn every_script_is_listed() {
            let listed = [$(stringify!($name)),*];
            for entry in std::fs::read_dir(scripts_dir()).unwrap() {
                let path = entry.unwrap().path();
                if path.extension().is_some_and(|e| e == "lua") {
                    let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
                    assert!(listed.contains(&stem.as_str()), "tests/lua/{stem}.lua is not listed in lua_scripts.rs");
                }
            }
        }
    };
}

lua_tests!(
    spawn,
    send_receive,
    values,
    monitor,
    register,
    sleep,
    preemption,
    many_processes,
    main_ends,
    channels,
    coroutines,
    libraries,
    cjson,
    alua_spawn,
    alua_events,
    alua_tostring,
    alua_exit,
    linda_out_take,
    linda_rd_probe,
    linda_formals,
    linda_spaces,
    buffer,
);
