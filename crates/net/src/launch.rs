//! Where launched nodes come from and how they find each other, without
//! starting anything: hostfiles as mpirun reads them (`host [slots=N]`),
//! which host each of `np` nodes goes to, and the job that mpirun or
//! Slurm's srun describe in the environment of each process they start.
//!
//! Under a launcher every process of the job runs the same command; they
//! agree without talking: rank 0 is the seed and listens on a port derived
//! from the job's id (or the one given), on the first host of the job; the
//! others listen anywhere and join it.

use crate::Error;

/// One line of a hostfile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    pub name: String,
    /// Nodes this host takes (mpirun's slots; 1 when not said).
    pub slots: u32,
}

fn bad(what: String) -> Error {
    Error::Launch(what)
}

/// Reads a hostfile: one host per line, `host [slots=N]`; `#` starts a
/// comment; blank lines are skipped. Errors name the line.
pub fn parse_hostfile(text: &str) -> Result<Vec<Host>, Error> {
    let mut hosts = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or_default().trim();
        let mut words = line.split_whitespace();
        let Some(name) = words.next() else { continue };
        let mut slots = 1;
        for word in words {
            let value = word.strip_prefix("slots=").or_else(|| word.strip_prefix("max_slots="));
            slots = match value.map(str::parse::<u32>) {
                Some(Ok(n)) if n > 0 => n,
                _ => return Err(bad(format!("hostfile line {}: '{word}' is not slots=N (N > 0)", n + 1))),
            };
        }
        hosts.push(Host { name: name.to_string(), slots });
    }
    if hosts.is_empty() {
        return Err(bad("the hostfile lists no host".into()));
    }
    Ok(hosts)
}

/// The host of each of `np` nodes, filling each host's slots in order (the
/// first is the program's own node); `np` 0 means every slot.
pub fn place(hosts: &[Host], np: usize) -> Result<Vec<&str>, Error> {
    let slots: Vec<&str> = hosts.iter().flat_map(|h| std::iter::repeat_n(h.name.as_str(), h.slots as usize)).collect();
    match np {
        0 => Ok(slots),
        n if n <= slots.len() => Ok(slots[..n].to_vec()),
        n => Err(bad(format!("{n} nodes asked for, but the hostfile has {} slots", slots.len()))),
    }
}

/// This process's place in a job that mpirun or srun started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// Which launcher: "mpirun" or "srun".
    pub launcher: &'static str,
    pub rank: u32,
    pub size: u32,
    /// The job's id, the same in every process of it.
    pub id: u64,
    /// The host rank 0 runs on, when the environment says it.
    pub seed_host: Option<String>,
    /// The host this process runs on, when the environment says it.
    pub own_host: Option<String>,
}

impl Job {
    /// Reads the job from environment variables (`var` looks one up);
    /// `None` when no launcher started this process.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Result<Option<Job>, Error> {
        let number = |name: &str| -> Result<Option<u64>, Error> {
            var(name).map(|v| v.trim().parse::<u64>().map_err(|_| bad(format!("{name}={v} is not a number")))).transpose()
        };
        if let (Some(rank), Some(size)) = (number("OMPI_COMM_WORLD_RANK")?, number("OMPI_COMM_WORLD_SIZE")?) {
            let id = number("OMPI_MCA_ess_base_jobid")?.or(number("PMIX_NAMESPACE").ok().flatten()).unwrap_or(0);
            // mpirun does not say where rank 0 runs; on one host it is here.
            let one_host = number("OMPI_COMM_WORLD_LOCAL_SIZE")? == Some(size);
            let local = one_host.then(|| "127.0.0.1".to_string());
            return Job::checked("mpirun", rank, size, id, local.clone(), local).map(Some);
        }
        if let (Some(rank), Some(size), Some(_)) = (number("SLURM_PROCID")?, number("SLURM_NTASKS")?, var("SLURM_STEP_ID")) {
            let id = number("SLURM_JOB_ID")?.unwrap_or(0).wrapping_mul(1000).wrapping_add(number("SLURM_STEP_ID")?.unwrap_or(0));
            let list = var("SLURM_STEP_NODELIST").or_else(|| var("SLURM_JOB_NODELIST"));
            let seed_host = list.map(|l| expand_hostlist(&l)).transpose()?.and_then(|hosts| hosts.into_iter().next());
            return Job::checked("srun", rank, size, id, seed_host, var("SLURMD_NODENAME")).map(Some);
        }
        Ok(None)
    }

    fn checked(launcher: &'static str, rank: u64, size: u64, id: u64, seed_host: Option<String>, own_host: Option<String>) -> Result<Job, Error> {
        if size == 0 || rank >= size || size > u32::MAX as u64 {
            return Err(bad(format!("{launcher} says rank {rank} of {size}")));
        }
        Ok(Job { launcher, rank: rank as u32, size: size as u32, id, seed_host, own_host })
    }

    /// The seed's port when none is given: from the job's id, so two jobs
    /// on one host rarely meet (in 20000..32000: below the range the
    /// kernel hands out to outgoing connections, 32768 and up, which a
    /// client socket of anything else on the host may hold).
    pub fn port(&self) -> u16 {
        20000 + (self.id % 12000) as u16
    }
}

