//! One authenticated connection to a peer node: its state (the peer, its
//! aliases, what processes here wait for from it, whether it is busy), how
//! frames are queued on it and whose senders must wait. The cluster
//! (`cluster`) decides what links exist and what frames mean; the outbox
//! (`outbox`) seals and writes what is queued, the inbound side
//! (`inbound`) reads and opens what arrives; `write.rs` writes the
//! outbox to the socket.

mod write;
#[cfg(test)]
mod tests;

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

use parking_lot::Mutex;
use synodic_core::netpoll;
use synodic_core::dist::carry::{self, Carried};
use synodic_core::dist::{Outgoing as ServiceFrame, Peer};
use synodic_core::wire::{self, WireError};
use synodic_core::{Message, NodeId, Pid, Runtime};
use tokio::sync::Notify;

use crate::frame::{Decoder, Frame, PART};
use crate::handshake::Session;
use crate::inbound::{Deliver, Drained, Inbound};
use crate::outbox::{Outbox, Outgoing, Wrote, FULL};
use crate::parcel::{Assembler, Parcel};
use crate::Error;

/// A pid of this node that names no process: what a pid of a node gone
/// for good crosses as (this node's generations never reach it).
pub(crate) fn nowhere() -> Pid {
    Pid::new(0, Pid::MAX_INDEX, Pid::GEN_MASK)
}

/// A run that has queued this much writes it before going on.
const FLUSH_AT: usize = 64 << 10;

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
    pub(crate) rt: Runtime,
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
    pub(crate) wake: Notify,
    inbound: Mutex<Inbound>,
    /// The peer's aliases, as it announced them, mapped to ours.
    theirs: Mutex<HashMap<u16, u16>>,
    /// Set once the link has ended and its waiters have been told.
    pub(crate) ended: AtomicBool,
    /// Bytes written to the socket so far (sealed records).
    pub(crate) sent: std::sync::atomic::AtomicU64,
    /// The writer task has what a flush left to write (see `writing_behind`).
    behind: AtomicBool,
}

/// Links whose writer task writes what a scheduler thread left.
static WRITING_BEHIND: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Whether some link's writer task, on the I/O thread, is writing a long
/// message that a flush left it (`Netpoll::writing_behind`).
pub(crate) fn writing_behind() -> bool {
    WRITING_BEHIND.load(Relaxed) > 0
}


thread_local! {
    /// Links this scheduler thread has queued frames on since it last flushed.
    static DIRTY: RefCell<Vec<Arc<Link>>> = const { RefCell::new(Vec::new()) };
}

/// Step 2 of writing: a scheduler thread writes the links it queued frames on.
pub(crate) fn flush_dirty() {
    // Taken out while the links flush (a flush may queue again), and put
    // back emptied with its room: taken for good, it was allocated anew
    // for every message a node sent.
    let mut dirty = DIRTY.with(|d| std::mem::take(&mut *d.borrow_mut()));
    for link in &dirty {
        link.flush();
    }
    dirty.clear();
    DIRTY.with(|d| {
        let mut d = d.borrow_mut();
        if d.is_empty() {
            *d = dirty;
        }
    });
}

