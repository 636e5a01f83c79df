//! Tuple spaces (Linda): the store behind `synodic.linda`. [`Store`] is a
//! state machine: calls either complete at once or queue a [`Waiter`] that a
//! later `out` serves, and it returns its decisions as deliveries instead of
//! touching processes, so the same store can be owned by one node and
//! reached by messages when spaces spread over a cluster. [`Space`] is a
//! store behind a lock, carrying out deliveries before the lock is released.
//!
//! Tuples are indexed like C-Linda's tuple classes: by arity, then by the
//! first field when it is a plain value. A template whose first field is an
//! actual looks at one class; one whose first field is a formal scans the
//! classes of its arity for the oldest match.
//!
//! What `out` does, in order:
//!
//! 1. it offers the tuple to the blocked waiters, oldest first, skipping
//!    those it cannot satisfy: a reader gets a copy and goes on waiting no
//!    more; a `where` waiter is told to look again; the first taker gets the
//!    tuple itself, and then it is gone;
//! 2. a tuple nobody took is stored, with a sequence number (its age).
//!
//! A waiter that can no longer wait withdraws (`cancel`), and learns whether
//! it was still queued; if not, its delivery was made.
//!
//! Matching of `where` predicates is the caller's business (they are Lua
//! functions): the store matches the other fields, hands out candidates, and
//! takes a candidate by sequence number only if it is still there.

mod view;

pub use view::{shown, Ops, WaiterView};

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use crate::waiting::{Completion, Delivery, Waiter};
use crate::Message;

/// A string field's bytes: shared, so that indexing a tuple by its first
/// field copies no string.
pub type Text = Arc<Box<[u8]>>;

/// A tuple field as the store sees it.
#[derive(Clone, Debug)]
pub enum Field {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Text),
    Pid(u64),
    /// A value that never equals an actual: tables, functions, buffers...
    Opaque(Kind),
}

/// The type of a field, as formals test it.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Boolean = 0,
    Int = 1,
    Float = 2,
    String = 3,
    Table = 4,
    Buffer = 5,
    Pid = 6,
    Other = 7,
}

impl Kind {
    const ALL: [Kind; 8] = [Kind::Boolean, Kind::Int, Kind::Float, Kind::String, Kind::Table, Kind::Buffer, Kind::Pid, Kind::Other];

    /// The kind numbered `n` (as `Kind as u8` numbers them).
    pub fn from_u8(n: u8) -> Option<Kind> {
        Kind::ALL.get(n as usize).copied()
    }
}

/// A set of kinds, one bit each: what a formal accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kinds(pub u8);

impl Kinds {
    pub const fn of(kinds: &[Kind]) -> Kinds {
        let mut bits = 0;
        let mut i = 0;
        while i < kinds.len() {
            bits |= 1 << kinds[i] as u8;
            i += 1;
        }
        Kinds(bits)
    }

    pub fn contains(self, kind: Kind) -> bool {
        self.0 & (1 << kind as u8) != 0
    }
}

/// One field of a template.
#[derive(Clone, Debug)]
pub enum Pattern {
    /// Matches an equal value (Lua's `==` on plain values).
    Actual(Field),
    /// Matches any value of one of these kinds (`number` is int and float).
    Formal(Kinds),
    /// Matches anything; used for `any` and, here, for `where` fields.
    Any,
    /// Matches nothing (a table given as an actual).
    Never,
}

impl Field {
    pub fn kind(&self) -> Kind {
        match self {
            Field::Bool(_) => Kind::Boolean,
            Field::Int(_) => Kind::Int,
            Field::Float(_) => Kind::Float,
            Field::Str(_) => Kind::String,
            Field::Pid(_) => Kind::Pid,
            Field::Opaque(k) => *k,
        }
    }

    /// Lua's `==` between two plain values (integers and floats compare as numbers).
    pub fn equals(&self, other: &Field) -> bool {
        match (self, other) {
            (Field::Bool(a), Field::Bool(b)) => a == b,
            (Field::Int(a), Field::Int(b)) => a == b,
            (Field::Float(a), Field::Float(b)) => a == b,
            (Field::Int(i), Field::Float(f)) | (Field::Float(f), Field::Int(i)) => (*i as f64) == *f && f.fract() == 0.0 && *f as i64 == *i,
            (Field::Str(a), Field::Str(b)) => a == b,
            (Field::Pid(a), Field::Pid(b)) => a == b,
            _ => false,
        }
    }

