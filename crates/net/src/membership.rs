//! Membership and failure detection: who is in the cluster, and who has
//! died. It is SWIM, as the `foca` crate implements it: each node probes one
//! random member per period (directly, then through others), and spreads
//! what it learns by piggybacking on its probes and by gossip, so the work
//! per node stays the same however large the cluster grows, where a full
//! mesh of heartbeats grows with its square.
//!
//! Sans-IO: [`Membership`] takes datagrams and timer events and returns
//! what to send, what timers to set and which nodes came up or went down;
//! `cluster` carries its datagrams over UDP, sealed with a MAC keyed by the
//! cookie ([`seal`] / [`open`]) so that nothing unauthenticated changes the
//! view. The 500-node simulation in the tests drives it with no sockets and
//! no clock.
//!
//! A member is a node (name and incarnation), where it listens, and a
//! `renewal` count: a node wrongly declared down (a partition that healed)
//! comes back with its count bumped, a new SWIM identity for the same node.

use std::net::SocketAddr;
use std::num::{NonZeroU32, NonZeroUsize};
use std::sync::Arc;
use std::time::{Duration, Instant};

use foca::{AccumulatingRuntime, Foca, Identity, NoCustomBroadcast, OwnedNotification, PostcardCodec};
use hmac::{Hmac, Mac};
use rand::rngs::SmallRng;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};
use sha2::Sha256;

pub use foca::Timer;

/// How long a node that stopped answering stays suspect before it is
/// declared down: with the probe period and round trip below, a dead node is
/// down within 3 s (SPEC §9).
pub const SUSPECT_TO_DOWN: Duration = Duration::from_millis(1500);
const PROBE_PERIOD: Duration = Duration::from_millis(500);
const PROBE_RTT: Duration = Duration::from_millis(200);

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Member {
    pub name: Arc<str>,
    pub incarnation: u64,
    /// Where the node listens (its TCP and UDP address).
    pub addr: SocketAddr,
    pub renewal: u32,
}

impl Identity for Member {
    type Addr = SocketAddr;

    fn renew(&self) -> Option<Member> {
        Some(Member { renewal: self.renewal.wrapping_add(1), ..self.clone() })
    }

    fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Two members at one address: the later run of a node, or the later
    /// renewal of one run, is the one there now.
    fn win_addr_conflict(&self, adversary: &Member) -> bool {
        if self.incarnation == adversary.incarnation {
            self.renewal > adversary.renewal
        } else {
            self.incarnation > adversary.incarnation
        }
    }
}

/// What membership tells the node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    Up(Member),
    Down(Member),
}

/// What membership wants done.
#[derive(Debug)]
pub enum Output {
    /// Send this datagram to that member.
    Send(Member, Vec<u8>),
    /// Call [`Membership::timer`] with this event after this long.
    Timer(Duration, Timer<Member>),
    Event(Event),
}

/// How long a member declared down is remembered for [`Membership::rejoin`].
const LOST_FOR: Duration = Duration::from_secs(600);
/// Members remembered so, at most.
const LOST_MAX: usize = 64;

pub struct Membership {
    foca: Foca<Member, PostcardCodec, SmallRng, NoCustomBroadcast>,
    runtime: AccumulatingRuntime<Member>,
    /// Errors from junk datagrams, for the node to report (one line each).
    rejected: Vec<String>,
    /// Members declared down lately, newest last, and when.
    lost: Vec<(Member, Instant)>,
    /// Whether foca last said it was connected to the cluster (`Active`)
    /// rather than not (`Idle`, `Defunct`, or a renewal: `Rejoin`).
    connected: bool,
    /// Where [`Membership::rejoin`]'s next announces start among its
    /// targets, so that they go round.
    turn: usize,
}

