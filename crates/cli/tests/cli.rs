//! The `synodic` command as a user meets it: exit statuses, one-line errors
//! for bad input, process errors with pid and traceback, C modules, and every
//! example under `examples/`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{run_source, run_source_with, synodic, text};


#[test]
fn a_failing_process_is_reported_and_the_others_go_on() {
    let out = run_source(
        "failing",
        r#"local s = require "synodic"
           local me = s.self()
           local bad = s.spawn(function() s.receive() error("deliberate failure") end)
           s.monitor(bad)
           s.send(bad, "go")
           local _, _, reason = s.receive()
           local ok = s.spawn(function() s.send(me, "still alive") end)
           assert(s.receive() == "still alive")
           print("reason:", reason)"#,
        &[],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains(" error ") && stderr.contains(" <0.2.0>: ") && stderr.contains("deliberate failure"), "{stderr}");
    assert!(stderr.contains("stack traceback"), "{stderr}");
    assert!(stdout.contains("deliberate failure"), "{stdout}");
}

#[test]
fn an_error_in_the_main_process_exits_with_1() {
    let out = run_source("main_error", "error('main fails')", &[]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("main fails") && stderr.contains(" <0.1.0>: "), "{stderr}");
}

#[test]
fn the_main_script_gets_its_arguments() {
    let out = run_source("args", "print(arg[0]:match('args.lua$') ~= nil, arg[1], arg[2], select('#', ...), ...)", &["a", "--b"]);
    assert!(out.status.success());
    assert_eq!(text(&out.stdout), "true\ta\t--b\t2\ta\t--b\n");
}

#[test]
fn a_missing_file_is_one_clear_line() {
    let out = synodic(&["run", "/no/such/file.lua"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("synodic: cannot open /no/such/file.lua"), "{stderr}");
}

#[test]
fn a_syntax_error_names_file_and_line() {
    let out = run_source("syntax", "local x = 1\nlocal y = = 2\n", &[]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("syntax.lua:2:"), "{stderr}");
}

#[test]
fn bad_flags_are_one_line_without_a_panic() {
    for args in [&["run", "--workers", "many", "x.lua"][..], &["run", "--workers", "100000", "x.lua"], &["run", "--bogus", "x.lua"], &["run"]] {
        let out = synodic(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = text(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("synodic: ") && !stderr.contains("panicked"), "{args:?}: {stderr}");
    }
    // Not a command: a script, as `lua walk` would take it.
    let out = synodic(&["walk"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("cannot open walk"), "{}", text(&out.stderr));
    // Nothing at all, standard input not a terminal: it is the script (empty here).
    let out = synodic(&[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = synodic(&["--help"]);
    assert!(text(&out.stdout).contains("Usage"), "--help shows the usage");
}

#[test]
fn help_and_version() {
    let out = synodic(&["--help"]);
    assert!(out.status.success() && text(&out.stdout).contains("run"));
    let out = synodic(&["run", "--help"]);
    assert!(out.status.success() && text(&out.stdout).contains("--workers"));
    let out = synodic(&["--version"]);
    assert!(out.status.success() && text(&out.stdout).starts_with("synodic "));
}

/// A C module linked against the Lua API exported by the binary, required from several processes.
#[test]
fn a_c_module_loads_in_every_process() {
    let dir = common::scratch_dir("cmod");
    let src = dir.join("twice.c");
    std::fs::write(
        &src,
        r#"#include <lua.h>
           #include <lauxlib.h>
           static int twice(lua_State *L) { lua_pushinteger(L, 2 * luaL_checkinteger(L, 1)); return 1; }
           int luaopen_twice(lua_State *L) {
             luaL_Reg fns[] = {{"twice", twice}, {NULL, NULL}};
             luaL_newlib(L, fns);
             return 1;
           }"#,
    )
    .unwrap();
    build_c_module(&src, &dir.join("twice.so"));
    let script = format!(
        r#"local s = require "synodic"
           local me = s.self()
           for i = 1, 4 do
             s.spawn(function(cpath, i)
               package.cpath = cpath
               s.send(me, require("twice").twice(i))
             end, "{}/?.so", i)
           end
           local sum = 0
           for _ = 1, 4 do sum = sum + s.receive() end
           assert(sum == 20)
           print("c module ok")"#,
        dir.display()
    );
    let out = run_source("cmodule", &script, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("c module ok"));
}

/// Builds a C module as docs/skeletons.md says a user does: against the
/// headers of the Lua the binary embeds (the vendored sources) and
/// include/synodic.h.
fn build_c_module(src: &Path, so: &Path) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let lua = root.join("vendor/lua-5.4.8");
    assert!(lua.join("lua.h").exists(), "vendor/lua-5.4.8/lua.h is part of the tree");
    let status = Command::new("cc").args(["-shared", "-fPIC", "-O2", "-I"]).arg(&lua).arg("-I").arg(root.join("include")).arg(src).arg("-o").arg(so).status().expect("run cc");
    assert!(status.success(), "cc {}", src.display());
}

/// Where the examples' C modules are built (once per test run), as a
/// LUA_CPATH_5_4 for the runs that need them.
fn examples_cpath() -> &'static str {
    static CPATH: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    CPATH.get_or_init(|| {
        let dir = common::scratch_dir("example-modules");
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/skel/filters.c");
        build_c_module(&src, &dir.join("filters.so"));
        common::build_app_module("nbody", "bh.c", &dir.join("nbody.so"));
        common::build_app_module("volume", "vr.c", &dir.join("volume.so"));
        format!("{}/?.so;;", dir.display())
    })
}

/// `synodic ARGS...` with the examples' C modules on the path.
fn synodic_example(args: &[&str]) -> std::process::Output {
    synodic_example_in(args, Path::new("."))
}

/// [`synodic_example`] run in `dir` (where an example that writes files writes them).
fn synodic_example_in(args: &[&str], dir: &Path) -> std::process::Output {
    let mut cmd = common::synodic_command();
    cmd.args(args).env("LUA_CPATH_5_4", examples_cpath()).current_dir(dir);
    common::output_within(cmd, common::LIMIT, &format!("synodic {}", args.join(" ")))
}

/// The examples that run to an end (the servers of `examples/net` serve
/// until killed: `examples_net.rs` runs them).
fn examples() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut found = Vec::new();
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.ends_with("examples/net") {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "lua") {
                found.push(p);
            }
        }
    }
    found
}

