//! Ports: byte sinks outside the runtime that processes write to by number
//! (a console's connection today; sockets later). The I/O layer opens a
//! port for what it serves and closes it when that goes away; a process
//! holding the number writes lines to it without knowing what is behind.
//! A write never blocks a process: a port that cannot take more says so.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use parking_lot::Mutex;

/// What a port does with bytes written to it; false when it cannot take
/// them (closed, or full).
pub type Sink = Box<dyn Fn(&[u8]) -> bool + Send + Sync>;

#[derive(Default)]
pub struct Ports {
    open: Mutex<HashMap<u64, Sink>>,
    next: AtomicU64,
}

impl Ports {
    /// Opens a port over `sink`; returns its number (never 0).
    pub fn open(&self, sink: Sink) -> u64 {
        let id = self.next.fetch_add(1, Relaxed) + 1;
        self.open.lock().insert(id, sink);
        id
    }

    /// Writes to port `id`; false when there is no such port or it cannot
    /// take the bytes.
    pub fn write(&self, id: u64, bytes: &[u8]) -> bool {
        self.open.lock().get(&id).is_some_and(|sink| sink(bytes))
    }

    pub fn close(&self, id: u64) {
        self.open.lock().remove(&id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex as StdMutex};

    #[test]
    fn writes_reach_an_open_port_only() {
        let ports = Ports::default();
        let got = Arc::new(StdMutex::new(Vec::new()));
        let g = got.clone();
        let id = ports.open(Box::new(move |b| {
            g.lock().unwrap().extend_from_slice(b);
            true
        }));
        assert!(ports.write(id, b"hello"));
        assert!(!ports.write(id + 1, b"nobody"));
        ports.close(id);
        assert!(!ports.write(id, b"closed"));
        assert_eq!(&*got.lock().unwrap(), b"hello");
    }
}
