//! What arrives on a link: records are checked and opened as they come,
//! frames cut out of their plaintext, and the rest of a long part goes
//! straight into its parcel. A record that fails its check ends the link:
//! nothing in it, or after it, reaches a process. Reading is done by
//! whichever scheduler thread the poller (`synodic_core::io::poller`) reports the link to
//! (`Link::drain`).

use std::io;
use std::os::fd::RawFd;

use synodic_core::dist::carry::Carried;

use crate::frame::{Arrival, Decoder, Frame, Next};
use crate::parcel::Assembler;
use crate::record::{Opener, HEADER, TAG};
use crate::Error;

/// Where each whole frame that arrives goes, with the buffers a parcel's
/// message carries.
pub(crate) type Deliver<'d> = dyn FnMut(Arrival<'_>, Vec<Carried>) -> Result<(), Error> + 'd;

/// What a read of a link (`Link::drain`) found.
#[derive(Debug, PartialEq)]
pub(crate) enum Drained {
    /// The link is open; the poller should report it again.
    Open,
    /// The link is open and the read stopped at its budget: more may wait.
    Budget,
    /// The peer closed the connection between frames.
    Closed,
}

/// What one reader reads from a link before the other links get their turn.
const READ_BUDGET: usize = 4 << 20;

/// What has arrived on a link and is not yet a whole frame.
pub(crate) struct Inbound {
    pub(crate) opener: Opener,
    pub(crate) decoder: Decoder,
    pub(crate) parcels: Assembler,
    /// Bytes of the part being read that go straight into its parcel.
    pub(crate) more: usize,
    /// A record of a long part's bytes being read straight into its piece
    /// of the parcel (see `Inbound::read`).
    pub(crate) direct: Option<Direct>,
    /// The link has failed or closed: nothing more is read from it.
    pub(crate) over: bool,
    /// Bytes read from the socket so far (records, as they came).
    pub(crate) received: u64,
}

impl Inbound {
    /// Reads what has arrived. Inside a long part, records that hold
    /// nothing but the part's bytes are read straight into the parcel's
    /// piece and opened there (header first, then body and tag): each
    /// byte is copied by the kernel and by the cipher, and not once more.
    pub(crate) fn read(&mut self, fd: RawFd, deliver: &mut Deliver) -> Result<Drained, Error> {
        let mut read = 0;
        let drained = self.read_counting(fd, deliver, &mut read);
        self.received += read as u64;
        drained
    }

    fn read_counting(&mut self, fd: RawFd, deliver: &mut Deliver, read: &mut usize) -> Result<Drained, Error> {
        let Inbound { opener, decoder, parcels, more, direct, .. } = self;
        // A read that got less than it asked for emptied the socket: the
        // poller reports it again when more comes, so no read to learn that.
        let mut emptied = false;
        loop {
            while let Some(plain) = opener.next()? {
                consume(plain, decoder, parcels, more, deliver)?;
            }
            if emptied {
                return Ok(Drained::Open);
            }
            if *read >= READ_BUDGET {
                return Ok(Drained::Budget);
            }
            // Only into a piece of an open parcel: while its envelope is
            // still coming, the bytes go to the envelope the usual way.
            if direct.is_none() && *more > 0 && opener.buffered() == HEADER && parcels.piece().is_some() {
                if let (Some(len), Some((piece, room))) = (opener.next_len(), parcels.room()) {
                    if len > 0 && len <= (*more).min(room) {
                        // All the room the record needs, made now: the piece
                        // must not move while its bytes come in.
                        piece.reserve(len + TAG);
                        *direct = opener.take_header().map(|header| Direct { header, len, got: 0 });
                    }
                }
            }
            if let Some(d) = direct.as_mut() {
                let Some(piece) = parcels.piece() else { return Err(Error::Protocol("a part longer than its parcel".into())) };
                let want = d.len + TAG - d.got;
                let start = piece.len();
                let got = recv_spare(fd, piece, d.got, want);
                match got {
                    Ok(0) => return Err(Error::Protocol("the peer closed the connection in the middle of a frame".into())),
                    Ok(n) => {
                        d.got += n;
                        (*read, emptied) = (*read + n, n < want);
                        if d.got == d.len + TAG {
                            let d = direct.take().expect("a direct record");
                            // SAFETY: recv initialised these `len + TAG` bytes of the spare capacity.
                            let record = unsafe { std::slice::from_raw_parts_mut(piece.as_mut_ptr().add(start), d.len + TAG) };
                            let plain = opener.open_elsewhere(d.header, record)?;
                            // SAFETY: the first `plain` bytes after the piece's length are now its plaintext.
                            unsafe { piece.set_len(start + plain) };
                            parcels.filled()?;
                            *more -= plain;
                            if *more == 0 {
                                finish_parcel(parcels, deliver)?;
                            }
                        }
                        continue;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Drained::Open),
                    Err(e) => return Err(Error::Protocol(e.to_string())),
                }
            }
            // While a parcel comes, records are read one at a time, header
            // first: its payload records can then be read straight into it.
            let want = match (parcels.is_open(), opener.next_len()) {
                (false, _) => 256 << 10,
                (true, None) => HEADER - opener.buffered(),
                (true, Some(len)) => (HEADER + len + TAG).saturating_sub(opener.buffered()).max(1),
            };
            match recv_into(fd, opener.space(want), want) {
                Ok(0) if opener.buffered() > 0 || decoder.buffered() > 0 || *more > 0 || parcels.is_open() => {
                    return Err(Error::Protocol("the peer closed the connection in the middle of a frame".into()));
                }
                Ok(0) => return Ok(Drained::Closed),
                Ok(n) => (*read, emptied) = (*read + n, n < want),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Drained::Open),
                Err(e) => return Err(Error::Protocol(e.to_string())),
            }
        }
    }
}