/// Every example runs to a normal end with its default sizes.
#[test]
fn every_example_runs() {
    let examples = examples();
    assert!(examples.len() >= 7);
    // Examples that write files (bounce.html) write them here.
    let scratch = common::scratch_dir("every-example");
    for ex in examples {
        let out = synodic_example_in(&["run", ex.to_str().unwrap()], &scratch);
        assert!(out.status.success(), "{}: {}", ex.display(), text(&out.stderr));
        assert!(!out.stdout.is_empty(), "{} printed nothing", ex.display());
    }
}

fn run_example(path: &str, args: &[&str]) -> String {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(path);
    let mut all = vec!["run", file.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = synodic_example(&all);
    assert!(out.status.success(), "{path}: {}", text(&out.stderr));
    text(&out.stdout)
}

/// The Linda paper's programs (and the classic ones) give their results.
#[test]
fn the_linda_programs() {
    let ids = run_example("linda/unique_ids.lua", &["7"]);
    assert!(ids.ends_with("identifiers: 1 2 3 4 5 6 7\n"), "{ids}");
    assert_eq!(ids.lines().filter(|l| l.ends_with(" of 7.")).count(), 7, "{ids}");
    let bag = run_example("linda/task_bag.lua", &["40", "3"]);
    assert!(bag.starts_with("40 tasks, 3 workers"), "{bag}");
    let deadlock = run_example("linda/deadlock.lua", &["0.2"]);
    assert!(deadlock.ends_with("both waited for each other: a deadlock (see it in the dashboard's tuple scope)\n"), "{deadlock}");
    let dining = run_example("linda/philosophers.lua", &["6", "10"]);
    assert_eq!(dining, "6 philosophers ate 10 meals each; all 6 chopsticks are back\n");
    // Linpack: the unblocked default (order 1000) runs in every_example_runs.
    let lu = run_example("linda/linpack.lua", &["1000", "2", "blocked", "8"]);
    assert!(lu.starts_with("LU blocked order 1000, 2 workers on 1 node: same factors as sequential, normalised residual "), "{lu}");
}

/// The VEOS paper's communication models (section 5) give their results.
#[test]
fn the_entity_examples() {
    let cs = run_example("entities/client_server.lua", &["50"]);
    assert_eq!(cs, "client-server: 50 requests, 50 replies by upcall, sum of squares 42925\n");
    let ring = run_example("entities/causal_ring.lua", &["5", "2", "10"]);
    assert_eq!(ring, "causal ring: 5 entities, 2 tokens, 10 rounds each: 102 method calls\n");
    let sink = run_example("entities/transmit_only.lua", &["4", "25"]);
    assert_eq!(sink, "transmit-only: 4 sources, 100 updates at the sink, in order per source\n");
    let mesh = run_example("entities/causal_mesh.lua", &["5", "30"]);
    assert_eq!(mesh, "causal mesh: 5 entities, 30 frames in lock-step, all agree on 3.0\n");
}

/// Bounce: the collisions are elastic (on a table without cushions both
/// momentum and energy stay as they were over 1,000 frames; with cushions,
/// energy), and the page and the picture show the fifteen balls.
#[test]
fn bounce_keeps_momentum_and_energy_and_shows_its_balls() {
    let dir = common::scratch_dir("bounce");
    let page = dir.join("bounce.html");
    let totals = |line: &str| -> Vec<f64> {
        let at = line.find("momentum (").unwrap_or_else(|| panic!("{line}"));
        line[at..].split(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-')).filter_map(|t| t.parse().ok()).collect()
    };
    let wrapped = run_example("entities/bounce.lua", &["1000", "sequential", page.to_str().unwrap(), "wrap"]);
    let last = wrapped.lines().last().unwrap_or_default();
    let collisions: u64 = last.split(" collisions").next().and_then(|s| s.rsplit(' ').next()).and_then(|n| n.parse().ok()).unwrap_or(0);
    assert!(collisions >= 20, "balls collided: {last}");
    let t = totals(last);
    let (p0, p1, e0, e1) = ((t[0], t[1]), (t[2], t[3]), t[4], t[5]);
    assert!((p0.0 - p1.0).abs() < 1e-6 && (p0.1 - p1.1).abs() < 1e-6, "momentum kept: {last}");
    assert!((e0 - e1).abs() < 1e-6 * e0, "energy kept: {last}");
    assert!(wrapped.contains("frame 500, "), "the console reports the frame rate: {wrapped}");
    let cushions = run_example("entities/bounce.lua", &["1000", "sequential", page.to_str().unwrap()]);
    let t = totals(cushions.lines().last().unwrap_or_default());
    assert!((t[4] - t[5]).abs() < 1e-6 * t[4], "energy kept with cushions: {cushions}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<canvas") && html.contains("requestAnimationFrame"), "a page that plays the run");
    assert_eq!(html.matches("],[").count() + 1, 1001, "every frame is on the page");
    let svg = std::fs::read_to_string(dir.join("bounce.svg")).unwrap();
    assert_eq!(svg.matches("<circle class='ball'").count(), 15, "the picture shows fifteen balls: {svg}");
}

/// `progress = true` draws a bar (tasks, rate, time left) on a terminal,
/// and clears it at the end; on a pipe nothing (see the image test).
#[test]
fn a_progress_bar_is_drawn_on_a_terminal() {
    let dir = common::scratch_dir("progress");
    let prog = dir.join("progress.lua");
    std::fs::write(&prog, r#"local skel = require "synodic.skel"
        local r = skel.run(function(x) require("synodic").sleep(0.05) return x end, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {progress = true})
        print("done", #r)"#).unwrap();
    let bin = env!("CARGO_BIN_EXE_synodic");
    // `script` gives the run a terminal and copies what it writes there.
    let mut cmd = Command::new("script");
    cmd.args(["-qec", &format!("{bin} run --workers 2 {}", prog.display()), "/dev/null"]);
    let out = common::output_within(cmd, common::LIMIT, "synodic run under script");
    let screen = text(&out.stdout);
    assert!(out.status.success() && screen.contains("done\t10"), "{screen}");
    assert!(screen.contains("/10 tasks") && screen.contains("/s") && screen.contains("s left") && screen.contains("[#"), "no bar: {screen:?}");
}

/// The skeleton examples give their results.
#[test]
fn the_skeleton_examples() {
    assert_eq!(run_example("skel/primes.lua", &["100000", "7000"]), "9592 primes up to 100000 (15 ranges)\n");
    let freq = run_example("skel/wordfreq.lua", &["", "2"]);
    assert_eq!(freq, "programming\t200\ndata\t150\n");
    let sorted = run_example("skel/mergesort.lua", &["20000", "1000"]);
    assert!(sorted.starts_with("sorted 20000 numbers (halves of at most 1000 sorted directly): first "), "{sorted}");
}

/// The Lithium paper's image pipeline gives the same pictures sequentially,
/// plain and optimised, on one node and on two.
#[test]
fn the_image_pipeline_gives_the_same_pictures_every_way() {
    let dir = common::scratch_dir("images");
    let cookie = common::cookie_in(&dir, "cookie", "a cookie for the image pipeline");
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/skel/images.lua");
    let checksum = |nodes: &str, mode: &str| {
        let out = synodic_example(&["run", "--nodes", nodes, "--cookie-file", cookie.to_str().unwrap(), file.to_str().unwrap(), "6", "96", "64", mode]);
        assert!(out.status.success(), "{mode} on {nodes}: {}", text(&out.stderr));
        let stdout = text(&out.stdout);
        assert!(stdout.starts_with(&format!("{mode}: 6 pictures 96x64, blur then oil, on {nodes} node(s): ")), "{stdout}");
        assert!(text(&out.stderr).is_empty(), "no progress bar on a pipe: {}", text(&out.stderr));
        stdout.rsplit("checksum ").next().unwrap().trim().to_string()
    };
    let expected = checksum("1", "sequential");
    for (nodes, mode) in [("1", "plain"), ("1", "optimised"), ("2", "plain"), ("2", "optimised")] {
        assert_eq!(checksum(nodes, mode), expected, "{mode} on {nodes} node(s)");
    }
}

/// The ALua paper's programs give the paper's results.
#[test]
fn the_alua_papers_programs() {
    assert_eq!(run_example("alua/basics.lua", &[]), "70\n");
    assert_eq!(run_example("alua/state_machine.lua", &[]), "first answer\nThe End.\n");
    assert_eq!(run_example("alua/self_replicating.lua", &["5"]), "pipeline reported: 1 4 9 16 25\n");
    let tm = run_example("alua/tuple_multiplication.lua", &["16", "4"]);
    assert!(tm.starts_with("4 agents over 1 node(s)\n"), "{tm}");
    assert!(tm.contains("matrix multiplication 16x16: parallel = sequential"), "{tm}");
    assert!(tm.contains("all-pairs shortest paths on 16 nodes: parallel = sequential"), "{tm}");
    let ateam = run_example("alua/ateam.lua", &["10"]);
    let messages: u64 = ateam.split_whitespace().rev().nth(4).and_then(|n| n.parse().ok()).unwrap_or(0);
    assert!(ateam.starts_with("best cover: cost ") && messages > 0, "{ateam}");
}

#[test]
fn an_event_error_names_the_agent_and_the_agent_goes_on() {
    let out = run_source(
        "event_error",
        r#"alua.spawn{"B"}
           alua.send("B", "error('bad event')")
           alua.send("B", "alua.send('main', 'print(\"B still alive\") alua.exit()')")"#,
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("synodic: agent B: (event):1: bad event"), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "B still alive\n");
}

#[test]
fn halt_ends_the_run_with_its_status() {
    let out = run_source("halt", "local s = require 'synodic' s.spawn(function() s.halt(7) end) s.receive()", &[]);
    assert_eq!(out.status.code(), Some(7));
    // The main process computes on the main thread, the node's first
    // worker (`Runtime::run_main_here`): the halt, on another worker, ends
    // the run from there.
    let out = run_source("halt_busy", "local s = require 'synodic' s.spawn(function() s.halt(5) end) while true do end", &[]);
    assert_eq!(out.status.code(), Some(5), "{}", text(&out.stderr));
    let out = run_source("halt_bad", "require('synodic').halt('soon')", &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("exit status 0-255 expected"), "{}", text(&out.stderr));
}

/// The main process ended by `exit` with a reason other than `normal`:
/// status 1, and the reason in one line (an error says itself where it
/// happens; an exit's value said nothing before).
#[test]
fn the_main_process_exit_reason_is_said() {
    for (name, value, said) in [
        ("exit_str", "'shutdown'", "shutdown"),
        ("exit_int", "3", "3"),
        ("exit_float", "2.5", "2.5"),
        ("exit_whole_float", "2.0", "2.0"),
        ("exit_sum", "0.1 + 0.2", "0.3"),
        ("exit_bool", "false", "false"),
        ("exit_table", "{1, 2}", "a table"),
    ] {
        let out = run_source(name, &format!("print('before') require('synodic').exit({value}) print('after')"), &[]);
        assert_eq!(out.status.code(), Some(1), "{name}");
        assert_eq!(text(&out.stdout), "before\n", "{name}");
        assert_eq!(text(&out.stderr), format!("synodic: the main process exited with reason {said}\n"), "{name}");
    }
    for (name, value) in [("exit_none", ""), ("exit_normal", "'normal'")] {
        let out = run_source(name, &format!("require('synodic').exit({value})"), &[]);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", text(&out.stderr));
        assert_eq!(text(&out.stderr), "", "{name}");
    }
}

/// The channels guide's example prints all ten jobs, every time: its main
/// process waits for the workers before the run ends.
#[test]
fn the_channels_guide_example_prints_every_job() {
    let guide = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/channels.md")).unwrap();
    let example = guide.split("```lua").map(|b| b.split("```").next().unwrap()).find(|b| b.contains("chan.new(\"jobs\")")).expect("the example");
    for run in 0..20 {
        let out = run_source("channels_guide", example, &[]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout).lines().count(), 10, "run {run} lost output:\n{}", text(&out.stdout));
    }
}

/// Every program of the network guide (docs/net.md) runs to its end and
/// prints what its comments say, run from the repository's root.
#[test]
fn the_net_guide_programs_run() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let guide = std::fs::read_to_string(root.join("docs/net.md")).unwrap();
    let programs: Vec<&str> = guide.split("```lua").skip(1).map(|b| b.split("```").next().unwrap()).collect();
    assert!(programs.len() >= 4, "the guide's programs are found");
    let dir = common::scratch_dir("net-guide");
    let expected = ["HELLO", "ping\tpong", "200\thello, there", "200\tover TLS"];
    for (i, program) in programs.iter().enumerate() {
        let path = dir.join(format!("net{i}.lua"));
        std::fs::write(&path, program).unwrap();
        let mut cmd = common::synodic_command();
        cmd.arg("run").arg(&path).current_dir(&root);
        let out = common::output_within(cmd, common::LIMIT, &format!("docs/net.md program {i}"));
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "docs/net.md program {i}: {}", text(&out.stderr));
        assert!(stdout.contains(expected[i]), "docs/net.md program {i} printed:\n{stdout}");
    }
}

