//! A link's writing, steps 2 to 4 of `outbox`: sealing what is queued
//! into records (one sealer at a time, outside the outbox's lock), writing
//! the records to the socket (one writer at a time, many frames per
//! system call), and the writer task that waits for the socket on the I/O
//! thread when a scheduler thread could not write it all.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

use crate::outbox::{seal, Wrote, FLUSH_BUDGET, ROOM, SEALED_AHEAD};

use super::Link;

impl Link {
    /// Writes what the socket takes now, up to a budget; the writer task
    /// takes the rest.
    pub(crate) fn flush(&self) {
        if self.write_out(FLUSH_BUDGET) == Wrote::Stopped {
            self.set_behind(true);
            self.wake.notify_one();
        }
    }

    /// Counts the link among those whose writer task writes what a flush
    /// left, or no longer (`link::writing_behind`).
    fn set_behind(&self, on: bool) {
        if self.behind.swap(on, Relaxed) != on {
            match on {
                true => super::WRITING_BEHIND.fetch_add(1, Relaxed),
                false => super::WRITING_BEHIND.fetch_sub(1, Relaxed),
            };
        }
    }

    /// Step 2: seals what is queued into records, one step of it, unless
    /// someone else is sealing or enough is sealed already; true when it
    /// sealed something.
    pub(crate) fn seal_some(&self) -> bool {
        let mut out = self.outbox.lock();
        if out.sealing || out.closed || out.sealed_bytes >= SEALED_AHEAD {
            return false;
        }
        out.refill();
        if out.pending.is_empty() {
            return false;
        }
        let Some(mut sealer) = out.sealer.take() else { return false };
        out.sealing = true;
        let mut pending = std::mem::take(&mut out.pending);
        let mut records = std::mem::take(&mut out.spare);
        drop(out);
        records.clear();
        let sealed = seal(&mut sealer, &mut pending, &mut records);
        let mut out = self.outbox.lock();
        (out.pending, out.sealer, out.sealing) = (pending, Some(sealer), false);
        match sealed {
            Ok(n) => {
                out.pending_bytes -= n;
                out.sealed_bytes += records.len();
                out.sealed.push_back(records);
                true
            }
            // A direction's records are used up (2^64): nothing more goes.
            Err(_) => {
                out.closed = true;
                false
            }
        }
    }

    /// Step 3 of writing: writes the sealed records, in order, sealing
    /// more when none wait, until nothing is left, the socket is full or
    /// `budget` bytes have gone.
    pub(crate) fn write_out(&self, mut budget: usize) -> Wrote {
        let mut out = self.outbox.lock();
        if out.writing {
            return Wrote::Busy;
        }
        out.writing = true;
        let wrote = loop {
            if out.closed {
                break Wrote::Failed;
            }
            if out.wire_at == out.wire.len() {
                match out.sealed.pop_front() {
                    Some(next) => {
                        out.sealed_bytes -= next.len();
                        let written = std::mem::replace(&mut out.wire, next);
                        out.wire_at = 0;
                        if written.capacity() > out.spare.capacity() {
                            out.spare = written;
                        }
                    }
                    // Another thread seals: it wakes the writer task after.
                    None if out.sealing => break Wrote::Busy,
                    // All written, nothing left to seal (no second look
                    // under the lock for every flush).
                    None if !out.unsealed() => break Wrote::Done,
                    None if out.seals_here() => {
                        if !out.seal_here() {
                            break Wrote::Failed;
                        }
                    }
                    None => {
                        drop(out);
                        let sealed = self.seal_some();
                        out = self.outbox.lock();
                        if sealed || !out.sealed.is_empty() {
                            continue;
                        }
                        if out.closed {
                            break Wrote::Failed;
                        }
                        if out.sealing {
                            break Wrote::Busy;
                        }
                        // Queued while the lock was free: its sender saw
                        // `writing` and left it to us.
                        if out.unsealed() {
                            continue;
                        }
                        break Wrote::Done;
                    }
                }
            }
            if budget == 0 {
                break Wrote::Stopped;
            }
            // Only the writer touches `wire`: it is written without the lock.
            let (wire, at) = (std::mem::take(&mut out.wire), std::mem::take(&mut out.wire_at));
            out.wire_out = wire.len() - at;
            drop(out);
            let sent = send_bytes(self.fd(), &wire[at..]);
            out = self.outbox.lock();
            let written = *sent.as_ref().unwrap_or(&0);
            self.sent.fetch_add(written as u64, std::sync::atomic::Ordering::Relaxed);
            (out.wire, out.wire_at, out.wire_out) = (wire, at + written, 0);
            budget = budget.saturating_sub(written);
            match sent {
                Ok(_) if out.wire_at == out.wire.len() => {}
                Ok(_) => break Wrote::Stopped,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break Wrote::Stopped,
                Err(_) => break Wrote::Failed,
            }
        };
        out.writing = false;
        let drained = match out.queued() < ROOM && self.congested.load(Relaxed) {
            true => {
                self.congested.store(false, Relaxed);
                std::mem::take(&mut out.slowed)
            }
            false => Vec::new(),
        };
        drop(out);
        drained.into_iter().for_each(|pid| self.rt.nudge(pid));
        wrote
    }

