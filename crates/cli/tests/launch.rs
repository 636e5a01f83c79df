//! `synodic launch` and nodes under launchers, for real: nodes started over
//! ssh through an OpenSSH server of the test's own on 127.0.0.1, and jobs
//! that Debian's OpenMPI `mpirun` starts (Slurm's srun sets its variables
//! the same way; `synodic_net::launch` tests reading them). CI installs
//! `openssh-server` and `openmpi-bin`; without them these tests fail
//! saying so.

mod common;

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{output_within, scratch_dir, synodic_command, text, KillOnDrop, LIMIT};

/// The program every launch runs: it lists the nodes and gets an answer
/// from a process spawned on each.
const PROGRAM: &str = r#"
local s = require "synodic"
local nodes = s.nodes()
for _, n in ipairs(nodes) do
  s.spawn_on(n, function(p) local s = require "synodic" s.send(p, s.node()) end, s.self())
end
local answers = {}
for i = 1, #nodes do answers[i] = assert(s.receive(10), "a node did not answer") end
table.sort(answers)
assert(table.concat(answers, " ") == table.concat(nodes, " "))
print(#nodes .. " nodes answered: " .. table.concat(nodes, " "))
"#;

fn setup(name: &str) -> (PathBuf, PathBuf, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch_dir(name);
    let cookie = dir.join("cookie");
    std::fs::write(&cookie, "a cookie for the launch tests\n").unwrap();
    std::fs::set_permissions(&cookie, std::fs::Permissions::from_mode(0o600)).unwrap();
    let prog = dir.join("prog.lua");
    std::fs::write(&prog, PROGRAM).unwrap();
    (dir, cookie, prog)
}

fn need(program: &str, package: &str) -> String {
    let found = ["/usr/sbin", "/usr/bin", "/usr/local/bin"].iter().map(|d| Path::new(d).join(program)).find(|p| p.exists());
    found.unwrap_or_else(|| panic!("{program} is missing: install the Debian package {package} (scripts/test does)")).to_string_lossy().into_owned()
}

/// An OpenSSH server on 127.0.0.1 that accepts one key of the test's own.
struct Sshd {
    _server: KillOnDrop,
    port: u16,
    key: PathBuf,
}

impl Sshd {
    fn start(dir: &Path) -> Sshd {
        let sshd = need("sshd", "openssh-server");
        let keygen = need("ssh-keygen", "openssh-client");
        for key in ["host_key", "user_key"] {
            let out = Command::new(&keygen).args(["-q", "-t", "ed25519", "-N", "", "-f"]).arg(dir.join(key)).output().unwrap();
            assert!(out.status.success(), "ssh-keygen: {}", text(&out.stderr));
        }
        std::fs::copy(dir.join("user_key.pub"), dir.join("authorized_keys")).unwrap();
        // A free port: the kernel picks one, and it is given back at once.
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let config = dir.join("sshd_config");
        std::fs::write(
            &config,
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {dir}/host_key\nAuthorizedKeysFile {dir}/authorized_keys\n\
                 PidFile none\nUsePAM no\nStrictModes no\nPermitRootLogin prohibit-password\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\n",
                dir = dir.display()
            ),
        )
        .unwrap();
        // Run as root, sshd wants its privilege separation directory.
        let _ = std::fs::create_dir_all("/run/sshd");
        let mut child = Command::new(&sshd).args(["-D", "-e", "-f"]).arg(&config).stderr(Stdio::piped()).spawn().unwrap();
        let said = common::first_line_within(child.stderr.take().unwrap(), LIMIT, "sshd starting");
        assert!(said.contains(&format!("listening on 127.0.0.1 port {port}")), "sshd: {said}");
        Sshd { _server: KillOnDrop(child), port, key: dir.join("user_key") }
    }

    /// The `--ssh` command that reaches this server.
    fn command(&self) -> String {
        format!(
            "ssh -p {} -i {} -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR",
            self.port,
            self.key.display()
        )
    }
}