/// A node raises its soft limit of open files to the hard limit (SPEC §10).
#[test]
fn a_node_raises_its_open_files_limit() {
    let dir = common::scratch_dir("nofile");
    let prog = dir.join("nofile.lua");
    std::fs::write(&prog, "for l in io.lines('/proc/self/limits') do if l:match('^Max open files') then print(l) end end\n").unwrap();
    let mut cmd = std::process::Command::new("prlimit");
    cmd.args(["--nofile=100:300", env!("CARGO_BIN_EXE_synodic"), "run"]).arg(&prog);
    let out = common::output_within(cmd, common::LIMIT, "synodic under prlimit");
    let line = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let numbers: Vec<&str> = line.split_whitespace().filter(|w| w.chars().all(|c| c.is_ascii_digit())).collect();
    assert_eq!(numbers, ["300", "300"], "soft raised to hard: {line}");
}

/// `warn` as in `lua`: off at first, then one line per warning on stderr.
#[test]
fn warnings_go_to_stderr_once_turned_on() {
    let out = run_source(
        "warn",
        r#"warn("not shown") warn("@on") warn("two ", "pieces") warn("@off") warn("hidden")
           require("synodic").spawn(function() warn("@on") warn("from a process") end)"#,
        &[],
    );
    assert!(out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.starts_with("Lua warning: two pieces\n"), "{stderr}");
    assert!(!stderr.contains("hidden") && !stderr.contains("not shown"), "{stderr}");
}

