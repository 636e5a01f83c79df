//! The console endpoint that `synodic console` attaches to, and its line
//! protocol. A console connects as a node does: the same handshake
//! (`handshake`, purpose "console") proves that it holds the cookie, the
//! connecting side first, and every line after it travels in encrypted
//! records (`record`), so the cookie never crosses and nothing on the path
//! can read or change what the console types. For every console that
//! proves itself, a console agent is started (by the `attach` function the
//! caller gives: the Lua layer starts `lualib/console.lua`); the user's
//! lines go to it as messages, and what it writes to its port comes back.
//!
//! The protocol, step by step:
//!
//! 1. the handshake, within [`DRIVE_LIMIT`](handshake::DRIVE_LIMIT); a connection that fails it is
//!    closed with one line on stderr naming its address, and the program
//!    goes on;
//! 2. server: `ok <agent id>`, or `refused: <why>` and the connection
//!    closes (too many consoles attached);
//! 3. client: one line of Lua per event (at most [`LINE_MAX`] bytes); the
//!    agent runs it (or keeps it, if it is the start of a statement that
//!    goes on); the line [`INTERRUPT`] (Ctrl-C) stops the line running,
//!    and the line `\x18` drops a statement begun;
//! 4. server: `o <text>` for output, `e <text>` for an error, `m` when the
//!    agent waits for more of a statement, and `d` when the event is done
//!    (`\` and newlines in text are escaped as `\\` and `\n`);
//! 5. the client closing the connection ends the console agent, even in
//!    the middle of a line; the program ending closes the connection.
//!
//! Lines are `\n`-terminated text inside the records ([`Lines`] cuts them
//! out). Everything a peer can size is bounded: each line, the consoles
//! attached at once ([`MAX_CONSOLES`]), the connections still in their
//! handshake (a few places of their own, `gate`, so that silent ones never
//! keep a real console out), and the output queued for a console that does
//! not read it.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering::*};
use std::sync::Arc;

use synodic_core::wire::Writer;
use synodic_core::{Message, Pid, Runtime};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use crate::gate::Gate;
use crate::handshake::{self, Handshake, Purpose, Session};
use crate::record::{Opener, Sealer};
use crate::{Error, Io};

/// The longest line a console may send.
pub const LINE_MAX: usize = 1 << 20;
/// Consoles attached at once.
pub const MAX_CONSOLES: usize = 16;
/// Console connections that may be in their handshake at once.
const UNPROVEN: usize = 8;
/// Lines of output queued for a console that does not read them; more are dropped.
const OUTPUT_QUEUE: usize = 4096;

/// Message tags between the endpoint and a console agent (see `lualib/console.lua`).
pub const LINE: &[u8] = b"console.line";
pub const CLOSED: &[u8] = b"console.closed";
/// The line a client sends for Ctrl-C: the agent's running line stops.
pub const INTERRUPT: &[u8] = b"\x03";

/// Starts the agent for a new console, whose output port is the argument;
/// returns its pid, or why not.
pub type Attach = Arc<dyn Fn(u64) -> Result<Pid, String> + Send + Sync>;

/// The id of the console agent behind `port`: in a cluster it carries the
/// node's name, as the agent's own registration does (`lualib/console.lua`).
pub fn agent_id(rt: &Runtime, port: u64) -> String {
    match rt.transport() {
        Some(_) => format!("console{port}@{}", rt.node_name()),
        None => format!("console{port}"),
    }
}

/// Listens on `addr` on the I/O thread; returns the address bound.
pub fn listen(io: &Io, rt: Runtime, addr: &str, cookie: String, attach: Attach) -> Result<SocketAddr, Error> {
    let owned = addr.to_string();
    let listener = io.run(async move { TcpListener::bind(owned).await }).map_err(|why| Error::Listen { addr: addr.into(), why })?;
    let bound = listener.local_addr().map_err(|why| Error::Listen { addr: addr.into(), why })?;
    let open = Arc::new(AtomicUsize::new(0));
    let cookie: Arc<[u8]> = cookie.into_bytes().into();
    let unproven = Gate::new(UNPROVEN);
    io.spawn(async move {
        loop {
            let Ok((stream, peer)) = listener.accept().await else { continue };
            let (rt, cookie, attach, open) = (rt.clone(), cookie.clone(), attach.clone(), open.clone());
            let place = unproven.enter();
            tokio::spawn(async move {
                let config = handshake::Config { cookie: cookie.to_vec(), purpose: Purpose::Console, node: rt.nodes().me(), listen: String::new(), plain: false };
                // Step 1, holding a place for unproven connections.
                let proven = async {
                    let (hs, challenge) = Handshake::acceptor(config)?;
                    let mut stream = stream;
                    let (_, session) = handshake::over_tokio(&mut stream, hs, Some(challenge), &mut |_| Ok(())).await?;
                    Ok((stream, session))
                };
                let proven = place.hold(proven).await;
                drop(place);
                let (mut stream, session) = match proven {
                    Ok(proven) => proven,
                    Err(e) => return eprintln!("synodic: console from {peer} refused: {e}"),
                };
                // Step 2: only proven consoles count.
                if open.fetch_add(1, AcqRel) >= MAX_CONSOLES {
                    let Session { mut sealer, .. } = session;
                    let _ = write_line(&mut stream, &mut sealer, b"refused: too many consoles attached").await;
                } else {
                    serve(&rt, stream, peer, session, &attach).await;
                }
                open.fetch_sub(1, AcqRel);
            });
        }
    });
    Ok(bound)
}

