//! The runtime's notices that cross between nodes as ordinary messages:
//! the answer to a request (`"$reply", tag, value` or `"$reply", tag, nil,
//! error`), which its caller waits for by its tag (a selective receive: no
//! thread ever blocks on the network); DOWN; `"nodedown"`; and a name with
//! its pid (what the names service carries).

use crate::wire::{Reader, Tag, Writer};
use crate::{Message, Pid};

const REPLY: &[u8] = b"$reply";

/// The answer to the request tagged `tag`: a pid, `true` (`None`), or an error.
pub fn reply(tag: u64, answer: Result<Option<Pid>, &str>) -> Message {
    let mut w = Writer::message(if answer.is_ok() { 3 } else { 4 });
    w.str(REPLY);
    w.int(tag as i64);
    match answer {
        Ok(Some(pid)) => w.pid(pid),
        Ok(None) => w.tag(Tag::True),
        Err(e) => {
            w.tag(Tag::Nil);
            w.str(e.as_bytes());
        }
    }
    Message::from_vec(w.finish_small())
}

/// A claim's refusal: [`reply`]'s error, then the pid that holds the name.
pub fn refused(tag: u64, why: &str, holder: Pid) -> Message {
    let mut w = Writer::message(5);
    w.str(REPLY);
    w.int(tag as i64);
    w.tag(Tag::Nil);
    w.str(why.as_bytes());
    w.pid(holder);
    Message::from_vec(w.finish_small())
}

/// What the reply `msg` to a name claim says: granted, or refused, with
/// why and, when the refusal names it, the pid that holds the name.
pub fn claim_answer(msg: &[u8]) -> Option<Result<(), (String, Option<Pid>)>> {
    let (_, granted) = reply_of(msg)?;
    if granted {
        return Some(Ok(()));
    }
    let (mut r, count) = Reader::message(msg).ok()?;
    for _ in 0..3 {
        skip_scalar(&mut r)?;
    }
    let why = match r.tag().ok()? {
        Tag::Str => String::from_utf8_lossy(r.bytes().ok()?).into_owned(),
        _ => return None,
    };
    let holder = if count == 5 && r.tag().ok()? == Tag::Pid { Some(r.pid().ok()?) } else { None };
    Some(Err((why, holder)))
}

/// Reads past one string, integer or nil.
fn skip_scalar(r: &mut Reader) -> Option<()> {
    match r.tag().ok()? {
        Tag::Str => drop(r.bytes().ok()?),
        Tag::Int => drop(r.int().ok()?),
        Tag::Nil => {}
        _ => return None,
    }
    Some(())
}

/// The tag of `msg` if it is a reply.
pub fn reply_tag(msg: &[u8]) -> Option<u64> {
    reply_of(msg).map(|(tag, _)| tag)
}

/// The tag of `msg` if it is a reply, and whether it grants what was asked
/// (it is not an error).
pub fn reply_of(msg: &[u8]) -> Option<(u64, bool)> {
    let (mut r, count) = Reader::message(msg).ok()?;
    if count < 3 || r.tag().ok()? != Tag::Str || r.bytes().ok()? != REPLY || r.tag().ok()? != Tag::Int {
        return None;
    }
    r.int().ok().map(|t| (t as u64, count == 3))
}

/// `"nodedown", node`: what a node monitor gets when `node` is lost.
pub fn nodedown(node: &[u8]) -> Message {
    let mut w = Writer::message(2);
    w.str(b"nodedown");
    w.str(node);
    Message::from_vec(w.finish_small())
}

/// A name and a pid as a message (what the transport carries of a name).
pub fn name_message(name: &[u8], pid: Pid) -> Vec<u8> {
    let mut w = Writer::message(2);
    w.str(name);
    w.pid(pid);
    w.finish_small()
}

/// The name and pid of a [`name_message`].
pub fn name_of(msg: &[u8]) -> Option<(&[u8], Pid)> {
    let (mut r, count) = Reader::message(msg).ok()?;
    if count != 2 || r.tag().ok()? != Tag::Str {
        return None;
    }
    let name = r.bytes().ok()?;
    if r.tag().ok()? != Tag::Pid {
        return None;
    }
    Some((name, r.pid().ok()?))
}

/// The pid a DOWN notice (`"DOWN", pid, reason`) is about, if `msg` is one.
pub fn down_of(msg: &[u8]) -> Option<Pid> {
    let (mut r, count) = Reader::message(msg).ok()?;
    if count != 3 || r.tag().ok()? != Tag::Str || r.bytes().ok()? != b"DOWN" || r.tag().ok()? != Tag::Pid {
        return None;
    }
    r.pid().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_and_downs_are_told_apart() {
        let pid = Pid::new(0, 3, 1);
        assert_eq!(reply_tag(&reply(7, Ok(Some(pid)))), Some(7));
        assert_eq!(reply_of(&reply(9, Err("no"))), Some((9, false)));
        assert_eq!(reply_of(&reply(9, Ok(None))), Some((9, true)));
        let down = crate::runtime::down_message(pid, &crate::ExitReason::Normal);
        assert_eq!(down_of(&down), Some(pid));
        assert_eq!(reply_tag(&down), None);
        assert_eq!(down_of(&reply(7, Ok(Some(pid)))), None);
        assert_eq!(down_of(b"junk"), None);
        assert_eq!(claim_answer(&reply(4, Ok(None))), Some(Ok(())));
        assert_eq!(claim_answer(&reply(4, Err("taken"))), Some(Err(("taken".into(), None))));
        assert_eq!(claim_answer(&refused(4, "taken", pid)), Some(Err(("taken".into(), Some(pid)))));
        assert_eq!(claim_answer(b"junk"), None);
    }
}