    /// The class key of a first field, when it has one.
    fn key(&self) -> Option<Key> {
        Some(match self {
            Field::Bool(b) => Key::Bool(*b),
            Field::Int(i) => Key::Int(*i),
            Field::Float(f) if f.fract() == 0.0 && *f >= i64::MIN as f64 && *f < i64::MAX as f64 => Key::Int(*f as i64),
            Field::Float(f) if !f.is_nan() => Key::Float(f.to_bits()),
            Field::Str(s) => Key::Str(s.clone()),
            Field::Pid(p) => Key::Pid(*p),
            _ => return None,
        })
    }
}

impl Pattern {
    fn matches(&self, field: &Field) -> bool {
        match self {
            Pattern::Actual(a) => a.equals(field),
            Pattern::Formal(kinds) => kinds.contains(field.kind()),
            Pattern::Any => true,
            Pattern::Never => false,
        }
    }
}

type Fast = crate::hash::FastBuild;

/// Empty classes are kept (a stream that empties and refills is common),
/// until an arity has more than this many keys.
const KEEP_EMPTY_CLASSES: usize = 64;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Key {
    Bool(bool),
    Int(i64),
    Float(u64),
    Str(Text),
    Pid(u64),
}

impl Key {
    fn field(&self) -> Field {
        match self {
            Key::Bool(b) => Field::Bool(*b),
            Key::Int(i) => Field::Int(*i),
            Key::Float(bits) => Field::Float(f64::from_bits(*bits)),
            Key::Str(s) => Field::Str(s.clone()),
            Key::Pid(p) => Field::Pid(*p),
        }
    }
}

/// A tuple: its fields for matching, and its values encoded for delivery.
#[derive(Clone, Debug)]
pub struct Tuple {
    pub fields: Vec<Field>,
    pub values: Message,
}

fn matches(template: &[Pattern], tuple: &Tuple) -> bool {
    template.len() == tuple.fields.len() && template.iter().zip(&tuple.fields).all(|(p, f)| p.matches(f))
}

struct Entry {
    seq: u64,
    tuple: Tuple,
}

/// The tuples of one arity.
#[derive(Default)]
struct Arity {
    keyed: HashMap<Key, VecDeque<Entry>, Fast>,
    unkeyed: VecDeque<Entry>,
}

impl Arity {
    fn class_of(&mut self, first: &Field) -> &mut VecDeque<Entry> {
        match first.key() {
            Some(k) => self.keyed.entry(k).or_default(),
            None => &mut self.unkeyed,
        }
    }

    /// The classes a template can match in, each with its key (`None`: unkeyed).
    fn classes<'a>(&'a self, template: &[Pattern]) -> Box<dyn Iterator<Item = (Option<&'a Key>, &'a VecDeque<Entry>)> + 'a> {
        let unkeyed = std::iter::once((None, &self.unkeyed));
        match template.first().and_then(|p| if let Pattern::Actual(f) = p { Some(f.key()) } else { None }) {
            Some(Some(k)) => Box::new(self.keyed.get_key_value(&k).map(|(k, c)| (Some(k), c)).into_iter()),
            Some(None) => Box::new(unkeyed),
            None => Box::new(self.keyed.iter().map(|(k, c)| (Some(k), c)).chain(unkeyed)),
        }
    }

    /// Drops empty classes once there are many keys, so distinct first
    /// fields do not pile up.
    fn prune(&mut self) {
        if self.keyed.len() > KEEP_EMPTY_CLASSES {
            self.keyed.retain(|_, class| !class.is_empty());
        }
    }

    fn class_mut(&mut self, key: Option<&Key>) -> Option<&mut VecDeque<Entry>> {
        match key {
            Some(k) => self.keyed.get_mut(k),
            None => Some(&mut self.unkeyed),
        }
    }
}

/// A blocked caller: who, what it waits for, and how.
struct Waiting {
    waiter: Waiter,
    template: Vec<Pattern>,
    mode: Mode,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
    /// `in`: the tuple is removed and handed over.
    Take,
    /// `rd`: a copy is handed over.
    Read,
    /// Only told that a tuple matching the template arrived (for `where` templates).
    Notify,
}

/// One tuple space, as a state machine.
#[derive(Default)]
pub struct Store {
    arities: HashMap<usize, Arity, Fast>,
    waiters: VecDeque<Waiting>,
    next_seq: u64,
    len: usize,
    /// What the tuples held take (see [`Tuple::weight`]).
    bytes: u64,
    /// The space now lives on another node (a partition healed, and the
    /// other side's space of the same name won): it holds nothing more.
    moved: bool,
    /// Operations done, for tools (the tuple scope's rates).
    ops: Ops,
}

