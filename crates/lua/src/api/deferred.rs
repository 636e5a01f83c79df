//! Large buffers of tuples that stay on their producer's node (Network
//! Linda's "large aggregates stay in a local buffer"). An `out` to another
//! node's space turns each buffer field of [`DEFER_MIN`] bytes or more into
//! a result of this node, as `s.async` results are (`synodic_core::future`),
//! and sends its ticket in the buffer's place (shared kind `FUTURE`,
//! variant `DEFERRED_BUFFER`): the space holds the reference, not the bytes.
//!
//! Whoever takes or reads the tuple, on any node, fetches the bytes before
//! its values are decoded ([`deliver`]): straight from the producer, once
//! per node for all the processes of that node that read the tuple at about
//! the same time (the node keeps what it fetched a moment, `Futures::keep`).
//! The producer frees them when the last handle to the tuple is gone, the
//! futures' weighted counts telling it.

use std::ffi::c_int;
use std::sync::Arc;

use mlua_sys as ffi;
use synodic_core::future::{Read, Ticket};
use synodic_core::payload::Payload;
use synodic_core::waiting::Waiter;
use synodic_core::wire::{self, shared, Tag, Writer};
use synodic_core::{Attachment, Message, Runtime};

use crate::vm::ctx::ctx;
use crate::vm::util::raise;
use crate::vm::wait::{self, Poll};

/// The smallest buffer left on its producer's node.
pub(crate) const DEFER_MIN: usize = 64 << 10;

/// `values` (an `out`'s tuple for another node) with every buffer of at
/// least [`DEFER_MIN`] bytes left here, as a result of this node.
pub(crate) fn defer_large(rt: &Runtime, values: Message) -> Message {
    let large = |a: &Attachment| a.downcast_ref::<Payload>().is_some_and(|p| p.len() >= DEFER_MIN);
    if !values.attachments().iter().any(large) {
        return values;
    }
    let Ok(found) = wire::shared_values(&values) else { return values };
    let mut bytes = values.to_vec();
    let mut attachments = values.attachments().to_vec();
    for s in found.into_iter().filter(|s| s.kind == shared::BUFFER) {
        let Some(a) = attachments.get_mut(s.index as usize) else { continue };
        if large(a) {
            *a = leave_here(rt, a.clone(), s.variant);
        }
        if a.is::<Ticket>() {
            (bytes[s.at], bytes[s.at + 1]) = (shared::FUTURE, shared::DEFERRED_BUFFER);
        }
    }
    Message::with_attachments(bytes, attachments)
}

/// Keeps `payload` (a buffer of element kind `variant`) here as a result
/// of this node; its ticket.
fn leave_here(rt: &Runtime, payload: Attachment, variant: u8) -> Attachment {
    let (id, weight) = rt.new_future();
    rt.futures().with(|st| st.grant(id, weight));
    let mut w = Writer::message(1);
    w.tag(Tag::Shared);
    w.byte(shared::BUFFER);
    w.byte(variant);
    w.varint(0);
    rt.future_resolve(id, Message::with_attachments(w.finish_small(), vec![payload]));
    rt.ticket(id, 0, weight)
}

/// The first buffer of `values` left on another node whose bytes are not
/// on this one yet.
fn first_missing(rt: &Runtime, values: &Message) -> Option<Arc<Ticket>> {
    if !values.attachments().iter().any(|a| a.is::<Ticket>()) {
        return None;
    }
    let found = wire::shared_values(values).ok()?;
    found.into_iter().filter(|s| (s.kind, s.variant) == (shared::FUTURE, shared::DEFERRED_BUFFER)).find_map(|s| {
        let ticket = values.attachments().get(s.index as usize)?.clone().downcast::<Ticket>().ok()?;
        (!rt.futures().with(|st| st.is_ready(ticket.id))).then_some(ticket)
    })
}

/// What to do with a tuple's values once all its bytes are here.
pub(crate) type After = Box<dyn FnOnce(*mut ffi::lua_State, Message) -> c_int>;

/// A wait for the bytes of a buffer left on another node.
struct Fetching {
    ticket: Arc<Ticket>,
    values: Message,
    after: After,
    fname: &'static str,
    /// This wait made the node ask for the bytes.
    asked: bool,
}

