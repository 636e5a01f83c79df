//! Runs every Lua test script under `tests/lua/` with the `synodic` binary.
//! A script passes when it ends normally (exit status 0) and prints
//! `<name> ok`; it checks its own behaviour with `assert`. A first line
//! `-- synodic-args: ...` adds flags to `synodic run`. Every script has a time
//! limit (a line `-- synodic-limit: SECONDS` among the first lines sets its
//! own): one that hangs fails, named.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{output_within, synodic_command};

/// No script needs nearly this long; a run that takes it is a hang.
const SCRIPT_LIMIT: Duration = Duration::from_secs(60);

fn scripts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/lua")
}

fn run_script(name: &str) {
    let path = scripts_dir().join(format!("{name}.lua"));
    let source = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let header = |key: &str| source.lines().take(3).find_map(|l| l.strip_prefix(key)).map(str::trim);
    let flags: Vec<&str> = header("-- synodic-args:").map(|a| a.split_whitespace().collect()).unwrap_or_default();
    let limit = header("-- synodic-limit:").map_or(SCRIPT_LIMIT, |s| Duration::from_secs(s.parse().expect("synodic-limit: seconds")));
    let mut cmd = synodic_command();
    cmd.arg("run").args(&flags).arg(&path);
    let out = output_within(cmd, limit, &format!("tests/lua/{name}.lua"));
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
    receive_match,
    values,
    values_deep,
    monitor,
    exit,
    memory_limit,
    register,
    sleep,
    preemption,
    wakeup_latency,
    time_slice,
    preemption_hooks,
    stuck_workers,
    many_processes,
    main_ends,
    channels,
    blocking_withdrawn,
    coroutines,
    libraries,
    require_cost,
    standard_lua,
    cjson,
    alua_spawn,
    alua_events,
    alua_tostring,
    alua_exit,
    linda_out_take,
    linda_rd_probe,
    linda_formals,
    linda_spaces,
    linda_private_gc,
    buffer,
);
