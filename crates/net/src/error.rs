//! The I/O layer's error type.

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot start the I/O thread: {0}")]
    Start(std::io::Error),
    #[error("cannot listen on {addr}: {source}")]
    Listen { addr: String, source: std::io::Error },
    #[error("cookie file {path}: {source}")]
    Cookie { path: String, source: std::io::Error },
}
