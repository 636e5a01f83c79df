//! Tuple-space methods on a space that lives on another node: the caller's
//! side of `synodic_core::linda_remote`. Each method sends its space's node
//! a request and waits, as a store wait (`wait`), for the one answer; so a
//! remote `take` is one round trip, and a blocked one is queued at the
//! space among the local waiters, in arrival order.
//!
//! A timed form whose deadline passes sends `Cancel` and still waits for
//! the answer: `Nothing` if the wait was withdrawn in time, or the tuple
//! that was already on its way (it is returned, never lost).
//!
//! A `where` template is matched here, where its predicates are: the space
//! sends the candidates (the tuples matching the other fields, each with
//! its sequence number), the first whose predicates hold is taken by its
//! number (`TakeExact`), the next one tried if another caller took it
//! first; when none holds, the caller asks again for candidates newer than
//! the newest it saw, and with `WAIT` is told (`Notified`) when one may
//! have come. On the stack, above the arguments: a result list (filled by
//! `take_all`), then the candidate list being looked through.

use std::cell::Cell;
use std::ffi::c_int;

use mlua_sys as ffi;
use synodic_core::dist::spaces::Spaces;
use synodic_core::linda::Pattern;
use synodic_core::linda_remote::{shape_of, Op, Request, Target, TAKE, WAIT};
use synodic_core::spaces::{Home, SpaceRef};
use synodic_core::waiting::{Completion, Waiter};
use synodic_core::{wire, Message};

use crate::vm::codec;
use crate::vm::ctx::ctx;
use crate::api::deferred::deliver;
use crate::api::linda::{check, seconds, template, tuple, Wheres};
use crate::vm::util::*;
use crate::vm::wait::{self, Poll};

mod candidates;

use candidates::{again, ask_candidates, scan};

/// What the answers of a method's requests are made into.
#[derive(Clone, Copy, PartialEq)]
enum Then {
    /// No values (`out`, `clear`).
    Nothing,
    /// The tuple's values, or none (`take`, `rd`, `inp`, `rdp`, timed forms).
    Tuple,
    Count,
    /// The list of lists (`take_all`).
    List,
    /// A `where` template, for this purpose.
    Where(Purpose),
}

#[derive(Clone, Copy, PartialEq)]
enum Purpose {
    /// The first match (taken when `take`); blocking unless a probe.
    Find { take: bool, blocking: bool },
    Count,
    TakeAll,
}

/// A method's exchange with the space's node, kept across yields.
struct Asked {
    space: SpaceRef,
    alias: u16,
    fname: &'static str,
    then: Then,
    /// The template's shape and its actual fields' values.
    shape: Vec<u8>,
    actuals: Message,
    /// The request in flight asked to wait (so a deadline cancels it).
    waits: bool,
    /// The method's arguments (to run it again elsewhere: `Moved`).
    args: c_int,
    cancelled: Cell<bool>,
    /// `where`: the stack top below the result and candidate lists; the
    /// template's `where` formals; candidates from this sequence number on;
    /// the next candidate to look at (0: none are here); the arity of the
    /// one being taken; matches counted.
    base: c_int,
    wheres: Wheres,
    after: u64,
    next: i64,
    arity: usize,
    counted: u64,
}

impl wait::Queue for Asked {
    unsafe fn withdraw(&self, L: *mut ffi::lua_State, waiter: Waiter) {
        if self.waits && !self.cancelled.replace(true) {
            let cancel = self.request(Op::Cancel, 0, 0, &self.shape, &Message::no_values());
            if let Ok(msg) = cancel {
                // SAFETY: `L` is the running process's state (the trait's
                // contract), its context entered.
                let rt = unsafe { ctx(L) }.rt();
                rt.service::<Spaces>().linda(rt, self.alias, waiter, msg, false);
            }
        }
    }
    fn as_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}

impl Asked {
    /// The exchange of method `fname` on `space`, of the node `alias`, with
    /// no template yet.
    fn new(space: &SpaceRef, alias: u16, fname: &'static str, then: Then) -> Box<Asked> {
        Box::new(Asked {
            space: space.clone(),
            alias,
            fname,
            then,
            shape: shape_of(&[Pattern::Any]).0,
            actuals: Message::no_values(),
            waits: false,
            args: crate::api::linda::args(),
            cancelled: Cell::new(false),
            base: 0,
            wheres: Vec::new(),
            after: 0,
            next: 0,
            arity: 0,
            counted: 0,
        })
    }

