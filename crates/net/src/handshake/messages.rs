//! The handshake's four messages and their bytes. They are framed as every
//! frame is (`len:u32 kind:u8 body`, see `frame`), but they are the only
//! frames a connection carries before its records begin, each at most
//! [`HANDSHAKE_MAX`](crate::frame::HANDSHAKE_MAX) bytes; decoding never
//! panics.
//!
//! | kind | message | body |
//! |---|---|---|
//! | 19 | challenge | `"SYNODIC3"` nonce:32 ephemeral:32 |
//! | 1 | hello | `"SYNODIC3"` purpose:u8 flags:u8 name:bytes incarnation:u64 listen:bytes nonce:32 ephemeral:32 proof:32 |
//! | 2 | welcome | flags:u8 name:bytes incarnation:u64 listen:bytes proof:32 |
//! | 20 | refused | why:bytes |
//!
//! `flags` bit 0: the sender was started with `--no-encryption`.

use synodic_core::wire::{Reader, Writer};
use synodic_core::NodeId;

use crate::Error;

const MAGIC: &[u8; 8] = b"SYNODIC3";

/// The handshake's frame kinds, numbered with every other kind in
/// `synodic_core::dist::kind`.
pub(crate) use synodic_core::dist::kind::transport as kind;

/// What the connecting side wants: a link between nodes, or a console.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    Node,
    Console,
}

/// The accepting side's first words: a fresh challenge and its half of
/// the key exchange. Nothing in it depends on the cookie.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Challenge {
    pub nonce: [u8; 32],
    pub ephemeral: [u8; 32],
}

/// The connecting side's answer: who it is, its half of the key exchange,
/// and its proof that it holds the cookie.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hello {
    pub purpose: Purpose,
    pub plain: bool,
    pub node: NodeId,
    pub listen: String,
    pub nonce: [u8; 32],
    pub ephemeral: [u8; 32],
    pub proof: [u8; 32],
}

/// The accepting side's answer to a proven hello: who it is, and its own proof.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Welcome {
    pub plain: bool,
    pub node: NodeId,
    pub listen: String,
    pub proof: [u8; 32],
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    Challenge(Challenge),
    Hello(Hello),
    Welcome(Welcome),
    /// The accepting side ends the handshake, saying why (unauthenticated:
    /// a reason to show, nothing to act on).
    Refused(String),
}

impl Message {
    /// The message, framed.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::fields_after(vec![0; 5]);
        let kind = match self {
            Message::Challenge(c) => {
                w.raw(MAGIC);
                w.raw(&c.nonce);
                w.raw(&c.ephemeral);
                kind::CHALLENGE
            }
            Message::Hello(h) => {
                w.raw(MAGIC);
                w.byte(match h.purpose {
                    Purpose::Node => 0,
                    Purpose::Console => 1,
                });
                w.byte(h.plain as u8);
                node_id(&mut w, &h.node);
                w.bytes(h.listen.as_bytes());
                w.raw(&h.nonce);
                w.raw(&h.ephemeral);
                w.raw(&h.proof);
                kind::HELLO
            }
            Message::Welcome(m) => {
                w.byte(m.plain as u8);
                node_id(&mut w, &m.node);
                w.bytes(m.listen.as_bytes());
                w.raw(&m.proof);
                kind::WELCOME
            }
            Message::Refused(why) => {
                w.bytes(why.as_bytes());
                kind::REFUSED
            }
        };
        let mut out = w.finish_small();
        let len = (out.len() - 4) as u32;
        out[..4].copy_from_slice(&len.to_le_bytes());
        out[4] = kind;
        out
    }

    /// The message's body as it is signed: encoded, without its length and
    /// kind, and with its proof (if it has one) left as zeros.
    pub(crate) fn signed_body(&self) -> Vec<u8> {
        let unsigned = match self {
            Message::Hello(h) => Message::Hello(Hello { proof: [0; 32], ..h.clone() }),
            Message::Welcome(w) => Message::Welcome(Welcome { proof: [0; 32], ..w.clone() }),
            other => other.clone(),
        };
        unsigned.encode().split_off(5)
    }

    /// Parses a message's body.
    pub fn decode(kind: u8, body: &[u8]) -> Result<Message, Error> {
        let bad = |why: &str| Error::Protocol(format!("malformed handshake message of kind {kind}: {why}"));
        let mut r = Reader::fields(body);
        let magic = |r: &mut Reader| match r.bytes_raw(MAGIC.len()) {
            Ok(m) if m == MAGIC => Ok(()),
            _ => Err(Error::Protocol("not a Synodic node (or another version of the node protocol)".into())),
        };
        let array = |r: &mut Reader| -> Result<[u8; 32], Error> { r.bytes_raw(32).map(|b| b.try_into().expect("32 bytes")).map_err(|_| bad("cut short")) };
        let message = match kind {
            kind::CHALLENGE => {
                magic(&mut r)?;
                Message::Challenge(Challenge { nonce: array(&mut r)?, ephemeral: array(&mut r)? })
            }
            kind::HELLO => {
                magic(&mut r)?;
                let purpose = match r.byte_value().map_err(|_| bad("cut short"))? {
                    0 => Purpose::Node,
                    1 => Purpose::Console,
                    other => return Err(bad(&format!("unknown purpose {other}"))),
                };
                let plain = flags(&mut r).map_err(|why| bad(&why))?;
                let node = read_node_id(&mut r).map_err(|why| bad(&why))?;
                let listen = text(&mut r, "listen address").map_err(|why| bad(&why))?;
                Message::Hello(Hello { purpose, plain, node, listen, nonce: array(&mut r)?, ephemeral: array(&mut r)?, proof: array(&mut r)? })
            }
            kind::WELCOME => {
                let plain = flags(&mut r).map_err(|why| bad(&why))?;
                let node = read_node_id(&mut r).map_err(|why| bad(&why))?;
                let listen = text(&mut r, "listen address").map_err(|why| bad(&why))?;
                Message::Welcome(Welcome { plain, node, listen, proof: array(&mut r)? })
            }
            kind::REFUSED => Message::Refused(text(&mut r, "reason").map_err(|why| bad(&why))?),
            other => return Err(Error::Protocol(format!("a frame of kind {other} during the handshake"))),
        };
        match r.remaining() {
            0 => Ok(message),
            n => Err(bad(&format!("{n} bytes after it"))),
        }
    }

    /// What the message is, for errors.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Message::Challenge(_) => "challenge",
            Message::Hello(_) => "hello",
            Message::Welcome(_) => "welcome",
            Message::Refused(_) => "refusal",
        }
    }
}

