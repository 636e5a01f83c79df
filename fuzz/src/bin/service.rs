//! Frames of the distributed services from an authenticated peer: the
//! input is a kind byte and a body, handed to `Services::receive` as the
//! transport hands them (their pids mapped as a link maps them), on a node
//! linked to two others through an in-memory transport
//! (`synodic_core::dist::testing`). Whatever the bytes, the answer is an
//! effect or one error, never a panic.

use std::sync::{Arc, OnceLock};

use synodic_core::dist::testing::{node, Link, Wire};
use synodic_core::Runtime;

static NODE: OnceLock<(Runtime, Arc<Wire>)> = OnceLock::new();

fn main() {
    synodic_fuzz::set_heap_limit(256 << 20);
    afl::fuzz!(|data: &[u8]| {
        one(data);
    });
}

fn one(data: &[u8]) {
    let Some((&kind, body)) = data.split_first() else { return };
    let (rt, wire) = NODE.get_or_init(|| node(&["b", "c"]));
    let from = Link::new(1 + kind as u16 % 2);
    if let Err(e) = rt.services().receive(rt, &from, kind, body, Vec::new()) {
        assert!(!e.is_empty(), "an error says what was wrong");
    }
    // What the node queued in answer goes nowhere: the next input starts clean.
    drop(wire.take());
}