    /// A request on this space: the header before `values`.
    fn request(&self, op: Op, flags: u8, number: u64, shape: &[u8], values: &Message) -> Result<Message, String> {
        let target = match (&self.space.name, &self.space.home) {
            (Some(name), _) => Target::Named(name),
            (None, Home::There(_, serial)) => Target::Private(*serial),
            (None, _) => return Err(self.lost()),
        };
        let header = Request { op, flags, target, number, shape }.encode();
        let bytes = wire::prepend_str(&header, values).map_err(|e| format!("{}: {e}", self.fname))?;
        Ok(Message::with_attachments(bytes, values.attachments().to_vec()))
    }

    fn lost(&self) -> String {
        format!("{}: space lost: {}", self.fname, self.space.describe())
    }
}

/// Raises `why`, the exchange dropped first (nothing owned may live across
/// `lua_error`).
///
/// The functions below are `unsafe` with one contract: `L` is the running
/// thread of a process in a tuple-space method on another node's space (or
/// its continuation), its context entered, the handle at 1 and the
/// method's arguments above it (then, for a `where` template, the result
/// and candidate lists at `base + 1` and `base + 2`). Their notes say "the
/// contract" for that.
unsafe fn fail(L: *mut ffi::lua_State, asked: Box<Asked>, why: String) -> c_int {
    drop(asked);
    // SAFETY: the contract; `raise` drops `why` before unwinding.
    unsafe { raise(L, why) }
}

/// The method's results: the decoded `values`.
unsafe fn done(L: *mut ffi::lua_State, asked: Box<Asked>, values: Message) -> c_int {
    let fname = asked.fname;
    drop(asked);
    // SAFETY: the contract; `values` moves into `results`.
    unsafe { results(L, values, fname) }
}

/// Refuses a wait for another node where the caller cannot yield.
unsafe fn yieldable(L: *mut ffi::lua_State, fname: &str) -> Result<(), String> {
    // SAFETY: the contract.
    match unsafe { ffi::lua_isyieldable(L) } {
        0 => Err(format!("{fname}: cannot wait for another node here (inside a call that cannot yield, such as a metamethod called from C)")),
        _ => Ok(()),
    }
}

/// Sends `asked`'s request `op` and blocks until its answer; the waiting
/// `Asked` is the process's current wait.
unsafe fn ask(L: *mut ffi::lua_State, mut asked: Box<Asked>, op: Op, flags: u8, number: u64, values: Option<Message>) -> c_int {
    let shape = match op {
        // Taken by number: the template only gives the arity.
        Op::TakeExact => shape_of(&vec![Pattern::Any; asked.arity]).0,
        _ => asked.shape.clone(),
    };
    let values = values.unwrap_or_else(|| if op == Op::TakeExact { Message::no_values() } else { asked.actuals.clone() });
    let msg = asked.request(op, flags, number, &shape, &values);
    drop((shape, values));
    let msg = match msg {
        Ok(m) => m,
        // SAFETY: the contract; `asked` and `e` move into `fail`.
        Err(e) => return unsafe { fail(L, asked, e) },
    };
    asked.waits = flags & WAIT != 0;
    asked.cancelled.set(false);
    let (alias, lost) = (asked.alias, asked.lost());
    // SAFETY: the contract; the context keeps the wait (`asked`).
    let (waiter, rt) = unsafe { (wait::begin(L, asked), ctx(L).rt()) };
    let sent = rt.service::<Spaces>().linda(rt, alias, waiter, msg, true);
    if !sent {
        // SAFETY: the contract; `lost` moves into `lost`, which raises.
        return unsafe {
            wait::end::<Asked>(L);
            crate::api::linda::lost(L, lost)
        };
    }
    drop(lost);
    // SAFETY: the contract; this frame owns nothing when it blocks.
    unsafe { wait::block(L, asked_k, "linda") }
}

/// Polls for the answer; a deadline that passed cancels the wait once.
unsafe extern "C-unwind" fn asked_k(L: *mut ffi::lua_State, _status: c_int, _k: ffi::lua_KContext) -> c_int {
    // SAFETY: Lua runs this continuation with the process's running thread:
    // the contract. In each arm what the wait held moves into the call, or
    // is dropped before it blocks or raises.
    unsafe {
        match wait::poll(L) {
            Poll::Waiting => {
                if deadline_passed(L) {
                    wait::withdraw(L);
                    ctx(L).withdrawn = false;
                }
                wait::block(L, asked_k, "linda")
            }
            Poll::Withdrawn => {
                let fname = wait::end::<Asked>(L).map_or("linda", |a| a.fname);
                wait::cannot_block(L, fname)
            }
            Poll::Done(answer) => match wait::end::<Asked>(L) {
                Some(asked) => answered(L, asked, answer),
                None => 0,
            },
        }
    }
}