impl Membership {
    /// Membership for `me`, tuned for clusters of about `size` nodes; `seed`
    /// seeds its choice of whom to probe.
    pub fn new(me: Member, size: u32, seed: u64) -> Membership {
        let mut config = foca::Config::new_lan(NonZeroU32::new(size.max(2)).expect("at least 2"));
        config.probe_period = PROBE_PERIOD;
        config.probe_rtt = PROBE_RTT;
        config.suspect_to_down_after = SUSPECT_TO_DOWN;
        // A node wrongly declared down (a partition) finds its way back within seconds.
        config.periodic_announce = Some(foca::PeriodicParams { frequency: Duration::from_secs(5), num_members: NonZeroUsize::new(1).expect("1") });
        config.periodic_announce_to_down_members = Some(foca::PeriodicParams { frequency: Duration::from_secs(3), num_members: NonZeroUsize::new(2).expect("2") });
        config.remove_down_after = Duration::from_secs(30);
        // Gossip less often than memberlist's LAN default (200 ms to 3) but
        // repeat each update twice as many times: the same reach for joins
        // that come in bursts, with less traffic.
        config.periodic_gossip = Some(foca::PeriodicParams { frequency: Duration::from_millis(500), num_members: NonZeroUsize::new(3).expect("3") });
        config.max_transmissions = config.max_transmissions.saturating_mul(std::num::NonZeroU8::new(2).expect("2"));
        let foca = Foca::new(me, config, SmallRng::seed_from_u64(seed), PostcardCodec);
        Membership { foca, runtime: AccumulatingRuntime::new(), rejected: Vec::new(), lost: Vec::new(), connected: false, turn: 0 }
    }

    /// Called now and then (every 500 ms): a node cut off from the cluster
    /// announces itself, to three of the members it lists and those it
    /// lost lately at a time, until foca says it is connected again. Two
    /// ways to be cut off, and foca's own timers help with neither:
    ///
    /// - no live member left (a partition cut the node off from all of
    ///   them): SWIM's announces to down members stop with the last live
    ///   one, and two halves of a cluster would never find each other
    ///   again. Each side learns from the announce that the other declared
    ///   it down, renews its identity, and the two rejoin (foca's
    ///   `Identity::renew`);
    /// - a renewal of its own: foca then sets no timer until it hears from
    ///   the cluster, and the one gossip it sends goes to the identities it
    ///   lists, which may have renewed too (a node back from a stop tells
    ///   every other that it is down: the chaos test saw three renew at
    ///   once) and then drop it. An announce reaches whatever identity
    ///   lives at an address, and its answer connects foca again.
    pub fn rejoin(&mut self, now: Instant) {
        self.lost.retain(|(_, since)| now.saturating_duration_since(*since) < LOST_FOR);
        if self.connected && self.foca.num_members() > 0 {
            return;
        }
        let mut targets: Vec<Member> = self.foca.iter_members().map(|m| m.id().clone()).collect();
        targets.extend(self.lost.iter().rev().map(|(m, _)| m.clone()));
        let mut seen = std::collections::HashSet::new();
        targets.retain(|m| seen.insert(m.addr));
        let count = targets.len();
        for k in 0..count.min(3) {
            let member = targets[(self.turn + k) % count].clone();
            let _ = self.foca.announce(member, &mut self.runtime);
        }
        self.turn = self.turn.wrapping_add(3);
    }

    /// Joins the cluster through `member` (learnt from a handshake with it).
    pub fn announce(&mut self, member: Member) {
        let _ = self.foca.announce(member, &mut self.runtime);
    }

    /// A datagram from the network (already opened with [`open`]).
    pub fn datagram(&mut self, data: &[u8]) {
        if let Err(e) = self.foca.handle_data(data, &mut self.runtime) {
            self.rejected.push(format!("membership datagram refused: {e}"));
        }
    }

    /// A timer set by an earlier [`Output::Timer`] has fired.
    pub fn timer(&mut self, event: Timer<Member>) {
        let _ = self.foca.handle_timer(event, &mut self.runtime);
    }

    /// Leaves the cluster: the others hear of it at once instead of
    /// suspecting this node.
    pub fn leave(&mut self) {
        let _ = self.foca.leave_cluster(&mut self.runtime);
    }

    /// The live members other than this node.
    pub fn members(&self) -> impl Iterator<Item = &Member> {
        self.foca.iter_members().map(|m| m.id())
    }

