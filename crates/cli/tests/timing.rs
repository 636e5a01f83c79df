//! The Lua test scripts that measure time (`tests/lua/timing/`: the time
//! slice, how soon a woken process runs, how a burst of tasks spreads over
//! three nodes), one after the other in one test. Each needs the machine
//! to itself: cargo runs test files one at a time, and these do not run
//! beside the other scripts.

mod common;

use std::path::Path;

#[test]
fn timing_scripts_one_at_a_time() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/lua/timing");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().to_string_lossy().strip_suffix(".lua").map(str::to_string))
        .collect();
    names.sort();
    assert_eq!(names, ["async_spread", "slice_after_idle", "time_slice", "wakeup_latency"]);
    // (A cookie of their own for the scripts that start nodes.)
    let scratch = common::scratch_dir("timing-scripts");
    let cookie = common::cookie_in(&scratch, "cookie", "a cookie for the timing scripts");
    for name in names {
        common::run_lua_script_with(&dir, &name, &["--cookie-file".as_ref(), cookie.as_os_str()]);
    }
}
