//! Readiness of file descriptors, for whichever thread reads them (the
//! scheduler's workers and monitor, see `crate::netpoll`): an epoll
//! instance apart from the I/O thread's, so that bytes arriving wake only
//! the thread that will deliver them, and an eventfd that ends a wait.
//! The cluster's links and the processes' sockets (`crate::io`) each have
//! one.
//!
//! A link is registered level-triggered: only the holder of the
//! scheduler's poll token waits on the links' poller, so nobody else is
//! told, and a link is reported at every wait while it has bytes: a reader
//! may stop after a budget and let others have their turn, and nothing
//! is re-armed after a read (it was one-shot, with an `epoll_ctl` after
//! every message read). A process's socket is registered once, edge-triggered
//! (`watch_edges`): its waiters keep what an edge said (`io::sockets`), so
//! waiting on it never costs a system call of its own.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The token of the eventfd that interrupts a wait.
const WAKE: u64 = u64::MAX;
/// Readiness reports taken per wait.
const EVENTS: usize = 64;

pub struct Poller {
    epoll: OwnedFd,
    wake: OwnedFd,
}

impl Poller {
    pub fn new() -> io::Result<Poller> {
        // SAFETY: plain system calls; the descriptors they return are owned below.
        let epoll = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        let epoll = unsafe { OwnedFd::from_raw_fd(epoll) };
        let wake = cvt(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) })?;
        let wake = unsafe { OwnedFd::from_raw_fd(wake) };
        let poller = Poller { epoll, wake };
        poller.ctl(libc::EPOLL_CTL_ADD, poller.wake.as_raw_fd(), WAKE, libc::EPOLLIN as u32)?;
        Ok(poller)
    }

    /// Watches `fd` for bytes to read (or its closing), level-triggered:
    /// reported with `token` at every wait while it has any (see the
    /// module's doc: for a poller only one thread at a time waits on).
    pub fn add(&self, fd: RawFd, token: u64) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, token, (libc::EPOLLIN | libc::EPOLLRDHUP) as u32)
    }

    /// Watches `fd` for good, edge-triggered: reported with `token` each
    /// time it becomes readable or writable (bytes arrive, room is made, the
    /// peer closes), whether or not anyone waits; never re-armed.
    pub fn watch_edges(&self, fd: RawFd, token: u64) -> io::Result<()> {
        let events = (libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLET) as u32;
        self.ctl(libc::EPOLL_CTL_ADD, fd, token, events)
    }

    /// Watches another poller's descriptor (level-triggered): reported with
    /// `token` while that one has something to report.
    pub fn nest(&self, fd: RawFd, token: u64) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, token, libc::EPOLLIN as u32)
    }

    /// This poller's own descriptor (for `nest` in another).
    pub fn fd(&self) -> RawFd {
        self.epoll.as_raw_fd()
    }

    /// Stops watching `fd`.
    pub fn remove(&self, fd: RawFd) {
        // SAFETY: the event argument is ignored for a removal.
        unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), libc::EPOLL_CTL_DEL, fd, std::ptr::null_mut()) };
    }

    /// Calls `ready` with the token of each descriptor that has something
    /// to read and what it is ready for (epoll's bits); with `block`, waits
    /// first until one has or [`Poller::interrupt`].
    pub fn wait_events(&self, block: bool, ready: &mut dyn FnMut(u64, u32)) {
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; EVENTS];
        let timeout = if block { -1 } else { 0 };
        // SAFETY: the array is valid for EVENTS entries.
        let n = unsafe { libc::epoll_wait(self.epoll.as_raw_fd(), events.as_mut_ptr(), EVENTS as i32, timeout) };
        for event in &events[..n.max(0) as usize] {
            match event.u64 {
                WAKE => {
                    let mut count = 0u64;
                    // SAFETY: reads 8 bytes into a u64; the eventfd is ours.
                    unsafe { libc::read(self.wake.as_raw_fd(), (&mut count as *mut u64).cast(), 8) };
                }
                token => ready(token, event.events),
            }
        }
    }

    /// Ends the current or the next blocking [`Poller::wait_events`].
    pub fn interrupt(&self) {
        let one = 1u64;
        // SAFETY: writes 8 bytes from a u64 to our eventfd.
        unsafe { libc::write(self.wake.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }


    fn ctl(&self, op: libc::c_int, fd: RawFd, token: u64, events: u32) -> io::Result<()> {
        let mut event = libc::epoll_event { events, u64: token };
        // SAFETY: `event` is valid for the call.
        cvt(unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), op, fd, &mut event) }).map(|_| ())
    }
}

fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::net::UnixStream;

    impl Poller {
        /// Appends to `ready` the tokens `wait_events` reports.
        fn wait(&self, block: bool, ready: &mut Vec<u64>) {
            self.wait_events(block, &mut |token, _| ready.push(token));
        }
    }

    #[test]
    fn a_link_is_reported_at_every_wait_while_it_has_bytes() {
        let poller = Poller::new().unwrap();
        let (mut a, mut b) = UnixStream::pair().unwrap();
        poller.add(b.as_raw_fd(), 7).unwrap();
        let mut ready = Vec::new();
        poller.wait(false, &mut ready);
        assert!(ready.is_empty());
        a.write_all(b"xy").unwrap();
        poller.wait(true, &mut ready);
        assert_eq!(ready, [7]);
        ready.clear();
        poller.wait(false, &mut ready);
        assert_eq!(ready, [7], "bytes left: reported again, with nothing re-armed");
        ready.clear();
        let mut two = [0u8; 2];
        std::io::Read::read_exact(&mut b, &mut two).unwrap();
        poller.wait(false, &mut ready);
        assert!(ready.is_empty(), "all read: not reported");
        poller.remove(b.as_raw_fd());
        a.write_all(b"z").unwrap();
        poller.wait(false, &mut ready);
        assert!(ready.is_empty(), "removed: never reported");
    }

    #[test]
    fn an_interrupt_ends_a_wait() {
        let poller = std::sync::Arc::new(Poller::new().unwrap());
        let waker = poller.clone();
        let t = std::thread::spawn(move || waker.interrupt());
        let mut ready = Vec::new();
        poller.wait(true, &mut ready);
        assert!(ready.is_empty());
        t.join().unwrap();
        // The interrupt was consumed: a later poll finds nothing.
        poller.wait(false, &mut ready);
        assert!(ready.is_empty());
    }
}
