//! The console endpoint that `synodic console` attaches to, and its line
//! protocol. For every connection that proves it knows the cookie, a console
//! agent is started (by the `attach` function the caller gives: the Lua layer
//! starts `lualib/console.lua`); the user's lines go to it as messages, and
//! what it writes to its port comes back over the connection.
//!
//! The protocol, line by line (text, `\n`-terminated):
//!
//! 1. client: `synodic-console 1 <cookie>`, within [`HELLO_TIME`];
//! 2. server: `ok <agent id>`, or `refused: <why>` and the connection closes
//!    (the program goes on, and stderr names the address refused);
//! 3. client: one line of Lua per event (at most [`LINE_MAX`] bytes); the
//!    agent runs it;
//! 4. server: `o <text>` for output, `e <text>` for an error, and `d` when
//!    the event is done (`\` and newlines in text are escaped as `\\` and
//!    `\n`);
//! 5. the client closing the connection ends the console agent; the program
//!    ending closes the connection.
//!
//! Everything a peer can size is bounded: the hello line, each line, the
//! number of consoles at once ([`MAX_CONSOLES`]), the time to say hello, and
//! the output queued for a console that does not read it.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering::*};
use std::sync::Arc;
use std::time::Duration;

use synodic_core::wire::Writer;
use synodic_core::{Message, Pid, Runtime};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use crate::{Error, Io};

/// The greeting a client sends first, before the cookie.
pub const HELLO: &str = "synodic-console 1";
/// How long a new connection has to say hello.
pub const HELLO_TIME: Duration = Duration::from_secs(5);
/// The longest line a console may send.
pub const LINE_MAX: usize = 1 << 20;
/// Consoles attached at once.
pub const MAX_CONSOLES: usize = 16;
/// Lines of output queued for a console that does not read them; more are dropped.
const OUTPUT_QUEUE: usize = 4096;

/// Message tags between the endpoint and a console agent (see `lualib/console.lua`).
pub const LINE: &[u8] = b"console.line";
pub const CLOSED: &[u8] = b"console.closed";

/// Starts the agent for a new console, whose output port is the argument;
/// returns its pid, or why not.
pub type Attach = Arc<dyn Fn(u64) -> Result<Pid, String> + Send + Sync>;

/// The id of the console agent behind `port`: in a cluster it carries the
/// node's name, as the agent's own registration does (`lualib/console.lua`).
pub fn agent_id(rt: &Runtime, port: u64) -> String {
    match rt.remote() {
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
    let cookie: Arc<str> = cookie.into();
    io.spawn(async move {
        loop {
            let Ok((stream, peer)) = listener.accept().await else { continue };
            let (rt, cookie, attach, open) = (rt.clone(), cookie.clone(), attach.clone(), open.clone());
            tokio::spawn(async move {
                if open.fetch_add(1, AcqRel) >= MAX_CONSOLES {
                    refuse(stream, "too many consoles attached").await;
                } else {
                    serve(&rt, stream, peer, &cookie, &attach).await;
                }
                open.fetch_sub(1, AcqRel);
            });
        }
    });
    Ok(bound)
}

async fn refuse(mut stream: TcpStream, why: &str) {
    let _ = stream.write_all(format!("refused: {why}\n").as_bytes()).await;
}

/// Reads one line of at most `max` bytes (without its newline); `None` at
/// the end of the stream, an error for a longer line.
async fn read_line(reader: &mut BufReader<tokio::net::tcp::OwnedReadHalf>, max: usize) -> std::io::Result<Option<Vec<u8>>> {
    let mut line = Vec::new();
    let n = reader.take(max as u64 + 1).read_until(b'\n', &mut line).await?;
    if n == 0 {
        return Ok(None);
    }
    if line.last() == Some(&b'\n') {
        line.pop();
    } else if line.len() > max {
        return Err(std::io::Error::other(format!("line longer than {max} bytes")));
    }
    Ok(Some(line))
}

async fn serve(rt: &Runtime, stream: TcpStream, peer: SocketAddr, cookie: &str, attach: &Attach) {
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    // Steps 1 and 2.
    let hello = tokio::time::timeout(HELLO_TIME, read_line(&mut reader, HELLO.len() + 1 + 256)).await;
    let expected = format!("{HELLO} {cookie}");
    let known = matches!(&hello, Ok(Ok(Some(line))) if crate::cookie::same(line.trim_ascii_end(), expected.as_bytes()));
    if !known {
        eprintln!("synodic: console from {peer} refused: wrong or missing cookie");
        let _ = write.write_all(b"refused: wrong or missing cookie\n").await;
        return;
    }
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
            let _ = write.write_all(format!("refused: {e}\n").as_bytes()).await;
            return;
        }
    };
    if write.write_all(format!("ok {}\n", agent_id(rt, port)).as_bytes()).await.is_err() {
        rt.ports().close(port);
        rt.send(agent, tagged(CLOSED, None));
        return;
    }
    // Steps 3 and 4: lines in, output out, until either side is done.
    let writer = tokio::spawn(async move {
        while let Some(line) = output.recv().await {
            if write.write_all(&line).await.is_err() {
                break;
            }
        }
    });
    loop {
        match read_line(&mut reader, LINE_MAX).await {
            Ok(Some(line)) => {
                rt.send(agent, tagged(LINE, Some(&line)));
            }
            Ok(None) => break,
            Err(e) => {
                eprintln!("synodic: console from {peer} closed: {e}");
                break;
            }
        }
    }
    // Step 5.
    rt.ports().close(port);
    rt.send(agent, tagged(CLOSED, None));
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
