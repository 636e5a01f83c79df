//! Tuple spaces (Linda): the store behind `synodic.linda`. A space is a
//! state machine behind one lock; processes talk to it by calls that either
//! complete at once or leave a waiter that a later `out` fills, so the same
//! space can be owned by one node and reached by messages when spaces spread
//! over a cluster.
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
//!    more; the first taker gets the tuple itself, and then it is gone;
//! 2. a tuple nobody took is stored, with a sequence number (its age).
//!
//! Matching of `where` predicates is the caller's business (they are Lua
//! functions): the store matches the other fields, hands out candidates, and
//! takes a candidate by sequence number only if it is still there.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::process::Process;
use crate::Message;

/// A tuple field as the store sees it.
#[derive(Clone, Debug)]
pub enum Field {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Box<[u8]>),
    Pid(u64),
    /// A value that never equals an actual: tables, functions, buffers...
    Opaque(Kind),
}

/// The type of a field, as formals test it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Boolean,
    Int,
    Float,
    String,
    Table,
    Buffer,
    Pid,
    Other,
}

/// One field of a template.
#[derive(Clone, Debug)]
pub enum Pattern {
    /// Matches an equal value (Lua's `==` on plain values).
    Actual(Field),
    /// Matches any value of one of these kinds (`number` is int and float).
    Formal(&'static [Kind]),
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

    fn equals(&self, other: &Field) -> bool {
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
            Pattern::Formal(kinds) => kinds.contains(&field.kind()),
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
    Str(Box<[u8]>),
    Pid(u64),
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

/// What a blocked caller is waiting for, and where its tuple lands.
pub struct Waiting {
    proc: &'static Process,
    template: Vec<Pattern>,
    mode: Mode,
    slot: Mutex<Option<Tuple>>,
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

impl Waiting {
    /// The tuple handed over, if any (for `Notify`, a copy of the arrival).
    pub fn poll(&self) -> Option<Tuple> {
        self.slot.lock().take()
    }
}

#[derive(Default)]
struct Store {
    arities: HashMap<usize, Arity, Fast>,
    waiters: VecDeque<Arc<Waiting>>,
    next_seq: u64,
    len: usize,
}

#[derive(Default)]
pub struct Space {
    store: Mutex<Store>,
}

impl Space {
    /// Adds a tuple (after offering it to blocked waiters).
    pub fn out(&self, tuple: Tuple, wake: impl Fn(&'static Process)) {
        let mut woken = Vec::new();
        {
            let mut st = self.store.lock();
            let mut taken = false;
            let mut i = 0;
            while i < st.waiters.len() {
                let w = &st.waiters[i];
                if !matches(&w.template, &tuple) {
                    i += 1;
                    continue;
                }
                let w = st.waiters.remove(i).expect("index in range");
                *w.slot.lock() = Some(tuple.clone());
                woken.push(w.proc);
                if w.mode == Mode::Take {
                    taken = true;
                    break;
                }
            }
            if !taken {
                let seq = st.next_seq;
                st.next_seq += 1;
                st.len += 1;
                let arity = st.arities.entry(tuple.fields.len()).or_default();
                arity.class_of(&tuple.fields[0]).push_back(Entry { seq, tuple });
            }
        }
        for p in woken {
            wake(p);
        }
    }

    /// The oldest match, removed when `take`.
    pub fn find(&self, template: &[Pattern], take: bool) -> Option<Tuple> {
        self.store.lock().find(template, take)
    }

    /// The oldest match now, or a waiter that a later `out` fills.
    pub fn find_or_wait(&self, template: Vec<Pattern>, mode: Mode, proc: &'static Process) -> Result<Tuple, Arc<Waiting>> {
        let mut st = self.store.lock();
        if mode != Mode::Notify {
            if let Some(t) = st.find(&template, mode == Mode::Take) {
                return Ok(t);
            }
        }
        let w = Arc::new(Waiting { proc, template, mode, slot: Mutex::new(None) });
        st.waiters.push_back(w.clone());
        Err(w)
    }

    /// Withdraws a waiter (after a timeout); returns what it had been handed meanwhile.
    pub fn cancel(&self, w: &Arc<Waiting>) -> Option<Tuple> {
        let mut st = self.store.lock();
        st.waiters.retain(|x| !Arc::ptr_eq(x, w));
        w.poll()
    }

    /// Every match, oldest first, with its sequence number (for `where` templates).
    pub fn candidates(&self, template: &[Pattern]) -> Vec<(u64, Tuple)> {
        let st = self.store.lock();
        let mut found: Vec<(u64, Tuple)> = match st.arities.get(&template.len()) {
            None => Vec::new(),
            Some(a) => a.classes(template).flat_map(|(_, c)| c).filter(|e| matches(template, &e.tuple)).map(|e| (e.seq, e.tuple.clone())).collect(),
        };
        found.sort_by_key(|(seq, _)| *seq);
        found
    }

    /// Removes the tuple with this sequence number, if it is still there.
    pub fn take_exact(&self, seq: u64, arity: usize) -> Option<Tuple> {
        let mut guard = self.store.lock();
        let st = &mut *guard;
        let a = st.arities.get_mut(&arity)?;
        let taken = a.keyed.values_mut().chain(std::iter::once(&mut a.unkeyed)).find_map(|class| {
            let i = class.iter().position(|e| e.seq == seq)?;
            class.remove(i).map(|e| e.tuple)
        });
        a.prune();
        st.len -= taken.is_some() as usize;
        taken
    }

    pub fn count(&self, template: &[Pattern]) -> usize {
        let st = self.store.lock();
        st.arities.get(&template.len()).map_or(0, |a| a.classes(template).flat_map(|(_, c)| c).filter(|e| matches(template, &e.tuple)).count())
    }

    /// Removes every match; oldest first.
    pub fn take_all(&self, template: &[Pattern]) -> Vec<Tuple> {
        let mut st = self.store.lock();
        let mut taken: Vec<Entry> = Vec::new();
        if let Some(a) = st.arities.get_mut(&template.len()) {
            for class in a.keyed.values_mut().chain(std::iter::once(&mut a.unkeyed)) {
                let (hit, keep): (VecDeque<Entry>, VecDeque<Entry>) = class.drain(..).partition(|e| matches(template, &e.tuple));
                *class = keep;
                taken.extend(hit);
            }
            a.prune();
        }
        st.len -= taken.len();
        taken.sort_by_key(|e| e.seq);
        taken.into_iter().map(|e| e.tuple).collect()
    }

    /// Empties the space (waiters stay).
    pub fn clear(&self) {
        let mut st = self.store.lock();
        st.arities.clear();
        st.len = 0;
    }

    /// Tuples held.
    pub fn len(&self) -> usize {
        self.store.lock().len
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Store {
    fn find(&mut self, template: &[Pattern], take: bool) -> Option<Tuple> {
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
            return Some(class[i].tuple.clone());
        }
        let tuple = class.remove(i).map(|e| e.tuple);
        arity.prune();
        self.len -= 1;
        tuple
    }
}

/// All spaces of a node: named ones and private ones, by id.
#[derive(Default)]
pub struct Spaces {
    by_id: Mutex<HashMap<u64, Arc<Space>>>,
    by_name: Mutex<HashMap<Box<[u8]>, u64>>,
    next_id: AtomicU64,
}

impl Spaces {
    /// The space with this name, created on first use.
    pub fn open(&self, name: &[u8]) -> u64 {
        let mut names = self.by_name.lock();
        if let Some(&id) = names.get(name) {
            return id;
        }
        let id = self.create();
        names.insert(name.into(), id);
        id
    }

    /// A fresh private space.
    pub fn create(&self) -> u64 {
        let id = self.next_id.fetch_add(1, Relaxed) + 1;
        self.by_id.lock().insert(id, Arc::new(Space::default()));
        id
    }

    pub fn get(&self, id: u64) -> Option<Arc<Space>> {
        self.by_id.lock().get(&id).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tuple(fields: Vec<Field>) -> Tuple {
        Tuple { fields, values: Message::from_slice(&[]) }
    }

    fn s(x: &str) -> Field {
        Field::Str(x.as_bytes().into())
    }

    #[test]
    fn oldest_match_first_across_classes() {
        let sp = Space::default();
        sp.out(tuple(vec![s("b"), Field::Int(1)]), |_| {});
        sp.out(tuple(vec![s("a"), Field::Int(2)]), |_| {});
        sp.out(tuple(vec![s("a"), Field::Float(3.5)]), |_| {});
        let any_first = [Pattern::Formal(&[Kind::String]), Pattern::Any];
        assert!(matches!(sp.find(&any_first, true).unwrap().fields[1], Field::Int(1)), "the oldest of all classes");
        let int_second = [Pattern::Actual(s("a")), Pattern::Formal(&[Kind::Int])];
        assert!(matches!(sp.find(&int_second, false).unwrap().fields[1], Field::Int(2)));
        assert_eq!(sp.count(&[Pattern::Any, Pattern::Any]), 2);
        assert!(sp.find(&[Pattern::Any], true).is_none(), "arity must match");
    }

    #[test]
    fn numbers_match_across_int_and_float() {
        let sp = Space::default();
        sp.out(tuple(vec![Field::Float(1.0), s("x")]), |_| {});
        assert!(sp.find(&[Pattern::Actual(Field::Int(1)), Pattern::Any], false).is_some());
        assert!(sp.find(&[Pattern::Formal(&[Kind::Int]), Pattern::Any], false).is_none(), "1.0 is a float");
        assert!(sp.find(&[Pattern::Actual(Field::Float(1.0)), Pattern::Never], false).is_none());
    }

    #[test]
    fn distinct_first_fields_do_not_pile_up() {
        let sp = Space::default();
        for i in 0..1000 {
            sp.out(tuple(vec![Field::Int(i)]), |_| {});
            assert!(sp.find(&[Pattern::Actual(Field::Int(i))], true).is_some());
        }
        let st = sp.store.lock();
        assert!(st.arities[&1].keyed.len() <= KEEP_EMPTY_CLASSES + 1);
    }

    #[test]
    fn take_all_is_oldest_first_and_clear_empties() {
        let sp = Space::default();
        for i in 0..5 {
            sp.out(tuple(vec![Field::Int(i % 2), Field::Int(i)]), |_| {});
        }
        let all = sp.take_all(&[Pattern::Any, Pattern::Any]);
        let order: Vec<i64> = all.iter().map(|t| if let Field::Int(i) = t.fields[1] { i } else { -1 }).collect();
        assert_eq!(order, vec![0, 1, 2, 3, 4]);
        assert!(sp.is_empty());
        sp.out(tuple(vec![Field::Int(1)]), |_| {});
        sp.clear();
        assert_eq!(sp.len(), 0);
    }
}
