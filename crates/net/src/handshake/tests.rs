//! The handshake driven in memory: both sides, a wrong cookie, an
//! eavesdropper's and a relay's view, messages out of turn.

use super::*;
use crate::frame::Decoder;

fn config(name: &str, cookie: &[u8], purpose: Purpose, plain: bool) -> Config {
    Config { cookie: cookie.to_vec(), purpose, node: NodeId::fresh(name), listen: format!("{name}:1"), plain }
}

/// The one message in `bytes`.
fn message(bytes: &[u8]) -> (u8, Vec<u8>) {
    let mut d = Decoder::new();
    d.space(bytes.len()).extend_from_slice(bytes);
    let (kind, body) = d.next_raw().unwrap().expect("a whole message");
    (kind, body.to_vec())
}

fn send(step: Step) -> Vec<u8> {
    match step {
        Step::Send(bytes) => bytes,
        Step::Done { .. } => panic!("done too early"),
    }
}

type Outcome = Result<(Peer, Session), Error>;

/// Runs a dialer and an acceptor against each other; each side's outcome,
/// and what the acceptor sent after the hello.
fn run(dialer: Config, acceptor: Config) -> (Outcome, Outcome, Vec<u8>) {
    let mut d = Handshake::dialer(dialer).unwrap();
    let (mut a, challenge) = Handshake::acceptor(acceptor).unwrap();
    let (kind, body) = message(&challenge);
    let hello = send(d.receive(kind, &body).unwrap());
    let (kind, body) = message(&hello);
    let (answer, acceptor_outcome) = match a.receive(kind, &body) {
        Ok(Step::Done { send, peer, session }) => (send.unwrap(), Ok((peer, session))),
        Ok(Step::Send(_)) => panic!("the acceptor is done after the hello"),
        Err(e) => (a.refusal(&e).unwrap(), Err(e)),
    };
    let (kind, body) = message(&answer);
    let dialer_outcome = match d.receive(kind, &body) {
        Ok(Step::Done { send, peer, session }) => {
            assert!(send.is_none());
            Ok((peer, session))
        }
        Ok(Step::Send(_)) => panic!("the dialer is done after the welcome"),
        Err(e) => Err(e),
    };
    (dialer_outcome, acceptor_outcome, answer)
}

/// Records sealed by one side open on the other, both ways.
fn talk(a: &mut Session, b: &mut Session) {
    for flip in [false, true] {
        let (from, to) = if flip { (&mut *b, &mut *a) } else { (&mut *a, &mut *b) };
        let mut wire = Vec::new();
        from.sealer.seal(b"over the link", &mut wire).unwrap();
        to.opener.feed(&wire);
        assert_eq!(to.opener.next().unwrap(), Some(&b"over the link"[..]));
    }
}

#[test]
fn the_same_cookie_passes_both_ways_and_the_keys_match() {
    let (d, a, _) = run(config("d", b"secret", Purpose::Node, false), config("a", b"secret", Purpose::Node, false));
    let ((d_peer, mut d_session), (a_peer, mut a_session)) = (d.unwrap(), a.unwrap());
    assert_eq!(&*d_peer.node.name, "a");
    assert_eq!(&*a_peer.node.name, "d");
    assert_eq!((d_peer.listen.as_str(), a_peer.listen.as_str()), ("a:1", "d:1"));
    assert_eq!(d_peer.dialer_nonce, a_peer.dialer_nonce, "both know the dialer's nonce");
    assert_eq!(d_session.protection(), Protection::Encrypted);
    talk(&mut d_session, &mut a_session);
}

#[test]
fn records_are_authenticated_only_when_both_sides_ask() {
    for (dp, ap, expected) in [(true, true, Protection::Authenticated), (true, false, Protection::Encrypted), (false, true, Protection::Encrypted)] {
        let (d, a, _) = run(config("d", b"k", Purpose::Node, dp), config("a", b"k", Purpose::Node, ap));
        let (mut d, mut a) = (d.unwrap().1, a.unwrap().1);
        assert_eq!((d.protection(), a.protection()), (expected, expected));
        talk(&mut d, &mut a);
    }
}

#[test]
fn a_wrong_cookie_is_refused_by_the_acceptor_before_it_proves_anything() {
    let (d, a, answer) = run(config("d", b"guess", Purpose::Node, false), config("a", b"secret", Purpose::Node, false));
    assert!(matches!(a, Err(Error::WrongCookie)));
    assert!(matches!(d, Err(Error::WrongCookie)), "the dialer hears why");
    // All the acceptor said besides its challenge is the refusal.
    assert_eq!(message(&answer), (messages::kind::REFUSED, Message::Refused("wrong cookie".into()).encode()[5..].to_vec()));
}

