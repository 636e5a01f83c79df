//! One authenticated connection to a peer node: what waits to be written
//! to it, how it is written, and how what arrives on it is read. The
//! cluster (`cluster`) decides what links exist and what frames mean; this
//! file moves the bytes.
//!
//! Writing, step by step:
//!
//! 1. A frame is queued in the link's outbox (`push`). Long messages and
//!    messages with buffers become parcels, cut into parts as they go.
//! 2. On a scheduler thread (`netpoll::flushes_here`) the link is noted as
//!    this thread's to write; the thread writes it when the process's run
//!    ends ([`flush_dirty`]), everything the run sent in one system call,
//!    or at once when a run has queued [`FLUSH_AT`] bytes. Anywhere else
//!    (the I/O thread) the link's writer task is woken to write it.
//! 3. One writer at a time (`Outbox::writing`) takes from the outbox what
//!    is queued: the frames' bytes, then one part of the parcel in front
//!    (its payload borrowed from the buffer itself), and seals them into
//!    records (`record`): the only copy of a long message's bytes on this
//!    side is the one the cipher makes. Small frames queued meanwhile go
//!    out before the parcel's next part.
//! 4. A writer that finds the socket full (or has written its budget)
//!    leaves the rest to the writer task, which waits on the I/O thread
//!    until the socket has room.
//!
//! Reading (`Link::drain`) is done by whichever scheduler thread the
//! poller (`poller`) reports the link to: records are checked and opened
//! as they arrive, frames are cut out of their plaintext, and the rest of a
//! long part goes straight into its parcel. A record that fails its check
//! ends the link: nothing in it, or after it, reaches a process.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::Relaxed};
use std::sync::Arc;

use parking_lot::Mutex;
use synodic_core::netpoll;
use synodic_core::remote::{self, Carried};
use synodic_core::wire::{self, WireError};
use synodic_core::{Message, NodeId, Pid, Runtime};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::sync::Notify;

use crate::frame::{Decoder, Frame, Next, PART};
use crate::handshake::Session;
use crate::parcel::{Assembler, Parcel, Slice};
use crate::record::{Opener, Sealer, RECORD_MAX};
use crate::Error;

/// A pid of this node that names no process: what a pid of a node gone
/// for good crosses as (this node's generations never reach it).
pub(crate) fn nowhere() -> Pid {
    Pid::new(0, Pid::MAX_INDEX, Pid::GEN_MASK)
}

/// Above this many queued bytes a link is full: senders are slowed in
/// `send` until it drains below [`ROOM`].
pub(crate) const FULL: usize = 8 << 20;
const ROOM: usize = 2 << 20;
/// A run that has queued this much writes it before going on.
const FLUSH_AT: usize = 64 << 10;
/// What a scheduler thread writes in one flush before it leaves the rest
/// to the writer task (a long message is not the thread's to carry).
const FLUSH_BUDGET: usize = 1 << 20;
/// What one reader reads from a link before the other links get their turn.
const READ_BUDGET: usize = 4 << 20;
/// What a writer seals before it writes (a few records: the copy stays in
/// the cache on its way to the socket).
const SEAL_STEP: usize = 4 * RECORD_MAX;

/// Which of two connections between the same nodes both keep (they may
/// have dialed each other at once): the one the node with the smaller name
/// dialed, then the one whose dialer's nonce is larger. Both ends know both
/// facts about every connection, so they choose the same one.
pub(crate) type Rank = (bool, [u8; 32]);

pub(crate) struct Link {
    pub(crate) peer: NodeId,
    pub(crate) alias: u16,
    pub(crate) rank: Rank,
    /// The link's number with the poller.
    pub(crate) token: u64,
    socket: std::net::TcpStream,
    rt: Runtime,
    pub(crate) outbox: Mutex<Outbox>,
    /// Set while more than [`FULL`] bytes wait in the outbox, cleared once
    /// they drain below [`ROOM`]: every remote send asks whether it must
    /// wait, and this answers without the outbox's lock.
    pub(crate) congested: AtomicBool,
    /// Processes of the peer that said they are busy (in our pids), and
    /// whether there are any (asked without the lock).
    busy: Mutex<HashSet<Pid>>,
    any_busy: AtomicBool,
    /// Processes of ours the peer was told are busy.
    pub(crate) told_busy: Mutex<HashSet<Pid>>,
    /// Wakes the writer task.
    wake: Notify,
    inbound: Mutex<Inbound>,
    /// The peer's aliases, as it announced them, mapped to ours.
    theirs: Mutex<HashMap<u16, u16>>,
    /// What processes here wait for from the peer.
    pub(crate) awaited: Mutex<Awaited>,
    /// The peer's last reported load, plus what was spawned there since.
    pub(crate) load: AtomicU32,
    /// How many live nodes the peer last said it sees, itself included.
    pub(crate) sees: AtomicU32,
    /// Set once the link has ended and its waiters have been told.
    pub(crate) ended: AtomicBool,
}

