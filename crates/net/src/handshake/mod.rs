//! The handshake: how the two ends of a connection (two nodes, or a
//! console and a node) prove to each other that they hold the same cookie,
//! and agree on the keys that protect every byte after it (SPEC §9).
//! Sans-IO: it takes messages and says what to send; `drive` moves the
//! bytes over a socket.
//!
//! 1. The accepting side sends a **challenge**: a fresh nonce and an
//!    ephemeral X25519 public key. Nothing in it depends on the cookie, so
//!    a peer that does not hold the cookie learns nothing it could test
//!    guesses against.
//! 2. The connecting side sends **hello**: what it wants (a link between
//!    nodes, or a console), who it is, its own nonce and ephemeral key, and
//!    its proof: HMAC-SHA256 over the transcript so far, keyed from the
//!    cookie *and* the X25519 secret the two ephemeral keys share (HKDF).
//!    Someone who only watches the connection cannot compute that key, so
//!    cannot test cookie guesses against the proof either.
//! 3. The accepting side checks the proof (in constant time). A mismatch
//!    ends the connection with a **refused** message and one line on its
//!    stderr; otherwise it sends **welcome**: who it is and its own proof,
//!    over the whole transcript.
//! 4. The connecting side checks that proof. Both now derive one key per
//!    direction from the same secret and the whole transcript: records
//!    (`record`) carry everything after, encrypted with AES-128-GCM, or,
//!    when both sides were started with `--no-encryption`, authenticated
//!    only. Either side's flag is in the transcript, so a relay cannot
//!    downgrade it.
//!
//! Every secret comes from `ring` (X25519, HKDF, HMAC, the AEADs); the
//! keys are fresh on each connection (forward secrecy: a cookie stolen
//! later does not open what was recorded earlier). What the cookie does
//! not protect against is in `docs/cluster.md`.

mod drive;
mod messages;

pub use drive::{blocking, DRIVE_LIMIT};
pub(crate) use drive::over_tokio;
pub use messages::{Challenge, Hello, Message, Purpose, Welcome};

use ring::agreement::{self, EphemeralPrivateKey, UnparsedPublicKey, X25519};
use ring::digest::{self, SHA256};
use ring::hkdf::{self, Prk, HKDF_SHA256};
use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};
use synodic_core::NodeId;

use crate::record::{Opener, Protection, RecordKey, Sealer, KEY_LEN};
use crate::Error;

const LABEL: &[u8] = b"synodic link v3";

/// Which end of the connection this side is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Dialer,
    Acceptor,
}

/// What a side says of itself and wants.
#[derive(Clone, Debug)]
pub struct Config {
    pub cookie: Vec<u8>,
    pub purpose: Purpose,
    pub node: NodeId,
    /// Where the node listens for other nodes (empty: it does not).
    pub listen: String,
    /// Started with `--no-encryption`: records are authenticated only, if
    /// the peer was too.
    pub plain: bool,
}

/// The authenticated peer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Peer {
    pub node: NodeId,
    pub listen: String,
    /// The connecting side's nonce (to rank two connections between the
    /// same nodes, `link::Rank`).
    pub dialer_nonce: [u8; 32],
}

/// The keys of an authenticated connection: one sealer for what this side
/// sends, one opener for what it receives.
pub struct Session {
    pub sealer: Sealer,
    pub opener: Opener,
}

impl Session {
    pub fn protection(&self) -> Protection {
        self.sealer.protection()
    }
}

/// What the handshake wants done after a message. (`Done` carries the
/// session's keys whole: one per connection, not worth a box.)
#[allow(clippy::large_enum_variant)]
pub enum Step {
    /// Send these bytes and wait for the peer's next message.
    Send(Vec<u8>),
    /// Done: send `send` (if any), then records carry the rest.
    Done { send: Option<Vec<u8>>, peer: Peer, session: Session },
}

#[allow(clippy::large_enum_variant)] // one per handshake
enum State {
    /// The dialer waits for the challenge.
    Challenged,
    /// The acceptor waits for the hello that answers its challenge.
    Hello { challenge: Vec<u8> },
    /// The dialer waits for the welcome that answers its hello.
    Welcome { prk: Prk, transcript: digest::Digest, proof: Vec<u8> },
    Over,
}

pub struct Handshake {
    role: Role,
    config: Config,
    nonce: [u8; 32],
    ephemeral: Option<EphemeralPrivateKey>,
    public: [u8; 32],
    state: State,
}

impl Handshake {
    /// The connecting side's handshake: it speaks after the challenge.
    pub fn dialer(config: Config) -> Result<Handshake, Error> {
        Handshake::new(Role::Dialer, config, State::Challenged)
    }