impl wait::Queue for Fetching {
    unsafe fn withdraw(&self, L: *mut ffi::lua_State, waiter: Waiter) {
        // SAFETY: `L` is the running process's state (the trait's contract), with a context.
        unsafe { ctx(L) }.rt().futures().with(|st| st.cancel(self.ticket.id, waiter));
    }
    fn as_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}

/// Runs `after` on `values` once the bytes of all their buffers left on
/// other nodes are on this one, fetching them first (for the operation
/// `fname`).
pub(crate) unsafe fn deliver(L: *mut ffi::lua_State, values: Message, fname: &'static str, after: After) -> c_int {
    // SAFETY: `L` is the running process's state (lib.rs invariant 1), with
    // its context entered for this resume (`rt` is a plain borrow).
    let rt = unsafe { ctx(L) }.rt();
    let Some(ticket) = first_missing(rt, &values) else { return after(L, values) };
    // SAFETY: as above; everything owned is dropped before `raise`, which
    // drops its message before unwinding.
    unsafe {
        if ffi::lua_isyieldable(L) == 0 {
            drop((ticket, values, after));
            return raise(L, format!("{fname}: cannot wait for a buffer of another node here (inside a call that cannot yield, such as a metamethod called from C)"));
        }
    }
    // SAFETY: as above; the context keeps the wait (and what it owns).
    let waiter = unsafe { wait::begin(L, Box::new(Fetching { ticket: ticket.clone(), values, after, fname, asked: false })) };
    let read = rt.future_read(&ticket, waiter);
    drop(ticket);
    match read {
        Read::Value(bytes) => {
            // Here already: the next missing buffer, if any.
            drop(bytes);
            // SAFETY: as above; the wait just begun is taken back whole.
            let f = unsafe { wait::end::<Fetching>(L) }.expect("the wait just begun");
            let (values, fname, after) = unpack(f);
            // SAFETY: as above; this frame owns nothing now (the box and its
            // ticket are gone), what `deliver` needs moves into it: it may
            // block for the next missing buffer (a yield) or raise.
            unsafe { deliver(L, values, fname, after) }
        }
        // SAFETY: as above; this frame owns nothing when it blocks (`ask`
        // is a number, the rest is in the context's wait).
        Read::Wait { ask } => unsafe {
            if ask.is_some() {
                mark_asked(L);
            }
            wait::block(L, fetching_k, fname)
        },
    }
}

/// A finished wait's values, operation and closure; its ticket and its box
/// are dropped here, so that nothing of it is left in a frame that a yield
/// or an error may leave (its `Drop` returns the ticket's weight).
// The box is the point: it is freed here, not in a frame a yield may leave.
#[allow(clippy::boxed_local)]
fn unpack(f: Box<Fetching>) -> (Message, &'static str, After) {
    let Fetching { ticket, values, after, fname, .. } = *f;
    drop(ticket);
    (values, fname, after)
}

/// Notes that the current fetch made this node ask for the bytes.
unsafe fn mark_asked(L: *mut ffi::lua_State) {
    // SAFETY: `L` is the running process's state (lib.rs invariant 1); the
    // wait is taken out and put back, nothing that raises between.
    unsafe {
        if let Some(mut f) = wait::end::<Fetching>(L) {
            f.asked = true;
            wait::resume(L, f);
        }
    }
}