    /// Step 4 of writing: the writer task, on the I/O thread. `socket` (a
    /// duplicate of the link's descriptor) is in the I/O thread's poller
    /// only while a write waits for room (`write_when_room`): a socket in
    /// an epoll set costs every arrival a call into it from the sender's
    /// side, even for an interest in room alone (see the cluster's
    /// `unwatch_idle`), and nearly every write finds room at once.
    pub(crate) async fn write_task(self: Arc<Link>, mut socket: std::net::TcpStream) {
        loop {
            match self.write_out(usize::MAX) {
                // (Then written again: that write finds room, or nothing.)
                Wrote::Stopped => match self.write_when_room(socket).await {
                    Some(back) => socket = back,
                    None => break,
                },
                Wrote::Done | Wrote::Busy => {
                    self.set_behind(false);
                    let draining = {
                        let mut out = self.outbox.lock();
                        if out.closed {
                            break;
                        }
                        // Closed in the same hold of the lock as the check:
                        // a frame pushed after it is refused, not queued on
                        // a connection no longer written.
                        out.closed = out.draining && out.queued() == 0;
                        out.closed
                    };
                    if draining {
                        let _ = socket.shutdown(std::net::Shutdown::Write);
                        break;
                    }
                    self.wake.notified().await;
                }
                Wrote::Failed => break,
            }
        }
        self.set_behind(false);
        self.close();
    }

    /// Watches `socket` for room and writes what is left each time it has
    /// some, until a write no longer stops for want of room; gives the
    /// socket back, out of the poller (None if it could not be watched or
    /// a write failed: the link is over).
    async fn write_when_room(&self, socket: std::net::TcpStream) -> Option<std::net::TcpStream> {
        // SAFETY: `socket` owns its descriptor (a duplicate of the link's)
        // and closes it only when dropped; it stays inside the AsyncFd
        // until `into_inner` gives it back.
        let watched = match unsafe { AsyncFd::register_with_interest(socket, Interest::WRITABLE) } {
            Ok(watched) => watched,
            Err(e) => {
                eprintln!("synodic: link to node {} closed: cannot watch the connection for room: {e}", self.peer.name);
                return None;
            }
        };
        // (Edge-triggered, registered after the write that stopped: room
        // made since is reported at once.)
        loop {
            let Ok(mut ready) = watched.writable().await else { return None };
            match self.write_out(usize::MAX) {
                Wrote::Stopped => ready.clear_ready(),
                Wrote::Failed => return None,
                Wrote::Done | Wrote::Busy => return Some(watched.into_inner()),
            }
        }
    }
}

/// Writes what the socket takes of `bytes` now, without waiting.
fn send_bytes(fd: RawFd, bytes: &[u8]) -> io::Result<usize> {
    if bytes.is_empty() {
        return Ok(0);
    }
    // The system call itself, as `inbound::recv_into` reads (no
    // cancellation point around it).
    // SAFETY: the slice is valid for its length for the whole call, and
    // sendto takes no address (null, 0).
    let sent = unsafe { libc::syscall(libc::SYS_sendto, fd, bytes.as_ptr(), bytes.len(), libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL, std::ptr::null::<libc::sockaddr>(), 0 as libc::socklen_t) } as isize;
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(sent as usize)
}