/// Expands a Slurm host list: `n[1-3,07],gpu1` is n1 n2 n3 n07 gpu1 (the
/// width of a zero-padded range is kept).
pub fn expand_hostlist(list: &str) -> Result<Vec<String>, Error> {
    let invalid = || bad(format!("'{list}' is not a Slurm host list"));
    let mut hosts = Vec::new();
    let mut rest = list.trim();
    while !rest.is_empty() {
        let end = rest.find([',', '[']).unwrap_or(rest.len());
        let (prefix, after) = rest.split_at(end);
        if let Some(ranges) = after.strip_prefix('[') {
            let close = ranges.find(']').ok_or_else(invalid)?;
            for range in ranges[..close].split(',') {
                let (from, to) = range.split_once('-').unwrap_or((range, range));
                let (a, b) = (from.parse::<u64>().map_err(|_| invalid())?, to.parse::<u64>().map_err(|_| invalid())?);
                if a > b || b - a > 100_000 {
                    return Err(invalid());
                }
                hosts.extend((a..=b).map(|i| format!("{prefix}{i:0width$}", width = from.len())));
            }
            rest = &ranges[close + 1..];
        } else {
            if prefix.is_empty() {
                return Err(invalid());
            }
            hosts.push(prefix.to_string());
            rest = after;
        }
        rest = rest.strip_prefix(',').unwrap_or(rest);
    }
    Ok(hosts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn hostfiles_as_mpirun_reads_them() {
        let hosts = parse_hostfile("# the lab\nalpha slots=2\n\nbeta   # one slot\ngamma max_slots=3\n").unwrap();
        assert_eq!(hosts.iter().map(|h| (h.name.as_str(), h.slots)).collect::<Vec<_>>(), [("alpha", 2), ("beta", 1), ("gamma", 3)]);
        assert_eq!(place(&hosts, 0).unwrap(), ["alpha", "alpha", "beta", "gamma", "gamma", "gamma"]);
        assert_eq!(place(&hosts, 3).unwrap(), ["alpha", "alpha", "beta"]);
        assert_eq!(place(&hosts, 7).unwrap_err().to_string(), "7 nodes asked for, but the hostfile has 6 slots");
        assert_eq!(parse_hostfile("a slots=two").unwrap_err().to_string(), "hostfile line 1: 'slots=two' is not slots=N (N > 0)");
        assert_eq!(parse_hostfile("a\nb slots=0").unwrap_err().to_string(), "hostfile line 2: 'slots=0' is not slots=N (N > 0)");
        assert_eq!(parse_hostfile("# nobody\n").unwrap_err().to_string(), "the hostfile lists no host");
    }

    #[test]
    fn slurm_host_lists() {
        assert_eq!(expand_hostlist("n[1-3,07],gpu1").unwrap(), ["n1", "n2", "n3", "n07", "gpu1"]);
        assert_eq!(expand_hostlist("node[08-10]").unwrap(), ["node08", "node09", "node10"]);
        assert_eq!(expand_hostlist("localhost").unwrap(), ["localhost"]);
        for junk in ["n[1-", "n[3-1]", "n[a]", ",", "n[1-999999999]"] {
            assert!(expand_hostlist(junk).is_err(), "{junk}");
        }
    }

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn jobs_from_the_environment() {
        assert_eq!(Job::from_env(env(&[])).unwrap(), None);
        let mpi = Job::from_env(env(&[
            ("OMPI_COMM_WORLD_RANK", "2"),
            ("OMPI_COMM_WORLD_SIZE", "3"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "3"),
            ("OMPI_MCA_ess_base_jobid", "1656619009"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!((mpi.launcher, mpi.rank, mpi.size, mpi.seed_host.as_deref()), ("mpirun", 2, 3, Some("127.0.0.1")));
        assert_eq!((mpi.port(), mpi.id), (20000 + 7009, 1656619009));
        let spread = Job::from_env(env(&[("OMPI_COMM_WORLD_RANK", "0"), ("OMPI_COMM_WORLD_SIZE", "4"), ("OMPI_COMM_WORLD_LOCAL_SIZE", "2")])).unwrap().unwrap();
        assert_eq!(spread.seed_host, None, "mpirun over several hosts does not say where rank 0 is");
        let slurm = Job::from_env(env(&[
            ("SLURM_PROCID", "1"),
            ("SLURM_NTASKS", "4"),
            ("SLURM_STEP_ID", "0"),
            ("SLURM_JOB_ID", "77"),
            ("SLURM_JOB_NODELIST", "c[3-4]"),
            ("SLURMD_NODENAME", "c4"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!((slurm.launcher, slurm.rank, slurm.size, slurm.id), ("srun", 1, 4, 77000));
        assert_eq!((slurm.seed_host.as_deref(), slurm.own_host.as_deref()), (Some("c3"), Some("c4")));
        // An allocation (salloc) without a step is not a job of nodes.
        assert_eq!(Job::from_env(env(&[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "2")])).unwrap(), None);
        let wrong = Job::from_env(env(&[("OMPI_COMM_WORLD_RANK", "3"), ("OMPI_COMM_WORLD_SIZE", "3")])).unwrap_err();
        assert_eq!(wrong.to_string(), "mpirun says rank 3 of 3");
        let junk = Job::from_env(env(&[("OMPI_COMM_WORLD_RANK", "x"), ("OMPI_COMM_WORLD_SIZE", "3")])).unwrap_err();
        assert_eq!(junk.to_string(), "OMPI_COMM_WORLD_RANK=x is not a number");
    }
}
