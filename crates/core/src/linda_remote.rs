//! Tuple-space operations between nodes: a process whose space lives on
//! another node sends it a request, and the space's node answers with one
//! completion, as a local store would (see `waiting`). This module is the
//! request format and the home side ([`serve`]); the transport carries
//! both ways (`Remote::linda`, `Remote::complete`), the Lua layer builds
//! requests and waits for their answers.
//!
//! A request, step by step:
//!
//! 1. the caller takes a fresh ticket for its wait and sends a message whose
//!    first value is the request's header (a string: operation, flags, the
//!    space, a number, the template's shape) and whose other values are the
//!    tuple (`out`) or the template's actual fields; so pids in them are
//!    translated between nodes like any message's, and buffers travel as
//!    the message's attachments;
//! 2. the space's node reads the tuple's fields or the template from those
//!    values and runs the operation on its store, with the caller as the
//!    waiter: an answer now is sent back at once; a `take` or `rd` that must
//!    wait leaves the remote caller queued among the local ones, served in
//!    arrival order by whichever `out` comes;
//! 3. every request but `Cancel` gets exactly one answer, for its ticket. A
//!    `Cancel` withdraws a wait: if it was still queued, its answer is
//!    `Nothing`; if not, its answer is already on the way (links keep order),
//!    so a caller that cancels still waits for exactly one answer;
//! 4. if the space's node is lost, the transport answers every request still
//!    open with `Deleted` (`space lost`), and that node's waiters are
//!    withdrawn from the spaces here (`Spaces::forget_node`).
//!
//! Named spaces live where they were first used: the node claims the
//! cluster-wide name `$linda:NAME` for its keeper process ([`keeper`]), so
//! every node finds the home in its copy of the name map, and the name is
//! released with the node.

use std::sync::Arc;

use crate::linda::{Field, Kind, Kinds, Mode, Pattern, Tuple};
use crate::spaces::{Refused, Space};
use crate::waiting::{Completion, Waiter};
use crate::wire::{self, Reader, Shape, Tag, WireError, Writer};
use crate::{Body, Error, Message, Pid, Process, Runtime, Step};

/// The name prefix of spaces' homes in the cluster's name map.
pub const HOME_PREFIX: &[u8] = b"$linda:";

/// The most bytes of tuples one remote `take_all` answer carries; what is
/// left over stays in the space for the next call.
pub const TAKE_ALL_MAX: usize = 256 << 20;

#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Add the tuple; answer `Nothing`.
    Out = 1,
    /// The oldest match (`TAKE` removes it), or, with `WAIT`, the first
    /// that comes; without `WAIT`, `Nothing` when there is none.
    Find = 2,
    /// Withdraw the caller's wait with this same ticket (no answer of its own).
    Cancel = 3,
    /// Every match whose sequence number is at least `number`, oldest first,
    /// as a list of `{seq, fields...}`; with `WAIT` and none, `Notified`
    /// once one may have come (for `where` templates, matched by the caller).
    Candidates = 4,
    /// Remove the tuple with sequence number `number` if it is still there.
    TakeExact = 5,
    /// How many match: `Count`.
    Count = 6,
    /// Remove every match: a list of lists, oldest first.
    TakeAll = 7,
    /// Empty the space: `Nothing`.
    Clear = 8,
}

impl Op {
    fn from_u8(n: u8) -> Option<Op> {
        use Op::*;
        [Out, Find, Cancel, Candidates, TakeExact, Count, TakeAll, Clear].into_iter().find(|op| *op as u8 == n)
    }
}

/// Flags of a request.
pub const TAKE: u8 = 1;
pub const WAIT: u8 = 2;
/// An `out` of a tuple the cluster had accepted already (a space moving
/// its tuples to where it now lives): never refused for the node's limit.
pub const FORCE: u8 = 4;

/// Which space of the receiving node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target<'a> {
    Named(&'a [u8]),
    Private(u64),
}