#[test]
fn launch_starts_nodes_over_ssh_from_a_hostfile() {
    let (dir, cookie, prog) = setup("launch-ssh");
    let sshd = Sshd::start(&dir);
    let hostfile = dir.join("hosts");
    std::fs::write(&hostfile, "# two slots here, one more under another name\n127.0.0.1 slots=2\nlocalhost\n").unwrap();
    let mut cmd = synodic_command();
    cmd.args(["launch", "--hostfile"]).arg(&hostfile).args(["--ssh", &sshd.command(), "--name", "ssh", "--cookie-file"]).arg(&cookie).arg(&prog);
    let out = output_within(cmd, LIMIT, "synodic launch over ssh");
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.starts_with("3 nodes answered: ssh-2@") && stdout.contains(" ssh-3@") && stdout.contains(" ssh@"), "{stdout}");

    // --np takes fewer slots; more than the hostfile has is one line.
    let mut cmd = synodic_command();
    cmd.args(["launch", "--np", "2", "--hostfile"]).arg(&hostfile).args(["--ssh", &sshd.command(), "--cookie-file"]).arg(&cookie).arg(&prog);
    let out = output_within(cmd, LIMIT, "synodic launch --np 2");
    assert!(text(&out.stdout).starts_with("2 nodes answered: "), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let out = common::synodic(&["launch", "--np", "4", "--hostfile", hostfile.to_str().unwrap(), prog.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).ends_with("4 nodes asked for, but the hostfile has 3 slots\n"), "{}", text(&out.stderr));
}

#[test]
fn launch_says_what_is_wrong_in_one_line() {
    let (dir, _, prog) = setup("launch-bad");
    let prog = prog.to_str().unwrap();
    let out = common::synodic(&["launch", prog]);
    assert_eq!(text(&out.stderr), "synodic: launch: give --hostfile FILE, or run under mpirun or srun\n");
    let missing = dir.join("no-such-hostfile");
    let out = common::synodic(&["launch", "--hostfile", missing.to_str().unwrap(), prog]);
    assert!(text(&out.stderr).starts_with("synodic: cannot read the hostfile ") && text(&out.stderr).lines().count() == 1, "{}", text(&out.stderr));
    let bad = dir.join("bad-hosts");
    std::fs::write(&bad, "alpha slots=lots\n").unwrap();
    let out = common::synodic(&["launch", "--hostfile", bad.to_str().unwrap(), prog]);
    assert!(text(&out.stderr).ends_with("hostfile line 1: 'slots=lots' is not slots=N (N > 0)\n"), "{}", text(&out.stderr));
    // A host that ssh cannot reach: its error shows, and the launch fails
    // instead of waiting for ever.
    std::fs::write(&bad, "127.0.0.1 slots=2\n").unwrap();
    let mut cmd = synodic_command();
    cmd.args(["launch", "--hostfile", bad.to_str().unwrap(), "--ssh", "false", prog]);
    let out = output_within(cmd, LIMIT, "synodic launch with a failing ssh");
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("the node on 127.0.0.1 ended before it joined"), "{}", text(&out.stderr));
}

/// mpirun as root needs these (the CI machine runs as root).
fn mpirun() -> Command {
    let mut cmd = Command::new(need("mpirun", "openmpi-bin"));
    cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1").env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1").args(["--oversubscribe", "-np", "3"]);
    cmd
}

#[test]
fn under_mpirun_rank_0_runs_the_program_and_the_others_are_its_nodes() {
    let (_, cookie, prog) = setup("launch-mpirun");
    let mut cmd = mpirun();
    cmd.arg(env!("CARGO_BIN_EXE_synodic")).args(["launch", "--cookie-file"]).arg(&cookie).arg(&prog);
    let out = output_within(cmd, LIMIT, "mpirun -np 3 synodic launch");
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.starts_with("3 nodes answered: job") && stdout.contains("-0@") && stdout.contains("-2@"), "{stdout}");
}

