//! A socket's descriptor, owned by the node and shared by the handles that
//! processes hold on it: one handle for a connection (handed over whole
//! when sent to another process of the node), any number for a listener
//! (each holder may wait in `accept`). The descriptor is used under the
//! cell's lock, so that a process closing it (or taking it over) never
//! leaves another using a number the kernel may give to a new file.
//! Closing tells the netpoller first ([`crate::Runtime::forget_socket`]).
//! No cell crosses to another node (`dist::carry::crossing` says so).
//!
//! Beside the descriptor, the layer above may keep a *layer* of its own
//! with it (a TLS session over the connection, a listener's TLS
//! configuration): it goes where the descriptor goes, under the same lock.

use std::any::Any;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering::*};
use std::sync::Mutex;

use crate::Runtime;

/// What the layer above keeps with a descriptor.
pub type Layer = Option<Box<dyn Any + Send>>;

/// An open socket: its descriptor and its layer.
pub struct Open {
    pub fd: OwnedFd,
    pub layer: Layer,
}

pub struct SocketCell {
    fd: Mutex<Option<Open>>,
    rt: Runtime,
    /// A datagram socket (else a stream).
    pub udp: bool,
    /// Listening: shared between holders, not handed over.
    listening: AtomicBool,
}

impl SocketCell {
    pub fn new(rt: &Runtime, open: Open, udp: bool) -> SocketCell {
        SocketCell { fd: Mutex::new(Some(open)), rt: rt.clone(), udp, listening: AtomicBool::new(false) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Open>> {
        self.fd.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on the descriptor, if the socket is still open.
    pub fn with_fd<R>(&self, f: impl FnOnce(BorrowedFd<'_>) -> R) -> Option<R> {
        self.lock().as_ref().map(|open| f(open.fd.as_fd()))
    }

    /// Runs `f` on the descriptor and its layer, if the socket is still open.
    pub fn with_layer<R>(&self, f: impl FnOnce(BorrowedFd<'_>, &mut Layer) -> R) -> Option<R> {
        self.lock().as_mut().map(|open| f(open.fd.as_fd(), &mut open.layer))
    }

    /// The descriptor's number while open (to wait on it).
    pub fn raw_fd(&self) -> Option<i32> {
        self.lock().as_ref().map(|open| open.fd.as_raw_fd())
    }

    pub fn is_listening(&self) -> bool {
        self.listening.load(Relaxed)
    }

    pub fn set_listening(&self) {
        self.listening.store(true, Relaxed);
    }

    /// Takes the descriptor and its layer out (a connection handed over):
    /// this cell is closed from now on, for whoever still holds it.
    pub fn take(&self) -> Option<Open> {
        let open = self.lock().take()?;
        self.rt.forget_socket(open.fd.as_raw_fd());
        Some(open)
    }

    /// Closes the socket now, for every holder.
    pub fn close(&self) {
        drop(self.take());
    }
}

impl Drop for SocketCell {
    fn drop(&mut self) {
        self.close();
    }
}