/// One field of a template's shape: its actual values travel as the
/// request's values, in order.
const ACTUAL: u8 = 0;
const FORMAL: u8 = 1;
const ANY: u8 = 2;
const NEVER: u8 = 3;

/// A request's header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request<'a> {
    pub op: Op,
    pub flags: u8,
    pub target: Target<'a>,
    pub number: u64,
    /// The template's shape: a byte per field (and the kinds after a formal's).
    pub shape: &'a [u8],
}

impl Request<'_> {
    /// The header, encoded.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::fields_after(Vec::with_capacity(16 + self.shape.len()));
        w.byte(self.op as u8);
        w.byte(self.flags);
        match self.target {
            Target::Named(name) => {
                w.byte(0);
                w.bytes(name);
            }
            Target::Private(serial) => {
                w.byte(1);
                w.varint(serial);
            }
        }
        w.varint(self.number);
        w.bytes(self.shape);
        w.finish_small()
    }

    pub fn decode(header: &[u8]) -> Result<Request<'_>, WireError> {
        let mut r = Reader::fields(header);
        let at = r.position();
        let op = r.byte_value()?;
        let op = Op::from_u8(op).ok_or(WireError::BadTag { tag: op, at })?;
        let flags = r.byte_value()?;
        let target = match r.byte_value()? {
            0 => Target::Named(r.bytes()?),
            1 => Target::Private(r.varint()?),
            t => return Err(WireError::BadTag { tag: t, at: r.position() - 1 }),
        };
        let number = r.varint()?;
        let shape = r.bytes()?;
        r.finish()?;
        Ok(Request { op, flags, target, number, shape })
    }
}

/// The shape of `template`, and which of its fields are actuals (whose
/// values the caller sends, in order).
pub fn shape_of(template: &[Pattern]) -> (Vec<u8>, Vec<usize>) {
    let mut shape = Vec::with_capacity(template.len());
    let mut actuals = Vec::new();
    for (i, p) in template.iter().enumerate() {
        match p {
            Pattern::Actual(_) => {
                shape.push(ACTUAL);
                actuals.push(i);
            }
            Pattern::Formal(kinds) => shape.extend([FORMAL, kinds.0]),
            Pattern::Any => shape.push(ANY),
            Pattern::Never => shape.push(NEVER),
        }
    }
    (shape, actuals)
}

/// The template a shape and the actuals' values describe.
pub fn template_of(shape: &[u8], actuals: &[u8]) -> Result<Vec<Pattern>, WireError> {
    let mut values = fields_of(actuals)?.into_iter();
    let mut r = Reader::fields(shape);
    let mut template = Vec::with_capacity(shape.len());
    while r.remaining() > 0 {
        let at = r.position();
        template.push(match r.byte_value()? {
            ACTUAL => Pattern::Actual(values.next().ok_or(WireError::Truncated(at))?),
            FORMAL => Pattern::Formal(Kinds(r.byte_value()?)),
            ANY => Pattern::Any,
            NEVER => Pattern::Never,
            t => return Err(WireError::BadTag { tag: t, at }),
        });
    }
    match values.next() {
        Some(_) => Err(WireError::Trailing(1)),
        None if template.is_empty() => Err(WireError::Truncated(0)),
        None => Ok(template),
    }
}

/// The fields of a tuple, read from its encoded values as the calling
/// process would have seen them.
pub fn fields_of(values: &[u8]) -> Result<Vec<Field>, WireError> {
    wire::shapes(values)?
        .into_iter()
        .enumerate()
        .map(|(at, shape)| {
            Ok(match shape {
                Shape::Nil => return Err(WireError::BadTag { tag: Tag::Nil as u8, at }),
                Shape::Bool(b) => Field::Bool(b),
                Shape::Int(i) => Field::Int(i),
                Shape::Float(f) => Field::Float(f),
                Shape::Str(s) => Field::Str(Arc::new(s.into())),
                Shape::Pid(p) => Field::Pid(p.raw()),
                Shape::Table | Shape::Library { function: false } => Field::Opaque(Kind::Table),
                Shape::Shared { kind: wire::shared::BUFFER, .. } | Shape::Shared { kind: wire::shared::FUTURE, variant: wire::shared::DEFERRED_BUFFER } => Field::Opaque(Kind::Buffer),
                _ => Field::Opaque(Kind::Other),
            })
        })
        .collect()
}

