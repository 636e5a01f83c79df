//! A state's record of its lazy tables: for each, its address, its
//! template, and which of its entries are made (or were written over).
//!
//! A process that starts as a copy of a template (`vm::template`) starts
//! with the template's records, its tables moved by the copy's distance,
//! and reads them there: it owns a list of its own only once one changes
//! (a lazy table made, an entry made). Most never change (an entity's
//! start makes no lazy entry), so a new process allocates nothing for
//! them; a list of its own was a 96-byte block and ~400 instructions of
//! every entity's fork.

use std::ffi::c_void;

/// A lazy table of a state.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct LazyTable {
    pub(super) table: *const c_void,
    pub(super) template: u8,
    pub(super) made: u64,
}

impl LazyTable {
    /// The address of the table.
    pub(crate) fn address(&self) -> usize {
        self.table as usize
    }

    /// The record of this table in a copy of its state `delta` bytes away.
    pub(crate) fn moved(&self, delta: usize) -> LazyTable {
        LazyTable { table: (self.table as usize).wrapping_add(delta) as *const c_void, ..*self }
    }
}

/// The records of a template's state, as built.
pub(crate) struct Built(Box<[LazyTable]>);

/// The records of a state's lazy tables (as small as a `Vec`: the size of
/// a process's record decides its allocation class).
pub(crate) enum LazyList {
    Own(Vec<LazyTable>),
    /// A template's records, of tables `delta` bytes away from those here.
    Template(&'static Built, usize),
}

impl LazyList {
    pub(crate) const fn new() -> LazyList {
        LazyList::Own(Vec::new())
    }

    /// The records of a copy, `delta` bytes away, of the state whose
    /// records are `built`.
    pub(crate) fn of_copy(built: &'static Built, delta: usize) -> LazyList {
        LazyList::Template(built, delta)
    }

    /// These records, for the copies of this state.
    pub(crate) fn built(&self) -> Built {
        Built(self.iter().collect())
    }

    /// The records, as they are in this state.
    pub(crate) fn iter(&self) -> impl Iterator<Item = LazyTable> + '_ {
        let (records, delta) = match self {
            LazyList::Own(v) => (&v[..], 0),
            LazyList::Template(built, delta) => (&built.0[..], *delta),
        };
        records.iter().map(move |t| t.moved(delta))
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            LazyList::Own(v) => v.len(),
            LazyList::Template(built, _) => built.0.len(),
        }
    }

    /// The template and made entries of the lazy table at `table`.
    pub(super) fn find(&self, table: *const c_void) -> Option<(u8, u64)> {
        self.iter().find(|t| t.table == table).map(|t| (t.template, t.made))
    }

    /// The list of this state's own, made from the template's at the
    /// first change.
    fn own(&mut self) -> &mut Vec<LazyTable> {
        if let LazyList::Template(..) = self {
            *self = LazyList::Own(self.iter().collect());
        }
        match self {
            LazyList::Own(v) => v,
            LazyList::Template(..) => unreachable!("made its own just above"),
        }
    }

    /// Records entry `i` of the lazy table at `table` as made (a change
    /// only when the table is one of this state's and the entry was not).
    pub(super) fn set_made(&mut self, table: *const c_void, i: usize) {
        if self.find(table).is_none_or(|(_, made)| made & (1 << i) != 0) {
            return;
        }
        if let Some(t) = self.own().iter_mut().find(|t| t.table == table) {
            t.made |= 1 << i;
        }
    }

    /// Records a new lazy table of `template` at `table` (a table of a
    /// collected one's address is a new table).
    pub(super) fn add(&mut self, table: *const c_void, template: u8) {
        let own = self.own();
        own.retain(|t| t.table != table);
        own.push(LazyTable { table, template, made: 0 });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_is_as_small_as_a_vec() {
        assert_eq!(std::mem::size_of::<LazyList>(), std::mem::size_of::<Vec<LazyTable>>());
    }

    fn at(a: usize) -> *const c_void {
        a as *const c_void
    }

    #[test]
    fn a_copy_reads_the_templates_records_moved_until_it_changes_one() {
        let built: &'static Built = Box::leak(Box::new(Built(Box::new([
            LazyTable { table: at(0x1000), template: 0, made: 0b1 },
            LazyTable { table: at(0x2000), template: 3, made: 0 },
        ]))));
        let mut copy = LazyList::of_copy(built, 0x10);
        assert_eq!(copy.len(), 2);
        assert_eq!(copy.find(at(0x2010)), Some((3, 0)));
        assert_eq!(copy.find(at(0x2000)), None, "the build's addresses are not the copy's");
        copy.set_made(at(0x1010), 0);
        copy.set_made(at(0x9999), 1);
        assert!(matches!(copy, LazyList::Template(..)), "what changes nothing keeps the template's records");
        copy.set_made(at(0x2010), 5);
        assert!(matches!(copy, LazyList::Own(_)), "a change makes the copy's own list");
        assert_eq!(copy.find(at(0x2010)), Some((3, 1 << 5)));
        assert_eq!(copy.find(at(0x1010)), Some((0, 0b1)));
        assert_eq!(built.0[1].made, 0, "the template's records are untouched");
        copy.add(at(0x1010), 7);
        assert_eq!(copy.find(at(0x1010)), Some((7, 0)), "a new table at a collected one's address");
        assert_eq!(copy.len(), 2);
    }
}