/// What processes of this node wait for from a link's peer: told of the
/// peer's loss if it ends first.
#[derive(Default)]
pub(crate) struct Awaited {
    /// (watcher here, target there), with how many times it was asked for.
    pub(crate) monitors: HashMap<(Pid, Pid), u32>,
    /// Tags of requests (spawns, claims) waiting for their answer, and who waits.
    pub(crate) replies: HashMap<u64, Pid>,
    /// Tags of name claims, and the name and pid claimed.
    pub(crate) claims: HashMap<u64, (Box<[u8]>, Pid)>,
    /// Tuple-space requests waiting for their answer: (process here, ticket).
    pub(crate) waits: HashSet<(Pid, u64)>,
}

impl Awaited {
    /// Counts one of `watcher`'s monitors of `target` as no longer awaited
    /// (its DOWN came, or it was removed); false when none was.
    pub(crate) fn forget_monitor(&mut self, watcher: Pid, target: Pid) -> bool {
        let Some(n) = self.monitors.get_mut(&(watcher, target)) else { return false };
        *n -= 1;
        if *n == 0 {
            self.monitors.remove(&(watcher, target));
        }
        true
    }
}

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
    pending: VecDeque<Chunk>,
    pending_bytes: usize,
    /// Records sealed and not yet written (from `wire_at` on), and the
    /// key that seals them: the writer's, like `pending`.
    wire: Vec<u8>,
    wire_at: usize,
    sealer: Option<Sealer>,
    /// Processes of this node slowed in `send` until the outbox drains.
    slowed: Vec<Pid>,
    /// Aliases of ours the peer has been told about.
    pub(crate) announced: BTreeSet<u16>,
    closed: bool,
    /// Set when another link to the same peer is kept instead: the writer
    /// writes what is queued, then closes its side.
    pub(crate) draining: bool,
    /// Someone (the writer task, or a scheduler thread) is writing:
    /// whatever queues meanwhile is theirs to write next.
    writing: bool,
}

/// A message-carrying frame on its way into an outbox: whole, or already
/// made a parcel (outside the outbox's lock: a long message is not copied
/// while others wait to queue theirs).
enum Outgoing {
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
enum Chunk {
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
    pub(crate) fn queued(&self) -> usize {
        self.bytes.len() + self.long_bytes as usize + self.pending_bytes + (self.wire.len() - self.wire_at)
    }

    fn holds_for(&self, to: Pid) -> bool {
        self.long.iter().any(|l| l.to() == Some(to))
    }

    /// Queues a frame or a parcel, between the processes `between` (from,
    /// to) if it is a message.
    fn enqueue(&mut self, item: Outgoing, between: Option<(Pid, Pid)>) {
        let (from, to) = (between.map(|b| b.0), between.map(|b| b.1));
        match item {
            Outgoing::Frame(frame) => match to.filter(|&to| self.holds_for(to)) {
                None => frame.encode(&mut self.bytes),
                Some(to) => {
                    let mut encoded = Vec::new();
                    frame.encode(&mut encoded);
                    self.long_bytes += encoded.len() as u64;
                    self.long.push_back(Long::Held { to, frame: encoded });
                }
            },
            Outgoing::Parcel(mut parcel) => {
                self.next_stream += 1;
                parcel.stream = self.next_stream;
                self.long_bytes += parcel.left();
                self.long.push_back(Long::Parcel { to, from, parcel });
            }
        }
    }

