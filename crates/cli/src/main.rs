//! The `synodic` command: a thin front over the runtime crates. It parses the
//! command line, starts a node's runtime, runs the main process, and turns
//! its end into an exit status.
#![deny(unsafe_op_in_unsafe_fn)]
// The entry point is `entry::main`, without Rust's runtime start-up.
#![cfg_attr(not(test), no_main)]

mod alloc;
mod bind;
mod console;
mod entry;
mod launch;
mod logging;
mod lua_cli;
mod output;
mod signals;

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use synodic_core::{Config, ExitReason, RunEnd, Runtime};
use synodic_lua::LuaProcess;

#[global_allocator]
static GLOBAL: alloc::Allocator = alloc::Allocator;

/// A node serves thousands of connections (a process each, SPEC §10): its
/// limit of open files goes up to the system's hard limit (Debian's soft
/// default, 1,024, would refuse the 1,021st connection).
fn more_open_files() {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: reads and sets this process's own limit through a valid struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// Concurrent, parallel and distributed programming in Lua.
#[derive(Parser)]
#[command(name = "synodic", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a Lua program as the main process; the run ends when it ends.
    Run(RunArgs),
    /// Run a node that other nodes and programs join; it runs until stopped.
    /// Under mpirun or srun, the nodes of the job form one cluster by
    /// themselves (rank 0 says where to join it).
    Node(NodeArgs),
    /// Start nodes on the hosts of a hostfile over ssh (or take those that
    /// mpirun or srun started) and run a Lua program on them.
    Launch(launch::LaunchArgs),
    /// Attach an interactive console to a running program.
    Console(console::ConsoleArgs),
}

#[derive(clap::Args, Default)]
struct RunArgs {
    /// Worker threads that run processes (default: one per core; at most 1024).
    #[arg(long, default_value_t = 0, value_name = "N", value_parser = clap::value_parser!(u16).range(0..=synodic_core::MAX_WORKERS as i64))]
    workers: u16,
    #[command(flatten)]
    limits: Limits,
    #[command(flatten)]
    logging: logging::Logging,
    /// Start N-1 more nodes on this machine (OS processes) and form a
    /// cluster with them before the program starts; they end with the run.
    /// The program spreads its work with spawn_on.
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    nodes: u16,
    /// With --nodes: bind each node to a share of this machine's
    /// processors, as mpirun binds its ranks (none when there are more
    /// nodes than processors); a node then runs one worker per processor
    /// of its share unless --workers says otherwise.
    #[arg(long)]
    bind: bool,
    #[command(flatten)]
    cluster: ClusterArgs,
    /// The Lua script to run (`-`: read it from standard input).
    script: Option<PathBuf>,
    /// Arguments for the script (the global `arg`, and `...`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
    /// The `lua`-style command line this run was started with, if any.
    #[arg(skip)]
    lua: Option<synodic_lua::vm::command_line::CommandLine>,
}

/// What a node's processes and tuple spaces may take.
#[derive(clap::Args, Clone, Default)]
struct Limits {
    /// The memory limit of a process that sets none itself (bytes; K, M or G
    /// for KiB, MiB, GiB): its Lua state and its queued messages. A process
    /// over it ends alone, with reason "memory limit".
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    max_process_memory: Option<u64>,
    /// What the tuple spaces of this node may hold in all (bytes; K, M or
    /// G): an `out` that would pass it raises "space full: NAME" and adds
    /// nothing. No limit without it.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    max_space_memory: Option<u64>,
}

impl Limits {
    fn apply(&self, rt: &Runtime) {
        if let Some(bytes) = self.max_space_memory {
            rt.spaces().set_limit(bytes);
        }
    }

    /// The same limits, for the command line of a node this one starts.
    fn args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if let Some(bytes) = self.max_process_memory {
            args.extend(["--max-process-memory".into(), bytes.to_string()]);
        }
        if let Some(bytes) = self.max_space_memory {
            args.extend(["--max-space-memory".into(), bytes.to_string()]);
        }
        args
    }
}

