use super::*;
use super::walk::Walk;

#[test]
fn scalars_round_trip() {
    let mut w = Writer::message(5);
    w.int(i64::MIN);
    w.int(-1);
    w.float(-0.0);
    w.str(b"a\0b");
    w.pid(Pid::new(1, 9, 2));
    let buf = w.finish_small();
    let (mut r, n) = Reader::message(&buf).unwrap();
    assert_eq!(n, 5);
    assert_eq!((r.tag().unwrap(), r.int().unwrap()), (Tag::Int, i64::MIN));
    assert_eq!((r.tag().unwrap(), r.int().unwrap()), (Tag::Int, -1));
    assert_eq!(r.tag().unwrap(), Tag::Float);
    assert!(r.float().unwrap().is_sign_negative());
    assert_eq!((r.tag().unwrap(), r.bytes().unwrap()), (Tag::Str, &b"a\0b"[..]));
    assert_eq!((r.tag().unwrap(), r.pid().unwrap()), (Tag::Pid, Pid::new(1, 9, 2)));
    r.finish().unwrap();
}

#[test]
fn leading_values_are_their_bytes() {
    let mut w = Writer::message(3);
    w.int(1);
    w.str(b"two");
    w.int(3);
    let buf = w.finish_small();
    let (mut r, _) = Reader::message(&buf).unwrap();
    let start = r.position();
    r.tag().unwrap();
    r.int().unwrap();
    r.tag().unwrap();
    r.bytes().unwrap();
    assert_eq!(leading_values(&buf, 2), Some((&buf[start..r.position()], Shape::Str(b"two"))));
    assert_eq!(leading_values(&buf, 5), Some((&buf[start..], Shape::Int(3))), "fewer values than asked");
    assert_eq!(leading_values(&buf[..buf.len() - 2], 3), None, "truncated");
    let mut w = Writer::message(1);
    w.tag(Tag::Shared);
    w.byte(1);
    w.byte(0);
    w.varint(0);
    assert_eq!(leading_values(&w.finish_small(), 1), None, "a shared value");
}

#[test]
fn junk_is_an_error_not_a_panic() {
    assert_eq!(Reader::message(&[]).err(), Some(WireError::Truncated(0)));
    assert_eq!(Reader::message(&[9, 1, 0]).err(), Some(WireError::Version(9)));
    assert!(Reader::message(&[VERSION, 200, 0]).is_err(), "count larger than the payload");
    let (mut r, _) = Reader::message(&[VERSION, 1, Tag::Str as u8, 0xff, 0xff, 0xff, 0x7f]).unwrap();
    r.tag().unwrap();
    assert!(r.bytes().is_err());
    let (mut r, _) = Reader::message(&[VERSION, 1, 99]).unwrap();
    assert_eq!(r.tag().err(), Some(WireError::BadTag { tag: 99, at: 2 }));
    let mut over = vec![VERSION, 1, Tag::Int as u8];
    over.extend([0xff; 11]);
    let (mut r, _) = Reader::message(&over).unwrap();
    r.tag().unwrap();
    assert!(matches!(r.int(), Err(WireError::BadVarint(_))));
    // Every prefix of a valid message fails cleanly.
    let mut w = Writer::message(2);
    w.str(b"hello");
    w.float(1.5);
    let buf = w.finish_small();
    for cut in 0..buf.len() {
        let ok = Reader::message(&buf[..cut]).and_then(|(mut r, n)| {
            for _ in 0..n {
                match r.tag()? {
                    Tag::Str => drop(r.bytes()?),
                    _ => drop(r.float()?),
                }
            }
            Ok(())
        });
        assert!(ok.is_err(), "prefix of {cut} bytes decoded");
    }
}

#[test]
fn pids_are_found_and_rewritten_in_place() {
    let mut w = Writer::message(3);
    w.pid(Pid::new(0, 1, 1));
    w.tag(Tag::Table);
    w.varint(1);
    w.buffer().extend_from_slice(&1u32.to_le_bytes());
    w.pid(Pid::new(2, 3, 4));
    w.str(b"key");
    w.pid(Pid::new(0, 5, 6));
    w.str(b"tail");
    let mut buf = w.finish_small();
    let len = buf.len();
    map_pids(&mut buf, |p, _| Ok(Pid::new(p.node() + 7, p.index(), p.generation()))).unwrap();
    assert_eq!(buf.len(), len);
    let (mut r, _) = Reader::message(&buf).unwrap();
    assert_eq!((r.tag().unwrap(), r.pid().unwrap()), (Tag::Pid, Pid::new(7, 1, 1)));
    let mut seen = Vec::new();
    map_pids(&mut buf, |p, _| {
        seen.push(p);
        Ok(p)
    })
    .unwrap();
    assert_eq!(seen, [Pid::new(7, 1, 1), Pid::new(9, 3, 4), Pid::new(7, 5, 6)]);
    // Junk, truncation and a refusing map are errors, never panics.
    for cut in 0..len {
        assert!(map_pids(&mut buf.clone()[..cut], |p, _| Ok(p)).is_err(), "prefix of {cut} bytes");
    }
    assert_eq!(map_pids(&mut buf, |_, at| Err(WireError::UnknownNode(at))), Err(WireError::UnknownNode(3)));
}

