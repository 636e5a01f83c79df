//! What the end-to-end tests share: running the `synodic` binary with a time
//! limit. A run that overruns is killed and the test fails with the name of
//! what it ran, so a hang is a failure that says where it happened, never a
//! suite that waits for ever.

#![allow(dead_code)] // each test file uses its own part of this module

pub mod node;
pub mod proxy;
pub mod sources;

use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long one run of the binary may take unless a test says otherwise.
pub const LIMIT: Duration = Duration::from_secs(120);

/// A fresh, empty directory for one test's files, under cargo's scratch
/// space for test binaries (`target/tmp`), so runs leave nothing in `/tmp`
/// and each run starts from nothing.
pub fn scratch_dir(name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub fn synodic_command() -> Command {
    Command::new(env!("CARGO_BIN_EXE_synodic"))
}

/// Runs `cmd` to its end, killing it after `limit`; `what` names the run in
/// the failure message.
pub fn output_within(cmd: Command, limit: Duration, what: &str) -> Output {
    output_with_input(cmd, None, limit, what)
}

/// Runs `cmd` as it is set up (its output where it says) to its end,
/// killing it after `limit`; `what` names the run in the failure message.
pub fn status_within(mut cmd: Command, limit: Duration, what: &str) -> std::process::ExitStatus {
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    wait_within(&mut child, limit, what)
}

/// Waits for `child` to end, killing it after `limit`; `what` names it in
/// the failure message.
pub fn wait_within(child: &mut std::process::Child, limit: Duration, what: &str) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: timed out after {} s and was killed", limit.as_secs());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// [`output_within`], with `input` written to the command's standard input.
pub fn output_with_input(mut cmd: Command, input: Option<&[u8]>, limit: Duration, what: &str) -> Output {
    let stdin = if input.is_some() { Stdio::piped() } else { Stdio::null() };
    let mut child = cmd.stdin(stdin).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    let pid = child.id() as libc::pid_t;
    let (tx, rx) = mpsc::channel();
    let input = input.map(<[u8]>::to_vec);
    let mut child_stdin = child.stdin.take();
    std::thread::spawn(move || {
        if let (Some(mut pipe), Some(bytes)) = (child_stdin.take(), input) {
            use std::io::Write;
            let _ = pipe.write_all(&bytes);
        }
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.unwrap_or_else(|e| panic!("{what}: {e}")),
        Err(_) => {
            // SAFETY: the child has not been waited for, so its pid is still its own.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            let out = rx.recv().ok().and_then(Result::ok);
            let stderr = out.map(|o| String::from_utf8_lossy(&o.stderr).into_owned()).unwrap_or_default();
            panic!("{what}: timed out after {} s and was killed\n{stderr}", limit.as_secs());
        }
    }
}

/// `synodic ARGS...` within [`LIMIT`].
pub fn synodic(args: &[&str]) -> Output {
    let mut cmd = synodic_command();
    cmd.args(args);
    output_within(cmd, LIMIT, &format!("synodic {}", args.join(" ")))
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A child process that is killed when the guard goes, so a failing test
/// leaves nothing running behind it.
pub struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The first line `reader` gives within `limit` (panics naming `what` otherwise).
pub fn first_line_within(reader: impl std::io::Read + Send + 'static, limit: Duration, what: &str) -> String {
    use std::io::BufRead;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::BufReader::new(reader).read_line(&mut line);
        let _ = tx.send(line);
    });
    rx.recv_timeout(limit).unwrap_or_else(|_| panic!("{what}: no line within {} s", limit.as_secs()))
}

/// A `package.path` (as `LUA_PATH_5_4`) that finds the modules the test
/// scripts share (`tests/lua/modules`, `testkit` among them), then Lua's own.
pub fn test_modules_path() -> String {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/lua/modules");
    format!("{}/?.lua;;", dir.display())
}

/// No Lua test script needs nearly this long; a run that takes it is a hang.
pub const SCRIPT_LIMIT: Duration = Duration::from_secs(60);

/// Runs the Lua test script `dir/name.lua`: it passes when it ends normally
/// and prints `<name> ok`. A first line `-- synodic-args: ...` adds flags to
/// `synodic run`; `-- synodic-limit: SECONDS` (among the first three lines)
/// sets its own time limit.
pub fn run_lua_script(dir: &std::path::Path, name: &str) {
    run_lua_script_with(dir, name, &[])
}

/// One `#[test]` per Lua script `NAME` of a directory, each running
/// `$run("NAME")`, and one that fails if a script of `$dir()` is not listed
/// (`$file` names the test file that lists them).
#[allow(unused_macros)]
macro_rules! script_tests {
    ($run:path, $dir:path, $file:literal; $($name:ident),* $(,)?) => {
        $( #[test] fn $name() { $run(stringify!($name)) } )*

        #[test]
        fn every_script_is_listed() {
            common::assert_every_script_listed(&$dir(), &[$(stringify!($name)),*], $file);
        }
    };
}

/// Fails naming the first `.lua` script of `dir` whose name `listed` (the
/// tests of `file`) lacks: a script nobody runs is a test that never fails.
pub fn assert_every_script_listed(dir: &std::path::Path, listed: &[&str], file: &str) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "lua") {
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            assert!(listed.contains(&stem.as_str()), "{} is not listed in {file}", path.display());
        }
    }
}