#[derive(clap::Args)]
struct NodeArgs {
    /// Worker threads that run processes (default: one per core; at most 1024).
    #[arg(long, default_value_t = 0, value_name = "N", value_parser = clap::value_parser!(u16).range(0..=synodic_core::MAX_WORKERS as i64))]
    workers: u16,
    #[command(flatten)]
    limits: Limits,
    #[command(flatten)]
    logging: logging::Logging,
    #[command(flatten)]
    cluster: ClusterArgs,
    /// Say nothing on start (for nodes that `run --nodes` starts).
    #[arg(long, hide = true)]
    quiet: bool,
    /// End once the node of this name (NAME or NAME@HOST) has left the
    /// cluster (for nodes started for one program's run).
    #[arg(long, hide = true, value_name = "NAME")]
    follow: Option<String>,
}

/// How a node takes part in a cluster (SPEC §8, §9), and who may attach.
#[derive(clap::Args, Default)]
struct ClusterArgs {
    /// Open a console endpoint on this address (host:port; port 0 picks a
    /// free one), which `synodic console` attaches to; its address is
    /// printed on stderr. No endpoint without it.
    #[arg(long, value_name = "ADDR")]
    console: Option<String>,
    /// Serve the live dashboard (SPEC §12) on this address (host:port; port
    /// 0 picks a free one; a host other than 127.0.0.1 opens it to others):
    /// its URL is printed on stderr. Reading needs nothing; kill, stop and
    /// step need the cookie, typed in the page.
    #[arg(long, value_name = "ADDR")]
    dashboard: Option<String>,
    /// Listen for other nodes on this address (host:port; port 0 picks a
    /// free one); the address is printed on stderr.
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,
    /// Join the cluster that the node at this address is a member of.
    #[arg(long, value_name = "ADDR")]
    join: Option<String>,
    /// Tell the other nodes to reach this one at this address (host:port)
    /// rather than the one it listens on: a proxy or a NAT in between
    /// forwards it (TCP and UDP) to the listening address.
    #[arg(long, value_name = "ADDR", requires = "listen")]
    advertise: Option<String>,
    /// This node's name (NAME, or NAME@HOST; the host is added when
    /// missing). Default: a name made from the OS process id.
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// The file holding the shared secret that nodes and consoles prove
    /// they hold (default: ~/.synodic/cookie, created readable by you only
    /// on first use); `-` reads it from the first line of standard input.
    #[arg(long, value_name = "FILE")]
    cookie_file: Option<PathBuf>,
    /// Links to nodes started with this flag too are authenticated (every
    /// frame, as always) but not encrypted: for a network you trust, where
    /// encryption is a cost you do not want. Links to other nodes stay
    /// encrypted.
    #[arg(long)]
    no_encryption: bool,
    /// How long to keep trying to join while the seed is not up yet (nodes
    /// of one job start in any order).
    #[arg(skip)]
    join_patience: std::time::Duration,
    /// The cookie once read (standard input can be read only once).
    #[arg(skip)]
    cookie: std::sync::OnceLock<String>,
}

impl ClusterArgs {
    /// The node's full name.
    fn node_name(&self) -> String {
        let name = self.name.clone().unwrap_or_else(|| format!("n{}", std::process::id()));
        if name.contains('@') {
            return name;
        }
        format!("{name}@{}", hostname())
    }

    fn clustered(&self) -> bool {
        self.listen.is_some() || self.join.is_some()
    }

    fn cookie_path(&self) -> anyhow::Result<PathBuf> {
        use anyhow::Context;
        self.cookie_file.clone().or_else(synodic_net::cookie::default_file).context("no cookie file: set HOME or pass --cookie-file")
    }