/// Takes the plaintext of one record: the rest of a long part goes
/// straight into its parcel, the rest is cut into frames.
fn consume(mut plain: &[u8], decoder: &mut Decoder, parcels: &mut Assembler, more: &mut usize, deliver: &mut Deliver) -> Result<(), Error> {
    loop {
        if *more > 0 {
            if plain.is_empty() {
                return Ok(());
            }
            let Some((piece, room)) = parcels.room() else {
                return Err(Error::Protocol("a part longer than its parcel".into()));
            };
            let take = room.min(*more).min(plain.len());
            piece.extend_from_slice(&plain[..take]);
            parcels.filled()?;
            (*more, plain) = (*more - take, &plain[take..]);
            if *more == 0 {
                finish_parcel(parcels, deliver)?;
            }
            continue;
        }
        if !plain.is_empty() {
            decoder.space(plain.len()).extend_from_slice(plain);
            plain = &[];
        }
        match decoder.next()? {
            Some(Next::Frame(frame)) => deliver(Arrival::Frame(frame), Vec::new())?,
            Some(Next::Service { kind, body }) => deliver(Arrival::Service { kind, body }, Vec::new())?,
            Some(Next::Part { stream, total, bytes, more: rest }) => {
                parcels.begin(stream, total, bytes)?;
                *more = rest;
                if rest == 0 {
                    finish_parcel(parcels, deliver)?;
                }
            }
            None => return Ok(()),
        }
    }
}

/// Hands on the parcel's frame, if its last bytes have come.
fn finish_parcel(parcels: &mut Assembler, deliver: &mut Deliver) -> Result<(), Error> {
    match parcels.finish()? {
        Some((bare, shared)) => deliver(Frame::arrival(bare[0], &bare[1..])?, shared),
        None => Ok(()),
    }
}

/// A record read straight into a parcel's piece: its header, its body's
/// length, and how much of body and tag has come (into the piece's spare
/// capacity, after its length).
pub(crate) struct Direct {
    header: [u8; HEADER],
    len: usize,
    got: usize,
}

/// Reads up to `want` bytes from the socket into `buf`'s spare capacity,
/// `skip` bytes after its length (not its length: the caller sets it once
/// what is there is checked).
fn recv_spare(fd: RawFd, buf: &mut Vec<u8>, skip: usize, want: usize) -> io::Result<usize> {
    let spare = buf.spare_capacity_mut();
    let want = want.min(spare.len().saturating_sub(skip));
    // The system call itself rather than libc's `recv`, a cancellation
    // point that switches the thread's cancellation state on and off around
    // each call: a spinning worker reads an empty socket many times a message.
    // SAFETY: the spare capacity is valid for `skip + want` bytes; recvfrom
    // writes at most `want` bytes after the first `skip`, and takes no
    // address (null, null).
    let n = unsafe { libc::syscall(libc::SYS_recvfrom, fd, spare.as_mut_ptr().add(skip), want, libc::MSG_DONTWAIT, std::ptr::null_mut::<libc::sockaddr>(), std::ptr::null_mut::<libc::socklen_t>()) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// Reads up to `want` bytes from the socket onto the end of `buf`.
fn recv_into(fd: RawFd, buf: &mut Vec<u8>, want: usize) -> io::Result<usize> {
    buf.reserve(want);
    let n = recv_spare(fd, buf, 0, want)?;
    // SAFETY: recv_spare initialised `n` bytes of the spare capacity, from its start.
    unsafe { buf.set_len(buf.len() + n) };
    Ok(n)
}