#[test]
fn the_challenge_owes_nothing_to_the_cookie() {
    // Two acceptors with different cookies: challenges of the same shape,
    // made of fresh random bytes only.
    let (_, one) = Handshake::acceptor(config("a", b"one cookie", Purpose::Node, false)).unwrap();
    let (_, other) = Handshake::acceptor(config("a", b"another", Purpose::Node, false)).unwrap();
    let (Message::Challenge(x), Message::Challenge(y)) = (Message::decode(one[4], &one[5..]).unwrap(), Message::decode(other[4], &other[5..]).unwrap()) else { panic!("challenges") };
    assert_eq!(one.len(), other.len());
    assert_ne!(x.nonce, y.nonce);
    assert_ne!(x.ephemeral, y.ephemeral);
}

#[test]
fn a_replayed_hello_or_a_relay_that_changes_a_flag_fails() {
    // Replay: a hello that passed once, sent to a new acceptor.
    let mut d = Handshake::dialer(config("d", b"k", Purpose::Node, false)).unwrap();
    let (mut a, challenge) = Handshake::acceptor(config("a", b"k", Purpose::Node, false)).unwrap();
    let (kind, body) = message(&challenge);
    let hello = send(d.receive(kind, &body).unwrap());
    let (kind, body) = message(&hello);
    assert!(matches!(a.receive(kind, &body), Ok(Step::Done { .. })));
    let (mut again, _) = Handshake::acceptor(config("a", b"k", Purpose::Node, false)).unwrap();
    assert!(matches!(again.receive(kind, &body), Err(Error::WrongCookie)));
    // A relay that asks for authentication only on the dialer's behalf.
    let mut d = Handshake::dialer(config("d", b"k", Purpose::Node, false)).unwrap();
    let (mut a, challenge) = Handshake::acceptor(config("a", b"k", Purpose::Node, true)).unwrap();
    let (kind, body) = message(&challenge);
    let hello = send(d.receive(kind, &body).unwrap());
    let Message::Hello(mut h) = Message::decode(hello[4], &hello[5..]).unwrap() else { panic!() };
    h.plain = true;
    let forged = Message::Hello(h).encode();
    assert!(matches!(a.receive(forged[4], &forged[5..]), Err(Error::WrongCookie)));
}

#[test]
fn a_console_at_a_node_port_is_refused_with_a_reason() {
    let (d, a, _) = run(config("c", b"k", Purpose::Console, false), config("a", b"k", Purpose::Node, false));
    assert!(matches!(a, Err(Error::Refused(ref why)) if why.contains("not a console's")), "{:?}", a.err());
    assert!(matches!(d, Err(Error::Refused(ref why)) if why.contains("not a console's")));
}

#[test]
fn messages_out_of_turn_are_refused() {
    let mut d = Handshake::dialer(config("d", b"k", Purpose::Node, false)).unwrap();
    let welcome = Message::Welcome(Welcome { plain: false, node: NodeId::fresh("x"), listen: String::new(), proof: [0; 32] }).encode();
    assert!(matches!(d.receive(welcome[4], &welcome[5..]), Err(Error::Protocol(_))));
    let (mut a, challenge) = Handshake::acceptor(config("a", b"k", Purpose::Node, false)).unwrap();
    assert!(matches!(a.receive(challenge[4], &challenge[5..]), Err(Error::Protocol(_))));
    // A refusal sent to an acceptor is just out of turn.
    let refused = Message::Refused("wrong cookie".into()).encode();
    let (mut a, _) = Handshake::acceptor(config("a", b"k", Purpose::Node, false)).unwrap();
    assert!(matches!(a.receive(refused[4], &refused[5..]), Err(Error::Protocol(_))));
    // A bad ephemeral key (all zeros: X25519's low-order point) is refused.
    let (_, challenge) = Handshake::acceptor(config("a", b"k", Purpose::Node, false)).unwrap();
    let Message::Challenge(mut c) = Message::decode(challenge[4], &challenge[5..]).unwrap() else { panic!() };
    c.ephemeral = [0; 32];
    let zero = Message::Challenge(c).encode();
    let mut d = Handshake::dialer(config("d", b"k", Purpose::Node, false)).unwrap();
    assert!(matches!(d.receive(zero[4], &zero[5..]), Err(Error::Protocol(ref e)) if e.contains("ephemeral")));
}
