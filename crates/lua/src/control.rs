//! The control endpoint that `synodic console` attaches to. It listens on a
//! TCP address, and for every connection that proves it knows the cookie it
//! starts a console agent (`lualib/console.lua`) and feeds it the lines the
//! user types. The agent's output goes back over the same connection through
//! the native `synodic.control` module.
//!
//! The protocol, line by line (text, `\n`-terminated):
//!
//! 1. client: `synodic-console 1 <cookie>`
//! 2. server: `ok <agent id>`, or `refused: <why>` and the connection closes
//!    (the program goes on);
//! 3. client: one line of Lua per event; the agent runs it;
//! 4. server: `o <text>` for output, `e <text>` for an error, and `d` when the
//!    event is done (`\` and newlines in text are escaped as `\\` and `\n`);
//! 5. the client closing the connection ends the console agent.

use std::collections::HashMap;
use std::ffi::{c_int, CStr};
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use mlua_sys as ffi;
use synodic_core::wire::Writer;
use synodic_core::{Message, Runtime};

use crate::util::{raise, to_bytes};
use crate::LuaProcess;

/// The greeting a client sends first.
pub const HELLO: &str = "synodic-console 1";

/// Message tags between the endpoint and a console agent (see `lualib/console.lua`).
const LINE: &[u8] = b"console.line";
const CLOSED: &[u8] = b"console.closed";

/// Open connections, by number, for `synodic.control.write`.
fn connections() -> &'static Mutex<HashMap<i64, TcpStream>> {
    static C: OnceLock<Mutex<HashMap<i64, TcpStream>>> = OnceLock::new();
    C.get_or_init(Default::default)
}

/// The default cookie file: `~/.synodic/cookie`.
pub fn default_cookie_file() -> Option<PathBuf> {
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".synodic").join("cookie"))
}

/// Reads the cookie, creating the file (readable by its owner only) with a
/// fresh random cookie if it does not exist.
pub fn load_or_create_cookie(path: &Path) -> std::io::Result<String> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let cookie = text.trim().to_string();
            if cookie.is_empty() {
                return Err(std::io::Error::other(format!("cookie file {} is empty", path.display())));
            }
            Ok(cookie)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let mut bytes = [0u8; 16];
            std::fs::File::open("/dev/urandom").and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))?;
            let cookie: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
            writeln!(file, "{cookie}")?;
            Ok(cookie)
        }
        Err(e) => Err(e),
    }
}

/// Starts listening on `addr`; returns the address actually bound.
pub fn start(rt: &Runtime, addr: &str, cookie: String) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr)?;
    let bound = listener.local_addr()?;
    let rt = rt.clone();
    std::thread::Builder::new().name("synodic-console".into()).spawn(move || {
        for stream in listener.incoming().flatten() {
            let (rt, cookie) = (rt.clone(), cookie.clone());
            let _ = std::thread::Builder::new().name("synodic-console-conn".into()).spawn(move || serve(&rt, stream, &cookie));
        }
    })?;
    Ok(bound)
}

fn serve(rt: &Runtime, stream: TcpStream, cookie: &str) {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let Ok(mut writer) = stream.try_clone() else { return };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(stream);
    let mut hello = String::new();
    if reader.read_line(&mut hello).is_err() || !constant_time_eq(hello.trim_end().as_bytes(), format!("{HELLO} {cookie}").as_bytes()) {
        let _ = writeln!(writer, "refused: wrong or missing cookie");
        return;
    }
    let _ = reader.get_ref().set_read_timeout(None);
    let conn = NEXT.fetch_add(1, Relaxed) as i64;
    let Ok(conn_writer) = writer.try_clone() else { return };
    connections().lock().unwrap_or_else(|e| e.into_inner()).insert(conn, conn_writer);
    let agent = match rt.spawn(LuaProcess::module("synodic.console", conn)) {
        Ok(pid) => pid,
        Err(e) => {
            let _ = writeln!(writer, "refused: {e}");
            return;
        }
    };
    let _ = writeln!(writer, "ok console{conn}");
    for line in reader.lines() {
        let Ok(line) = line else { break };
        rt.send(agent, tagged(LINE, Some(line.as_bytes())));
    }
    rt.send(agent, tagged(CLOSED, None));
    connections().lock().unwrap_or_else(|e| e.into_inner()).remove(&conn);
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

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0, |acc, (x, y)| acc | (x ^ y)) == 0
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

pub(crate) const FUNCTIONS: &[(&CStr, ffi::lua_CFunction)] = &[(c"write", write)];

// The native module `synodic.control`, used by console agents.
crate::lazy::lazy_module!(b"synodic.control");

/// `write(conn, kind, text)`: sends one protocol line to a console; false when it is gone.
unsafe extern "C-unwind" fn write(L: *mut ffi::lua_State) -> c_int {
    let conn = ffi::lua_tointegerx(L, 1, std::ptr::null_mut());
    let (Some(kind), Some(text)) = (to_bytes(L, 2), to_bytes(L, 3)) else {
        return raise(L, "bad arguments to 'write' (connection, kind, text expected)".into());
    };
    let mut line = kind.to_vec();
    line.push(b' ');
    line.extend_from_slice(&escape(text));
    line.push(b'\n');
    let ok = {
        let mut conns = connections().lock().unwrap_or_else(|e| e.into_inner());
        conns.get_mut(&conn).is_some_and(|s| s.write_all(&line).is_ok())
    };
    drop(line);
    ffi::lua_pushboolean(L, ok as c_int);
    1
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

    #[test]
    fn a_cookie_file_is_created_private_and_reused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("synodic-cookie-{}", std::process::id()));
        let path = dir.join("sub").join("cookie");
        let first = load_or_create_cookie(&path).unwrap();
        assert_eq!(first.len(), 32);
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(load_or_create_cookie(&path).unwrap(), first);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