    fn cookie(&self) -> anyhow::Result<String> {
        if let Some(cookie) = self.cookie.get() {
            return Ok(cookie.clone());
        }
        let file = self.cookie_path()?;
        let cookie = if file.as_os_str() == "-" {
            let mut line = String::new();
            std::io::stdin().read_line(&mut line)?;
            let line = line.trim().to_string();
            anyhow::ensure!(!line.is_empty(), "no cookie on standard input (--cookie-file -)");
            line
        } else {
            // Only the default file is made when missing: a given one that
            // is not there is most likely a typo, and a fresh cookie in it
            // would only be refused later as the wrong one.
            if self.cookie_file.is_some() && !file.exists() {
                anyhow::bail!("no cookie file {} (--cookie-file takes an existing file; only the default ~/.synodic/cookie is created when missing)", file.display());
            }
            let (cookie, warnings) = synodic_net::cookie::load_or_create(&file)?;
            for w in warnings {
                eprintln!("synodic: warning: {w}");
            }
            cookie
        };
        Ok(self.cookie.get_or_init(|| cookie).clone())
    }
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is as long as the length given.
    let ok = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0;
    let end = buf.iter().position(|&b| b == 0).unwrap_or(0);
    match ok && end > 0 {
        true => String::from_utf8_lossy(&buf[..end]).into_owned(),
        false => "localhost".into(),
    }
}

/// The command, from `entry::main`.
#[cfg_attr(test, allow(dead_code))]
fn command() {
    alloc::configure();
    more_open_files();
    if let Some(args) = lua_cli::lua_command(std::env::args_os().skip(1)) {
        exit(match lua_cli::parse(args) {
            Ok(cl) => run_with(RunArgs { nodes: 1, lua: Some(cl), ..RunArgs::default() }, |_, _, _| Ok(0)),
            Err(code) => code,
        });
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => exit(usage_error(e)),
    };
    let code = match cli.command {
        Command::Run(args) => run(args),
        Command::Node(args) => node(args),
        Command::Launch(args) => launch::launch(args),
        Command::Console(args) => console::run(args).unwrap_or_else(|e| {
            eprintln!("synodic: {e:#}");
            1
        }),
    };
    exit(code)
}

/// Help and version go to stdout as clap renders them; a usage mistake is
/// one line on stderr, exit status 2.
fn usage_error(e: clap::Error) -> i32 {
    use clap::error::ErrorKind::*;
    if matches!(e.kind(), DisplayHelp | DisplayVersion | DisplayHelpOnMissingArgumentOrSubcommand) {
        let _ = e.print();
        return if e.kind() == DisplayHelpOnMissingArgumentOrSubcommand { 2 } else { 0 };
    }
    let rendered = e.render().to_string();
    let first = rendered.lines().next().unwrap_or("invalid arguments");
    let first = first.strip_prefix("error: ").unwrap_or(first);
    eprintln!("synodic: {first} (see 'synodic --help')");
    2
}

fn run(mut args: RunArgs) -> i32 {
    match args.script.as_deref().map(|p| p.to_string_lossy().into_owned()) {
        None => {
            eprintln!("synodic: missing script: synodic run PROG.lua [ARGS] (or synodic PROG.lua, as with lua)");
            return 2;
        }
        // `-`: the script is standard input, read now, as `lua -` does.
        Some(dash) if dash == "-" => match lua_cli::stdin_source() {
            Ok(source) => args.lua = Some(lua_cli::stdin_script(source, std::mem::take(&mut args.args))),
            Err(e) => {
                eprintln!("synodic: cannot read the script from standard input: {e}");
                return 1;
            }
        },
        Some(_) => {}
    }
    run_with(args, |_, _, _| Ok(0))
}

