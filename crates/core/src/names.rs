//! Registered names: a map from a name to a live pid. A name dies with its
//! process: the process keeps the list of its names in its links, and the
//! runtime removes them when it ends. Lock order: process links, then the map.
//!
//! In a cluster every node keeps the whole map: names of its own processes,
//! entered as on a node alone, and those of other nodes' processes, entered
//! when the cluster says so (the transport decides who gets a contested
//! name) and removed when their process or their node is gone.

use std::collections::HashMap;

use parking_lot::Mutex;

use crate::process::Process;
use crate::{Error, Pid};

#[derive(Default)]
pub(crate) struct Names {
    map: Mutex<HashMap<Box<[u8]>, Pid>>,
}

impl Names {
    pub(crate) fn register(&self, name: &[u8], proc: &'static Process) -> Result<(), Error> {
        let mut links = proc.links.lock();
        if links.exited {
            return Err(Error::NoProcess(proc.pid()));
        }
        let mut map = self.map.lock();
        match map.get(name) {
            Some(&owner) if owner == proc.pid() => return Ok(()),
            Some(_) => return Err(Error::NameTaken(String::from_utf8_lossy(name).into_owned())),
            None => {}
        }
        map.insert(name.into(), proc.pid());
        links.more().names.push(name.into());
        Ok(())
    }

    /// Enters `name` for `pid`, a process of another node.
    pub(crate) fn enter_remote(&self, name: &[u8], pid: Pid) -> Result<(), Error> {
        let mut map = self.map.lock();
        match map.get(name) {
            Some(&owner) if owner == pid => Ok(()),
            Some(_) => Err(Error::NameTaken(String::from_utf8_lossy(name).into_owned())),
            None => {
                map.insert(name.into(), pid);
                Ok(())
            }
        }
    }

    /// Enters `name` for `pid`, a process of another node, even if another
    /// holds it, when `prevails(pid, holder)`: returns the holder it was
    /// taken from (its own list of names is left as it is: releasing a name
    /// removes it only from its holder).
    pub(crate) fn settle(&self, name: &[u8], pid: Pid, prevails: impl FnOnce(Pid, Pid) -> bool) -> Option<Pid> {
        let mut map = self.map.lock();
        match map.get(name).copied() {
            None => {
                map.insert(name.into(), pid);
                None
            }
            Some(holder) if holder != pid && prevails(pid, holder) => {
                map.insert(name.into(), pid);
                Some(holder)
            }
            Some(_) => None,
        }
    }

    /// Removes `name` if `pid` holds it.
    pub(crate) fn remove(&self, name: &[u8], pid: Pid) {
        let mut map = self.map.lock();
        if map.get(name) == Some(&pid) {
            map.remove(name);
        }
    }

    /// Removes every name held by a process of the node with this alias.
    pub(crate) fn drop_node(&self, alias: u16) {
        self.map.lock().retain(|_, pid| pid.node() != alias);
    }

    /// The names held by processes of this node.
    pub(crate) fn held_here(&self) -> Vec<(Box<[u8]>, Pid)> {
        self.map.lock().iter().filter(|(_, pid)| pid.node() == 0).map(|(n, p)| (n.clone(), *p)).collect()
    }

    pub(crate) fn whereis(&self, name: &[u8]) -> Option<Pid> {
        self.map.lock().get(name).copied()
    }

    /// Drops the names of an ended process.
    pub(crate) fn release(&self, pid: Pid, names: &[Box<[u8]>]) {
        if names.is_empty() {
            return;
        }
        let mut map = self.map.lock();
        for name in names {
            if map.get(name) == Some(&pid) {
                map.remove(name);
            }
        }
    }
}
