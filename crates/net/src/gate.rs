//! The budget of connections that have not proved themselves yet. Anyone
//! can open a connection to a node's port or its console; until the peer
//! has passed the handshake it holds one of a few places here, for at most
//! [`DRIVE_LIMIT`]. When every place is taken, a new connection takes the
//! place of the oldest one, which is closed: connections that stay silent
//! cannot keep out one that proves itself in a round trip, and they never
//! count against what authenticated peers are allowed (links, attached
//! consoles).

use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::handshake::DRIVE_LIMIT;
use crate::Error;

pub(crate) struct Gate {
    places: usize,
    /// The connections inside, oldest first, and how to tell each it lost its place.
    inside: Mutex<VecDeque<(u64, Arc<Notify>)>>,
    next: AtomicU64,
}

/// A place at the gate, given back when dropped.
pub(crate) struct Place {
    gate: Arc<Gate>,
    id: u64,
    lost: Arc<Notify>,
}

impl Gate {
    pub(crate) fn new(places: usize) -> Arc<Gate> {
        Arc::new(Gate { places: places.max(1), inside: Mutex::new(VecDeque::new()), next: AtomicU64::new(0) })
    }

    /// A place for a new connection; the oldest one inside loses its place
    /// if none is free.
    pub(crate) fn enter(self: &Arc<Self>) -> Place {
        let (id, lost) = (self.next.fetch_add(1, Relaxed), Arc::new(Notify::new()));
        let mut inside = self.inside.lock();
        inside.push_back((id, lost.clone()));
        if inside.len() > self.places {
            if let Some((_, oldest)) = inside.pop_front() {
                // A permit: told even if it is not waiting yet.
                oldest.notify_one();
            }
        }
        Place { gate: self.clone(), id, lost }
    }

    /// How many connections are inside.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.inside.lock().len()
    }
}

impl Place {
    /// Runs `handshake` while this place is held: it fails if it takes
    /// longer than [`DRIVE_LIMIT`] or a newer connection takes the place.
    pub(crate) async fn hold<T>(&self, handshake: impl Future<Output = Result<T, Error>>) -> Result<T, Error> {
        tokio::select! {
            done = tokio::time::timeout(DRIVE_LIMIT, handshake) => done.map_err(|_| Error::Protocol(format!("no handshake within {} s", DRIVE_LIMIT.as_secs())))?,
            _ = self.lost.notified() => Err(Error::Protocol("crowded out by newer connections that had not proved themselves either".into())),
        }
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        self.gate.inside.lock().retain(|(id, _)| *id != self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_loses_its_place_and_places_come_back() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        rt.block_on(async {
            let gate = Gate::new(2);
            let first = gate.enter();
            let second = gate.enter();
            let third = gate.enter();
            assert_eq!(gate.len(), 2);
            let e = first.hold(std::future::pending::<Result<(), Error>>()).await.unwrap_err().to_string();
            assert!(e.contains("crowded out"), "{e}");
            assert!(third.hold(async { Ok(7) }).await.unwrap() == 7);
            drop(second);
            assert_eq!(gate.len(), 1);
            drop(third);
            drop(first);
            assert_eq!(gate.len(), 0);
        });
    }

    #[test]
    fn a_silent_connection_is_dropped_after_the_limit() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
        rt.block_on(async {
            let gate = Gate::new(4);
            let place = gate.enter();
            let e = place.hold(std::future::pending::<Result<(), Error>>()).await.unwrap_err().to_string();
            assert!(e.contains("no handshake within"), "{e}");
        });
    }
}
