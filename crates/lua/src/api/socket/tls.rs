//! TLS over a socket, with rustls (SPEC §10): `tls(s, opts)` puts a TLS
//! layer on a connected socket (a client, or the server side of a
//! connection) or a TLS configuration on a listener (each connection it
//! accepts then serves TLS). The layer lives with the descriptor in the
//! node's cell (`SocketCell`'s layer), so `recv` and `send` (`calls.rs`)
//! go through it, and it moves with a connection handed over.
//!
//! Certificates are verified by default (the system's authorities, or
//! `ca_file`'s); `verify = false` turns that off only when asked. Whatever
//! is read or written, the handshake goes on by itself; `handshake` drives
//! it to its end, so that a client learns at once that a certificate is
//! refused. Configurations are built once per set of files and shared.

use std::collections::HashMap;
use std::ffi::c_int;
use std::io::{self, ErrorKind, Read, Write};
use std::os::fd::BorrowedFd;
use std::sync::{Arc, Mutex, OnceLock};

use mlua_sys as ffi;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection, Connection, RootCertStore, ServerConfig, ServerConnection};
use socket2::SockRef;
use synodic_core::io::Layer;

use super::open_sock;
use crate::vm::util::*;

/// The system's certificate authorities (Debian's bundle).
const SYSTEM_CAS: &str = "/etc/ssl/certs/ca-certificates.crt";

/// What a socket's layer holds.
pub(crate) enum Tls {
    /// A listener's: each accepted connection serves TLS with it.
    Listener(Arc<ServerConfig>),
    /// A connection's session.
    Session(Box<Connection>),
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A client configuration: verifying against `ca_file` (or the system's
/// authorities), or not at all. Built once per choice.
/// Client configurations by CA file and whether they verify.
type ClientConfigs = Mutex<HashMap<(Option<String>, bool), Arc<ClientConfig>>>;

fn client_config(ca_file: Option<&str>, verify: bool) -> Result<Arc<ClientConfig>, String> {
    static CONFIGS: OnceLock<ClientConfigs> = OnceLock::new();
    let key = (ca_file.map(str::to_string), verify);
    let mut configs = CONFIGS.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    if let Some(config) = configs.get(&key) {
        return Ok(config.clone());
    }
    let builder = ClientConfig::builder_with_provider(provider()).with_safe_default_protocol_versions().map_err(|e| e.to_string())?;
    let config = if verify {
        let path = ca_file.unwrap_or(SYSTEM_CAS);
        let mut roots = RootCertStore::empty();
        let certs = CertificateDer::pem_file_iter(path).map_err(|e| format!("cannot read certificates from {path}: {e}"))?;
        for cert in certs {
            let cert = cert.map_err(|e| format!("bad certificate in {path}: {e}"))?;
            roots.add(cert).map_err(|e| format!("bad certificate in {path}: {e}"))?;
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    } else {
        builder.dangerous().with_custom_certificate_verifier(Arc::new(NoVerify(provider()))).with_no_client_auth()
    };
    let config = Arc::new(config);
    configs.insert(key, config.clone());
    Ok(config)
}

/// A server configuration from a certificate chain and its key (PEM).
fn server_config(cert_file: &str, key_file: &str) -> Result<Arc<ServerConfig>, String> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert_file)
        .map_err(|e| format!("cannot read certificates from {cert_file}: {e}"))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("bad certificate in {cert_file}: {e}"))?;
    let key = PrivateKeyDer::from_pem_file(key_file).map_err(|e| format!("cannot read a private key from {key_file}: {e}"))?;
    let config = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("{cert_file} and {key_file}: {e}"))?;
    Ok(Arc::new(config))
}

/// Accepts any certificate: `verify = false`, asked for by the program.
#[derive(Debug)]
struct NoVerify(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for NoVerify {
    fn verify_server_cert(&self, _: &CertificateDer<'_>, _: &[CertificateDer<'_>], _: &ServerName<'_>, _: &[u8], _: rustls::pki_types::UnixTime) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(&self, message: &[u8], cert: &CertificateDer<'_>, dss: &rustls::DigitallySignedStruct) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }
    fn verify_tls13_signature(&self, message: &[u8], cert: &CertificateDer<'_>, dss: &rustls::DigitallySignedStruct) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The session of a layer, if it has one.
fn session(layer: &mut Layer) -> Option<&mut Connection> {
    match layer.as_mut()?.downcast_mut::<Tls>()? {
        Tls::Session(c) => Some(c),
        Tls::Listener(_) => None,
    }
}

/// The layer a connection accepted from a listener with `layer` gets.
pub(crate) fn accepted_layer(listener: &mut Layer) -> io::Result<Layer> {
    let Some(Tls::Listener(config)) = listener.as_mut().and_then(|l| l.downcast_mut::<Tls>()) else { return Ok(None) };
    let server = ServerConnection::new(config.clone()).map_err(io::Error::other)?;
    Ok(Some(Box::new(Tls::Session(Box::new(server.into())))))
}

/// Writes what the session has for the peer; `Err(WouldBlock)` when the
/// kernel takes no more.
fn flush(fd: BorrowedFd<'_>, conn: &mut Connection) -> io::Result<()> {
    let mut out = NoSignal(SockRef::from(&fd));
    while conn.wants_write() {
        conn.write_tls(&mut out)?;
    }
    Ok(())
}

/// Writes to a socket as every socket of a node is written: with
/// MSG_NOSIGNAL (a peer gone away must not kill the node by SIGPIPE).
struct NoSignal<'a>(SockRef<'a>);

