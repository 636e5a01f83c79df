//! The handshake: how two nodes prove to each other that they hold the same
//! cookie before either reads anything else (SPEC §9). Sans-IO: it consumes
//! frames and says what to send; `link` moves the bytes.
//!
//! 1. Each side sends `Hello`: its node (name, incarnation), where it
//!    listens, and a nonce of 32 fresh random bytes — its challenge.
//! 2. On the peer's hello, each side sends `Proof`: HMAC-SHA256 keyed with
//!    the cookie over a label, its role (the dialing or the accepting side),
//!    the peer's nonce, its own nonce and its own hello's bytes. The proof
//!    answers the peer's fresh challenge, so an old one cannot be replayed;
//!    the role keeps a proof from being reflected back at its sender; the
//!    cookie itself never crosses.
//! 3. On the peer's proof, each side computes the proof it expects and
//!    compares in constant time. A mismatch ends the connection; otherwise
//!    the peer is authenticated and other frames may follow.
//!
//! Until step 3 passes, frames are at most `frame::HANDSHAKE_MAX` bytes and
//! anything but the expected frame ends the connection.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::frame::{Frame, Hello};
use crate::Error;

const LABEL: &[u8] = b"synodic node proof v1";

/// Which end of the connection this side is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Dialer,
    Acceptor,
}

impl Role {
    fn byte(self) -> u8 {
        match self {
            Role::Dialer => b'D',
            Role::Acceptor => b'A',
        }
    }

    fn other(self) -> Role {
        match self {
            Role::Dialer => Role::Acceptor,
            Role::Acceptor => Role::Dialer,
        }
    }
}

/// What the handshake wants done after a frame.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Send this frame to the peer and wait for its next one.
    Send(Frame),
    /// The peer is authenticated: here is what it said of itself.
    Done(Hello),
}

pub struct Handshake {
    role: Role,
    cookie: Vec<u8>,
    mine: Hello,
    theirs: Option<Hello>,
}

impl Handshake {
    /// Starts a handshake; the frame returned is step 1's hello.
    pub fn start(role: Role, cookie: &[u8], mine: Hello) -> (Handshake, Frame) {
        let hello = Frame::Hello(mine.clone());
        (Handshake { role, cookie: cookie.to_vec(), mine, theirs: None }, hello)
    }

    /// Takes the peer's next frame.
    pub fn receive(&mut self, frame: Frame) -> Result<Step, Error> {
        match (frame, &self.theirs) {
            (Frame::Hello(hello), None) => {
                let proof = proof(&self.cookie, self.role, &hello.nonce, &self.mine);
                self.theirs = Some(hello);
                Ok(Step::Send(Frame::Proof(proof)))
            }
            (Frame::Proof(got), Some(theirs)) => {
                let mac = mac(&self.cookie, self.role.other(), &self.mine.nonce, theirs);
                mac.verify_slice(&got).map_err(|_| Error::WrongCookie)?;
                Ok(Step::Done(theirs.clone()))
            }
            (frame, _) => Err(Error::Protocol(format!("unexpected {} during the handshake", frame_name(&frame)))),
        }
    }
}

fn mac(cookie: &[u8], role: Role, challenge: &[u8; 32], prover: &Hello) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(cookie).expect("HMAC takes keys of any length");
    mac.update(LABEL);
    mac.update(&[role.byte()]);
    mac.update(challenge);
    mac.update(&prover.nonce);
    mac.update(&Frame::hello_body(prover));
    mac
}

/// The proof that `prover`, in `role`, holds `cookie`, answering `challenge`.
fn proof(cookie: &[u8], role: Role, challenge: &[u8; 32], prover: &Hello) -> [u8; 32] {
    mac(cookie, role, challenge, prover).finalize().into_bytes().into()
}

fn frame_name(frame: &Frame) -> &'static str {
    match frame {
        Frame::Hello(_) => "second hello",
        Frame::Proof(_) => "proof before hello",
        _ => "frame",
    }
}

/// 32 bytes from the kernel's random source.
pub fn nonce() -> std::io::Result<[u8; 32]> {
    use std::io::Read;
    let mut out = [0; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use synodic_core::NodeId;

    fn hello(name: &str) -> Hello {
        Hello { node: NodeId::fresh(name), listen: String::new(), nonce: nonce().unwrap() }
    }

    /// Runs both sides against each other; each side's outcome.
    fn run(cookie_a: &[u8], cookie_b: &[u8]) -> (Result<Hello, Error>, Result<Hello, Error>) {
        let (mut a, hello_a) = Handshake::start(Role::Dialer, cookie_a, hello("a"));
        let (mut b, hello_b) = Handshake::start(Role::Acceptor, cookie_b, hello("b"));
        let Step::Send(proof_a) = a.receive(hello_b).unwrap() else { panic!("a answers b's hello") };
        let Step::Send(proof_b) = b.receive(hello_a).unwrap() else { panic!("b answers a's hello") };
        let done = |s: Result<Step, Error>| match s? {
            Step::Done(h) => Ok(h),
            Step::Send(f) => panic!("unexpected {f:?}"),
        };
        (done(a.receive(proof_b)), done(b.receive(proof_a)))
    }

    #[test]
    fn the_same_cookie_passes_both_ways() {
        let (a, b) = run(b"secret", b"secret");
        assert_eq!(&*a.unwrap().node.name, "b");
        assert_eq!(&*b.unwrap().node.name, "a");
    }

    #[test]
    fn a_wrong_cookie_fails_both_ways() {
        let (a, b) = run(b"secret", b"guess");
        assert!(matches!(a, Err(Error::WrongCookie)));
        assert!(matches!(b, Err(Error::WrongCookie)));
    }

    #[test]
    fn a_reflected_or_replayed_proof_fails() {
        // Reflection: the peer sends our own proof back.
        let (mut a, _) = Handshake::start(Role::Dialer, b"k", hello("a"));
        let Step::Send(mine) = a.receive(Frame::Hello(hello("b"))).unwrap() else { panic!() };
        assert!(matches!(a.receive(mine), Err(Error::WrongCookie)));
        // Replay: a proof made for another challenge.
        let b_hello = hello("b");
        let (mut first, first_hello) = Handshake::start(Role::Dialer, b"k", hello("a"));
        let (mut b, _) = Handshake::start(Role::Acceptor, b"k", b_hello.clone());
        let Step::Send(old_proof) = b.receive(first_hello).unwrap() else { panic!() };
        first.receive(Frame::Hello(b_hello.clone())).unwrap();
        assert!(matches!(first.receive(old_proof.clone()), Ok(Step::Done(_))));
        let (mut second, _) = Handshake::start(Role::Dialer, b"k", hello("a"));
        second.receive(Frame::Hello(b_hello)).unwrap();
        assert!(matches!(second.receive(old_proof), Err(Error::WrongCookie)));
    }

    #[test]
    fn frames_out_of_turn_are_refused() {
        let (mut a, _) = Handshake::start(Role::Dialer, b"k", hello("a"));
        assert!(matches!(a.receive(Frame::Proof([0; 32])), Err(Error::Protocol(_))));
        let (mut a, _) = Handshake::start(Role::Dialer, b"k", hello("a"));
        assert!(matches!(a.receive(Frame::Load { load: 1, nodes: 1 }), Err(Error::Protocol(_))));
        a.receive(Frame::Hello(hello("b"))).unwrap();
        assert!(matches!(a.receive(Frame::Hello(hello("b"))), Err(Error::Protocol(_))));
    }
}
