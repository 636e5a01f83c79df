//! A link's outbox: what waits to be written to the peer, and how it gets
//! there (steps 2 to 4 are `link/write.rs`'s, on the outbox's state). Frames queue whole; long messages and messages with buffers
//! queue as parcels, cut into parts as they go (`parcel`), but a small parcel
//! with nothing long ahead of it goes whole, as one part among the frames. Who writes:
//!
//! 1. A frame is queued (`Link::push`). On a scheduler thread the link is
//!    noted as that thread's to write when the process's run ends
//!    (`link::flush_dirty`), or at once once a run has queued 64 KiB;
//!    anywhere else the link's writer task is woken.
//! 2. One sealer at a time (`Outbox::sealing`) takes what is queued —
//!    the frames' bytes, then one part of the parcel in front, its payload
//!    borrowed from the buffer itself — and seals it into records
//!    (`record`), frames together and each part's payload in records of
//!    its own; small frames queued meanwhile go out before the parcel's
//!    next part. The copy the cipher makes is the only one on this side.
//! 3. One writer at a time (`Outbox::writing`) writes the sealed records,
//!    in order, sealing more itself when none are waiting: a few small
//!    frames with nothing else queued (a message, a reply) it seals under
//!    the lock, straight into the buffer it has written out
//!    (`Outbox::seal_here`).
//! 4. A writer that finds the socket full (or has written its budget)
//!    leaves the rest to the writer task, which waits on the I/O thread
//!    until the socket has room.
//!
//! Sealing and writing are apart (a queue of sealed records between them)
//! so that they could run on two threads; tried with a thread of the I/O
//! runtime's blocking pool sealing ahead, it was slower on two cores (the
//! receiving node needs the other one), so the writer seals for itself.

use std::collections::{BTreeSet, VecDeque};

use synodic_core::Pid;

use crate::frame::Frame;
use crate::parcel::{Parcel, Slice, WHOLE_MAX};
use crate::record::{Sealer, RECORD_MAX};
use crate::Error;

/// Above this many queued bytes a link is full: senders are slowed in
/// `send` until it drains below [`ROOM`].
pub(crate) const FULL: usize = 8 << 20;
pub(crate) const ROOM: usize = 2 << 20;
/// What a scheduler thread writes in one flush before it leaves the rest
/// to the writer task (a long message is not the thread's to carry).
pub(crate) const FLUSH_BUDGET: usize = 1 << 20;
/// What a sealer seals in one go (a few records: the copy stays in the
/// cache on its way to the cipher and the socket).
const SEAL_STEP: usize = 4 * RECORD_MAX;
/// Frames up to this many bytes, with nothing else queued, are sealed by
/// the writer under the outbox's lock (`Outbox::seal_here`).
const SEAL_HERE: usize = 4 << 10;
/// Sealed records waiting to be written, at most: sealing ahead stops there.
pub(crate) const SEALED_AHEAD: usize = 4 << 20;

#[derive(Default)]
pub(crate) struct Outbox {
    /// Whole frames, written in order.
    pub(crate) bytes: Vec<u8>,
    /// Parcels being cut into parts, one part per write, so that what
    /// queues in `bytes` meanwhile waits for one part at most; and frames
    /// held behind a parcel for the same receiving process.
    long: VecDeque<Long>,
    /// The bytes of `long` not yet cut.
    long_bytes: u64,
    next_stream: u64,
    /// What the writer has taken and not yet sealed, in order.
    pub(crate) pending: VecDeque<Chunk>,
    pub(crate) pending_bytes: usize,
    /// Records sealed and not yet written: the front one being written
    /// (from `wire_at` on; the writer's), the others after it.
    pub(crate) wire: Vec<u8>,
    pub(crate) wire_at: usize,
    /// The unwritten bytes of `wire` while the writer has taken it out to
    /// write without the lock (they still count as queued).
    pub(crate) wire_out: usize,
    pub(crate) sealed: VecDeque<Vec<u8>>,
    pub(crate) sealed_bytes: usize,
    /// A written record buffer, kept for the next seal (no fresh memory
    /// for each step of a long message).
    pub(crate) spare: Vec<u8>,
    /// The key that seals records, and whether someone is sealing with it
    /// (who seals also owns `pending`).
    pub(crate) sealer: Option<Sealer>,
    pub(crate) sealing: bool,
    /// Processes of this node slowed in `send` until the outbox drains.
    pub(crate) slowed: Vec<Pid>,
    /// Aliases of ours the peer has been told about.
    pub(crate) announced: BTreeSet<u16>,
    pub(crate) closed: bool,
    /// Set when another link to the same peer is kept instead: the writer
    /// writes what is queued, then closes its side.
    pub(crate) draining: bool,
    /// Someone (the writer task, or a scheduler thread) is writing:
    /// whatever queues meanwhile is theirs to write next.
    pub(crate) writing: bool,
}

