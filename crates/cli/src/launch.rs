//! `synodic launch`: one program over nodes on many hosts, the way mpirun
//! starts an MPI job.
//!
//! - With `--hostfile`, the program runs here, on the first slot of the
//!   first host, and a node starts on each further slot over ssh (the
//!   command `--ssh` names); each gets the cookie on its standard input, so
//!   no cookie file need exist on the other hosts, and joins this node.
//! - Under mpirun or srun (their environment says so), every process of the
//!   job runs this same command: rank 0 runs the program, the others become
//!   nodes that join it (see `synodic_net::launch` for how they agree on
//!   where).
//!
//! Either way the program starts once every node has joined, and the nodes
//! end when the program's node leaves the cluster.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use synodic_net::launch::{parse_hostfile, place, Job};

use crate::{NodeArgs, RunArgs};

#[derive(clap::Args)]
#[command(mut_arg("nodes", |a| a.hide(true)))]
pub struct LaunchArgs {
    /// Hosts to start nodes on over ssh: lines `host [slots=N]`, as mpirun
    /// reads them; the program runs here, on the first slot of the first
    /// host. Not needed under mpirun or srun.
    #[arg(long, value_name = "FILE")]
    hostfile: Option<PathBuf>,
    /// Nodes in all, the program's own included (default: one per slot).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    np: Option<u16>,
    /// The command that runs a command on another host; the host and the
    /// command follow its words.
    #[arg(long, value_name = "CMD", default_value = "ssh -o BatchMode=yes")]
    ssh: String,
    /// The synodic executable on the other hosts (default: this one's path).
    #[arg(long, value_name = "PATH")]
    remote_synodic: Option<String>,
    #[command(flatten)]
    run: RunArgs,
}

/// Nodes of one job start in any order: a node keeps trying to join its
/// seed this long.
const JOIN_PATIENCE: Duration = Duration::from_secs(30);

pub fn launch(args: LaunchArgs) -> i32 {
    let planned = (|| {
        if args.run.script.is_none() {
            bail!("missing script: synodic launch --hostfile FILE PROG.lua [ARGS]");
        }
        if args.run.nodes > 1 {
            bail!("--nodes is for 'synodic run'; launch takes --np");
        }
        match Job::from_env(|k| std::env::var(k).ok())? {
            Some(job) => under_launcher(job, args),
            None => match &args.hostfile {
                Some(file) => over_ssh(file.clone(), args),
                None => bail!("launch: give --hostfile FILE, or run under mpirun or srun"),
            },
        }
    })();
    planned.unwrap_or_else(|e| {
        eprintln!("synodic: {e:#}");
        1
    })
}

/// One process of a job that mpirun or srun started: rank 0 runs the
/// program, the others are nodes that end with it.
fn under_launcher(job: Job, args: LaunchArgs) -> Result<i32> {
    let mut run = args.run;
    let leader = take_place(&job, &mut run.cluster)?;
    if job.rank == 0 {
        return Ok(crate::run_with(run, |_, _, _| Ok(job.size as usize - 1)));
    }
    Ok(crate::node(NodeArgs { workers: run.workers, limits: run.limits, logging: run.logging, cluster: run.cluster, quiet: true, follow: Some(leader) }))
}

/// `synodic node` under mpirun or srun without `--join`: the job's nodes
/// form one cluster, rank 0 its seed. Returns the job, if there is one.
pub(crate) fn node_in_job(args: &mut NodeArgs) -> Result<Option<Job>> {
    if args.cluster.join.is_some() || args.follow.is_some() {
        return Ok(None);
    }
    let Some(job) = Job::from_env(|k| std::env::var(k).ok())? else { return Ok(None) };
    take_place(&job, &mut args.cluster)?;
    args.quiet |= job.rank > 0;
    Ok(Some(job))
}

/// Fits `cluster` to this process's place in `job`: rank 0 listens on the
/// seed address (`--join`, or the job's first host at the `--listen` port
/// or the job's own), the others listen on their host and join it. Names
/// are `BASE-RANK` (`--name`, or `job<ID>`). Returns rank 0's name.
fn take_place(job: &Job, cluster: &mut crate::ClusterArgs) -> Result<String> {
    let seed = match (&cluster.join, &job.seed_host) {
        (Some(seed), _) => seed.clone(),
        (None, Some(host)) => format!("{host}:{}", port_of(cluster.listen.as_deref()).unwrap_or_else(|| job.port())),
        (None, None) => bail!("under {} over several hosts, give --join HOST:PORT: where rank 0 will listen", job.launcher),
    };
    let base = cluster.name.as_deref().map_or_else(|| format!("job{}", job.id), |n| n.split('@').next().unwrap_or(n).to_string());
    let name_of = |rank: u32| format!("{base}-{rank}");
    cluster.name = Some(name_of(job.rank));
    if job.rank == 0 {
        cluster.listen = Some(cluster.listen.take().filter(|l| port_of(Some(l)).is_some()).unwrap_or(seed));
        cluster.join = None;
    } else {
        let host = job.own_host.clone().or(job.seed_host.clone()).unwrap_or_else(|| "0.0.0.0".into());
        cluster.listen = Some(format!("{host}:0"));
        cluster.join = Some(seed);
        cluster.join_patience = JOIN_PATIENCE;
    }
    Ok(name_of(0))
}