/// Runs the program once the cluster is formed: the local nodes `--nodes`
/// asks for, and those `start_others` starts elsewhere (it returns how
/// many will join).
fn run_with(mut args: RunArgs, start_others: impl FnOnce(&Runtime, &Cluster, &RunArgs) -> anyhow::Result<usize>) -> i32 {
    let script = args.script.as_deref().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
    signals::install();
    args.logging.apply();
    let mut config = Config {
        workers: args.workers.into(),
        max_process_memory: args.limits.max_process_memory,
        preempt_signal: Some(synodic_lua::vm::preempt::install()),
        pool_worker: Some(synodic_lua::pool_worker),
        on_lasting: Some(signals::start_waiting),
        ..Config::default()
    };
    let say_where = args.cluster.listen.is_some();
    // Before the runtime starts: its threads inherit the binding.
    let shares = match (args.bind && args.nodes > 1).then(|| bind::shares(args.nodes.into())) {
        Some(Ok(shares)) => shares,
        Some(Err(e)) => {
            eprintln!("synodic: --bind: cannot read this machine's processors: {e}");
            return 1;
        }
        None => None,
    };
    if let Some(mine) = shares.as_ref().and_then(|s| s.first()) {
        if let Err(e) = bind::bind_self(mine) {
            eprintln!("synodic: --bind: {e}");
            return 1;
        }
    }
    if args.nodes > 1 {
        args.cluster.listen.get_or_insert_with(|| "127.0.0.1:0".into());
    }
    if args.cluster.clustered() {
        config.node_name = args.cluster.node_name();
    }
    let rt = match Runtime::start(config) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("synodic: {e}");
            return 1;
        }
    };
    args.limits.apply(&rt);
    let opened = open_cluster(&rt, &args.cluster, say_where).and_then(|cluster| {
        let Some(cluster) = cluster else { return Ok(()) };
        if args.nodes > 1 {
            start_local_nodes(&rt, &cluster, &args, shares.as_deref())?;
        }
        let count = usize::from(args.nodes) + start_others(&rt, &cluster, &args)?;
        if count > 1 {
            cluster.cluster.wait_for_nodes(&cluster.io, count, std::time::Duration::from_secs(30))?;
        }
        Ok(())
    });
    if let Err(e) = opened.and_then(|_| open_console(&rt, &args.cluster)).and_then(|_| open_dashboard(&rt, &args.cluster)) {
        eprintln!("synodic: {e:#}");
        return 1;
    }
    let body = match args.lua.take() {
        Some(mut cl) => {
            if cl.interactive {
                cl.prompt_port = lua_cli::open_prompt(&rt);
            }
            LuaProcess::command_line(cl)
        }
        None => LuaProcess::main_script(script, std::mem::take(&mut args.args)),
    };
    // This thread runs the main process (as the node's first worker, when
    // none has started), and the run's end ends the OS process from
    // whichever thread sees it.
    let limit = rt.max_process_memory();
    rt.run_main_here(body, move |end| exit(exit_status(end, limit)))
}

/// The exit status of a run that ended with `end`, said on stderr when the
/// reason needs a word (the main process's memory limit, `limit` bytes).
fn exit_status(end: RunEnd, limit: Option<u64>) -> i32 {
    match end {
        RunEnd::Exited(ExitReason::Normal) => 0,
        RunEnd::Exited(ExitReason::Error(e)) if e == synodic_core::MEMORY_LIMIT => {
            let limit = limit.map_or_else(String::new, |b| format!(" of {b} bytes"));
            eprintln!("synodic: the main process went over its memory limit{limit} and was ended");
            1
        }
        // An error was reported where it happened; a value given to `exit`
        // was not.
        RunEnd::Exited(ExitReason::Error(_)) => 1,
        RunEnd::Exited(reason @ ExitReason::Value(_)) => {
            eprintln!("synodic: the main process exited with reason {}", reason.describe());
            1
        }
        RunEnd::Halted(status) => status,
    }
}

