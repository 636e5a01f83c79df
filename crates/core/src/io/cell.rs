//! A socket's descriptor, owned by the node and shared by the handles that
//! processes hold on it: one handle for a connection (handed over whole
//! when sent to another process of the node), any number for a listener
//! (each holder may wait in `accept`). The descriptor is used under the
//! cell's lock, so that a process closing it (or taking it over) never
//! leaves another using a number the kernel may give to a new file.
//! Closing tells the netpoller first ([`crate::Runtime::forget_socket`]).
//! No cell crosses to another node (`dist::carry::crossing` says so).

use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering::*};
use std::sync::Mutex;

use crate::Runtime;

pub struct SocketCell {
    fd: Mutex<Option<OwnedFd>>,
    rt: Runtime,
    /// A datagram socket (else a stream).
    pub udp: bool,
    /// Listening: shared between holders, not handed over.
    listening: AtomicBool,
}

impl SocketCell {
    pub fn new(rt: &Runtime, fd: OwnedFd, udp: bool) -> SocketCell {
        SocketCell { fd: Mutex::new(Some(fd)), rt: rt.clone(), udp, listening: AtomicBool::new(false) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<OwnedFd>> {
        self.fd.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on the descriptor, if the socket is still open.
    pub fn with_fd<R>(&self, f: impl FnOnce(BorrowedFd<'_>) -> R) -> Option<R> {
        let fd = self.lock();
        fd.as_ref().map(|fd| {
            use std::os::fd::AsFd;
            f(fd.as_fd())
        })
    }

    /// The descriptor's number while open (to wait on it).
    pub fn raw_fd(&self) -> Option<i32> {
        self.lock().as_ref().map(|fd| fd.as_raw_fd())
    }

    pub fn is_listening(&self) -> bool {
        self.listening.load(Relaxed)
    }

    pub fn set_listening(&self) {
        self.listening.store(true, Relaxed);
    }

    /// Takes the descriptor out (a connection handed over): this cell is
    /// closed from now on, for whoever still holds it.
    pub fn take(&self) -> Option<OwnedFd> {
        let fd = self.lock().take()?;
        self.rt.forget_socket(fd.as_raw_fd());
        Some(fd)
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