/// Step 2: runs the request `msg` from `caller` on this node's spaces and
/// answers it. An error says what was malformed (the sender is a node, and
/// broken).
pub fn serve(rt: &Runtime, caller: Waiter, msg: &Message) -> Result<(), WireError> {
    let (header, rest) = wire::split_leading_str(msg)?;
    let req = Request::decode(header)?;
    let space = match req.target {
        // A space this node is not the home of (any longer: it moved when a
        // partition healed): the caller looks for it again.
        Target::Named(name) if !is_home(rt, name) => {
            if req.op != Op::Cancel {
                rt.complete((caller, Completion::Moved));
            }
            return Ok(());
        }
        Target::Named(name) => rt.spaces().open(name).1,
        Target::Private(serial) => match rt.spaces().get(serial) {
            Some(space) => space,
            None if req.op == Op::Cancel => return Ok(()),
            None => {
                rt.complete((caller, Completion::Deleted));
                return Ok(());
            }
        },
    };
    let values = Message::with_attachments(rest, msg.attachments().to_vec());
    if let Some(answer) = run(rt, &space, caller, &req, values)? {
        rt.complete((caller, answer));
    }
    Ok(())
}

/// The answer to a request now, or `None` when it waits (or is a `Cancel`
/// whose wait was already answered).
fn run(rt: &Runtime, space: &Space, caller: Waiter, req: &Request, values: Message) -> Result<Option<Completion>, WireError> {
    let take = req.flags & TAKE != 0;
    let wait = req.flags & WAIT != 0;
    let tuple = |t: Option<Tuple>| t.map_or(Completion::Nothing, |t| Completion::Value(t.values));
    Ok(match req.op {
        Op::Out => {
            let fields = fields_of(&values)?;
            if fields.is_empty() {
                return Err(WireError::Truncated(0));
            }
            let tuple = Tuple { fields, values };
            let put = match req.flags & FORCE {
                0 => space.out(tuple, |d| rt.complete(d)),
                _ => space.put_back(tuple, |d| rt.complete(d)),
            };
            Some(match put {
                Ok(()) => Completion::Nothing,
                Err(Refused::Full) => Completion::Full,
                Err(Refused::Moved) => Completion::Moved,
            })
        }
        Op::Cancel => space.with(|st| st.cancel(caller)).then_some(Completion::Nothing),
        Op::Clear => {
            space.with(|st| st.clear());
            Some(Completion::Nothing)
        }
        op => {
            let template = template_of(req.shape, &values)?;
            match op {
                Op::Find if wait => {
                    let mode = if take { Mode::Take } else { Mode::Read };
                    // Checked with the store locked: a moved space queues no one.
                    space.with(|st| match st.is_moved() {
                        true => Some(Completion::Moved),
                        false => st.find_or_wait(template, mode, caller).map(|t| Completion::Value(t.values)),
                    })
                }
                Op::Find => Some(tuple(space.with(|st| st.find(&template, take)))),
                Op::TakeExact => Some(tuple(space.with(|st| st.take_exact(req.number, template.len())))),
                Op::Count => Some(Completion::Count(space.with(|st| st.count(&template)) as u64)),
                Op::Candidates => space.with(|st| {
                    if st.is_moved() {
                        return Some(Completion::Moved);
                    }
                    let found: Vec<(u64, Tuple)> = st.candidates(&template).into_iter().filter(|(seq, _)| *seq >= req.number).collect();
                    if found.is_empty() && wait {
                        st.find_or_wait(template, Mode::Notify, caller);
                        return None;
                    }
                    Some(Completion::Value(list(found.into_iter().map(|(seq, t)| (Some(seq), t)))))
                }),
                _ => {
                    let taken = space.with(|st| st.take_all(&template, TAKE_ALL_MAX));
                    Some(Completion::Value(list(taken.into_iter().map(|t| (None, t)))))
                }
            }
        }
    })
}