    /// Step 3 of writing: once what was taken has been written, takes the
    /// frames queued since, then the frames held at the front of `long`
    /// and one part of the parcel there.
    fn refill(&mut self) {
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
enum Wrote {
    /// Nothing is left to write.
    Done,
    /// Another writer is writing: what is queued is theirs.
    Busy,
    /// The socket is full, or the writer has written its budget.
    Stopped,
    /// The link is closed, or the socket failed.
    Failed,
}

/// What has arrived on a link and is not yet a whole frame.
struct Inbound {
    opener: Opener,
    decoder: Decoder,
    parcels: Assembler,
    /// Bytes of the part being read that go straight into its parcel.
    more: usize,
    /// The link has failed or closed: nothing more is read from it.
    over: bool,
}

/// What [`Link::drain`] found.
#[derive(Debug, PartialEq)]
pub(crate) enum Drained {
    /// The link is open; the poller should report it again.
    Open,
    /// The peer closed the connection between frames.
    Closed,
}

thread_local! {
    /// Links this scheduler thread has queued frames on since it last flushed.
    static DIRTY: RefCell<Vec<Arc<Link>>> = const { RefCell::new(Vec::new()) };
}

/// Step 2 of writing: a scheduler thread writes the links it queued frames on.
pub(crate) fn flush_dirty() {
    let dirty = DIRTY.with(|d| std::mem::take(&mut *d.borrow_mut()));
    for link in &dirty {
        link.flush();
    }
}

impl Link {
    /// A link over `socket`, whose handshake is done (`session` holds its
    /// keys, and what arrived after it), and its writer task on the I/O
    /// thread (so this runs there).
    pub(crate) fn start(rt: Runtime, peer: NodeId, alias: u16, rank: Rank, token: u64, socket: std::net::TcpStream, session: Session) -> io::Result<Arc<Link>> {
        // SAFETY: the descriptor is a fresh duplicate that the AsyncFd owns
        // (a std TcpStream) and closes only when it is dropped.
        let writer = unsafe { AsyncFd::register_with_interest(socket.try_clone()?, Interest::WRITABLE) }.map_err(io::Error::from)?;
        let link = Arc::new(Link {
            peer,
            alias,
            rank,
            token,
            socket,
            rt,
            outbox: Mutex::new(Outbox { sealer: Some(session.sealer), ..Outbox::default() }),
            congested: AtomicBool::new(false),
            busy: Mutex::new(HashSet::new()),
            any_busy: AtomicBool::new(false),
            told_busy: Mutex::new(HashSet::new()),
            wake: Notify::new(),
            inbound: Mutex::new(Inbound { opener: session.opener, decoder: Decoder::authenticated(), parcels: Assembler::default(), more: 0, over: false }),
            theirs: Mutex::new(HashMap::new()),
            awaited: Mutex::new(Awaited::default()),
            load: AtomicU32::new(u32::MAX),
            sees: AtomicU32::new(0),
            ended: AtomicBool::new(false),
        });
        tokio::spawn(link.clone().write_task(writer));
        Ok(link)
    }

    pub(crate) fn fd(&self) -> RawFd {
        self.socket.as_raw_fd()
    }

    /// A pid named in a frame from the peer, with our alias for its node
    /// (`None`: an alias the peer never announced).
    fn translate(&self, theirs: &HashMap<u16, u16>, pid: Pid) -> Option<Pid> {
        let node = match pid.node() {
            0 => self.alias,
            alias => *theirs.get(&alias)?,
        };
        // Whatever epoch the peer's alias had, ours goes in (none for our own pids).
        let epoch = match node {
            0 => 0,
            node => self.rt.nodes().epoch(node),
        };
        Some(pid.aliased(node, epoch))
    }

    /// The peer says its alias `theirs` means our `ours`.
    pub(crate) fn announced(&self, theirs: u16, ours: u16) {
        self.theirs.lock().insert(theirs, ours);
    }

    /// [`Link::translate`] for a pid in a frame's header.
    pub(crate) fn ours(&self, pid: Pid) -> Result<Pid, Error> {
        self.translate(&self.theirs.lock(), pid).ok_or_else(|| Error::Protocol(format!("pid of node alias {}, never announced", pid.node())))
    }

    /// A message from the peer, its pids rewritten to our aliases.
    pub(crate) fn arrived(&self, mut message: Vec<u8>) -> Result<Vec<u8>, Error> {
        let theirs = self.theirs.lock();
        wire::map_pids(&mut message, |p, at| self.translate(&theirs, p).ok_or(WireError::UnknownNode(at))).map_err(|e| Error::Protocol(format!("bad message: {e}")))?;
        Ok(message)
    }

    /// Queues the frames for a message to the peer (between the processes
    /// `between`, from and to, if it is a process's), announcing first the
    /// nodes its pids name; false when the link has closed or the message
    /// cannot cross (a shared value other than a buffer, or too long).
    pub(crate) fn push_message(self: &Arc<Self>, nodes: &synodic_core::node::Nodes, msg: Message, between: Option<(Pid, Pid)>, frame: impl FnOnce(Vec<u8>) -> Frame) -> bool {
        let Some(shared) = msg.attachments().iter().map(|a| remote::carry(a, &self.rt)).collect::<Option<Vec<Carried>>>() else { return false };
        let (mut named, mut stale) = (BTreeSet::new(), false);
        if wire::each_pid(&msg, |p| {
            named.insert(p.node());
            stale |= !nodes.is_current(p);
        })
        .is_err()
        {
            return false;
        }
        named.remove(&0);
        let len = msg.len();
        let mut bytes = msg.into_vec();
        if stale {
            // A pid kept from a node whose alias went to another: it must
            // not name that one's process over there either.
            let _ = wire::map_pids(&mut bytes, |p, _| Ok(if nodes.is_current(p) { p } else { nowhere() }));
        }
        let frame = frame(bytes);
        let item = match shared.is_empty() && len <= PART {
            true => Outgoing::Frame(frame),
            false => match Parcel::new(frame, shared) {
                Ok(parcel) => Outgoing::Parcel(parcel),
                Err(_) => return false,
            },
        };
        self.push(|out| {
            for alias in named {
                if out.announced.insert(alias) {
                    if let Some(node) = nodes.id(alias) {
                        Frame::Node { alias, node }.encode(&mut out.bytes);
                    }
                }
            }
            out.enqueue(item, between);
        })
    }

    /// Step 1 of writing: queues a frame; false when the link has closed.
    pub(crate) fn push(self: &Arc<Self>, frame: impl FnOnce(&mut Outbox)) -> bool {
        let mut out = self.outbox.lock();
        if out.closed {
            return false;
        }
        frame(&mut out);
        let queued = out.queued();
        if queued > FULL {
            self.congested.store(true, Relaxed);
        }
        let writing = out.writing;
        drop(out);
        if !netpoll::flushes_here() {
            if !writing {
                self.wake.notify_one();
            }
            return true;
        }
        DIRTY.with(|d| {
            let mut d = d.borrow_mut();
            if !d.iter().any(|l| Arc::ptr_eq(l, self)) {
                d.push(self.clone());
            }
        });
        if queued >= FLUSH_AT && !writing {
            self.flush();
        }
        true
    }

    /// Writes what the socket takes now, up to a budget; the writer task
    /// takes the rest.
    fn flush(&self) {
        if self.write_out(FLUSH_BUDGET) == Wrote::Stopped {
            self.wake.notify_one();
        }
    }

    /// Step 3 of writing: writes what is queued, in order, until nothing
    /// is left, the socket is full or `budget` bytes have gone.
    fn write_out(&self, mut budget: usize) -> Wrote {
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
                out.refill();
                if out.pending.is_empty() {
                    break Wrote::Done;
                }
            }
            if budget == 0 {
                break Wrote::Stopped;
            }
            // Only the writer touches `pending`, `wire` and the sealer:
            // they are sealed and written without the lock.
            let mut pending = std::mem::take(&mut out.pending);
            let (mut wire, mut at) = (std::mem::take(&mut out.wire), out.wire_at);
            let Some(mut sealer) = out.sealer.take() else { break Wrote::Failed };
            drop(out);
            let mut sealed = 0;
            let mut sent = Ok(0);
            if at == wire.len() {
                at = 0;
                wire.clear();
                match seal(&mut sealer, &mut pending, &mut wire) {
                    Ok(n) => sealed = n,
                    Err(_) => sent = Err(io::Error::other("sealing failed")),
                }
            }
            if sent.is_ok() {
                sent = send_bytes(self.fd(), &wire[at..]);
            }
            out = self.outbox.lock();
            out.pending = pending;
            out.sealer = Some(sealer);
            out.pending_bytes -= sealed;
            let written = *sent.as_ref().unwrap_or(&0);
            (out.wire, out.wire_at) = (wire, at + written);
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

    /// Step 4 of writing: the writer task, on the I/O thread.
    async fn write_task(self: Arc<Link>, socket: AsyncFd<std::net::TcpStream>) {
        loop {
            let Ok(mut ready) = socket.writable().await else { break };
            match self.write_out(usize::MAX) {
                Wrote::Stopped => ready.clear_ready(),
                Wrote::Done | Wrote::Busy => {
                    drop(ready);
                    let draining = {
                        let out = self.outbox.lock();
                        if out.closed {
                            break;
                        }
                        out.draining && out.queued() == 0
                    };
                    if draining {
                        let _ = socket.get_ref().shutdown(std::net::Shutdown::Write);
                        break;
                    }
                    self.wake.notified().await;
                }
                Wrote::Failed => break,
            }
        }
        self.close();
    }

    /// Writes everything queued, waiting for the socket as needed, until
    /// `deadline` (a node about to end: what it sent must not be lost);
    /// then closes this side for writing, so that the peer reads it all,
    /// then the end. False if it could not write it all in time.
    pub(crate) fn finish_before(&self, deadline: std::time::Instant) -> bool {
        let written = loop {
            match self.write_out(usize::MAX) {
                Wrote::Done => break true,
                Wrote::Failed => break false,
                Wrote::Busy | Wrote::Stopped if std::time::Instant::now() < deadline => std::thread::sleep(std::time::Duration::from_millis(1)),
                Wrote::Busy | Wrote::Stopped => break false,
            }
        };
        let _ = self.socket.shutdown(std::net::Shutdown::Write);
        written
    }

    /// Closes the outbox: nothing more is written.
    pub(crate) fn close(&self) {
        self.stop_writing(|out| out.closed = true);
    }

    /// Gives way to another link to the same peer: writes what it holds,
    /// then closes its side.
    pub(crate) fn retire(&self) {
        self.stop_writing(|out| out.draining = true);
    }

    /// Marks the outbox with `how` it ends; the senders it slowed look again.
    fn stop_writing(&self, how: impl FnOnce(&mut Outbox)) {
        let slowed = {
            let mut out = self.outbox.lock();
            how(&mut out);
            std::mem::take(&mut out.slowed)
        };
        self.wake.notify_one();
        slowed.into_iter().for_each(|pid| self.rt.nudge(pid));
    }

    /// Ends the connection both ways: the peer sees it closed.
    pub(crate) fn shutdown(&self) {
        let _ = self.socket.shutdown(std::net::Shutdown::Both);
    }

    /// The peer's process `pid` (ours) is busy, or no longer (`busy`
    /// false: its senders here look again).
    pub(crate) fn set_busy(&self, pid: Pid, busy: bool) {
        let mut set = self.busy.lock();
        match busy {
            true => drop(set.insert(pid)),
            false => drop(set.remove(&pid)),
        }
        self.any_busy.store(!set.is_empty(), Relaxed);
        drop(set);
        if !busy {
            let slowed = std::mem::take(&mut self.outbox.lock().slowed);
            slowed.into_iter().for_each(|pid| self.rt.nudge(pid));
        }
    }

    /// Whether `sender` may go on after sending to `to`; if not, it is
    /// woken when it may. Only those who fill the link wait: a sender with
    /// a long message still queued, or everyone once whole frames alone
    /// fill it (a peer that stops reading), and the senders to a process
    /// that said it is busy. A process sending a small message beside
    /// someone's large one, or to another process, goes on.
    pub(crate) fn room_for(&self, to: Pid, sender: Pid) -> bool {
        let busy = self.any_busy.load(Relaxed) && self.busy.lock().contains(&to);
        if !busy && !self.congested.load(Relaxed) {
            return true;
        }
        let mut out = self.outbox.lock();
        let full = out.bytes.len() > FULL || (out.queued() > FULL && out.long.iter().any(|l| matches!(l, Long::Parcel { from: Some(f), .. } if *f == sender)));
        if out.closed || !(full || busy) {
            return true;
        }
        // A slowed sender woken by a message looks again: listed once.
        if !out.slowed.contains(&sender) {
            out.slowed.push(sender);
        }
        false
    }

    /// Reads what has arrived, up to a budget, and hands each whole frame
    /// (with the buffers of a parcel's message) to `deliver`, in order.
    /// Once it has failed or found the connection closed, it reads no more
    /// and says `Closed` (several threads may have been told to read it).
    pub(crate) fn drain(&self, deliver: &mut dyn FnMut(Frame, Vec<Carried>) -> Result<(), Error>) -> Result<Drained, Error> {
        let mut inbound = self.inbound.lock();
        if inbound.over {
            return Ok(Drained::Closed);
        }
        let drained = inbound.read(self.fd(), deliver);
        inbound.over = !matches!(drained, Ok(Drained::Open));
        drained
    }
}

impl Inbound {
    fn read(&mut self, fd: RawFd, deliver: &mut dyn FnMut(Frame, Vec<Carried>) -> Result<(), Error>) -> Result<Drained, Error> {
        let Inbound { opener, decoder, parcels, more, .. } = self;
        let mut read = 0;
        // A read that got less than it asked for emptied the socket: the
        // poller reports it again when more comes, so no read to learn that.
        let mut emptied = false;
        loop {
            while let Some(plain) = opener.next()? {
                consume(plain, decoder, parcels, more, deliver)?;
            }
            if emptied || read >= READ_BUDGET {
                return Ok(Drained::Open);
            }
            let want = 256 << 10;
            match recv_into(fd, opener.space(want), want) {
                Ok(0) if opener.buffered() > 0 || decoder.buffered() > 0 || *more > 0 => {
                    return Err(Error::Protocol("the peer closed the connection in the middle of a frame".into()));
                }
                Ok(0) => return Ok(Drained::Closed),
                Ok(n) => (read, emptied) = (read + n, n < want),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Drained::Open),
                Err(e) => return Err(Error::Protocol(e.to_string())),
            }
        }
    }
}

/// Takes the plaintext of one record: the rest of a long part goes
/// straight into its parcel, the rest is cut into frames.
fn consume(mut plain: &[u8], decoder: &mut Decoder, parcels: &mut Assembler, more: &mut usize, deliver: &mut dyn FnMut(Frame, Vec<Carried>) -> Result<(), Error>) -> Result<(), Error> {
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
            parcels.filled();
            (*more, plain) = (*more - take, &plain[take..]);
            if *more == 0 {
                if let Some((frame, shared)) = parcels.finish()? {
                    deliver(frame, shared)?;
                }
            }
            continue;
        }
        if !plain.is_empty() {
            decoder.space(plain.len()).extend_from_slice(plain);
            plain = &[];
        }
        match decoder.next()? {
            Some(Next::Frame(frame)) => deliver(frame, Vec::new())?,
            Some(Next::Part { stream, total, bytes, more: rest }) => {
                parcels.begin(stream, total, bytes)?;
                *more = rest;
                if rest == 0 {
                    if let Some((frame, shared)) = parcels.finish()? {
                        deliver(frame, shared)?;
                    }
                }
            }
            None => return Ok(()),
        }
    }
}