/// Turns `answer` into the method's results, or asks again.
unsafe fn answered(L: *mut ffi::lua_State, asked: Box<Asked>, answer: Completion) -> c_int {
    let answer = match answer {
        Completion::Deleted => {
            let lost = asked.lost();
            drop(asked);
            // SAFETY: the contract; `lost` moves into the call, which raises.
            return unsafe { crate::api::linda::lost(L, lost) };
        }
        // The space moved (a healed partition): the method runs again where it is now.
        Completion::Moved => {
            let (fname, args) = (asked.fname, asked.args);
            drop(asked);
            // SAFETY: the contract; nothing is owned here now.
            return unsafe { crate::api::linda::run_again(L, fname, args) };
        }
        // Tuples whose large buffers stayed on their producers' nodes: their bytes first.
        Completion::Value(values) => {
            let fname = asked.fname;
            // SAFETY: the contract; `values` and `asked` move into `deliver`.
            return unsafe { deliver(L, values, fname, Box::new(move |L, values| answered_here(L, asked, Completion::Value(values)))) };
        }
        other => other,
    };
    // SAFETY: the contract.
    unsafe { answered_here(L, asked, answer) }
}

/// [`answered`], the bytes of every buffer of the answer here.
unsafe fn answered_here(L: *mut ffi::lua_State, mut asked: Box<Asked>, answer: Completion) -> c_int {
    match (asked.then, answer) {
        (Then::Nothing | Then::Tuple, Completion::Nothing) => 0,
        // SAFETY: the contract; `asked` and `values` move into `done`.
        (Then::Tuple, Completion::Value(values)) => unsafe { done(L, asked, values) },
        (_, Completion::Full) => {
            let why = format!("{}: space full: {}", asked.fname, asked.space.describe());
            // SAFETY: the contract.
            unsafe { fail(L, asked, why) }
        }
        (Then::Count, Completion::Count(n)) => {
            // SAFETY: the contract (pushing an integer allocates nothing).
            unsafe { ffi::lua_pushinteger(L, n as ffi::lua_Integer) };
            1
        }
        // SAFETY: the contract.
        (Then::List, Completion::Value(list)) => unsafe { done(L, asked, list) },
        (Then::Where(Purpose::TakeAll), Completion::Value(values)) if asked.next > 0 => {
            // SAFETY: the contract; the result list is at `base + 1`. NOT
            // KEPT: lib.rs invariant 2, `asked` is alive while the tuple is
            // decoded, and a memory error there unwinds over it.
            if let Err(e) = unsafe { append(L, asked.base + 1, values) } {
                let why = format!("{}: {e}", asked.fname);
                // SAFETY: the contract.
                return unsafe { fail(L, asked, why) };
            }
            // SAFETY: the contract.
            unsafe { scan(L, asked) }
        }
        // A candidate taken by its number.
        // SAFETY: the contract.
        (Then::Where(_), Completion::Value(values)) if asked.next > 0 => unsafe { done(L, asked, values) },
        (Then::Where(_), Completion::Value(list)) => {
            // SAFETY: the contract; the candidate list is decoded at
            // `base + 2`, above the result list. NOT KEPT: lib.rs invariant
            // 2, `asked` and `list` are alive while it is decoded, and a
            // memory error there unwinds over them.
            let decoded = unsafe {
                ffi::lua_settop(L, asked.base + 1);
                codec::decode(L, &list)
            };
            drop(list);
            if let Err(e) = decoded {
                let why = format!("{}: {e}", asked.fname);
                // SAFETY: the contract.
                return unsafe { fail(L, asked, why) };
            }
            asked.next = 1;
            // SAFETY: the contract.
            unsafe { scan(L, asked) }
        }
        // A candidate someone else took first: the next one.
        // SAFETY: the contract.
        (Then::Where(_), Completion::Nothing) if asked.next > 0 => unsafe { scan(L, asked) },
        (Then::Where(_), Completion::Nothing) => 0,
        // Something may have come, or the wait was cancelled: look again.
        // SAFETY: the contract.
        (Then::Where(_), Completion::Notified) => unsafe { again(L, asked) },
        _ => {
            let why = format!("{}: a malformed answer from the space's node", asked.fname);
            // SAFETY: the contract.
            unsafe { fail(L, asked, why) }
        }
    }
}