/// SIGTERM (and Ctrl-C's SIGINT) end the run, but what the program printed
/// to a pipe is flushed first.
#[test]
fn a_terminated_run_keeps_its_output() {
    signalled_run_keeps_its_output("term", "require('synodic').sleep(60)");
}

/// A signal that comes while a lone main process computes, before the run
/// has started its signal thread (runtime/lasting.rs), is taken once it
/// does: the run ends as it would later.
#[test]
fn a_signal_in_the_first_milliseconds_of_a_computing_run_ends_it() {
    signalled_run_keeps_its_output("term-early", "while true do end");
}

/// Runs a program that prints five lines, says it is ready, then runs
/// `then`; SIGTERM, then SIGINT, must end it with those lines flushed, the
/// signal named on stderr and 128 + the signal as its status.
fn signalled_run_keeps_its_output(scratch: &str, then: &str) {
    use std::io::{BufRead, Read};
    let dir = common::scratch_dir(scratch);
    let prog = dir.join("term.lua");
    std::fs::write(&prog, format!("for i = 1, 5 do print('line', i) end\nio.stderr:write('ready\\n')\n{then}\n")).unwrap();
    for signal in [libc::SIGTERM, libc::SIGINT] {
        let mut child = common::synodic_command()
            .arg("run")
            .arg(&prog)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let (mut stdout, stderr) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
        let mut guard = common::KillOnDrop(child);
        // Both streams are read in threads: a run that hangs fails here
        // after the limit (and the guard kills it).
        let (said, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || std::io::BufReader::new(stderr).lines().map_while(Result::ok).try_for_each(|l| said.send(l)));
        let (printed, out) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut all = String::new();
            let _ = stdout.read_to_string(&mut all);
            let _ = printed.send(all);
        });
        assert_eq!(lines.recv_timeout(common::LIMIT).as_deref(), Ok("ready"));
        // SAFETY: the child is alive (waiting or computing) and not yet reaped.
        unsafe { libc::kill(guard.0.id() as libc::pid_t, signal) };
        let out = out.recv_timeout(common::LIMIT).unwrap_or_else(|_| panic!("signal {signal} did not end the run ({then})"));
        assert_eq!(out.lines().count(), 5, "signal {signal}: {out:?}");
        let name = if signal == libc::SIGTERM { "terminated" } else { "interrupted" };
        let rest: Vec<String> = lines.iter().collect();
        assert!(rest.iter().any(|l| *l == format!("synodic: {name}")), "signal {signal}: {rest:?}");
        assert_eq!(guard.0.wait().unwrap().code(), Some(128 + signal));
    }
}