impl Tuple {
    /// The bytes a tuple takes in a space, as the node's limit counts them:
    /// its values and what holding it costs besides.
    pub fn weight(&self) -> u64 {
        (self.values.size() + self.fields.len() * std::mem::size_of::<Field>() + 64) as u64
    }
}

impl Store {
    /// Adds a tuple: returns the deliveries to waiters it satisfied (steps 1 and 2).
    pub fn out(&mut self, tuple: Tuple) -> Vec<Delivery> {
        self.ops.outs += 1;
        let mut delivered = Vec::new();
        let mut i = 0;
        while i < self.waiters.len() {
            if !matches(&self.waiters[i].template, &tuple) {
                i += 1;
                continue;
            }
            let w = self.waiters.remove(i).expect("index in range");
            match w.mode {
                Mode::Notify => delivered.push((w.waiter, Completion::Notified)),
                Mode::Read => {
                    self.ops.reads += 1;
                    delivered.push((w.waiter, Completion::Value(tuple.values.clone())));
                }
                Mode::Take => {
                    self.ops.takes += 1;
                    delivered.push((w.waiter, Completion::Value(tuple.values)));
                    return delivered;
                }
            }
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.len += 1;
        self.bytes += tuple.weight();
        let arity = self.arities.entry(tuple.fields.len()).or_default();
        arity.class_of(&tuple.fields[0]).push_back(Entry { seq, tuple });
        delivered
    }

    /// The oldest match now, or the waiter queued for a later `out`
    /// (`None`). A `Notify` waiter is always queued.
    pub fn find_or_wait(&mut self, template: Vec<Pattern>, mode: Mode, waiter: Waiter) -> Option<Tuple> {
        if mode != Mode::Notify {
            if let Some(t) = self.find(&template, mode == Mode::Take) {
                return Some(t);
            }
        }
        self.waiters.push_back(Waiting { waiter, template, mode });
        None
    }

    /// Withdraws a waiter: true when it was still queued.
    pub fn cancel(&mut self, waiter: Waiter) -> bool {
        let before = self.waiters.len();
        self.waiters.retain(|w| w.waiter != waiter);
        before != self.waiters.len()
    }

    /// Every match, oldest first, with its sequence number (for `where` templates).
    pub fn candidates(&self, template: &[Pattern]) -> Vec<(u64, Tuple)> {
        let mut found: Vec<(u64, Tuple)> = match self.arities.get(&template.len()) {
            None => Vec::new(),
            Some(a) => a.classes(template).flat_map(|(_, c)| c).filter(|e| matches(template, &e.tuple)).map(|e| (e.seq, e.tuple.clone())).collect(),
        };
        found.sort_by_key(|(seq, _)| *seq);
        found
    }

    /// Removes the tuple with this sequence number, if it is still there.
    pub fn take_exact(&mut self, seq: u64, arity: usize) -> Option<Tuple> {
        let a = self.arities.get_mut(&arity)?;
        let taken = a.keyed.values_mut().chain(std::iter::once(&mut a.unkeyed)).find_map(|class| {
            let i = class.iter().position(|e| e.seq == seq)?;
            class.remove(i).map(|e| e.tuple)
        });
        a.prune();
        self.ops.takes += taken.is_some() as u64;
        self.len -= taken.is_some() as usize;
        self.bytes -= taken.as_ref().map_or(0, Tuple::weight);
        taken
    }

    pub fn count(&self, template: &[Pattern]) -> usize {
        self.arities.get(&template.len()).map_or(0, |a| a.classes(template).flat_map(|(_, c)| c).filter(|e| matches(template, &e.tuple)).count())
    }

    /// Removes every match, oldest first; but no more than fit in `limit`
    /// bytes (at least one), the others staying for another call.
    pub fn take_all(&mut self, template: &[Pattern], limit: usize) -> Vec<Tuple> {
        let Some(a) = self.arities.get_mut(&template.len()) else { return Vec::new() };
        let mut hits: Vec<(u64, usize)> = a.keyed.values().chain(std::iter::once(&a.unkeyed)).flatten().filter(|e| matches(template, &e.tuple)).map(|e| (e.seq, e.tuple.values.size())).collect();
        hits.sort_unstable();
        let (mut total, mut last) = (0usize, None);
        for (seq, size) in hits {
            total = total.saturating_add(size);
            if total > limit && last.is_some() {
                break;
            }
            last = Some(seq);
        }
        let Some(last) = last else { return Vec::new() };
        let mut taken: Vec<Entry> = Vec::new();
        for class in a.keyed.values_mut().chain(std::iter::once(&mut a.unkeyed)) {
            let (hit, keep): (VecDeque<Entry>, VecDeque<Entry>) = class.drain(..).partition(|e| e.seq <= last && matches(template, &e.tuple));
            *class = keep;
            taken.extend(hit);
        }
        a.prune();
        self.len -= taken.len();
        self.ops.takes += taken.len() as u64;
        self.bytes -= taken.iter().map(|e| e.tuple.weight()).sum::<u64>();
        taken.sort_by_key(|e| e.seq);
        taken.into_iter().map(|e| e.tuple).collect()
    }

    /// Withdraws every waiter of the node with this alias (it was lost):
    /// nothing is handed to a process that is gone.
    pub fn forget_node(&mut self, alias: u16) {
        self.waiters.retain(|w| w.waiter.pid.node() != alias);
    }

    /// Empties the space (waiters stay).
    pub fn clear(&mut self) {
        self.arities.clear();
        self.len = 0;
        self.bytes = 0;
    }

    /// Tuples held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// What the tuples held take, in bytes (see [`Tuple::weight`]).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Whether the space has moved to another node (see [`Store::move_out`]).
    pub fn is_moved(&self) -> bool {
        self.moved
    }

    /// The space moves to another node: every tuple, oldest first, and
    /// every waiter come out, and it takes nothing more.
    pub fn move_out(&mut self) -> (Vec<Tuple>, Vec<Waiter>) {
        self.moved = true;
        let mut all: Vec<Entry> = self.arities.drain().flat_map(|(_, a)| a.keyed.into_values().flatten().chain(a.unkeyed)).collect();
        all.sort_by_key(|e| e.seq);
        (self.len, self.bytes) = (0, 0);
        (all.into_iter().map(|e| e.tuple).collect(), self.waiters.drain(..).map(|w| w.waiter).collect())
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Store {
    /// The oldest match, removed when `take`.
    pub fn find(&mut self, template: &[Pattern], take: bool) -> Option<Tuple> {
        let arity = self.arities.get_mut(&template.len())?;
        // The oldest match over the classes the template can match in.
        let mut best: Option<(u64, Option<Key>, usize)> = None;
        for (key, class) in arity.classes(template) {
            if let Some(i) = class.iter().position(|e| matches(template, &e.tuple)) {
                let seq = class[i].seq;
                if best.as_ref().is_none_or(|(s, _, _)| seq < *s) {
                    best = Some((seq, key.cloned(), i));
                }
            }
        }
        let (_, key, i) = best?;
        let class = arity.class_mut(key.as_ref())?;
        if !take {
            self.ops.reads += 1;
            return Some(class[i].tuple.clone());
        }
        let tuple = class.remove(i).map(|e| e.tuple);
        arity.prune();
        self.ops.takes += 1;
        self.len -= 1;
        self.bytes -= tuple.as_ref().map_or(0, Tuple::weight);
        tuple
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tuple(fields: Vec<Field>) -> Tuple {
        Tuple { fields, values: Message::from_slice(&[]) }
    }

    fn s(x: &str) -> Field {
        Field::Str(Arc::new(x.as_bytes().into()))
    }

    #[test]
    fn oldest_match_first_across_classes() {
        let mut sp = Store::default();
        sp.out(tuple(vec![s("b"), Field::Int(1)]));
        sp.out(tuple(vec![s("a"), Field::Int(2)]));
        sp.out(tuple(vec![s("a"), Field::Float(3.5)]));
        let any_first = [Pattern::Formal(Kinds::of(&[Kind::String])), Pattern::Any];
        assert!(matches!(sp.find(&any_first, true).unwrap().fields[1], Field::Int(1)), "the oldest of all classes");
        let int_second = [Pattern::Actual(s("a")), Pattern::Formal(Kinds::of(&[Kind::Int]))];
        assert!(matches!(sp.find(&int_second, false).unwrap().fields[1], Field::Int(2)));
        assert_eq!(sp.count(&[Pattern::Any, Pattern::Any]), 2);
        assert!(sp.find(&[Pattern::Any], true).is_none(), "arity must match");
    }

    #[test]
    fn numbers_match_across_int_and_float() {
        let mut sp = Store::default();
        sp.out(tuple(vec![Field::Float(1.0), s("x")]));
        assert!(sp.find(&[Pattern::Actual(Field::Int(1)), Pattern::Any], false).is_some());
        assert!(sp.find(&[Pattern::Formal(Kinds::of(&[Kind::Int])), Pattern::Any], false).is_none(), "1.0 is a float");
        assert!(sp.find(&[Pattern::Actual(Field::Float(1.0)), Pattern::Never], false).is_none());
    }

    #[test]
    fn distinct_first_fields_do_not_pile_up() {
        let mut sp = Store::default();
        for i in 0..1000 {
            sp.out(tuple(vec![Field::Int(i)]));
            assert!(sp.find(&[Pattern::Actual(Field::Int(i))], true).is_some());
        }
        assert!(sp.arities[&1].keyed.len() <= KEEP_EMPTY_CLASSES + 1);
    }

    #[test]
    fn take_all_is_oldest_first_and_clear_empties() {
        let mut sp = Store::default();
        for i in 0..5 {
            sp.out(tuple(vec![Field::Int(i % 2), Field::Int(i)]));
        }
        let all = sp.take_all(&[Pattern::Any, Pattern::Any], usize::MAX);
        let order: Vec<i64> = all.iter().map(|t| if let Field::Int(i) = t.fields[1] { i } else { -1 }).collect();
        assert_eq!(order, vec![0, 1, 2, 3, 4]);
        assert!(sp.is_empty());
        sp.out(tuple(vec![Field::Int(1)]));
        sp.clear();
        assert_eq!(sp.len(), 0);
    }

    fn waiter(n: u32) -> Waiter {
        Waiter { pid: crate::Pid::new(0, n, 0), ticket: 1 }
    }

    #[test]
    fn waiters_are_served_in_arrival_order_readers_before_the_taker() {
        let mut sp = Store::default();
        let int = [Pattern::Formal(Kinds::of(&[Kind::Int]))];
        assert!(sp.find_or_wait(int.to_vec(), Mode::Read, waiter(1)).is_none());
        assert!(sp.find_or_wait(int.to_vec(), Mode::Notify, waiter(2)).is_none());
        assert!(sp.find_or_wait(int.to_vec(), Mode::Take, waiter(3)).is_none());
        assert!(sp.find_or_wait(int.to_vec(), Mode::Take, waiter(4)).is_none());
        let t = tuple(vec![Field::Int(5)]);
        let delivered = sp.out(t.clone());
        let who: Vec<(u32, bool)> = delivered.iter().map(|(w, c)| (w.pid.index(), matches!(c, Completion::Value(_)))).collect();
        assert_eq!(who, vec![(1, true), (2, false), (3, true)], "a reader, a notice, then the first taker; the second taker waits");
        assert!(sp.is_empty(), "the taker has it");
        assert_eq!(sp.out(t).len(), 1, "the second taker is served by the next tuple");
        assert!(sp.is_empty());
    }

    #[test]
    fn a_cancelled_waiter_is_never_served_and_a_served_one_knows() {
        let mut sp = Store::default();
        let any = [Pattern::Any];
        sp.find_or_wait(any.to_vec(), Mode::Take, waiter(1));
        assert!(sp.cancel(waiter(1)), "it was queued");
        assert!(sp.out(tuple(vec![Field::Int(1)])).is_empty(), "nobody waits any more: the tuple is stored");
        assert_eq!(sp.len(), 1);
        sp.find_or_wait([Pattern::Actual(Field::Int(2))].to_vec(), Mode::Take, waiter(2));
        assert_eq!(sp.out(tuple(vec![Field::Int(2)])).len(), 1);
        assert!(!sp.cancel(waiter(2)), "served: its tuple was delivered, nothing to give back");
    }

    #[test]
    fn classes_list_each_class_once_and_a_lost_nodes_waiters_go() {
        let mut sp = Store::default();
        sp.out(tuple(vec![s("b"), Field::Int(1)]));
        sp.out(tuple(vec![s("a"), Field::Int(2)]));
        sp.out(tuple(vec![s("b"), Field::Int(3)]));
        sp.out(tuple(vec![Field::Float(0.5)]));
        let classes: Vec<(usize, String, usize)> = sp.classes().into_iter().map(|(a, k, n)| (a, format!("{k:?}"), n)).collect();
        assert_eq!(classes.len(), 3);
        assert_eq!((classes[1].0, classes[1].2), (2, 2), "class b: two tuples, listed first (oldest)");
        assert!(classes[1].1.contains("Str"));
        let far = Waiter { pid: crate::Pid::new(3, 1, 0), ticket: 1 };
        sp.find_or_wait(vec![Pattern::Actual(Field::Int(9))], Mode::Take, far);
        sp.find_or_wait(vec![Pattern::Actual(Field::Int(9))], Mode::Take, waiter(1));
        sp.forget_node(3);
        assert_eq!(sp.waiting(), 1);
        let d = sp.out(tuple(vec![Field::Int(9)]));
        assert_eq!(d[0].0, waiter(1), "the tuple goes to a waiter still there");
    }
}