    /// The accepting side's handshake, and its challenge to send.
    pub fn acceptor(config: Config) -> Result<(Handshake, Vec<u8>), Error> {
        let mut hs = Handshake::new(Role::Acceptor, config, State::Over)?;
        let challenge = Message::Challenge(Challenge { nonce: hs.nonce, ephemeral: hs.public });
        hs.state = State::Hello { challenge: challenge.signed_body() };
        Ok((hs, challenge.encode()))
    }

    fn new(role: Role, config: Config, state: State) -> Result<Handshake, Error> {
        let random = SystemRandom::new();
        let no_random = |_| Error::Protocol("no random source".into());
        let mut nonce = [0; 32];
        random.fill(&mut nonce).map_err(no_random)?;
        let ephemeral = EphemeralPrivateKey::generate(&X25519, &random).map_err(no_random)?;
        let public = ephemeral.compute_public_key().map_err(no_random)?.as_ref().try_into().expect("an X25519 key is 32 bytes");
        Ok(Handshake { role, config, nonce, ephemeral: Some(ephemeral), public, state })
    }

    /// Fixes this side's nonce (before any message): tests use it to rank
    /// two links between the same nodes (`link::Rank`) as they wish.
    pub fn with_nonce(mut self, nonce: [u8; 32]) -> Handshake {
        self.nonce = nonce;
        self
    }

    pub fn role(&self) -> Role {
        self.role
    }

    /// Takes the peer's next message (its kind and body).
    pub fn receive(&mut self, kind: u8, body: &[u8]) -> Result<Step, Error> {
        let message = Message::decode(kind, body)?;
        match (std::mem::replace(&mut self.state, State::Over), message) {
            (_, Message::Refused(why)) if self.role == Role::Dialer => match why.as_str() {
                "wrong cookie" => Err(Error::WrongCookie),
                _ => Err(Error::Refused(why)),
            },
            (State::Challenged, Message::Challenge(challenge)) => self.answer(challenge),
            (State::Hello { challenge }, Message::Hello(hello)) => self.welcome(&challenge, hello),
            (State::Welcome { prk, transcript, proof }, Message::Welcome(welcome)) => self.finish(&prk, transcript, &proof, welcome),
            (_, message) => Err(Error::Protocol(format!("unexpected {} during the handshake", message.name()))),
        }
    }

    /// What to send the peer when the handshake fails with `why`: the
    /// accepting side says why it refuses (nothing secret), the connecting
    /// side just closes.
    pub fn refusal(&self, why: &Error) -> Option<Vec<u8>> {
        let text = match why {
            Error::WrongCookie => "wrong cookie".to_string(),
            Error::Refused(why) => why.clone(),
            _ => return None,
        };
        (self.role == Role::Acceptor).then(|| Message::Refused(text).encode())
    }

    /// Step 2, the dialer: proves itself against the challenge.
    fn answer(&mut self, challenge: Challenge) -> Result<Step, Error> {
        let prk = self.secret(&challenge.ephemeral)?;
        let mut hello = Hello {
            purpose: self.config.purpose,
            plain: self.config.plain,
            node: self.config.node.clone(),
            listen: self.config.listen.clone(),
            nonce: self.nonce,
            ephemeral: self.public,
            proof: [0; 32],
        };
        let transcript = first_transcript(&Message::Challenge(challenge).signed_body(), &Message::Hello(hello.clone()).signed_body());
        let proof = hmac::sign(&proof_key(&prk, b"dialer proof"), transcript.as_ref());
        hello.proof = proof.as_ref().try_into().expect("HMAC-SHA256 is 32 bytes");
        let send = Message::Hello(hello).encode();
        self.state = State::Welcome { prk, transcript, proof: proof.as_ref().to_vec() };
        Ok(Step::Send(send))
    }

