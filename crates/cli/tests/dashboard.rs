//! The dashboard in a real browser (SPEC §12): a `--nodes 3` run of
//! `tests/browser/demo.lua` with `--dashboard`, driven in headless Chromium
//! by `tests/browser/dashboard.mjs` (playwright-core): every view, the login
//! by the cookie, stop, step, continue, a break condition, and a kill whose
//! end the program's monitor reports. `SYNODIC_SCREENSHOTS=DIR` keeps a
//! screenshot of each view there (docs/dashboard.md shows them).
//!
//! It needs Debian's chromium and nodejs, and `npm ci` in tests/browser
//! (scripts/test does all three); a missing one fails the test naming it.

mod common;

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::KillOnDrop;

fn browser_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/browser")
}

fn need(path: &str, how: &str) {
    assert!(Path::new(path).exists(), "{path} is missing: {how} (scripts/test does)");
}

/// Starts `synodic run ARGS` with a dashboard; gives the run and the
/// dashboard's URL (read from its stderr; the rest of stderr is kept for
/// the failure message).
fn start_run(cookie: &Path, args: &[&std::ffi::OsStr]) -> (KillOnDrop, String, std::sync::mpsc::Receiver<String>) {
    let mut cmd = common::synodic_command();
    cmd.args(["run", "--dashboard", "127.0.0.1:0", "--cookie-file"]).arg(cookie).args(args);
    let mut child = KillOnDrop(cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("start synodic"));
    let stderr = child.0.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mut seen = String::new();
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                if let Some(at) = line.find("dashboard on http://") {
                    let url = line[at + "dashboard on ".len()..].trim().to_string();
                    return (child, url, rx);
                }
                seen.push_str(&line);
                seen.push('\n');
            }
            Err(_) => panic!("the run printed no dashboard URL within 30 s:\n{seen}"),
        }
    }
}

#[test]
fn every_view_and_action_works_in_chromium() {
    let cookie = prepare("dashboard-browser");
    let demo = browser_dir().join("demo.lua");
    let (run, url, stderr) = start_run(&cookie, &["--nodes".as_ref(), "3".as_ref(), demo.as_os_str()]);

    let mut driver = Command::new("/usr/bin/node");
    driver.current_dir(browser_dir()).arg("dashboard.mjs").arg(&url).arg(&cookie);
    if let Some(shots) = std::env::var_os("SYNODIC_SCREENSHOTS") {
        driver.arg(shots);
    }
    let out = common::output_within(driver, Duration::from_secs(180), "node tests/browser/dashboard.mjs");
    let report = common::text(&out.stdout);
    let logged: Vec<String> = stderr.try_iter().collect();
    assert!(out.status.success(), "{report}{}\nthe run's stderr:\n{}", common::text(&out.stderr), logged.join("\n"));
    assert_eq!(report.lines().filter(|l| l.starts_with("ok: ")).count(), 13, "{report}");

    // The kill ended the registered process: the program's monitor saw it,
    // and the program (and its nodes) ended.
    let mut run = run;
    let mut stdout = run.0.stdout.take().unwrap();
    let mut printed = String::new();
    let reader = std::thread::spawn(move || {
        use std::io::Read;
        let _ = stdout.read_to_string(&mut printed);
        printed
    });
    let status = common::wait_within(&mut run.0, Duration::from_secs(30), "the run, after the kill");
    let printed = reader.join().unwrap();
    assert!(status.success(), "the run ended with {status}: {printed}");
    assert!(printed.contains("end: killed from the dashboard"), "{printed}");
}

/// The guide's deadlock (examples/linda/deadlock.lua) shows in the tuple
/// scope: two waiters, each for the lock the other holds.
#[test]
fn the_guides_deadlock_shows_in_the_tuple_scope() {
    let cookie = prepare("dashboard-deadlock");
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/linda/deadlock.lua");
    let (_run, url, _stderr) = start_run(&cookie, &[example.as_os_str(), "60".as_ref()]);
    let mut driver = Command::new("/usr/bin/node");
    driver.current_dir(browser_dir()).arg("deadlock.mjs").arg(&url);
    if let Some(shots) = std::env::var_os("SYNODIC_SCREENSHOTS") {
        driver.arg(shots);
    }
    let out = common::output_within(driver, Duration::from_secs(120), "node tests/browser/deadlock.mjs");
    assert!(out.status.success(), "{}{}", common::text(&out.stdout), common::text(&out.stderr));
}

/// Checks for what the browser tests need; a scratch directory with a cookie file.
fn prepare(name: &str) -> PathBuf {
    need("/usr/bin/chromium", "install the Debian package chromium");
    need("/usr/bin/node", "install the Debian package nodejs");
    need(browser_dir().join("node_modules/playwright-core").to_str().unwrap(), "run npm ci in tests/browser");
    let dir = common::scratch_dir(name);
    common::cookie_in(&dir, "cookie", "a cookie for the dashboard test")
}
