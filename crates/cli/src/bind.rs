//! `run --nodes N --bind`: each node of the run on a share of this
//! machine's processors, as mpirun binds its ranks to cores. Nodes that
//! share a machine otherwise let the kernel place their threads, and it
//! places a thread woken by another node's write beside the writer (the
//! waker's processor, where the data is warm): two nodes exchanging large
//! messages or taking turns at a computation then often run on one core
//! while the other idles, until the kernel's balancing moves them apart.
//! Bound, a node's threads stay on its share, and a node started with the
//! default worker count gets one worker per processor of its share.
//!
//! The shares are contiguous runs of the processors this process may use,
//! as even as they divide; with more nodes than processors nothing is bound
//! (mpirun does not bind an oversubscribed job either).

use std::io;
use std::os::unix::process::CommandExt;

/// The processors each of `nodes` nodes is bound to (the first share is
/// this process's), or `None` when there are more nodes than processors.
pub(crate) fn shares(nodes: usize) -> io::Result<Option<Vec<Vec<usize>>>> {
    let cpus = allowed()?;
    if nodes == 0 || nodes > cpus.len() {
        return Ok(None);
    }
    let (each, extra) = (cpus.len() / nodes, cpus.len() % nodes);
    let mut rest = cpus.as_slice();
    let shares = (0..nodes)
        .map(|i| {
            let (share, after) = rest.split_at(each + usize::from(i < extra));
            rest = after;
            share.to_vec()
        })
        .collect();
    Ok(Some(shares))
}

/// Binds the calling thread, and every thread it starts from now on, to `cpus`.
pub(crate) fn bind_self(cpus: &[usize]) -> io::Result<()> {
    apply(&cpu_set(cpus))
}

/// Has the process `cmd` starts bound to `cpus` (from its first instruction:
/// its threads inherit it).
pub(crate) fn bind_child(cmd: &mut std::process::Command, cpus: &[usize]) {
    let set = cpu_set(cpus);
    // SAFETY: the closure runs in the forked child before exec and only
    // makes the `sched_setaffinity` system call on a set built before the
    // fork (no allocation, no lock: async-signal-safe).
    unsafe {
        cmd.pre_exec(move || apply(&set));
    }
}

/// Binds the calling thread to `set`.
fn apply(set: &libc::cpu_set_t) -> io::Result<()> {
    // SAFETY: `set` is a valid cpu_set_t of its own size.
    match unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// The processors this process may run on, in order.
fn allowed() -> io::Result<Vec<usize>> {
    // SAFETY: a zeroed cpu_set_t is an empty set; the kernel fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a cpu_set_t of the size given.
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: CPU_ISSET reads the set within its size (CPU_SETSIZE bits).
    Ok((0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).collect())
}

fn cpu_set(cpus: &[usize]) -> libc::cpu_set_t {
    // SAFETY: a zeroed cpu_set_t is an empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
        // SAFETY: `c` is below CPU_SETSIZE, within the set.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    set
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_contiguous_as_even_as_they_divide_and_none_when_oversubscribed() {
        let cpus = allowed().expect("this process's processors");
        let n = cpus.len();
        let one = shares(1).unwrap().expect("one node fits");
        assert_eq!(one, vec![cpus.clone()]);
        let each = shares(n).unwrap().expect("a node per processor fits");
        assert_eq!(each, cpus.iter().map(|&c| vec![c]).collect::<Vec<_>>());
        assert!(shares(n + 1).unwrap().is_none(), "more nodes than processors: no binding");
        if n >= 2 {
            let two = shares(2).unwrap().expect("two nodes fit");
            assert_eq!(two.concat(), cpus, "every processor once, in order");
            assert!(two[0].len() >= two[1].len() && two[0].len() - two[1].len() <= 1);
        }
    }
}