    /// This node as the cluster knows it now.
    pub fn me(&self) -> &Member {
        self.foca.identity()
    }

    /// Lines about refused datagrams since the last call.
    pub fn rejected(&mut self) -> Vec<String> {
        std::mem::take(&mut self.rejected)
    }

    /// Everything to do since the last call, in order.
    pub fn drain(&mut self) -> Vec<Output> {
        let mut out = Vec::new();
        while let Some(n) = self.runtime.to_notify() {
            match n {
                OwnedNotification::MemberUp(m) => {
                    self.lost.retain(|(l, _)| l.name != m.name);
                    out.push(Output::Event(Event::Up(m)));
                }
                OwnedNotification::MemberDown(m) => {
                    self.lost.retain(|(l, _)| l.name != m.name);
                    if self.lost.len() >= LOST_MAX {
                        self.lost.remove(0);
                    }
                    self.lost.push((m.clone(), Instant::now()));
                    out.push(Output::Event(Event::Down(m)));
                }
                OwnedNotification::Active => self.connected = true,
                OwnedNotification::Idle | OwnedNotification::Defunct | OwnedNotification::Rejoin(_) => self.connected = false,
                _ => {}
            }
        }
        while let Some((to, data)) = self.runtime.to_send() {
            out.push(Output::Send(to, data.to_vec()));
        }
        while let Some((after, event)) = self.runtime.to_schedule() {
            out.push(Output::Timer(after, event));
        }
        out
    }
}

const SEAL: usize = 16;

fn datagram_mac(cookie: &[u8], data: &[u8]) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(cookie).expect("HMAC takes keys of any length");
    mac.update(b"synodic membership v1");
    mac.update(data);
    mac
}

/// A membership datagram as it goes on the network: the data and a MAC of it
/// keyed with the cookie (HMAC-SHA256, first 16 bytes).
pub fn seal(cookie: &[u8], data: &[u8]) -> Vec<u8> {
    let tag = datagram_mac(cookie, data).finalize().into_bytes();
    let mut out = Vec::with_capacity(data.len() + SEAL);
    out.extend_from_slice(data);
    out.extend_from_slice(&tag[..SEAL]);
    out
}