impl Write for NoSignal<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.send_with_flags(buf, libc::MSG_NOSIGNAL)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Reads TLS records from the socket into the session; `Ok(false)` at the
/// end of the stream.
fn fill(fd: BorrowedFd<'_>, conn: &mut Connection) -> io::Result<bool> {
    let socket = SockRef::from(&fd);
    let mut io: &socket2::Socket = &socket;
    if conn.read_tls(&mut io)? == 0 {
        return Ok(false);
    }
    conn.process_new_packets().map_err(|e| io::Error::new(ErrorKind::InvalidData, e))?;
    Ok(true)
}

/// Which way a session that cannot go on waits: `WouldBlock` errors carry
/// it for `calls.rs` (`Interest`-like: true to read).
pub(crate) struct Wants(pub bool);

/// Plaintext received through the session into `buf`: `Ok(0)` at the end.
/// `Some` when the layer is a session, `None` for a plain socket.
pub(crate) fn recv(fd: BorrowedFd<'_>, layer: &mut Layer, buf: &mut [u8]) -> Option<Result<usize, (io::Error, Wants)>> {
    let conn = session(layer)?;
    Some(loop {
        match conn.reader().read(buf) {
            Ok(n) => break Ok(n),
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            // The peer closed without close_notify: the end, as for TCP.
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => break Ok(0),
            Err(e) => break Err((e, Wants(true))),
        }
        if let Err(e) = flush(fd, conn) {
            if e.kind() != ErrorKind::WouldBlock {
                break Err((e, Wants(false)));
            }
        }
        match fill(fd, conn) {
            Ok(true) => continue,
            Ok(false) => break Ok(0),
            Err(e) => break Err((e, Wants(true))),
        }
    })
}

/// Plaintext sent through the session: how many bytes it took (its
/// buffer is bounded: `WouldBlock` when it holds as much as it may).
pub(crate) fn send(fd: BorrowedFd<'_>, layer: &mut Layer, data: &[u8]) -> Option<Result<usize, (io::Error, Wants)>> {
    let conn = session(layer)?;
    Some((|| {
        if let Err(e) = flush(fd, conn) {
            return Err((e, Wants(false)));
        }
        if conn.is_handshaking() && !conn.wants_write() {
            // The peer's turn: read what it sent, then go on.
            match fill(fd, conn) {
                Ok(true) => {}
                Ok(false) => return Err((io::Error::from(ErrorKind::ConnectionReset), Wants(true))),
                Err(e) => return Err((e, Wants(true))),
            }
            if conn.is_handshaking() && !conn.wants_write() {
                return Err((io::Error::from(ErrorKind::WouldBlock), Wants(true)));
            }
        }
        let n = conn.writer().write(data).map_err(|e| (e, Wants(false)))?;
        match flush(fd, conn) {
            Err(e) if e.kind() != ErrorKind::WouldBlock => Err((e, Wants(false))),
            _ if n == 0 => Err((io::Error::from(ErrorKind::WouldBlock), Wants(false))),
            _ => Ok(n),
        }
    })())
}

/// Ends a session politely (close_notify), as far as the kernel takes it.
pub(crate) fn close(fd: BorrowedFd<'_>, layer: &mut Layer) {
    if let Some(conn) = session(layer) {
        conn.send_close_notify();
        let _ = flush(fd, conn);
    }
}

/// Reads a string field of the table at `idx`.
unsafe fn field(L: *mut ffi::lua_State, idx: c_int, name: &std::ffi::CStr) -> Option<String> {
    // SAFETY: `L` is the running state with a table at `idx` (checked by
    // the caller); the value is popped after it is copied.
    unsafe {
        ffi::lua_getfield(L, idx, name.as_ptr());
        let value = (ffi::lua_type(L, -1) == ffi::LUA_TSTRING).then(|| to_bytes(L, -1)).flatten().map(|b| String::from_utf8_lossy(b).into_owned());
        ffi::lua_pop(L, 1);
        value
    }
}