/// Seals one line and writes it.
async fn write_line(stream: &mut (impl AsyncWriteExt + Unpin), sealer: &mut Sealer, line: &[u8]) -> Result<(), Error> {
    let mut out = Vec::with_capacity(line.len() + 32);
    sealer.seal(&[line, b"\n"].concat(), &mut out)?;
    stream.write_all(&out).await.map_err(|e| Error::Protocol(e.to_string()))
}

/// Lines carried in records: what arrives is checked, opened and cut into
/// lines of at most a given length (the console's both ends use it).
pub struct Lines {
    opener: Opener,
    plain: Vec<u8>,
    /// Bytes of `plain` known to hold no newline.
    scanned: usize,
    max: usize,
}

impl Lines {
    pub fn new(opener: Opener, max: usize) -> Lines {
        Lines { opener, plain: Vec::new(), scanned: 0, max }
    }

    /// Where bytes read from the connection go.
    pub fn space(&mut self) -> &mut Vec<u8> {
        self.opener.space(64 << 10)
    }

    /// The next whole line, without its newline (`None` until more arrives);
    /// an error for a record that fails its check or a line too long.
    pub fn next_line(&mut self) -> Result<Option<Vec<u8>>, Error> {
        loop {
            if let Some(at) = self.plain[self.scanned..].iter().position(|&b| b == b'\n') {
                let mut line: Vec<u8> = self.plain.drain(..=self.scanned + at).collect();
                line.pop();
                self.scanned = 0;
                return Ok(Some(line));
            }
            self.scanned = self.plain.len();
            if self.plain.len() > self.max {
                return Err(Error::Protocol(format!("line longer than {} bytes", self.max)));
            }
            match self.opener.next()? {
                Some(plain) => self.plain.extend_from_slice(plain),
                None => return Ok(None),
            }
        }
    }

    /// Bytes received that are not yet a whole line.
    pub fn buffered(&self) -> usize {
        self.opener.buffered() + self.plain.len()
    }
}

async fn serve(rt: &Runtime, stream: TcpStream, peer: SocketAddr, session: Session, attach: &Attach) {
    let Session { mut sealer, opener } = session;
    let (mut read, mut write) = stream.into_split();
    let (tx, mut output) = mpsc::channel::<Vec<u8>>(OUTPUT_QUEUE);
    // What the agent writes is `kind text`: one line on the wire.
    let port = rt.ports().open(Box::new(move |bytes| {
        let mut line = escape(bytes);
        line.push(b'\n');
        tx.try_send(line).is_ok()
    }));
    let agent = match attach(port) {
        Ok(pid) => pid,
        Err(e) => {
            rt.ports().close(port);
            let _ = write_line(&mut write, &mut sealer, format!("refused: {e}").as_bytes()).await;
            return;
        }
    };
    if write_line(&mut write, &mut sealer, format!("ok {}", agent_id(rt, port)).as_bytes()).await.is_err() {
        rt.ports().close(port);
        rt.send(agent, tagged(CLOSED, None));
        return;
    }
    // Steps 3 and 4: lines in, output out, until either side is done.
    let writer = tokio::spawn(async move {
        let mut sealed = Vec::new();
        while let Some(line) = output.recv().await {
            sealed.clear();
            if sealer.seal(&line, &mut sealed).is_err() || write.write_all(&sealed).await.is_err() {
                break;
            }
        }
    });
    let mut lines = Lines::new(opener, LINE_MAX);
    let ended = loop {
        match lines.next_line() {
            // Ctrl-C at the client: the line running there stops.
            Ok(Some(line)) if line == INTERRUPT => {
                rt.interrupt(agent);
                continue;
            }
            Ok(Some(line)) => {
                rt.send(agent, tagged(LINE, Some(&line)));
                continue;
            }
            Ok(None) => {}
            Err(e) => break Some(e.to_string()),
        }
        match read.read_buf(lines.space()).await {
            Ok(0) if lines.buffered() > 0 => break Some("the connection closed in the middle of a line".into()),
            Ok(0) => break None,
            Ok(_) => {}
            Err(e) => break Some(e.to_string()),
        }
    };
    if let Some(e) = ended {
        eprintln!("synodic: console from {peer} closed: {e}");
    }
    // Step 5: the agent ends, even in the middle of a runaway line.
    rt.ports().close(port);
    rt.send(agent, tagged(CLOSED, None));
    rt.kill(agent, synodic_core::ExitReason::Normal);
    writer.abort();
}

/// A message `tag[, text]`.
fn tagged(tag: &[u8], text: Option<&[u8]>) -> Message {
    let mut w = Writer::message(1 + text.is_some() as usize);
    w.str(tag);
    if let Some(t) = text {
        w.str(t);
    }
    Message::from_vec(w.finish_small())
}

/// Escapes text for one protocol line.
pub fn escape(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    for &b in text {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            _ => out.push(b),
        }
    }
    out
}

/// Undoes [`escape`].
pub fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (c, c == '\\') {
            (_, true) => match chars.next() {
                Some('n') => out.push('\n'),
                Some(other) => out.push(other),
                None => out.push('\\'),
            },
            (c, false) => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_round_trips() {
        for text in ["plain", "two\nlines", "back\\slash\\n", "", "\\"] {
            let escaped = String::from_utf8(escape(text.as_bytes())).unwrap();
            assert!(!escaped.contains('\n'));
            assert_eq!(unescape(&escaped), text);
        }
    }
}