impl Link {
    /// A link over `socket`, whose handshake is done (`session` holds its
    /// keys, and what arrived after it), and its writer task on the I/O
    /// thread (so this runs there).
    pub(crate) fn start(rt: Runtime, peer: NodeId, alias: u16, rank: Rank, token: u64, socket: std::net::TcpStream, session: Session) -> io::Result<Arc<Link>> {
        let writer = socket.try_clone()?;
        let link = Arc::new(Link {
            peer,
            alias,
            rank,
            token,
            socket,
            rt,
            outbox: Mutex::new(Outbox::new(session.sealer)),
            congested: AtomicBool::new(false),
            busy: Mutex::new(HashSet::new()),
            any_busy: AtomicBool::new(false),
            told_busy: Mutex::new(HashSet::new()),
            wake: Notify::new(),
            inbound: Mutex::new(Inbound { opener: session.opener, decoder: Decoder::authenticated(), parcels: Assembler::default(), more: 0, direct: None, over: false, received: 0 }),
            theirs: Mutex::new(HashMap::new()),
            ended: AtomicBool::new(false),
            sent: std::sync::atomic::AtomicU64::new(0),
            behind: AtomicBool::new(false),
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

    /// Queues a service's frame (see `synodic_core::dist`); false when the
    /// link has closed or its message cannot cross.
    pub(crate) fn push_service(self: &Arc<Self>, frame: ServiceFrame) -> bool {
        let ServiceFrame { kind, head, message, between } = frame;
        match message {
            None => self.push(|out| Frame::encode_service(kind, &head, &[], &mut out.bytes)),
            Some(msg) => self.push_message(self.rt.nodes(), kind, head, msg, between),
        }
    }

    /// Queues the frames for a message to the peer (between the processes
    /// `between`, from and to, if it is a process's), announcing first the
    /// nodes its pids name; false when the link has closed or the message
    /// cannot cross (a shared value other than a buffer, or too long).
    fn push_message(self: &Arc<Self>, nodes: &synodic_core::node::Nodes, kind: u8, head: synodic_core::dist::Head, msg: Message, between: Option<(Pid, Pid)>) -> bool {
        let Some(shared) = msg.attachments().iter().map(|a| carry::carry(a, &self.rt)).collect::<Option<Vec<Carried>>>() else { return false };
        let (mut named, mut stale) = (Named::default(), false);
        if wire::each_pid(&msg, |p| {
            named.insert(p.node());
            stale |= !nodes.is_current(p);
        })
        .is_err()
        {
            return false;
        }
        let len = msg.len();
        let announce = |out: &mut Outbox| {
            for alias in named.iter() {
                if out.announced.insert(alias) {
                    if let Some(node) = nodes.id(alias) {
                        Frame::Node { alias, node }.encode(&mut out.bytes);
                    }
                }
            }
        };
        // Nearly every message: one frame (short, carrying nothing) whose
        // pids are current. It is encoded into the outbox from where it is.
        let one_frame = shared.is_empty() && len <= PART;
        if one_frame && !stale {
            return self.push(|out| {
                announce(out);
                out.enqueue_service(kind, &head, &msg, between.map(|b| b.1));
            });
        }
        let mut bytes = msg.into_vec();
        if stale {
            // A pid kept from a node whose alias went to another: it must
            // not name that one's process over there either.
            let _ = wire::map_pids(&mut bytes, |p, _| Ok(if nodes.is_current(p) { p } else { nowhere() }));
        }
        let frame = Frame::Service { kind, head: head.to_vec(), message: bytes };
        let item = match one_frame {
            true => Outgoing::Frame(frame),
            false => match Parcel::new(frame, shared) {
                Ok(parcel) => Outgoing::Parcel(parcel),
                Err(_) => return false,
            },
        };
        self.push(|out| {
            announce(out);
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
        netpoll::note_queued();
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

    /// Whether a sender may have to wait for room (`room_for` looks
    /// closer): a receiver over there is busy, or the outbox is full.
    pub(crate) fn strained(&self) -> bool {
        self.any_busy.load(Relaxed) || self.congested.load(Relaxed)
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
        let full = out.filled_by(sender);
        if out.closed || !(full || busy) {
            return true;
        }
        // A slowed sender woken by a message looks again: listed once.
        if !out.slowed.contains(&sender) {
            out.slowed.push(sender);
        }
        false
    }

    /// Bytes written to and read from the peer so far.
    pub(crate) fn traffic(&self) -> (u64, u64) {
        (self.sent.load(std::sync::atomic::Ordering::Relaxed), self.inbound.lock().received)
    }

    /// Reads what has arrived, up to a budget, and hands each whole frame
    /// (with the buffers of a parcel's message) to `deliver`, in order.
    /// Once it has failed or found the connection closed, it reads no more
    /// and says `Closed` (several threads may have been told to read it).
    pub(crate) fn drain(&self, deliver: &mut Deliver) -> Result<Drained, Error> {
        let mut inbound = self.inbound.lock();
        if inbound.over {
            return Ok(Drained::Closed);
        }
        let drained = inbound.read(self.fd(), deliver);
        inbound.over = !matches!(drained, Ok(Drained::Open | Drained::Budget));
        drained
    }
}


/// The link a frame came over, as the services see it.
pub(crate) struct Over<'a>(pub(crate) &'a Arc<Link>);

impl std::ops::Deref for Over<'_> {
    type Target = Arc<Link>;
    fn deref(&self) -> &Arc<Link> {
        self.0
    }
}

impl Peer for Over<'_> {
    fn alias(&self) -> u16 {
        self.alias
    }

    fn ours(&self, pid: Pid) -> Result<Pid, String> {
        self.translate(&self.theirs.lock(), pid).ok_or_else(|| format!("pid of node alias {}, never announced", pid.node()))
    }

    /// The message's pids rewritten to our aliases.
    fn map_arrived(&self, message: &mut [u8]) -> Result<(), String> {
        let theirs = self.theirs.lock();
        wire::map_pids(message, |p, at| self.translate(&theirs, p).ok_or(WireError::UnknownNode(at))).map_err(|e| format!("bad message: {e}"))
    }

    /// The lock is held from the check that notes it to the push: a drain
    /// noticed meanwhile finds `pid` told, and its Ready follows this Busy.
    fn busy(&self, pid: Pid) {
        let mut told = self.told_busy.lock();
        if self.rt.busy(pid) && told.insert(pid) {
            self.push(|out| Frame::Busy { pid }.encode(&mut out.bytes));
        }
    }
}

/// The other nodes a message's pids name (this node's alias, 0, left out),
/// each once: a few inline, as nearly every message names one or two, and
/// a set beyond (a list of pids from many nodes).
#[derive(Default)]
struct Named {
    few: [u16; 4],
    len: usize,
    more: BTreeSet<u16>,
}

impl Named {
    fn insert(&mut self, alias: u16) {
        if alias == 0 || self.few[..self.len].contains(&alias) || self.more.contains(&alias) {
            return;
        }
        match self.len < self.few.len() {
            true => {
                self.few[self.len] = alias;
                self.len += 1;
            }
            false => {
                self.more.insert(alias);
            }
        }
    }

    fn iter(&self) -> impl Iterator<Item = u16> + '_ {
        self.few[..self.len].iter().copied().chain(self.more.iter().copied())
    }
}