/// [`run_lua_script`], with `extra` flags for `synodic run` before the script's own.
pub fn run_lua_script_with(dir: &std::path::Path, name: &str, extra: &[&std::ffi::OsStr]) {
    let path = dir.join(format!("{name}.lua"));
    let source = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let header = |key: &str| source.lines().take(3).find_map(|l| l.strip_prefix(key)).map(str::trim);
    let flags: Vec<&str> = header("-- synodic-args:").map(|a| a.split_whitespace().collect()).unwrap_or_default();
    let limit = header("-- synodic-limit:").map_or(SCRIPT_LIMIT, |s| Duration::from_secs(s.parse().expect("synodic-limit: seconds")));
    let mut cmd = synodic_command();
    cmd.arg("run").args(extra).args(&flags).arg(&path).env("LUA_PATH_5_4", test_modules_path());
    let out = output_within(cmd, limit, &path.display().to_string());
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{name}.lua failed ({}):\n{stdout}\n{stderr}", out.status);
    assert!(stdout.contains(&format!("{name} ok")), "{name}.lua did not reach its end:\n{stdout}\n{stderr}");
}

/// A port nothing listens on now (for a node that must be told its
/// address before it starts: a proxy forwards there).
pub fn free_port() -> u16 {
    // Below 32768, where the kernel never hands out a port to an outgoing
    // connection: a port that port 0 gave could be taken by a client socket
    // of another test before the node binds it (CI met that). Free for TCP
    // and UDP (a node listens on both), chosen at random among 12,000.
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    static DRAWS: AtomicU64 = AtomicU64::new(0);
    loop {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos() as u64;
        let mut x = nanos ^ (std::process::id() as u64) << 20 ^ DRAWS.fetch_add(1, Relaxed).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        let port = 20000 + (x % 12000) as u16;
        let free = std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() && std::net::UdpSocket::bind(("127.0.0.1", port)).is_ok();
        if free {
            return port;
        }
    }
}

/// A directory with a cookie file of `secret`.
pub fn cookie_in(dir: &std::path::Path, file: &str, secret: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(file);
    std::fs::write(&path, secret).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path
}

/// Runs `source` as a script with the arguments `extra`.
pub fn run_source(name: &str, source: &str, extra: &[&str]) -> std::process::Output {
    run_source_with(name, source, &[], extra)
}

/// Runs `source` as a script, with `flags` for `synodic run` and `extra` for the script.
pub fn run_source_with(name: &str, source: &str, flags: &[&str], extra: &[&str]) -> std::process::Output {
    let dir = scratch_dir(&format!("cli-{name}"));
    let path = dir.join(format!("{name}.lua"));
    std::fs::write(&path, source).unwrap();
    let mut args = vec!["run"];
    args.extend_from_slice(flags);
    args.push(path.to_str().unwrap());
    args.extend_from_slice(extra);
    synodic(&args)
}

/// An application's module (examples/APP: APP.c over its kernel).
pub fn build_app_module(app: &str, kernel: &str, so: &std::path::Path) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let src = root.join("examples").join(app);
    let status = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-I"])
        .arg(root.join("vendor/lua-5.4.8"))
        .arg("-I")
        .arg(root.join("include"))
        .arg(src.join(format!("{app}.c")))
        .arg(src.join(kernel))
        .arg("-o")
        .arg(so)
        .arg("-lm")
        .status()
        .expect("run cc");
    assert!(status.success(), "cc examples/{app}");
}
