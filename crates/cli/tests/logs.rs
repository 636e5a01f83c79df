//! `synodic.log`, `--log-level` and `--log-format` (SPEC §11): records
//! carry the time, level, node and pid; the level filters them, crash
//! reports included; as JSON, each record is one object on one line.

#[macro_use]
mod common;

use common::*;

const SCRIPT: &str = r#"
local s = require "synodic"
local log = require "synodic.log"
log.debug("a debug record %d", 1)
log.info("an info record for %s", "you")
log.warn("a warning")
local p = s.spawn(function() error("an expected crash") end)
s.monitor(p)
s.receive()
log.error("done: %q", "quoted \"text\"\nand a new line")
print("level", log.level())
local ok, err = pcall(log.set_level, "loud")
print(ok, err)
"#;

#[test]
fn text_records_say_when_what_where_and_who() {
    let out = run_source_with("log_text", SCRIPT, &[], &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("level\tinfo"), "{stdout}");
    assert!(stdout.contains("bad argument #1 to 'set_level' (debug, info, warn, error or none expected, got 'loud')"), "{stdout}");
    assert!(!stderr.contains("a debug record"), "below the default level: {stderr}");
    let info = stderr.lines().find(|l| l.contains("an info record for you")).expect(&stderr);
    // 2026-11-27T18:40:01.123Z info NODE <0.1.0>: ...
    let fields: Vec<&str> = info.splitn(4, ' ').collect();
    assert!(fields[0].len() == 24 && fields[0].ends_with('Z') && fields[0].as_bytes()[10] == b'T', "{info}");
    assert_eq!(fields[1], "info", "{info}");
    assert!(fields[3].starts_with("<0.1.0>: "), "{info}");
    let crash = stderr.lines().find(|l| l.contains("an expected crash")).expect(&stderr);
    assert!(crash.contains(" error ") && crash.contains("<0.2.0>: "), "{crash}");
    assert!(stderr.contains("stack traceback"), "{stderr}");
}

#[test]
fn the_level_filters_crash_reports_too() {
    let out = run_source_with("log_level", SCRIPT, &["--log-level", "none"], &[]);
    assert!(out.status.success());
    assert_eq!(text(&out.stderr), "", "nothing at level none");
    let out = run_source_with("log_level_debug", SCRIPT, &["--log-level", "debug"], &[]);
    assert!(text(&out.stderr).contains("a debug record 1"));
    assert!(text(&out.stdout).contains("level\tdebug"));
    let out = run_source_with("log_level_bad", SCRIPT, &["--log-level", "loud"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("'loud' is not a log level"), "{}", text(&out.stderr));
}

#[test]
fn json_records_are_one_object_a_line_from_every_node() {
    let dir = scratch_dir("log-json");
    let cookie = cookie_in(&dir, "cookie", "a cookie for the log test");
    let script = dir.join("nodes.lua");
    std::fs::write(
        &script,
        r#"local s = require "synodic"
for _, node in ipairs(s.nodes()) do
  s.spawn_on(node, function(me) require("synodic.log").warn("from %s", require("synodic").node()); require("synodic").send(me, "done") end, s.self())
end
for _ = 1, #s.nodes() do s.receive() end
local p = s.spawn_on(s.nodes()[2] == s.node() and s.nodes()[1] or s.nodes()[2], function() error("far crash") end)
s.monitor(p)
s.receive()
"#,
    )
    .unwrap();
    let out = synodic(&["run", "--nodes", "2", "--log-format", "json", "--cookie-file", cookie.to_str().unwrap(), script.to_str().unwrap()]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let records: Vec<&str> = stderr.lines().collect();
    assert!(records.iter().all(|l| l.starts_with("{\"time\":\"") && l.ends_with('}')), "{stderr}");
    assert_eq!(records.iter().filter(|l| l.contains("\"level\":\"warn\"") && l.contains("\"msg\":\"from ")).count(), 2, "{stderr}");
    let crash = records.iter().find(|l| l.contains("far crash")).expect(&stderr);
    assert!(crash.contains("\"level\":\"error\"") && crash.contains("\"pid\":\"<0.") && crash.contains("\"traceback\":\"stack traceback:\\n"), "{crash}");
    // Python reads every line as JSON.
    let check = std::process::Command::new("python3")
        .args(["-c", "import json,sys\nfor l in sys.stdin: json.loads(l)"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(stderr.as_bytes())?;
            c.wait()
        });
    if let Ok(status) = check {
        assert!(status.success(), "not JSON: {stderr}");
    }
}