/// A message-carrying frame on its way into an outbox: whole, or already
/// made a parcel (outside the outbox's lock: a long message is not copied
/// while others wait to queue theirs).
pub(crate) enum Outgoing {
    Frame(Frame),
    Parcel(Parcel),
}

/// What waits in an outbox's `long` queue.
enum Long {
    /// `to` and `from`: the processes a message goes between, if it is one.
    Parcel { to: Option<Pid>, from: Option<Pid>, parcel: Parcel },
    /// An encoded frame for `to`, which a parcel for `to` ahead of it keeps
    /// waiting: messages between two processes arrive in the order sent.
    Held { to: Pid, frame: Vec<u8> },
}

impl Long {
    fn to(&self) -> Option<Pid> {
        match self {
            Long::Parcel { to, .. } => *to,
            Long::Held { to, .. } => Some(*to),
        }
    }
}

/// Bytes on their way to the socket: frames of the outbox, or a part's
/// payload in the buffer it comes from; `start` bytes of it are written.
pub(crate) enum Chunk {
    Own(Vec<u8>, usize),
    Shared(Slice),
}

impl Chunk {
    fn rest(&self) -> &[u8] {
        match self {
            Chunk::Own(bytes, start) => &bytes[*start..],
            Chunk::Shared(slice) => slice.as_slice(),
        }
    }

    fn advance(&mut self, n: usize) {
        match self {
            Chunk::Own(_, start) => *start += n,
            Chunk::Shared(slice) => slice.range.start += n,
        }
    }
}

impl Outbox {
    /// An empty outbox whose records `sealer` seals.
    pub(crate) fn new(sealer: Sealer) -> Outbox {
        Outbox { sealer: Some(sealer), ..Outbox::default() }
    }

    /// Whether `sender` fills the outbox: more than [`FULL`] bytes wait in
    /// it and a parcel of `sender`'s is among them, or whole frames alone
    /// pass [`FULL`] (a peer that stopped reading).
    pub(crate) fn filled_by(&self, sender: Pid) -> bool {
        self.bytes.len() > FULL || (self.queued() > FULL && self.long.iter().any(|l| matches!(l, Long::Parcel { from: Some(f), .. } if *f == sender)))
    }

    pub(crate) fn queued(&self) -> usize {
        self.bytes.len() + self.long_bytes as usize + self.pending_bytes + self.sealed_bytes + (self.wire.len() - self.wire_at) + self.wire_out
    }

    /// Whether the writer seals what waits itself, under the lock (see
    /// [`Outbox::seal_here`]): a few small frames and nothing else, with
    /// every record written and nobody sealing.
    pub(crate) fn seals_here(&self) -> bool {
        self.writing && !self.sealing && self.sealed.is_empty() && self.wire_at == self.wire.len() && self.wire_out == 0 && self.pending.is_empty() && self.long.is_empty() && !self.bytes.is_empty() && self.bytes.len() <= SEAL_HERE
    }

    /// Step 2 for a few small frames (a message or a reply): sealed into
    /// the written-out `wire` buffer at once, both buffers kept for the
    /// next time. Taking them out of the lock to seal, as larger ones
    /// are, cost two more trips through the lock and the queues' moves,
    /// most of a round trip's sealing. False when the records are used up
    /// (the outbox closes).
    pub(crate) fn seal_here(&mut self) -> bool {
        let Some(mut sealer) = self.sealer.take() else { return false };
        let (mut bytes, mut wire) = (std::mem::take(&mut self.bytes), std::mem::take(&mut self.wire));
        wire.clear();
        let sealed = sealer.seal(&bytes, &mut wire);
        bytes.clear();
        (self.sealer, self.bytes, self.wire, self.wire_at) = (Some(sealer), bytes, wire, 0);
        if sealed.is_err() {
            self.closed = true;
        }
        sealed.is_ok()
    }

    /// Whether anything waits to be sealed.
    pub(crate) fn unsealed(&self) -> bool {
        !self.bytes.is_empty() || !self.long.is_empty() || !self.pending.is_empty()
    }

    fn holds_for(&self, to: Pid) -> bool {
        self.long.iter().any(|l| l.to() == Some(to))
    }

