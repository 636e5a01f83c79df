//! The value wire format, as another node's messages bring it, and the
//! tuple-space requests made of it. The whole input is the message:
//!
//! - `wire::shapes`, `each_pid`, `leading_values`, and `map_pids` with a map
//!   that changes nothing: the bytes stay as they were, and it accepts just
//!   what `shapes` accepts;
//! - `append_values` copies a well-formed message's values into another
//!   whose shapes are the same;
//! - `split_leading_str`: put back together with `prepend_str` and split
//!   again, the same parts (a well-formed message always joins again);
//! - `linda_remote::Request::decode` on the input and on the leading string
//!   of the message (its request header), then `template_of` with the
//!   rest, as the home node of a space does; `fields_of` on the input.

use synodic_core::linda_remote::{fields_of, template_of, Request};
use synodic_core::wire::{self, Writer};

fn main() {
    synodic_fuzz::set_heap_limit(256 << 20);
    afl::fuzz!(|data: &[u8]| {
        one(data);
    });
}

fn one(data: &[u8]) {
    let shapes = wire::shapes(data);
    let mut copy = data.to_vec();
    let mut mapped_pids = 0;
    let mapped = wire::map_pids(&mut copy, |p, _| {
        mapped_pids += 1;
        Ok(p)
    });
    assert_eq!(copy, data, "map_pids with the identity changed the message");
    assert_eq!(mapped.is_ok(), shapes.is_ok(), "map_pids and shapes disagree on {mapped:?} / {shapes:?}");
    let mut pids = 0;
    assert_eq!(wire::each_pid(data, |_| pids += 1).is_ok(), shapes.is_ok());
    for n in [1, 2, 7] {
        if let Some((bytes, _)) = wire::leading_values(data, n) {
            assert!(bytes.len() < data.len());
        }
    }
    if let Ok(shapes) = &shapes {
        assert_eq!(pids, mapped_pids, "each_pid and map_pids found different pids");
        let mut w = Writer::message(shapes.len());
        let mut objects = 0;
        let n = wire::append_values(&mut w, data, &mut objects, 0).expect("a message that walks copies");
        assert_eq!(n, shapes.len());
        let copied = w.finish_small();
        let again = wire::shapes(&copied).expect("a copy of a well-formed message walks");
        assert_eq!(format!("{again:?}"), format!("{shapes:?}"), "a copy's values differ");
        let _ = fields_of(data);
    }
    if let Ok((lead, rest)) = wire::split_leading_str(data) {
        // Only the leading string is checked: the rest of a message that
        // claims more values than it holds does not join again.
        match wire::prepend_str(lead, &rest) {
            Ok(joined) => {
                let (lead2, rest2) = wire::split_leading_str(&joined).expect("a joined message splits");
                assert_eq!((lead2, &rest2), (lead, &rest), "split, joined and split again differs");
            }
            Err(e) => assert!(shapes.is_err(), "a well-formed message split does not join again: {e}"),
        }
        if let Ok(req) = Request::decode(lead) {
            let _ = template_of(req.shape, &rest);
        }
    }
    if let Ok(req) = Request::decode(data) {
        assert_eq!(Request::decode(&req.encode()).as_ref(), Ok(&req), "a request header encoded and decoded again");
    }
}
