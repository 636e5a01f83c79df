//! Running a handshake over a socket. [`Exchange`] is the sans-IO part:
//! it cuts the peer's messages out of what arrives and says, turn by turn,
//! what to write or that it needs to read; [`over_tokio`] (the node's
//! links, the console endpoint) and [`blocking`] (the console client,
//! tests, tools) are the loops that move the bytes.

use std::time::{Duration, Instant};

use super::{Handshake, Peer, Session, Step};
use crate::frame::Decoder;
use crate::Error;

/// How long a handshake may take, from the connection to the last message.
pub const DRIVE_LIMIT: Duration = Duration::from_secs(3);

/// What to do next. (`Done` carries the session's keys whole: one per
/// connection, not worth a box.)
#[allow(clippy::large_enum_variant)]
pub(crate) enum Turn {
    /// Write these bytes.
    Write(Vec<u8>),
    /// Read more bytes (into [`Exchange::space`]).
    Read,
    /// Done: write these bytes (maybe none), then the session carries the rest.
    Done(Vec<u8>, Peer, Session),
    /// Failed: write these bytes (a refusal, maybe none) and close.
    Fail(Vec<u8>, Error),
}

pub(crate) struct Exchange {
    hs: Handshake,
    decoder: Decoder,
    first: Option<Vec<u8>>,
}

impl Exchange {
    /// `first`: what this side sends before hearing anything (the acceptor's challenge).
    pub(crate) fn new(hs: Handshake, first: Option<Vec<u8>>) -> Exchange {
        Exchange { hs, decoder: Decoder::new(), first }
    }

    /// Where bytes read from the socket go.
    pub(crate) fn space(&mut self) -> &mut Vec<u8> {
        self.decoder.space(1024)
    }

    pub(crate) fn turn(&mut self) -> Turn {
        if let Some(first) = self.first.take() {
            return Turn::Write(first);
        }
        let next = match self.decoder.next_raw() {
            Ok(Some((kind, body))) => self.hs.receive(kind, body),
            Ok(None) => return Turn::Read,
            Err(e) => Err(e),
        };
        match next {
            Ok(Step::Send(bytes)) => Turn::Write(bytes),
            Ok(Step::Done { send, peer, mut session }) => {
                // What the peer sent after its last message is already records.
                session.opener.feed(&self.decoder.take_rest());
                Turn::Done(send.unwrap_or_default(), peer, session)
            }
            Err(e) => Turn::Fail(self.hs.refusal(&e).unwrap_or_default(), e),
        }
    }
}

fn closed() -> Error {
    Error::Protocol("the peer closed the connection during the handshake".into())
}

/// What a side checks of a peer that has proved itself, before the
/// connection is its (the accepting side refuses with the error's text).
pub(crate) type Vet<'a> = &'a mut (dyn FnMut(&Peer) -> Result<(), Error> + Send);

/// Runs `hs` over a tokio socket (`first`: as [`Exchange::new`]); `vet`
/// may still refuse the proven peer. The caller bounds its time.
pub(crate) async fn over_tokio(stream: &mut tokio::net::TcpStream, hs: Handshake, first: Option<Vec<u8>>, vet: Vet<'_>) -> Result<(Peer, Session), Error> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let io = |e: std::io::Error| Error::Protocol(e.to_string());
    let mut exchange = Exchange::new(hs, first);
    loop {
        match exchange.turn() {
            Turn::Write(bytes) => stream.write_all(&bytes).await.map_err(io)?,
            Turn::Read => {
                if stream.read_buf(exchange.space()).await.map_err(io)? == 0 {
                    return Err(closed());
                }
            }
            Turn::Done(bytes, peer, session) => {
                if let Err(e) = vet(&peer) {
                    let refusal = exchange.hs.refusal(&e).unwrap_or_default();
                    let _ = stream.write_all(&refusal).await;
                    return Err(e);
                }
                stream.write_all(&bytes).await.map_err(io)?;
                return Ok((peer, session));
            }
            Turn::Fail(bytes, e) => {
                let _ = stream.write_all(&bytes).await;
                return Err(e);
            }
        }
    }
}

/// Runs `hs` over a blocking socket, within [`DRIVE_LIMIT`]; the acceptor's
/// challenge is sent first. The socket is left without timeouts.
pub fn blocking(stream: &mut std::net::TcpStream, hs: Handshake, first: Option<Vec<u8>>) -> Result<(Peer, Session), Error> {
    use std::io::{Read, Write};
    let deadline = Instant::now() + DRIVE_LIMIT;
    let io = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => Error::Protocol(format!("no handshake within {} s", DRIVE_LIMIT.as_secs())),
        _ => Error::Protocol(e.to_string()),
    };
    let mut exchange = Exchange::new(hs, first);
    let result = loop {
        let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
        stream.set_read_timeout(Some(left)).map_err(io)?;
        stream.set_write_timeout(Some(left)).map_err(io)?;
        match exchange.turn() {
            Turn::Write(bytes) => stream.write_all(&bytes).map_err(io)?,
            Turn::Read => {
                let space = exchange.space();
                let start = space.len();
                space.resize(start + 1024, 0);
                let n = stream.read(&mut space[start..]);
                space.truncate(start + *n.as_ref().unwrap_or(&0));
                if n.map_err(io)? == 0 {
                    break Err(closed());
                }
            }
            Turn::Done(bytes, peer, session) => break stream.write_all(&bytes).map(|_| (peer, session)).map_err(io),
            Turn::Fail(bytes, e) => {
                let _ = stream.write_all(&bytes);
                break Err(e);
            }
        }
    };
    let _ = stream.set_read_timeout(None);
    let _ = stream.set_write_timeout(None);
    result
}