/// `synodic node`: a node that runs no program of its own.
fn node(mut args: NodeArgs) -> i32 {
    signals::install();
    // A node lasts.
    signals::start_waiting();
    args.logging.apply();
    if args.quiet {
        signals::quiet();
    }
    let job = match launch::node_in_job(&mut args) {
        Ok(job) => job,
        Err(e) => {
            eprintln!("synodic: {e:#}");
            return 1;
        }
    };
    let config = Config { workers: args.workers.into(), node_name: args.cluster.node_name(), max_process_memory: args.limits.max_process_memory, preempt_signal: Some(synodic_lua::vm::preempt::install()), pool_worker: Some(synodic_lua::pool_worker), ..Config::default() };
    let rt = match Runtime::start(config) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("synodic: {e}");
            return 1;
        }
    };
    args.limits.apply(&rt);
    let mut cluster = args.cluster;
    cluster.listen.get_or_insert_with(|| "127.0.0.1:0".into());
    // Daemons start in any order: one whose seed is not up yet waits for it.
    cluster.join_patience = cluster.join_patience.max(std::time::Duration::from_secs(10));
    let opened = open_cluster(&rt, &cluster, !args.quiet).and_then(|c| open_console(&rt, &cluster).and_then(|_| open_dashboard(&rt, &cluster)).map(|_| c));
    // Rank 0 of a job says when all of it has joined, and where to join it.
    let opened = opened.and_then(|c| {
        if let (Some(c), Some(job)) = (&c, job.as_ref().filter(|job| job.rank == 0)) {
            c.cluster.wait_for_nodes(&c.io, job.size as usize, std::time::Duration::from_secs(60))?;
            eprintln!("synodic: the {} nodes of the {} job are up; join through {}", job.size, job.launcher, c.cluster.addr());
        }
        Ok(c)
    });
    match (opened, &args.follow) {
        (Err(e), _) => {
            eprintln!("synodic: {e:#}");
            1
        }
        (Ok(Some(c)), Some(leader)) => {
            c.cluster.wait_until_gone(&c.io, leader);
            0
        }
        (Ok(_), _) => loop {
            std::thread::park();
        },
    }
}

/// Joins or starts a cluster when the arguments ask for it, and says where
/// this node listens if `say` is set.
fn open_cluster(rt: &Runtime, args: &ClusterArgs, say: bool) -> anyhow::Result<Option<Cluster>> {
    if !args.clustered() {
        return Ok(None);
    }
    let cookie = args.cookie()?;
    let io = synodic_net::Io::start()?;
    let spawner_rt = rt.clone();
    let spawner: synodic_net::cluster::Spawner = std::sync::Arc::new(move |msg| LuaProcess::spawn(&spawner_rt, msg, None).map_err(|e| e.to_string()));
    let settings = synodic_net::cluster::Settings { listen: args.listen.clone().unwrap_or_else(|| "127.0.0.1:0".into()), advertise: args.advertise.clone(), cookie: cookie.into_bytes(), plain: args.no_encryption };
    let cluster = synodic_net::cluster::Cluster::start(&io, rt.clone(), settings, spawner)?;
    if say {
        eprintln!("synodic: node {} listening on {}", rt.node_name(), cluster.addr());
    }
    let leaving = cluster.clone();
    signals::on_exit(move || leaving.leave());
    if let Some(seed) = &args.join {
        let since = std::time::Instant::now();
        loop {
            match cluster.join(&io, seed) {
                Err(synodic_net::Error::Unreachable { .. }) if since.elapsed() < args.join_patience => std::thread::sleep(std::time::Duration::from_millis(100)),
                joined => break joined?,
            }
        }
        if say {
            eprintln!("synodic: node {} joined the cluster through {seed}", rt.node_name());
        }
    }
    Ok(Some(Cluster { io, cluster }))
}

/// A node's cluster transport and the I/O thread it runs on.
struct Cluster {
    io: synodic_net::Io,
    cluster: synodic_net::cluster::Cluster,
}

