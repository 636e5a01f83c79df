//! Registered names: a map from a name to a live pid. A name dies with its
//! process: the process keeps the list of its names in its links, and the
//! runtime removes them when it ends. Lock order: process links, then the map.

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

    pub(crate) fn whereis(&self, name: &[u8]) -> Option<Pid> {
        self.map.lock().get(name).copied()
    }

    /// Drops the names of an ended process.
    pub(crate) fn release(&self, pid: Pid, names: Vec<Box<[u8]>>) {
        if names.is_empty() {
            return;
        }
        let mut map = self.map.lock();
        for name in names {
            if map.get(&name) == Some(&pid) {
                map.remove(&name);
            }
        }
    }
}
