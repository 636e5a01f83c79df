//! `synodic` standing in for `lua` (SPEC §8): `-e`, `-l`, `-v`, `-E`, `-W`,
//! `-i`, `-`, `--`, a script as first argument with `arg` as `lua` sets it
//! (so a program can run its interpreter again with `arg[-1]`), standard
//! input as the script, the prompt's statements over several lines, the
//! search paths, `os.clock` per process, and usage errors as `lua` gives
//! them. Each case runs `lua5.4` too when the machine has it, and the two
//! must print the same.

#[macro_use]
mod common;

use std::process::Command;

use common::*;

/// Runs `synodic ARGS` (and `lua5.4 ARGS`, if here) with `input` on stdin;
/// returns synodic's output, after checking lua's is the same.
fn both(name: &str, args: &[&str], input: Option<&str>) -> std::process::Output {
    let dir = scratch_dir(&format!("lua-cli-{name}"));
    let run = |program: &str| {
        let mut cmd = Command::new(program);
        cmd.args(args).current_dir(&dir);
        output_with_input(cmd, input.map(str::as_bytes), LIMIT, &format!("{program} {}", args.join(" ")))
    };
    let ours = run(env!("CARGO_BIN_EXE_synodic"));
    if Command::new("lua5.4").arg("-v").output().is_ok() {
        let theirs = run("lua5.4");
        assert_eq!(text(&ours.stdout), text(&theirs.stdout).replace("lua5.4", env!("CARGO_BIN_EXE_synodic")), "{name}: synodic and lua5.4 differ; synodic's stderr: {}", text(&ours.stderr));
        assert_eq!(ours.status.code(), theirs.status.code(), "{name}: exit statuses differ: {}", text(&ours.stderr));
    }
    ours
}

#[test]
fn options_run_in_order_and_arg_is_set_as_lua_sets_it() {
    let out = both("order", &["-e", "x = 1", "-e", "print(x + 1)", "-l", "string", "-e", "print(string.rep('a', 2))"], None);
    assert_eq!(text(&out.stdout), "2\naa\n");
    let out = both("args", &["-e", "for i = -3, 3 do print(i, arg[i]) end", "-", "a", "b"], Some("print(...)"));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("-2\t-e\n") && stdout.contains("0\t-\n") && stdout.contains("1\ta\n") && stdout.ends_with("a\tb\n"), "{stdout}");
    let out = both("global", &["-l", "str=string", "-e", "print(str.upper('x'))"], None);
    assert_eq!(text(&out.stdout), "X\n");
    // After `--`, `-` is a file's name, not standard input.
    let out = both("dashdash", &["--", "-"], Some("print('from stdin')"));
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("cannot open -"), "{}", text(&out.stderr));
}