/// Appends the tuple `values` to the list at `list`, as a list of its fields.
unsafe fn append(L: *mut ffi::lua_State, list: c_int, values: Message) -> Result<(), crate::error::Error> {
    // SAFETY: the contract. NOT KEPT: lib.rs invariant 2, `values` is alive
    // while it is decoded, and a memory error there unwinds over it.
    let n = unsafe { codec::decode(L, &values)? };
    drop(values);
    // SAFETY: the contract; the tuple's values become one table, appended
    // raw to the list at `list`.
    unsafe {
        pack(L, n);
        let len = ffi::lua_rawlen(L, list) as ffi::lua_Integer;
        ffi::lua_rawseti(L, list, len + 1);
    }
    Ok(())
}

/// Pushes the decoded `values` as the method's results.
pub(crate) unsafe fn results(L: *mut ffi::lua_State, values: Message, fname: &str) -> c_int {
    // SAFETY: `L` is the running process's state (lib.rs invariant 1).
    // NOT KEPT: lib.rs invariant 2, `values` is alive while it is decoded,
    // and a memory error there unwinds over it.
    let decoded = unsafe { codec::decode(L, &values) };
    drop(values);
    match decoded {
        Ok(n) => n,
        // SAFETY: as above; `raise_error` drops `e` before it raises.
        Err(e) => unsafe { raise_error(L, fname, e) },
    }
}

/// A method's first request (`asked`, made for the method and how its
/// answers are taken): the template from argument `first` on (none when
/// `first` is 0).
unsafe fn start(L: *mut ffi::lua_State, mut asked: Box<Asked>, first: c_int, op: Op, flags: u8) -> c_int {
    let (fname, then) = (asked.fname, asked.then);
    // SAFETY: the contract. NOT KEPT: lib.rs invariant 2, `asked` (which
    // the closure fills) is alive while the template's actual fields are
    // encoded, and a memory error there unwinds over it.
    let prepared = (|| unsafe {
        yieldable(L, fname)?;
        if first > 0 {
            (asked.shape, asked.actuals, asked.wheres) = actuals(L, first, fname)?;
        }
        Ok::<_, String>(())
    })();
    if let Err(e) = prepared {
        // SAFETY: the contract.
        return unsafe { fail(L, asked, e) };
    }
    let wheres = !asked.wheres.is_empty();
    asked.then = match then {
        Then::Tuple if wheres => Then::Where(Purpose::Find { take: flags & TAKE != 0, blocking: flags & WAIT != 0 }),
        Then::Count if wheres => Then::Where(Purpose::Count),
        Then::List if wheres => Then::Where(Purpose::TakeAll),
        t => t,
    };
    // SAFETY: the contract.
    asked.base = unsafe { ffi::lua_gettop(L) };
    if wheres {
        // The result list, then (when it comes) the candidate list.
        // SAFETY: the contract; `asked` moves into the call. NOT KEPT:
        // lib.rs invariant 2, `asked` is alive while the list is made, and
        // a memory error there unwinds over it.
        return unsafe {
            ffi::lua_createtable(L, 0, 0);
            ask_candidates(L, asked, flags & WAIT)
        };
    }
    // SAFETY: the contract; `asked` moves into `ask`.
    unsafe { ask(L, asked, op, flags, 0, None) }
}

/// The template from argument `first` on: its shape, its actual fields'
/// values, its `where` formals.
unsafe fn actuals(L: *mut ffi::lua_State, first: c_int, fname: &str) -> Result<(Vec<u8>, Message, Wheres), String> {
    // SAFETY: the contract.
    let (patterns, wheres) = unsafe { template(L, first, fname)? };
    let (shape, at) = shape_of(&patterns);
    // SAFETY: the contract; `lua_checkstack` reports failure, never raises.
    if unsafe { ffi::lua_checkstack(L, at.len() as c_int + 8) } == 0 {
        return Err(format!("{fname}: a template of {} actual fields is too wide", at.len()));
    }
    // NOT KEPT: lib.rs invariant 2, `patterns`, `wheres`, `shape` and `at` are
    // alive while encoding.
    // SAFETY: the contract; a copy of each actual field is pushed, encoded,
    // then popped.
    let values = unsafe {
        let top = ffi::lua_gettop(L);
        for i in &at {
            ffi::lua_pushvalue(L, first + *i as c_int);
        }
        let values = codec::encode(L, top + 1, top + at.len() as c_int);
        ffi::lua_settop(L, top);
        values
    };
    let values = values.map_err(|e| format!("{fname}: {e}"))?;
    synodic_core::dist::carry::crossing(&values).map_err(|e| format!("{fname}: {e}"))?;
    Ok((shape, values, wheres))
}