fn flags(r: &mut Reader) -> Result<bool, String> {
    match r.byte_value().map_err(|_| "cut short".to_string())? {
        f if f & !1 == 0 => Ok(f == 1),
        f => Err(format!("unknown flags {f:#x}")),
    }
}

fn node_id(w: &mut Writer, node: &NodeId) {
    w.bytes(node.name.as_bytes());
    w.u64(node.incarnation);
}

fn read_node_id(r: &mut Reader) -> Result<NodeId, String> {
    let name = text(r, "node name")?;
    if name.is_empty() || name.len() > 255 {
        return Err("node name empty or longer than 255 bytes".into());
    }
    Ok(NodeId { name: name.into(), incarnation: r.u64().map_err(|_| "cut short".to_string())? })
}

fn text(r: &mut Reader, what: &str) -> Result<String, String> {
    let bytes = r.bytes().map_err(|_| "cut short".to_string())?;
    String::from_utf8(bytes.to_vec()).map_err(|_| format!("{what} is not UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples() -> Vec<Message> {
        let node = NodeId { name: "a@host".into(), incarnation: 77 };
        vec![
            Message::Challenge(Challenge { nonce: [1; 32], ephemeral: [2; 32] }),
            Message::Hello(Hello { purpose: Purpose::Console, plain: true, node: node.clone(), listen: "127.0.0.1:4000".into(), nonce: [3; 32], ephemeral: [4; 32], proof: [5; 32] }),
            Message::Welcome(Welcome { plain: false, node, listen: String::new(), proof: [6; 32] }),
            Message::Refused("wrong cookie".into()),
        ]
    }

    #[test]
    fn messages_round_trip_and_junk_fails_cleanly() {
        for m in samples() {
            let bytes = m.encode();
            assert_eq!(u32::from_le_bytes(bytes[..4].try_into().unwrap()) as usize, bytes.len() - 4);
            assert_eq!(Message::decode(bytes[4], &bytes[5..]).unwrap(), m);
            for cut in 5..bytes.len() {
                assert!(Message::decode(bytes[4], &bytes[5..cut]).is_err(), "{} cut at {cut}", m.name());
            }
            for i in 5..bytes.len() {
                for v in [0, 1, 0x7f, 0x80, 0xff] {
                    let mut b = bytes.clone();
                    b[i] = v;
                    let _ = Message::decode(b[4], &b[5..]);
                }
            }
        }
        let e = Message::decode(4, &[]).unwrap_err().to_string();
        assert!(e.contains("kind 4 during the handshake"), "{e}");
        let mut old = samples()[0].encode();
        old[12] = b'1';
        assert!(Message::decode(old[4], &old[5..]).unwrap_err().to_string().contains("another version"));
    }

    #[test]
    fn the_signed_body_leaves_the_proof_out() {
        let [_, hello, welcome, _] = <[Message; 4]>::try_from(samples()).unwrap();
        for m in [hello, welcome] {
            let body = m.signed_body();
            assert_eq!(body.len(), m.encode().len() - 5);
            assert!(body.ends_with(&[0; 32]));
        }
    }
}