/// A one-value message: the list of the tuples, each as a list of its
/// fields, after its sequence number when it has one.
pub fn list(tuples: impl ExactSizeIterator<Item = (Option<u64>, Tuple)>) -> Message {
    let mut w = Writer::message(1);
    w.tag(Tag::Table);
    w.varint(tuples.len() as u64);
    w.buffer().extend_from_slice(&0u32.to_le_bytes());
    let mut objects = 1;
    let mut attachments = Vec::new();
    for (seq, t) in tuples {
        w.tag(Tag::Table);
        w.varint((t.fields.len() + seq.is_some() as usize) as u64);
        w.buffer().extend_from_slice(&0u32.to_le_bytes());
        objects += 1;
        if let Some(seq) = seq {
            w.int(seq as i64);
        }
        // The store's own messages are well formed.
        let _ = wire::append_values(&mut w, &t.values, &mut objects, attachments.len() as u64);
        attachments.extend(t.values.attachments().iter().cloned());
    }
    Message::with_attachments(w.finish_small(), attachments)
}

/// The keeper: a process that does nothing but hold this node's claims on
/// space names, so that they last as long as the node.
struct Keeper;

impl Body for Keeper {
    fn resume(&mut self, _rt: &Runtime, me: &'static Process) -> Step {
        while me.pop_message().is_some() {}
        Step::Blocked
    }

    fn describe(&mut self) -> String {
        "holds the names of the tuple spaces that live on this node".into()
    }
}

/// The pid of this node's keeper, started on first use.
pub fn keeper(rt: &Runtime) -> Result<Pid, Error> {
    let mut keeper = rt.spaces().keeper.lock();
    if let Some(pid) = *keeper {
        return Ok(pid);
    }
    let pid = rt.spawn(Box::new(Keeper))?;
    *keeper = Some(pid);
    Ok(pid)
}

/// The cluster-wide name of the named space `name`'s home.
pub fn home_name(name: &[u8]) -> Vec<u8> {
    [HOME_PREFIX, name].concat()
}

/// Whether this node is the home of the named space `name` (its keeper
/// holds the name, or, outside a cluster, always).
fn is_home(rt: &Runtime, name: &[u8]) -> bool {
    rt.transport().is_none() || rt.whereis(&home_name(name)).is_some_and(|holder| holder.node() == 0)
}