unsafe extern "C-unwind" fn fetching_k(L: *mut ffi::lua_State, _status: c_int, _k: ffi::lua_KContext) -> c_int {
    // SAFETY: Lua runs this continuation with the process's running state
    // `L` (lib.rs invariant 1), with a context.
    match unsafe { wait::poll(L) } {
        // SAFETY: as above; this frame owns nothing.
        Poll::Waiting => unsafe { wait::block(L, fetching_k, "linda") },
        // SAFETY: as above; the wait (`f`) is dropped before the error.
        Poll::Withdrawn => unsafe {
            let fname = wait::end::<Fetching>(L).map_or("linda", |f| f.fname);
            wait::cannot_block(L, fname)
        },
        Poll::Done(done) => {
            // SAFETY: as above.
            let Some(f) = (unsafe { wait::end::<Fetching>(L) }) else { return 0 };
            let came = match &done {
                synodic_core::waiting::Completion::Value(v) => buffer_variant(v).map(|_| v.size()),
                _ => None,
            };
            drop(done);
            if let (true, Some(size)) = (f.asked, came) {
                // Other readers of the tuple here may not have their answers yet.
                // SAFETY: as above. NOT KEPT: lib.rs invariant 2, `f` (its
                // values, its closure) is alive while `add_fetched` sets a
                // registry field, whose memory error would unwind over it.
                unsafe {
                    ctx(L).rt().futures().keep(f.ticket.clone());
                    add_fetched(L, size as i64);
                }
            }
            // The producer's node was lost: what came is the failure.
            if came.is_none() {
                let fname = f.fname;
                drop(f);
                // SAFETY: as above; `f` is dropped, `raise` drops its message.
                return unsafe { raise(L, format!("{fname}: a buffer of this tuple was on a node that is lost")) };
            }
            let (values, fname, after) = unpack(f);
            // SAFETY: as above; this frame owns nothing now (the box and its
            // ticket are gone: the ticket's weight goes back to the producer
            // even if `deliver` blocks for a next buffer or `after` raises),
            // the wait's values and closure move into `deliver`.
            unsafe { deliver(L, values, fname, after) }
        }
    }
}

/// Rebuilds a buffer left on another node, whose bytes are here (see
/// [`deliver`]): the buffer as its producer had it.
pub(crate) unsafe fn rebuild(L: *mut ffi::lua_State, shared: &Attachment) -> Result<(), String> {
    let ticket = shared.downcast_ref::<Ticket>().ok_or("not a buffer left on another node")?;
    // SAFETY: `L` is a process's state (lib.rs invariant 1), with a context.
    let value = unsafe { ctx(L) }.rt().futures().with(|st| st.value(ticket.id)).ok_or("a buffer whose bytes are on another node")?;
    let variant = buffer_variant(&value).ok_or("a buffer of this tuple was on a node that is lost")?;
    let payload = value.attachments().first().ok_or("a buffer left on another node without its bytes")?;
    // SAFETY: as above; `payload` is a buffer's payload (checked by
    // `buffer_variant`). NOT KEPT: lib.rs invariant 2, `value` is alive
    // while the buffer's userdata is made, whose memory error would unwind
    // over it.
    unsafe { (crate::api::buffer::SENDABLE.rebuild)(L, variant, payload) }
}

/// The element kind of the buffer a fetched value holds; `None` when it
/// holds none (its node was lost).
fn buffer_variant(value: &Message) -> Option<u8> {
    match wire::shapes(value).ok()?[..] {
        [wire::Shape::Shared { kind: shared::BUFFER, variant }] => Some(variant),
        _ => None,
    }
}

/// Where a process counts the bytes of other nodes' results it brought (in
/// its registry: few processes do, and every idle one would pay for a field).
const FETCHED: &std::ffi::CStr = c"synodic.fetched";

/// Adds `n` to the bytes fetched; returns the total before.
pub(crate) unsafe fn add_fetched(L: *mut ffi::lua_State, n: i64) -> i64 {
    // SAFETY: `L` is a process's state (lib.rs invariant 1); the registry is
    // a plain table; the value read is popped, the new one set.
    unsafe {
        ffi::lua_getfield(L, ffi::LUA_REGISTRYINDEX, FETCHED.as_ptr());
        let before = ffi::lua_tointegerx(L, -1, std::ptr::null_mut());
        ffi::lua_pop(L, 1);
        ffi::lua_pushinteger(L, before + n);
        ffi::lua_setfield(L, ffi::LUA_REGISTRYINDEX, FETCHED.as_ptr());
        before
    }
}

/// The bytes fetched since the last call, the count starting again at 0.
pub(crate) unsafe fn take_fetched(L: *mut ffi::lua_State) -> i64 {
    // SAFETY: as in `add_fetched`.
    unsafe {
        let n = add_fetched(L, 0);
        ffi::lua_pushinteger(L, 0);
        ffi::lua_setfield(L, ffi::LUA_REGISTRYINDEX, FETCHED.as_ptr());
        n
    }
}
