//! Runs every Lua test script under `tests/lua/` with the `synodic` binary
//! (those that measure time are in `tests/lua/timing/`, run by `timing.rs`).
//! A script passes when it ends normally (exit status 0) and prints
//! `<name> ok`; it checks its own behaviour with `assert`. A first line
//! `-- synodic-args: ...` adds flags to `synodic run`. Every script has a time
//! limit (a line `-- synodic-limit: SECONDS` among the first lines sets its
//! own): one that hangs fails, named.

#[macro_use]
mod common;

use std::path::{Path, PathBuf};

fn scripts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/lua")
}

fn run_script(name: &str) {
    common::run_lua_script(&scripts_dir(), name)
}

script_tests!(
    run_script, scripts_dir, "lua_scripts.rs";
    spawn,
    send_receive,
    receive_match,
    values,
    values_deep,
    buffer_memory,
    futures,
    skel,
    monitor,
    exit,
    memory_limit,
    register,
    sleep,
    preemption,
    preemption_hooks,
    stuck_workers,
    many_processes,
    main_ends,
    threads_on_demand,
    channels,
    blocking_withdrawn,
    coroutines,
    libraries,
    concat_numbers,
    huge_pages,
    require_cost,
    shared_code,
    template_code,
    spawn_memo,
    standard_lua,
    cjson,
    alua_spawn,
    alua_events,
    alua_tostring,
    alua_exit,
    linda_out_take,
    linda_rd_probe,
    linda_space_full,
    linda_formals,
    linda_spaces,
    linda_private_gc,
    buffer,
    entity,
    entity_memory,
    socket_tcp,
    socket_udp,
    socket_select,
    socket_class,
    string_metatable,
    http,
    tls,
    links,
    kill,
    timers,
    supervisor,
    futures_wait,
    dashboard,
);