/// The data of a sealed datagram, or `None` when it was not sealed with
/// this cookie (or is not a datagram of ours at all).
pub fn open<'a>(cookie: &[u8], datagram: &'a [u8]) -> Option<&'a [u8]> {
    let split = datagram.len().checked_sub(SEAL)?;
    let (data, tag) = datagram.split_at(split);
    datagram_mac(cookie, data).verify_truncated_left(tag).ok()?;
    Some(data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Reverse;
    use std::collections::{BTreeSet, BinaryHeap, HashMap};

    #[test]
    fn datagrams_are_sealed_with_the_cookie() {
        let sealed = seal(b"cookie", b"hello");
        assert_eq!(open(b"cookie", &sealed), Some(&b"hello"[..]));
        assert_eq!(open(b"other", &sealed), None);
        let mut changed = sealed.clone();
        changed[0] ^= 1;
        assert_eq!(open(b"cookie", &changed), None);
        assert_eq!(open(b"cookie", b"short"), None);
        assert_eq!(open(b"cookie", &[]), None);
    }

    /// A cluster simulated in memory: virtual time, datagrams delivered
    /// after a millisecond or two unless the sender or receiver has crashed
    /// or a partition lies between them.
    struct Sim {
        now: u64,
        seq: u64,
        queue: BinaryHeap<Reverse<(u64, u64, usize, Job)>>,
        nodes: Vec<Membership>,
        crashed: Vec<bool>,
        /// Nodes on the other side of a partition from node 0.
        cut: Vec<bool>,
        /// Nodes that receive nothing (what they send still goes): the
        /// chaos tests' fault proxy cutting the way in to a node.
        deaf: Vec<bool>,
        /// Nodes stopped (SIGSTOP) until this virtual time: what comes for
        /// them meanwhile, datagrams and timers, waits and is handled then.
        stopped_until: Vec<u64>,
        partitioned: bool,
        index: HashMap<SocketAddr, usize>,
        rng: u64,
    }

    #[derive(PartialEq, Eq, PartialOrd, Ord)]
    enum Job {
        Datagram(Vec<u8>),
        Timer(u64),
    }

    impl Sim {
        fn new(n: usize) -> Sim {
            let mut sim = Sim { now: 0, seq: 0, queue: BinaryHeap::new(), nodes: Vec::new(), crashed: vec![false; n], cut: vec![false; n], deaf: vec![false; n], stopped_until: vec![0; n], partitioned: false, index: HashMap::new(), rng: 0x9E37_79B9_7F4A_7C15 };
            for i in 0..n {
                let me = member(i);
                sim.index.insert(me.addr, i);
                sim.nodes.push(Membership::new(me, n as u32, i as u64 + 1));
            }
            sim
        }

        fn random(&mut self) -> u64 {
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            self.rng
        }

        fn at(&mut self, delay_ms: u64, node: usize, job: Job) {
            self.seq += 1;
            self.queue.push(Reverse((self.now + delay_ms, self.seq, node, job)));
        }

        /// Timers are kept by the simulation, by number.
        fn flush(&mut self, node: usize, timers: &mut HashMap<u64, Timer<Member>>) {
            for out in self.nodes[node].drain() {
                match out {
                    Output::Send(to, data) => {
                        let to = self.index[&to.addr];
                        let delay = 1 + self.random() % 2;
                        if (self.partitioned && self.cut[node] != self.cut[to]) || self.deaf[to] {
                            continue;
                        }
                        self.at(delay, to, Job::Datagram(data));
                    }
                    Output::Timer(after, event) => {
                        let key = self.seq + 1_000_000_000;
                        timers.insert(key, event);
                        self.at(after.as_millis() as u64, node, Job::Timer(key));
                    }
                    Output::Event(_) => {}
                }
            }
        }

        fn run_for(&mut self, ms: u64, timers: &mut HashMap<u64, Timer<Member>>) {
            let end = self.now + ms;
            while let Some(Reverse((t, _, _, _))) = self.queue.peek() {
                if *t > end {
                    break;
                }
                let Reverse((t, _, node, job)) = self.queue.pop().expect("peeked");
                self.now = t;
                if self.crashed[node] {
                    continue;
                }
                if self.stopped_until[node] > t {
                    let wait = self.stopped_until[node] - t;
                    self.at(wait, node, job);
                    continue;
                }
                match job {
                    Job::Datagram(data) => self.nodes[node].datagram(&data),
                    Job::Timer(key) => {
                        if let Some(event) = timers.remove(&key) {
                            self.nodes[node].timer(event);
                        }
                    }
                }
                self.flush(node, timers);
            }
            self.now = end;
        }

        /// `n` nodes that joined through node 0 and agree.
        fn joined(n: usize, timers: &mut HashMap<u64, Timer<Member>>) -> Sim {
            let mut sim = Sim::new(n);
            for i in 1..n {
                sim.nodes[i].announce(member(0));
                sim.flush(i, timers);
            }
            settle(&mut sim, timers, 10_000, "join");
            sim
        }

        /// Runs, with a [`Sim::tick`] a second, until every view is current
        /// ([`Sim::views_current`]) after at least `after` seconds: the
        /// seconds it took, or how the views stood after a minute.
        fn heal(&mut self, start: Instant, timers: &mut HashMap<u64, Timer<Member>>, after: u64) -> Result<u64, String> {
            for second in 0..60 {
                self.run_for(1_000, timers);
                self.tick(start, timers);
                if second >= after && self.views_current().is_ok() {
                    return Ok(second);
                }
            }
            self.views_current().map(|()| 60)
        }

        /// Calls every live, running node's [`Membership::rejoin`], as the
        /// node's load reports do.
        fn tick(&mut self, start: Instant, timers: &mut HashMap<u64, Timer<Member>>) {
            for i in 0..self.nodes.len() {
                if !self.crashed[i] && self.stopped_until[i] <= self.now {
                    self.nodes[i].rejoin(start + Duration::from_millis(self.now));
                    self.flush(i, timers);
                }
            }
        }

        /// Each live node lists exactly the others as they are now (their
        /// latest identities, renewals included).
        fn views_current(&self) -> Result<(), String> {
            let live: Vec<usize> = (0..self.nodes.len()).filter(|&i| !self.crashed[i]).collect();
            for &i in &live {
                let view: BTreeSet<(Arc<str>, u32)> = self.nodes[i].members().map(|m| (m.name.clone(), m.renewal)).collect();
                let now: BTreeSet<(Arc<str>, u32)> = live.iter().filter(|&&j| j != i).map(|&j| (self.nodes[j].me().name.clone(), self.nodes[j].me().renewal)).collect();
                if view != now {
                    return Err(format!("node {i} lists {view:?}, the others are {now:?}"));
                }
            }
            Ok(())
        }

        /// Each live node's view (itself included) must be exactly the live nodes.
        fn views_agree(&self) -> Result<(), String> {
            let live: BTreeSet<Arc<str>> = (0..self.nodes.len()).filter(|&i| !self.crashed[i]).map(|i| member(i).name).collect();
            for (i, m) in self.nodes.iter().enumerate().filter(|&(i, _)| !self.crashed[i]) {
                let mut view: BTreeSet<Arc<str>> = m.members().map(|m| m.name.clone()).collect();
                view.insert(m.me().name.clone());
                if view != live {
                    let missing: Vec<_> = live.difference(&view).take(3).collect();
                    let extra: Vec<_> = view.difference(&live).take(3).collect();
                    return Err(format!("node {i} sees {} of {} live nodes (missing {missing:?}, extra {extra:?})", view.len(), live.len()));
                }
            }
            Ok(())
        }
    }

    fn member(i: usize) -> Member {
        Member { name: format!("n{i}@sim").into(), incarnation: i as u64 * 7 + 1, addr: SocketAddr::from(([10, 0, (i / 256) as u8, (i % 256) as u8], 4000)), renewal: 0 }
    }

    /// Runs until every live node agrees, or fails after `limit_ms` of virtual time.
    fn settle(sim: &mut Sim, timers: &mut HashMap<u64, Timer<Member>>, limit_ms: u64, what: &str) -> u64 {
        let start = sim.now;
        loop {
            sim.run_for(250, timers);
            match sim.views_agree() {
                Ok(()) => return sim.now - start,
                Err(e) if sim.now - start >= limit_ms => panic!("{what}: no agreement after {limit_ms} ms: {e}"),
                Err(_) => {}
            }
        }
    }

    #[test]
    fn two_nodes_cut_apart_find_each_other_again() {
        let mut timers = HashMap::new();
        let mut sim = Sim::joined(2, &mut timers);
        sim.cut = vec![false, true];
        sim.partitioned = true;
        let start = Instant::now();
        for _ in 0..16 {
            sim.run_for(500, &mut timers);
            sim.tick(start, &mut timers);
        }
        assert_eq!(sim.nodes[0].members().count(), 0, "each side declared the other down");
        sim.partitioned = false;
        let mut agreed_for = 0;
        for _ in 0..60 {
            sim.run_for(500, &mut timers);
            sim.tick(start, &mut timers);
            let views: Vec<usize> = (0..2).map(|i| sim.nodes[i].members().count()).collect();
            agreed_for = if views == [1, 1] { agreed_for + 1 } else { 0 };
        }
        assert!(agreed_for >= 20, "the two sides stay together once healed");
    }

    /// The schedule of a chaos test's run that failed (`crates/cli/tests/chaos.rs`):
    /// a node killed, another deaf for a second (what it sends still goes)
    /// and stopped for nearly four soon after, over a hundred timings.
    /// Declared down meanwhile, the stopped node comes back to datagrams
    /// and timers that waited; every view must come back to the nodes as
    /// they are now. (The real run's renewals on every node at once are
    /// [`every_node_renewing_at_once_finds_the_others_again`]: these
    /// timings renew one node, or two.)
    #[test]
    fn a_node_stopped_after_a_cut_comes_back_and_all_views_heal() {
        for offset in 0..100u64 {
            let r = offset.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20;
            let mut timers = HashMap::new();
            let mut sim = Sim::joined(4, &mut timers);
            sim.run_for(offset * 37 % 1_000, &mut timers);
            sim.crashed[3] = true;
            // The way in to node 1 cut for ~1 s (what it sends still goes),
            // then node 1 stopped for ~3.8 s.
            sim.deaf[1] = true;
            sim.run_for(800 + r % 500, &mut timers);
            sim.deaf[1] = false;
            sim.run_for((r >> 9) % 500, &mut timers);
            sim.stopped_until[1] = sim.now + 3_000 + (r >> 19) % 1_500;
            if let Err(e) = sim.heal(Instant::now(), &mut timers, 6) {
                panic!("offset {offset}: not healed after 60 s: {e}");
            }
        }
    }

    /// What the chaos test's failing run came to: every node renewing its
    /// identity at the same moment, each told by a node just resumed from a
    /// stop that it was down. Each then lists the others under identities
    /// they no longer have, and foca, after a renewal, sets no timer until
    /// it hears from the cluster: without `rejoin`'s announces, stuck for
    /// good.
    #[test]
    fn every_node_renewing_at_once_finds_the_others_again() {
        let mut timers = HashMap::new();
        let mut sim = Sim::joined(4, &mut timers);
        // Node 3 stops, and is held down by all.
        sim.crashed[3] = true;
        settle(&mut sim, &mut timers, 10_000, "node 3 down");
        // Back, it tells each of the others that it is down itself, as a
        // node resumed from a stop does: foca heeds that even from a member
        // it holds down, renews, and sets no timer.
        for i in 0..3 {
            use foca::Codec;
            let header = foca::Header { src: member(3), src_incarnation: 0, dst: sim.nodes[i].me().clone(), message: foca::Message::TurnUndead };
            let mut data = Vec::new();
            PostcardCodec.encode_header(&header, &mut data).expect("a header");
            sim.nodes[i].datagram(&data);
            assert_eq!(sim.nodes[i].me().renewal, 1, "node {i} renewed its identity");
            sim.flush(i, &mut timers);
        }
        if let Err(e) = sim.heal(Instant::now(), &mut timers, 0) {
            panic!("not healed after 60 s: {e}");
        }
    }

    #[test]
    fn five_hundred_nodes_join_crash_split_and_agree() {
        const N: usize = 500;
        let mut sim = Sim::new(N);
        let mut timers = HashMap::new();
        // Joins: each node announces itself to an earlier one, as a node
        // does to the member it was told to join through.
        for i in 1..N {
            let seed = (sim.random() % i as u64) as usize;
            sim.nodes[i].announce(member(seed));
            sim.flush(i, &mut timers);
            if i % 50 == 0 {
                sim.run_for(100, &mut timers);
            }
        }
        let took = settle(&mut sim, &mut timers, 60_000, "joins");
        eprintln!("500 joins agreed after {took} ms of virtual time");

        // Crashes: 25 nodes stop at once; the others must notice within a
        // few seconds, however large the cluster.
        for i in (7..N).step_by(20) {
            sim.crashed[i] = true;
        }
        let took = settle(&mut sim, &mut timers, 10_000, "crashes");
        eprintln!("25 crashes agreed after {took} ms");
        assert!(took <= 10_000, "crashes took {took} ms to agree on");

        // A partition: a fifth of the nodes cut off from the rest; each side
        // declares the other down, then the cut heals and all agree again.
        for i in 0..N {
            sim.cut[i] = i % 5 == 1;
        }
        sim.partitioned = true;
        sim.run_for(8_000, &mut timers);
        let sees = sim.nodes[0].members().count() + 1;
        assert!(sees < N - 25 - 90, "node 0 still sees {sees} nodes across the partition");
        sim.partitioned = false;
        let took = settle(&mut sim, &mut timers, 120_000, "the healed partition");
        eprintln!("the healed partition agreed after {took} ms");
    }
}