    /// Queues a frame or a parcel, between the processes `between` (from,
    /// to) if it is a message.
    pub(crate) fn enqueue(&mut self, item: Outgoing, between: Option<(Pid, Pid)>) {
        let (from, to) = (between.map(|b| b.0), between.map(|b| b.1));
        match item {
            Outgoing::Frame(frame) => self.enqueue_frame(to, |out| frame.encode(out)),
            Outgoing::Parcel(mut parcel) => {
                self.next_stream += 1;
                parcel.stream = self.next_stream;
                // A small parcel with nothing long ahead of it goes whole
                // among the frames (in order: all that is queued is behind
                // what was cut before it); a long one waits its turn.
                if parcel.left() <= WHOLE_MAX && self.long.is_empty() {
                    parcel.write_whole(&mut self.bytes);
                } else {
                    self.long_bytes += parcel.left();
                    self.long.push_back(Long::Parcel { to, from, parcel });
                }
            }
        }
    }

    /// [`Outbox::enqueue`] of a service's frame whose message is short
    /// and carries nothing (`Frame::encode_service`): encoded from where
    /// its parts are.
    pub(crate) fn enqueue_service(&mut self, kind: u8, head: &[u8], message: &[u8], to: Option<Pid>) {
        self.enqueue_frame(to, |out| Frame::encode_service(kind, head, message, out));
    }

    /// Queues the frame `encode` appends: among the frames, or held
    /// behind a parcel for the same process `to` still in `long`.
    fn enqueue_frame(&mut self, to: Option<Pid>, encode: impl FnOnce(&mut Vec<u8>)) {
        match to.filter(|&to| self.holds_for(to)) {
            None => encode(&mut self.bytes),
            Some(to) => {
                let mut encoded = Vec::new();
                encode(&mut encoded);
                self.long_bytes += encoded.len() as u64;
                self.long.push_back(Long::Held { to, frame: encoded });
            }
        }
    }

    /// Step 3 of writing: once what was taken has been sealed, takes the
    /// frames queued since, then the frames held at the front of `long`
    /// and one part of the parcel there.
    pub(crate) fn refill(&mut self) {
        if !self.pending.is_empty() {
            return;
        }
        if !self.bytes.is_empty() {
            let bytes = std::mem::take(&mut self.bytes);
            self.take(Chunk::Own(bytes, 0));
        }
        let mut cut_one = false;
        while let Some(front) = self.long.front_mut() {
            match front {
                Long::Held { frame, .. } => {
                    let frame = std::mem::take(frame);
                    self.long_bytes -= frame.len() as u64;
                    self.take(Chunk::Own(frame, 0));
                }
                Long::Parcel { .. } if cut_one => return,
                Long::Parcel { parcel, .. } => {
                    let before = parcel.left();
                    let part = parcel.next_part();
                    let left = parcel.left();
                    self.long_bytes -= before - left;
                    cut_one = true;
                    if let Some((header, slices)) = part {
                        self.take(Chunk::Own(header, 0));
                        slices.into_iter().for_each(|s| self.take(Chunk::Shared(s)));
                    }
                    if left > 0 {
                        return;
                    }
                }
            }
            self.long.pop_front();
        }
    }

    fn take(&mut self, chunk: Chunk) {
        self.pending_bytes += chunk.rest().len();
        self.pending.push_back(chunk);
    }
}


/// How a write ended.
#[derive(Debug, PartialEq)]
pub(crate) enum Wrote {
    /// Nothing is left to write.
    Done,
    /// Another writer is writing: what is queued is theirs.
    Busy,
    /// The socket is full, or the writer has written its budget.
    Stopped,
    /// The link is closed, or the socket failed.
    Failed,
}


/// Seals what the writer has taken, up to [`SEAL_STEP`] of it, into
/// records on `wire`; returns how many bytes of `pending` it took.
/// Frames and part headers share records; a part's payload (a slice of a
/// buffer) gets records of its own, so that the receiver can read them
/// straight into the parcel (`Inbound::read`).
pub(crate) fn seal(sealer: &mut Sealer, pending: &mut VecDeque<Chunk>, wire: &mut Vec<u8>) -> Result<usize, Error> {
    let mut sealed = 0;
    while !pending.is_empty() && sealed < SEAL_STEP {
        let payload = matches!(pending.front(), Some(Chunk::Shared(_)));
        let mut same = pending.iter().take_while(|c| matches!(c, Chunk::Shared(_)) == payload).map(Chunk::rest);
        let mut took = match payload {
            true => sealer.seal_gathered(&mut same.take(1), wire)?,
            false => sealer.seal_gathered(&mut same, wire)?,
        };
        sealed += took;
        while let Some(front) = pending.front_mut() {
            let len = front.rest().len();
            if took < len {
                front.advance(took);
                break;
            }
            took -= len;
            pending.pop_front();
        }
    }
    Ok(sealed)
}

