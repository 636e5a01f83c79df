//! The I/O layer's error type.

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot start the I/O thread: {0}")]
    Start(std::io::Error),
    #[error("cannot listen on {addr}: {why}")]
    Listen { addr: String, why: std::io::Error },
    #[error("cookie file {path}: {why}")]
    Cookie { path: String, why: std::io::Error },
    #[error("cannot join the cluster through {addr}: {why}")]
    Join { addr: String, why: String },
    /// Nothing answered at the address (yet: a seed that is starting).
    #[error("cannot join the cluster through {addr}: {why}")]
    Unreachable { addr: String, why: String },
    #[error("wrong cookie (the peer does not hold this node's cookie)")]
    WrongCookie,
    /// The accepting side of a handshake refused, saying why.
    #[error("refused: {0}")]
    Refused(String),
    /// A hostfile or a launcher's environment that does not make sense.
    #[error("{0}")]
    Launch(String),
    /// A peer broke the node protocol: junk, a malformed or unexpected frame.
    #[error("{0}")]
    Protocol(String),
}