/// A standard stream the run was started with closed is opened on
/// /dev/null (crates/cli/src/entry.rs), as `lua` finds it: no descriptor
/// the node or the program opens takes its place (the node's own event
/// descriptor took fd 1 without this, and output went nowhere, failing),
/// so printing succeeds and a file the program writes gets what it wrote.
#[test]
fn a_closed_standard_stream_never_becomes_a_file_the_program_opens() {
    let dir = common::scratch_dir("closed-stdout");
    let file = dir.join("f.txt");
    let code = format!("local f = assert(io.open('{}', 'w')) assert(io.stdout:write('out\\n'):flush()) f:write('written') f:close()", file.display());
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg("exec \"$0\" -e \"$1\" 0<&- 1>&-").arg(env!("CARGO_BIN_EXE_synodic")).arg(&code);
    let out = common::output_within(cmd, common::LIMIT, "synodic with its stdout closed");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "written");
}

/// A program printing to a closed pipe ends, killed by SIGPIPE, as `lua` does.
#[test]
fn a_broken_pipe_ends_the_run() {
    use std::os::unix::process::ExitStatusExt;
    let dir = common::scratch_dir("pipe");
    let prog = dir.join("pipe.lua");
    std::fs::write(&prog, "while true do print('y') end\n").unwrap();
    let mut child = common::synodic_command().arg("run").arg(&prog).stdout(std::process::Stdio::piped()).spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    assert_eq!(common::first_line_within(stdout, common::LIMIT, "the printing program"), "y\n");
    // The reader is gone now (first_line_within dropped it).
    let pid = child.id() as libc::pid_t;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let status = rx.recv_timeout(common::LIMIT).unwrap_or_else(|_| {
        // SAFETY: the child has not been reaped: it is still running.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        panic!("a program printing to a closed pipe went on")
    });
    let status = status.unwrap();
    assert_eq!(status.signal(), Some(libc::SIGPIPE), "{status}");
}

/// `--max-process-memory` is every process's memory limit unless it sets one.
#[test]
fn a_node_wide_memory_limit() {
    let out = run_source_with(
        "node_limit",
        r#"local s = require "synodic"
           local p = s.spawn(function() local t = {} for i = 1, 1e7 do t[i] = {i} end end)
           s.monitor(p)
           print(select(3, s.receive()))
           local q = s.spawn_opt({max_memory = 64 << 20}, function() local t = {} for i = 1, 1e5 do t[i] = {i} end s.send(s.main(), #t) end)
           print(s.receive())"#,
        &["--max-process-memory", "4M"],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "memory limit\n100000\n", "{}", text(&out.stderr));
    // The main process over the limit: the run says so, in one line.
    let out = run_source_with("main_limit", "local t = {} for i = 1, 1e7 do t[i] = {i} end", &["--max-process-memory", "4M"], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stderr), "synodic: the main process went over its memory limit of 4194304 bytes and was ended\n");
    let out = synodic(&["run", "--max-process-memory", "lots", "x.lua"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("'lots' is not a size"), "{}", text(&out.stderr));
}