/// A message of scalars alone (the short path of `walk::pids_of`) has its
/// pids found and rewritten as the full walk does, wherever they sit
/// among values of every scalar kind.
#[test]
fn pids_among_scalars_are_found_and_rewritten_in_place() {
    let mut w = Writer::message(9);
    w.tag(Tag::Nil);
    w.pid(Pid::new(1, 2, 3));
    w.bool(true);
    w.int(-300);
    w.float(2.5);
    w.str(b"a string of some length, longer than one varint byte's worth? no, but long enough");
    w.pid(Pid::new(0, 9, 9));
    w.bool(false);
    w.pid(Pid::new(4, 5, 6));
    let mut buf = w.finish_small();
    let len = buf.len();
    let mut seen = Vec::new();
    each_pid(&buf, |p| seen.push(p)).unwrap();
    assert_eq!(seen, [Pid::new(1, 2, 3), Pid::new(0, 9, 9), Pid::new(4, 5, 6)]);
    map_pids(&mut buf, |p, _| Ok(Pid::new(p.node() + 7, p.index(), p.generation()))).unwrap();
    assert_eq!(buf.len(), len);
    let mut seen = Vec::new();
    each_pid(&buf, |p| seen.push(p)).unwrap();
    assert_eq!(seen, [Pid::new(8, 2, 3), Pid::new(7, 9, 9), Pid::new(11, 5, 6)]);
    for cut in 0..len {
        assert!(map_pids(&mut buf.clone()[..cut], |p, _| Ok(p)).is_err(), "prefix of {cut} bytes");
        assert!(each_pid(&buf[..cut], |_| ()).is_err(), "prefix of {cut} bytes");
    }
    let mut longer = buf.clone();
    longer.push(Tag::Nil as u8);
    assert!(each_pid(&longer, |_| ()).is_err(), "a byte beyond the values");
}

#[test]
fn a_message_too_large_is_an_error_not_an_abort() {
    let mut w = Writer::message(1);
    assert!(!w.reserve(MAX_MESSAGE + 1), "over the largest message");
    w.str(&[7; 5000]);
    assert!(matches!(w.finish(), Err((WireError::TooLarge, _))), "the writer stopped");
    let mut w = Writer::message(1);
    w.str(&[7; 5000]);
    assert!(w.finish().is_ok());
}

/// A message of one table holding itself, then a shared value.
fn self_holding_table(shared: u64) -> Vec<u8> {
    let mut w = Writer::message(2);
    w.tag(Tag::Table);
    w.varint(1);
    w.buffer().extend_from_slice(&0u32.to_le_bytes());
    w.tag(Tag::Ref);
    w.varint(0);
    w.tag(Tag::Shared);
    w.byte(1);
    w.byte(0);
    w.varint(shared);
    w.finish_small()
}

#[test]
fn values_of_several_messages_become_one_renumbered() {
    let a = self_holding_table(0);
    let b = self_holding_table(0);
    let mut w = Writer::message(1);
    w.tag(Tag::Table);
    w.varint(4);
    w.buffer().extend_from_slice(&0u32.to_le_bytes());
    let mut objects = 1;
    for (i, m) in [&a, &b].into_iter().enumerate() {
        assert_eq!(append_values(&mut w, m, &mut objects, i as u64).unwrap(), 2);
    }
    assert_eq!(objects, 3);
    let list = w.finish_small();
    // The second table refers to itself as object 2, and to attachment 1.
    let (mut r, _) = Reader::message(&list).unwrap();
    let mut walk = Walk::default();
    assert_eq!(walk.value(&mut r, 0).unwrap(), Shape::Table);
    assert_eq!(walk.objects.len(), 3);
    r.finish().unwrap();
    let tail = &list[list.len() - 12..];
    assert_eq!(tail, &[Tag::Table as u8, 1, 0, 0, 0, 0, Tag::Ref as u8, 2, Tag::Shared as u8, 1, 0, 1][..]);
}

#[test]
fn shapes_see_through_references_and_strings_split_off() {
    let m = self_holding_table(3);
    assert_eq!(shapes(&m).unwrap(), vec![Shape::Table, Shape::Shared { kind: 1, variant: 0 }]);
    let shared = shared_values(&m).unwrap();
    assert_eq!(shared.len(), 1);
    assert_eq!((m[shared[0].at], m[shared[0].at + 1], shared[0].index), (1, 0, 3), "where the kind and variant bytes are");
    let with_lead = prepend_str(b"op", &m).unwrap();
    let (lead, rest) = split_leading_str(&with_lead).unwrap();
    assert_eq!((lead, rest), (&b"op"[..], m.clone()));
    assert!(split_leading_str(&m).is_err(), "the first value is no string");
    let mut w = Writer::message(1);
    w.tag(Tag::Ref);
    w.varint(0);
    assert_eq!(shapes(&w.finish_small()), Err(WireError::BadRef(0)));
    assert!(split_leading_str(&with_lead[..4]).is_err(), "cut inside the string");
}

#[test]
fn every_tag_of_the_c_header_list_is_a_tag_of_the_same_value() {
    for (name, value) in tags::ALL {
        let tag = Tag::from_byte(value).unwrap_or_else(|| panic!("{name} = {value} is no tag"));
        assert_eq!(tag as u8, value, "{name}");
    }
    assert_eq!(tags::ALL.len(), Tag::Shared as usize + 1, "every tag is listed");
}