#[test]
fn under_mpirun_nodes_form_a_cluster_that_programs_join() {
    let (dir, cookie, prog) = setup("launch-mpirun-nodes");
    let mut cmd = mpirun();
    cmd.arg(env!("CARGO_BIN_EXE_synodic")).args(["node", "--cookie-file"]).arg(&cookie).stderr(Stdio::piped());
    let mut job = cmd.spawn().unwrap();
    let stderr = std::io::BufReader::new(job.stderr.take().unwrap());
    let mut job = KillOnDrop(job);
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let up = loop {
        let line = lines.recv_timeout(LIMIT).expect("rank 0 says when the job's nodes are up");
        if line.contains("nodes of the mpirun job are up") {
            break line;
        }
    };
    let seed = up.rsplit(' ').next().unwrap().to_string();
    assert!(up.starts_with("synodic: the 3 nodes of the mpirun job are up; join through 127.0.0.1:"), "{up}");
    let mut cmd = synodic_command();
    cmd.args(["run", "--join", &seed, "--name", "visitor", "--cookie-file"]).arg(&cookie).arg(&prog);
    let out = output_within(cmd, LIMIT, "a program joining the mpirun job");
    let stdout = text(&out.stdout);
    assert!(stdout.starts_with("4 nodes answered: job") && stdout.contains(" visitor@"), "{stdout}\n{}", text(&out.stderr));
    // SIGTERM to mpirun ends its nodes. Each says so, but mpirun may stop
    // forwarding their output as it ends itself, so what is checked is
    // that mpirun ends (its stderr closes) and leaves no node behind.
    unsafe { libc::kill(job.0.id() as i32, libc::SIGTERM) };
    loop {
        match lines.recv_timeout(LIMIT) {
            Ok(_) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!("mpirun did not end on SIGTERM"),
        }
    }
    let _ = job.0.wait(); // its stderr has closed: it is ending
    let cookie = cookie.to_string_lossy().into_owned();
    assert_eq!(processes_naming(&cookie), 0, "a node of the mpirun job outlived it");
    drop(dir);
}

/// How many live processes have `needle` in their command line.
fn processes_naming(needle: &str) -> usize {
    let Ok(dir) = std::fs::read_dir("/proc") else { return 0 };
    dir.filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit()))
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .filter(|cmdline| String::from_utf8_lossy(cmdline).contains(needle))
        .count()
}

/// srun starts every task of a step with the same command and tells each
/// its rank and the step's hosts; three tasks started with srun's variables
/// form the cluster, rank 0 running the program.
#[test]
fn under_srun_the_tasks_of_a_step_find_each_other() {
    let (_, cookie, prog) = setup("launch-srun");
    // A job id of this run's own, so the seed's port is unlikely to be taken.
    let job = (std::process::id() % 9000 + 1000).to_string();
    let start = |rank: u32| {
        let mut cmd = synodic_command();
        cmd.args(["launch", "--cookie-file"]).arg(&cookie).arg(&prog);
        cmd.env("SLURM_PROCID", rank.to_string()).env("SLURM_NTASKS", "3").env("SLURM_STEP_ID", "0").env("SLURM_JOB_ID", &job);
        cmd.env("SLURM_JOB_NODELIST", "localhost").env("SLURMD_NODENAME", "localhost");
        cmd
    };
    // The other tasks start first: they wait for the seed.
    let others: Vec<KillOnDrop> = (1..3).map(|rank| KillOnDrop(start(rank).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap())).collect();
    let out = output_within(start(0), LIMIT, "rank 0 of an srun step");
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.starts_with(&format!("3 nodes answered: job{job}000-0@")), "{stdout}");
    // The others end with the program.
    for mut task in others {
        let (tx, rx) = std::sync::mpsc::channel();
        let pid = task.0.id();
        std::thread::spawn(move || {
            let _ = tx.send(task.0.wait().map(|s| s.success()));
        });
        assert_eq!(rx.recv_timeout(LIMIT).ok().and_then(Result::ok), Some(true), "task {pid} ends with the program");
    }
}