/// `run --nodes N`: starts N-1 `synodic node`s that join this one and end
/// with it (the kernel kills them when this OS process dies, however it
/// dies).
fn start_local_nodes(rt: &Runtime, cluster: &Cluster, args: &RunArgs, shares: Option<&[Vec<usize>]>) -> anyhow::Result<()> {
    use anyhow::Context;
    let exe = std::env::current_exe().context("cannot find the synodic executable to start nodes")?;
    let cookie = args.cluster.cookie_path()?;
    let me = rt.node_name();
    let (base, host) = me.split_once('@').unwrap_or((&me, "localhost"));
    for i in 2..=args.nodes {
        let mut cmd = std::process::Command::new(&exe);
        cmd.args(["node", "--quiet", "--listen", "127.0.0.1:0", "--join", &cluster.cluster.addr().to_string()])
            .arg("--name")
            .arg(format!("{base}-{i}@{host}"))
            .arg("--cookie-file")
            .arg(&cookie)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped());
        if args.workers > 0 {
            cmd.arg("--workers").arg(args.workers.to_string());
        }
        if args.cluster.no_encryption {
            cmd.arg("--no-encryption");
        }
        cmd.args(args.limits.args());
        cmd.args(args.logging.args());
        ends_with_this_process(&mut cmd);
        if let Some(share) = shares.and_then(|s| s.get(usize::from(i) - 1)) {
            bind::bind_child(&mut cmd, share);
        }
        let mut child = cmd.spawn().with_context(|| format!("cannot start node {i} of {}", args.nodes))?;
        if let Some(pipe) = child.stdout.take() {
            output::forward(pipe, Some(child.id()));
        }
    }
    Ok(())
}

/// Has the kernel kill the child `cmd` starts when this OS process dies,
/// however it dies.
fn ends_with_this_process(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl is async-signal-safe; the child only asks to be killed
    // when its parent (this thread, which lives as long as the run) is gone.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
}

/// Opens the console endpoint when `--console` asks for it, and says where.
fn open_console(rt: &Runtime, args: &ClusterArgs) -> anyhow::Result<()> {
    let Some(addr) = args.console.as_deref() else { return Ok(()) };
    let cookie = args.cookie()?;
    let io = synodic_net::Io::start()?;
    let agents = rt.clone();
    let attach: synodic_net::console::Attach = std::sync::Arc::new(move |port| agents.spawn(LuaProcess::module("synodic.console", port as i64)).map_err(|e| e.to_string()));
    let bound = synodic_net::console::listen(&io, rt.clone(), addr, cookie, attach)?;
    eprintln!("synodic: console on {bound} (attach with: synodic console {bound})");
    Ok(())
}

/// Starts the dashboard when `--dashboard` asks for it; it says where.
fn open_dashboard(rt: &Runtime, args: &ClusterArgs) -> anyhow::Result<()> {
    let Some(addr) = args.dashboard.as_deref() else { return Ok(()) };
    anyhow::ensure!(!addr.contains(char::is_whitespace) && addr.contains(':'), "--dashboard {addr}: expected HOST:PORT");
    let key = synodic_net::cookie::dashboard_key(&args.cookie()?);
    rt.spawn(LuaProcess::module_text("synodic.dashboard", format!("{addr} {key}"))).map_err(|e| anyhow::anyhow!("the dashboard: {e}"))?;
    Ok(())
}

/// A size in bytes: digits, then K, M or G (binary multiples) if wanted.
fn parse_size(text: &str) -> Result<u64, String> {
    let (digits, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len()));
    let shift = match unit {
        "" | "B" => 0,
        "K" | "KB" | "KiB" => 10,
        "M" | "MB" | "MiB" => 20,
        "G" | "GB" | "GiB" => 30,
        _ => return Err(format!("'{text}' is not a size (bytes, or a number with K, M or G)")),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("'{text}' is not a size (bytes, or a number with K, M or G)"))
}

/// Ends the OS process at once: other processes may still be running, so no
/// destructors run; buffered output is flushed first.
fn exit(code: i32) -> ! {
    use std::io::Write;
    signals::farewell();
    output::drain();
    let _ = std::io::stdout().flush();
    // SAFETY: fflush(NULL) flushes every C stream; _exit ends the process
    // without running destructors, which other threads may still be using.
    unsafe {
        libc::fflush(std::ptr::null_mut());
        libc::_exit(code)
    }
}