/// This node's keeper has lost the home of the named space `name` to
/// `winner`'s node (a partition healed, and both sides had used the
/// space): the space moves there. Its tuples go there, oldest first, as
/// outs that nothing refuses; its waiters, here and on other nodes, are
/// told `Moved` and ask there; handles to it find the new home on their
/// next use. None is lost, none doubled (unless the link to the winner
/// breaks on the way: then they are lost with it, as anything in flight).
pub fn moved(rt: &Runtime, name: &[u8], winner: Pid) {
    let Some(space) = rt.spaces().unname(name) else { return };
    let (tuples, waiters) = space.with(|st| st.move_out());
    for waiter in waiters {
        rt.complete((waiter, Completion::Moved));
    }
    let (Some(_), Ok(keeper)) = (rt.transport(), keeper(rt)) else { return };
    let header = Request { op: Op::Out, flags: FORCE, target: Target::Named(name), number: 0, shape: &[] }.encode();
    for t in tuples {
        let Ok(bytes) = wire::prepend_str(&header, &t.values) else { continue };
        let request = Message::with_attachments(bytes, t.values.attachments().to_vec());
        rt.service::<crate::dist::spaces::Spaces>().linda(rt, winner.node(), Waiter { pid: keeper, ticket: 0 }, request, false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip_and_junk_is_an_error() {
        let (shape, actuals) = shape_of(&[Pattern::Actual(Field::Int(1)), Pattern::Formal(Kinds::of(&[Kind::Int, Kind::Float])), Pattern::Any, Pattern::Never]);
        assert_eq!(actuals, vec![0]);
        let req = Request { op: Op::Find, flags: TAKE | WAIT, target: Target::Named(b"jobs"), number: 7, shape: &shape };
        let bytes = req.encode();
        assert_eq!(Request::decode(&bytes).unwrap(), req);
        for cut in 0..bytes.len() {
            assert!(Request::decode(&bytes[..cut]).is_err(), "a header cut at {cut}");
        }
        let mut bad = bytes.clone();
        bad[0] = 99;
        assert!(Request::decode(&bad).is_err());
        let private = Request { op: Op::Count, flags: 0, target: Target::Private(3), number: 0, shape: &[ANY] };
        assert_eq!(Request::decode(&private.encode()).unwrap().target, Target::Private(3));
    }

    fn values(f: impl FnOnce(&mut Writer), n: usize) -> Vec<u8> {
        let mut w = Writer::message(n);
        f(&mut w);
        w.finish_small()
    }

    #[test]
    fn fields_and_templates_come_from_the_values() {
        let v = values(
            |w| {
                w.str(b"k");
                w.int(2);
                w.float(2.5);
                w.pid(Pid::new(0, 4, 1));
                w.tag(Tag::Table);
                w.varint(0);
                w.buffer().extend_from_slice(&0u32.to_le_bytes());
                w.tag(Tag::Ref);
                w.varint(0);
                w.tag(Tag::Shared);
                w.byte(wire::shared::BUFFER);
                w.byte(0);
                w.varint(0);
            },
            7,
        );
        let kinds: Vec<Kind> = fields_of(&v).unwrap().iter().map(Field::kind).collect();
        assert_eq!(kinds, [Kind::String, Kind::Int, Kind::Float, Kind::Pid, Kind::Table, Kind::Table, Kind::Buffer]);
        assert!(fields_of(&values(|w| w.tag(Tag::Nil), 1)).is_err(), "a nil field");
        let (shape, _) = shape_of(&[Pattern::Actual(Field::Int(0)), Pattern::Any]);
        let t = template_of(&shape, &values(|w| w.int(5), 1)).unwrap();
        assert!(matches!(t[..], [Pattern::Actual(Field::Int(5)), Pattern::Any]));
        assert!(template_of(&shape, &values(|_| {}, 0)).is_err(), "an actual missing");
        assert!(template_of(&[ANY], &values(|w| w.int(1), 1)).is_err(), "an actual too many");
        assert!(template_of(&[], &values(|_| {}, 0)).is_err(), "no field");
    }

    #[test]
    fn lists_hold_each_tuple_with_its_sequence_number() {
        let t = |i: i64| Tuple { fields: vec![Field::Int(i)], values: Message::from_vec(values(|w| w.int(i), 1)) };
        let m = list([(Some(4), t(1)), (Some(9), t(2))].into_iter());
        let shapes = wire::shapes(&m).unwrap();
        assert_eq!(shapes, vec![Shape::Table]);
        let expected = values(
            |w| {
                w.tag(Tag::Table);
                w.varint(2);
                w.buffer().extend_from_slice(&0u32.to_le_bytes());
                for (seq, i) in [(4, 1), (9, 2)] {
                    w.tag(Tag::Table);
                    w.varint(2);
                    w.buffer().extend_from_slice(&0u32.to_le_bytes());
                    w.int(seq);
                    w.int(i);
                }
            },
            1,
        );
        assert_eq!(&m[..], &expected[..]);
    }
}