/// Seals what the writer has taken, up to [`SEAL_STEP`] of it, into
/// records on `wire`; returns how many bytes of `pending` it took.
fn seal(sealer: &mut Sealer, pending: &mut VecDeque<Chunk>, wire: &mut Vec<u8>) -> Result<usize, Error> {
    let mut sealed = 0;
    while !pending.is_empty() && sealed < SEAL_STEP {
        let mut took = sealer.seal_gathered(&mut pending.iter().map(Chunk::rest), wire)?;
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

/// Reads up to `want` bytes from the socket onto the end of `buf`.
fn recv_into(fd: RawFd, buf: &mut Vec<u8>, want: usize) -> io::Result<usize> {
    buf.reserve(want);
    let spare = buf.spare_capacity_mut();
    let want = want.min(spare.len());
    // SAFETY: the spare capacity is valid for `want` bytes; recv writes at most that.
    let n = unsafe { libc::recv(fd, spare.as_mut_ptr().cast(), want, libc::MSG_DONTWAIT) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: recv initialised `n` bytes of the spare capacity.
    unsafe { buf.set_len(buf.len() + n as usize) };
    Ok(n as usize)
}

/// Writes what the socket takes of `bytes` now, without waiting.
fn send_bytes(fd: RawFd, bytes: &[u8]) -> io::Result<usize> {
    if bytes.is_empty() {
        return Ok(0);
    }
    // SAFETY: the slice is valid for its length for the whole call.
    let sent = unsafe { libc::send(fd, bytes.as_ptr().cast(), bytes.len(), libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL) };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(sent as usize)
}