#[test]
fn a_script_reruns_its_interpreter_through_arg() {
    let dir = scratch_dir("lua-cli-rerun");
    let script = dir.join("rerun.lua");
    std::fs::write(
        &script,
        "local depth = tonumber(arg[1] or 0)\n\
         if depth < 2 then\n\
           local i = -1 while arg[i - 1] do i = i - 1 end\n\
           local cmd = string.format('%q %q %d', arg[-1], arg[0], depth + 1)\n\
           local p = io.popen(cmd) local got = p:read('a') p:close()\n\
           io.write(got)\n\
         end\n\
         print('depth ' .. depth, arg[i or -1] ~= nil)\n",
    )
    .unwrap();
    let out = synodic(&[script.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "depth 2\ttrue\ndepth 1\ttrue\ndepth 0\ttrue\n");
}

#[test]
fn standard_input_is_the_script_when_there_is_no_terminal() {
    let out = both("stdin", &[], Some("print(1 + 1)\n"));
    assert_eq!(text(&out.stdout), "2\n");
    let mut cmd = synodic_command();
    cmd.args(["run", "-", "x"]);
    let out = output_with_input(cmd, Some(b"print('run -', ...)"), LIMIT, "synodic run -");
    assert_eq!(text(&out.stdout), "run -\tx\n", "{}", text(&out.stderr));
}

#[test]
fn the_prompt_takes_statements_over_lines_in_the_main_process() {
    let mut cmd = synodic_command();
    cmd.arg("-i");
    let out = output_with_input(cmd, Some(b"x = 2\nfor i = 1, 2 do\nprint(i * x)\nend\n{1, 'a', {b = true}}\nrequire('synodic').self() == require('synodic').main()\nerror('typed')\n"), LIMIT, "synodic -i");
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(stdout.starts_with("Synodic "), "{stdout}");
    assert!(stdout.contains("> >> >> 2\n4\n"), "a statement over three lines: {stdout}");
    assert!(stdout.contains("{1, \"a\", {b = true}}"), "{stdout}");
    assert!(stdout.contains("> true\n"), "lines run in the main process: {stdout}");
    assert!(text(&out.stderr).contains("stdin:1: typed"), "{}", text(&out.stderr));
}

#[test]
fn errors_and_versions_as_lua_gives_them() {
    let out = synodic(&["-v", "-e", "print(_VERSION)"]);
    assert!(text(&out.stdout).starts_with("Synodic ") && text(&out.stdout).contains("(Lua 5.4.8") && text(&out.stdout).ends_with("\nLua 5.4\n"), "{}", text(&out.stdout));
    let out = synodic(&["-x"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).starts_with("synodic: unrecognized option '-x'\nusage: "), "{}", text(&out.stderr));
    let out = synodic(&["-e"]);
    assert!(text(&out.stderr).contains("'-e' needs argument"), "{}", text(&out.stderr));
    let out = both("error", &["-e", "error('boom')"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("(command line):1: boom") && !text(&out.stderr).contains("lualib"), "{}", text(&out.stderr));
    let out = both("syntax", &["-e", "x = = 1"], None);
    assert!(text(&out.stderr).contains("unexpected symbol"), "{}", text(&out.stderr));
    let out = synodic(&["/no/such/script.lua"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("cannot open /no/such/script.lua"), "{}", text(&out.stderr));
}

#[test]
fn search_paths_and_init_as_lua_reads_them() {
    let dir = scratch_dir("lua-cli-paths");
    std::fs::create_dir_all(dir.join("mods")).unwrap();
    std::fs::write(dir.join("mods/here.lua"), "return 'found here'").unwrap();
    let path = format!("{}/mods/?.lua;;", dir.display());
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let mut cmd = synodic_command();
        cmd.args(args).env_remove("LUA_PATH_5_4").env_remove("LUA_INIT_5_4");
        for (k, v) in env {
            cmd.env(k, v);
        }
        output_within(cmd, LIMIT, "synodic with a search path")
    };
    let out = run(&["-e", "print(require('here'), package.path:find('/usr/share/lua/5.4/', 1, true) ~= nil, package.path:match('[^;]*$'))"], &[("LUA_PATH", &path)]);
    assert_eq!(text(&out.stdout), "found here\ttrue\t./?/init.lua\n", "';;' keeps lua's own directories, './' last: {}", text(&out.stderr));
    let out = run(&["-E", "-e", "print(pcall(require, 'here'))"], &[("LUA_PATH", &path)]);
    assert!(text(&out.stdout).starts_with("false"), "-E ignores LUA_PATH: {}", text(&out.stdout));
    let out = run(&["-e", "print(y)"], &[("LUA_INIT", "y = 'from init'")]);
    assert_eq!(text(&out.stdout), "from init\n");
    let out = run(&["-E", "-e", "print(y)"], &[("LUA_INIT", "y = 'from init'")]);
    assert_eq!(text(&out.stdout), "nil\n");
}

#[test]
fn os_clock_counts_the_callers_processor_time() {
    let out = synodic(&["-e", "local s = require 'synodic'\n\
        for _ = 1, 2 do s.spawn(function() while true do end end) end\n\
        local t = os.clock() s.sleep(0.3) local idle = os.clock() - t\n\
        t = os.clock() local x = 0 for i = 1, 3e6 do x = x + i end local busy = os.clock() - t\n\
        print(idle < 0.05, busy > 0) s.halt(0)"]);
    assert_eq!(text(&out.stdout), "true\ttrue\n", "{}", text(&out.stderr));
}