pub(crate) unsafe fn out(L: *mut ffi::lua_State, space: &SpaceRef, alias: u16) -> c_int {
    // SAFETY: the contract; nothing raises in here but the encoding (see
    // `pattern::tuple`).
    let prepared = (|| unsafe {
        yieldable(L, "out")?;
        let values = crate::api::deferred::defer_large(ctx(L).rt(), tuple(L)?.values);
        synodic_core::dist::carry::crossing(&values).map_err(|e| format!("out: {e}"))?;
        Ok(values)
    })();
    let values = match prepared {
        Ok(v) => v,
        // SAFETY: the contract; `raise` drops `e` before unwinding.
        Err(e) => return unsafe { raise(L, e) },
    };
    // SAFETY: the contract; the exchange and `values` move into `ask`.
    unsafe { ask(L, Asked::new(space, alias, "out", Then::Nothing), Op::Out, 0, 0, Some(values)) }
}

/// `take`/`rd` and their timed forms.
unsafe fn find(L: *mut ffi::lua_State, space: &SpaceRef, alias: u16, fname: &'static str, take: bool, timed: bool, probe: bool) -> c_int {
    // SAFETY: the contract (argument 2 is read).
    let timeout = match timed.then(|| unsafe { seconds(L, fname) }).transpose() {
        Ok(t) => t,
        // SAFETY: the contract; `raise` drops `e` before unwinding.
        Err(e) => return unsafe { raise(L, e) },
    };
    // SAFETY: the contract.
    unsafe { start_deadline(L, timeout) };
    let waits = !probe && !timeout.is_some_and(|t| t.is_zero());
    let flags = if take { TAKE } else { 0 } | if waits { WAIT } else { 0 };
    // SAFETY: the contract; the exchange moves into `start`.
    unsafe { start(L, Asked::new(space, alias, fname, Then::Tuple), if timed { 3 } else { 2 }, Op::Find, flags) }
}

pub(crate) unsafe fn take(L: *mut ffi::lua_State, space: &SpaceRef, alias: u16) -> c_int {
    // SAFETY: the contract.
    unsafe { find(L, space, alias, "take", true, false, false) }
}

pub(crate) unsafe fn rd(L: *mut ffi::lua_State, space: &SpaceRef, alias: u16) -> c_int {
    // SAFETY: the contract.
    unsafe { find(L, space, alias, "rd", false, false, false) }
}

pub(crate) unsafe fn inp(L: *mut ffi::lua_State, space: &SpaceRef, alias: u16) -> c_int {
    // SAFETY: the contract.
    unsafe { find(L, space, alias, "inp", true, false, true) }
}

pub(crate) unsafe fn rdp(L: *mut ffi::lua_State, space: &SpaceRef, alias: u16) -> c_int {
    // SAFETY: the contract.
    unsafe { find(L, space, alias, "rdp", false, false, true) }
}

pub(crate) unsafe fn take_within(L: *mut ffi::lua_State, space: &SpaceRef, alias: u16) -> c_int {
    // SAFETY: the contract.
    unsafe { find(L, space, alias, "take_within", true, true, false) }
}

pub(crate) unsafe fn rd_within(L: *mut ffi::lua_State, space: &SpaceRef, alias: u16) -> c_int {
    // SAFETY: the contract.
    unsafe { find(L, space, alias, "rd_within", false, true, false) }
}

pub(crate) unsafe fn count(L: *mut ffi::lua_State, space: &SpaceRef, alias: u16) -> c_int {
    // SAFETY: the contract.
    unsafe { start(L, Asked::new(space, alias, "count", Then::Count), 2, Op::Count, 0) }
}

pub(crate) unsafe fn take_all(L: *mut ffi::lua_State, space: &SpaceRef, alias: u16) -> c_int {
    // SAFETY: the contract.
    unsafe { start(L, Asked::new(space, alias, "take_all", Then::List), 2, Op::TakeAll, TAKE) }
}

pub(crate) unsafe fn clear(L: *mut ffi::lua_State, space: &SpaceRef, alias: u16) -> c_int {
    // SAFETY: the contract.
    unsafe { start(L, Asked::new(space, alias, "clear", Then::Nothing), 0, Op::Clear, 0) }
}