/// The port of `host:port`, when there is a non-zero one.
fn port_of(addr: Option<&str>) -> Option<u16> {
    addr?.rsplit_once(':')?.1.parse().ok().filter(|&p| p != 0)
}

/// Nodes over ssh on the hosts of a hostfile, the program here.
fn over_ssh(file: PathBuf, args: LaunchArgs) -> Result<i32> {
    let text = std::fs::read_to_string(&file).with_context(|| format!("cannot read the hostfile {}", file.display()))?;
    let hosts = parse_hostfile(&text).with_context(|| format!("hostfile {}", file.display()))?;
    let slots: Vec<String> = place(&hosts, args.np.map_or(0, usize::from))?.into_iter().map(String::from).collect();
    let mut ssh = args.ssh.split_whitespace().map(String::from);
    let ssh_program = ssh.next().context("--ssh names no command")?;
    let ssh_args: Vec<String> = ssh.collect();
    let remote_exe = match args.remote_synodic {
        Some(path) => path,
        None => std::env::current_exe().context("cannot find the synodic executable")?.to_string_lossy().into_owned(),
    };
    let mut run = args.run;
    run.cluster.listen.get_or_insert_with(|| format!("{}:0", slots[0]));
    let base = run.cluster.name.clone().unwrap_or_else(|| format!("launch{}", std::process::id()));
    run.cluster.name = Some(base.clone());
    let workers = run.workers;
    Ok(crate::run_with(run, move |rt, cluster, run| {
        let cookie = run.cluster.cookie()?;
        let leader = rt.node_name();
        for (i, host) in slots.iter().enumerate().skip(1) {
            let node_name = format!("{}-{}", base.split('@').next().unwrap_or(&base), i + 1);
            let mut remote = vec![
                remote_exe.clone(),
                "node".into(),
                "--quiet".into(),
                "--listen".into(),
                format!("{host}:0"),
                "--join".into(),
                cluster.cluster.addr().to_string(),
                "--name".into(),
                node_name.clone(),
                "--follow".into(),
                leader.to_string(),
                "--cookie-file".into(),
                "-".into(),
            ];
            if workers > 0 {
                remote.extend(["--workers".into(), workers.to_string()]);
            }
            if run.cluster.no_encryption {
                remote.push("--no-encryption".into());
            }
            remote.extend(run.limits.args());
            remote.extend(run.logging.args());
            let line = remote.iter().map(|w| shell_quote(w)).collect::<Vec<_>>().join(" ");
            // The cookie goes over the ssh connection, never on a command
            // line; written into the pipe before ssh starts, so a failing
            // ssh cannot break the pipe under this process.
            let (cookie_in, mut cookie_out) = std::io::pipe().context("cannot make a pipe for ssh")?;
            writeln!(cookie_out, "{cookie}").context("cannot write the cookie for ssh")?;
            drop(cookie_out);
            let mut cmd = std::process::Command::new(&ssh_program);
            cmd.args(&ssh_args).arg(host).arg(format!("exec {line}")).stdin(cookie_in).stdout(std::process::Stdio::piped());
            crate::ends_with_this_process(&mut cmd);
            let mut child = cmd.spawn().with_context(|| format!("cannot run '{ssh_program}' to start a node on {host}"))?;
            if let Some(pipe) = child.stdout.take() {
                // A node over ssh ends by itself when this one leaves (--follow).
                crate::output::forward(pipe, None);
            }
            // A node that never joins ends the launch at once, rather than
            // after the wait for all of them.
            let (rt, host, name) = (rt.clone(), host.clone(), node_name.clone());
            std::thread::spawn(move || {
                let status = child.wait().map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
                if !rt.nodes().met(&name) {
                    eprintln!("synodic: the node on {host} ended before it joined (ssh: {status})");
                    crate::exit(1);
                }
            });
        }
        Ok(slots.len() - 1)
    }))
}

/// `word` as one word for a POSIX shell.
fn shell_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}