/// `tls(s, opts)`: a TLS layer on the socket (see the module's doc):
/// `{server_name =, ca_file =, verify = true}` for a client,
/// `{cert_file =, key_file =}` for a server or a listener. `true`, or
/// `nil, err`.
pub(super) unsafe extern "C-unwind" fn tls(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this with its running state, the socket at 1 and
    // the options at 2; what is owned is dropped before a raise, and the
    // results are pushed once nothing is owned.
    let outcome: Result<(), String> = unsafe {
        let s = match open_sock(L, 1, "tls") {
            Ok((s, _)) => s,
            Err(Some(e)) => return raise(L, e),
            Err(None) => {
                ffi::lua_pushnil(L);
                ffi::lua_pushstring(L, c"closed".as_ptr());
                return 2;
            }
        };
        if ffi::lua_type(L, 2) != ffi::LUA_TTABLE {
            return raise(L, format!("bad argument #2 to 'tls' (table expected, got {})", type_name(L, 2)));
        }
        let (cert, key) = (field(L, 2, c"cert_file"), field(L, 2, c"key_file"));
        let (name, ca) = (field(L, 2, c"server_name"), field(L, 2, c"ca_file"));
        ffi::lua_getfield(L, 2, c"verify".as_ptr());
        let verify = ffi::lua_type(L, -1) == ffi::LUA_TNIL || ffi::lua_toboolean(L, -1) != 0;
        ffi::lua_pop(L, 1);
        let listening = s.cell.as_ref().is_some_and(|c| c.is_listening());
        let layer: Result<Tls, String> = match (cert, key) {
            (Some(cert), Some(key)) => server_config(&cert, &key).and_then(|config| {
                if listening {
                    Ok(Tls::Listener(config))
                } else {
                    ServerConnection::new(config).map(|c| Tls::Session(Box::new(c.into()))).map_err(|e| e.to_string())
                }
            }),
            (Some(_), None) | (None, Some(_)) => Err("a TLS server needs both cert_file and key_file".into()),
            (None, None) if listening => Err("a listener serves TLS with cert_file and key_file".into()),
            (None, None) => match name {
                None => Err("a TLS client needs the server_name it expects".into()),
                Some(name) => ServerName::try_from(name.clone()).map_err(|_| format!("'{name}' is not a server name")).and_then(|server_name| {
                    let config = client_config(ca.as_deref(), verify)?;
                    ClientConnection::new(config, server_name).map(|c| Tls::Session(Box::new(c.into()))).map_err(|e| e.to_string())
                }),
            },
        };
        layer.and_then(|layer| {
            s.cell.as_ref().and_then(|c| c.with_layer(|_, slot| *slot = Some(Box::new(layer)))).ok_or_else(|| "closed".to_string())
        })
    };
    // SAFETY: `L` is the running state with room for two results.
    unsafe {
        match outcome {
            Ok(()) => {
                ffi::lua_pushboolean(L, 1);
                1
            }
            Err(why) => {
                ffi::lua_pushnil(L);
                push_bytes(L, why.as_bytes());
                2
            }
        }
    }
}

/// `handshake(s)`: drives a session's handshake: `true` once done, `false,
/// "r" | "w"` when it must wait, `nil, err` when it failed (a refused
/// certificate, a peer that closed).
pub(super) unsafe extern "C-unwind" fn handshake(L: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this with its running state, the socket at 1; the
    // results are pushed once nothing is owned.
    let state: Result<Option<bool>, String> = unsafe {
        match open_sock(L, 1, "handshake") {
            Ok((s, _)) => s
                .cell
                .as_ref()
                .and_then(|c| {
                    c.with_layer(|fd, layer| {
                        let Some(conn) = session(layer) else { return Ok(None) };
                        loop {
                            if let Err(e) = flush(fd, conn) {
                                return if e.kind() == ErrorKind::WouldBlock { Ok(Some(false)) } else { Err(super::calls::wording(&e)) };
                            }
                            if !conn.is_handshaking() {
                                return Ok(None);
                            }
                            match fill(fd, conn) {
                                Ok(true) => {}
                                Ok(false) => return Err("closed".into()),
                                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(Some(true)),
                                Err(e) => return Err(super::calls::wording(&e)),
                            }
                        }
                    })
                })
                .unwrap_or_else(|| Err("closed".into())),
            Err(Some(e)) => return raise(L, e),
            Err(None) => Err("closed".into()),
        }
    };
    // SAFETY: `L` is the running state with room for two results.
    unsafe {
        match state {
            Ok(None) => {
                ffi::lua_pushboolean(L, 1);
                1
            }
            Ok(Some(read)) => {
                ffi::lua_pushboolean(L, 0);
                ffi::lua_pushstring(L, if read { c"r".as_ptr() } else { c"w".as_ptr() });
                2
            }
            Err(why) => {
                ffi::lua_pushnil(L);
                push_bytes(L, why.as_bytes());
                2
            }
        }
    }
}