    /// Step 3, the acceptor: checks the hello's proof, then proves itself.
    fn welcome(&mut self, challenge: &[u8], hello: Hello) -> Result<Step, Error> {
        if hello.purpose != self.config.purpose {
            return Err(Error::Refused(match hello.purpose {
                Purpose::Console => "this is a node's port, not a console's".into(),
                Purpose::Node => "this is a console's port, not a node's".into(),
            }));
        }
        let prk = self.secret(&hello.ephemeral)?;
        let transcript = first_transcript(challenge, &Message::Hello(hello.clone()).signed_body());
        hmac::verify(&proof_key(&prk, b"dialer proof"), transcript.as_ref(), &hello.proof).map_err(|_| Error::WrongCookie)?;
        let mut welcome = Welcome { plain: self.config.plain, node: self.config.node.clone(), listen: self.config.listen.clone(), proof: [0; 32] };
        let transcript = second_transcript(&transcript, &hello.proof, &welcome);
        welcome.proof = hmac::sign(&proof_key(&prk, b"acceptor proof"), transcript.as_ref()).as_ref().try_into().expect("32 bytes");
        let session = session(&prk, &transcript, Role::Acceptor, protection(hello.plain, self.config.plain))?;
        let peer = Peer { node: hello.node, listen: hello.listen, dialer_nonce: hello.nonce };
        Ok(Step::Done { send: Some(Message::Welcome(welcome).encode()), peer, session })
    }

    /// Step 4, the dialer: checks the welcome's proof.
    fn finish(&mut self, prk: &Prk, transcript: digest::Digest, proof: &[u8], welcome: Welcome) -> Result<Step, Error> {
        let transcript = second_transcript(&transcript, proof, &welcome);
        hmac::verify(&proof_key(prk, b"acceptor proof"), transcript.as_ref(), &welcome.proof).map_err(|_| Error::WrongCookie)?;
        let session = session(prk, &transcript, Role::Dialer, protection(self.config.plain, welcome.plain))?;
        let peer = Peer { node: welcome.node, listen: welcome.listen, dialer_nonce: self.nonce };
        Ok(Step::Done { send: None, peer, session })
    }

    /// The secret both sides derive: HKDF over the cookie and the X25519
    /// secret of the two ephemeral keys.
    fn secret(&mut self, theirs: &[u8; 32]) -> Result<Prk, Error> {
        let mine = self.ephemeral.take().ok_or_else(|| Error::Protocol("a second key exchange".into()))?;
        let cookie = &self.config.cookie;
        agreement::agree_ephemeral(mine, &UnparsedPublicKey::new(&X25519, theirs), |shared| {
            let mut input = Vec::with_capacity(8 + cookie.len() + shared.len());
            input.extend_from_slice(&(cookie.len() as u64).to_le_bytes());
            input.extend_from_slice(cookie);
            input.extend_from_slice(shared);
            hkdf::Salt::new(HKDF_SHA256, LABEL).extract(&input)
        })
        .map_err(|_| Error::Protocol("a bad ephemeral key in the handshake".into()))
    }
}

fn first_transcript(challenge: &[u8], hello: &[u8]) -> digest::Digest {
    let mut t = digest::Context::new(&SHA256);
    t.update(LABEL);
    t.update(&(challenge.len() as u64).to_le_bytes());
    t.update(challenge);
    t.update(hello);
    t.finish()
}

fn second_transcript(first: &digest::Digest, dialer_proof: &[u8], welcome: &Welcome) -> digest::Digest {
    let mut t = digest::Context::new(&SHA256);
    t.update(first.as_ref());
    t.update(dialer_proof);
    t.update(&Message::Welcome(welcome.clone()).signed_body());
    t.finish()
}

fn proof_key(prk: &Prk, label: &[u8]) -> hmac::Key {
    prk.expand(&[LABEL, label], hmac::HMAC_SHA256).expect("an HMAC key is a valid HKDF length").into()
}

/// HKDF's output length for a record key.
struct KeyLen;

impl hkdf::KeyType for KeyLen {
    fn len(&self) -> usize {
        KEY_LEN
    }
}

fn protection(dialer_plain: bool, acceptor_plain: bool) -> Protection {
    match dialer_plain && acceptor_plain {
        true => Protection::Authenticated,
        false => Protection::Encrypted,
    }
}

/// The two directions' keys, bound to the whole transcript.
fn session(prk: &Prk, transcript: &digest::Digest, role: Role, protection: Protection) -> Result<Session, Error> {
    let key = |label: &[u8]| -> RecordKey {
        let mut bytes = [0u8; KEY_LEN];
        prk.expand(&[LABEL, label, transcript.as_ref()], KeyLen).and_then(|okm| okm.fill(&mut bytes)).expect("a record key is a valid HKDF length");
        RecordKey::new(bytes)
    };
    let (to_acceptor, to_dialer) = (key(b"dialer to acceptor"), key(b"acceptor to dialer"));
    let (send, receive) = match role {
        Role::Dialer => (to_acceptor, to_dialer),
        Role::Acceptor => (to_dialer, to_acceptor),
    };
    Ok(Session { sealer: Sealer::new(send, protection), opener: Opener::new(receive, protection) })
}

#[cfg(test)]
mod tests;
