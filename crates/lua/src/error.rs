//! The Lua layer's error type.

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot send value of type {kind} (at {path})")]
    Unsendable { kind: String, path: String },
    #[error("value nested deeper than {} levels (at {path})", synodic_core::wire::MAX_DEPTH)]
    TooDeep { path: String },
    #[error("cannot decode message: {0}")]
    Decode(String),
    #[error(transparent)]
    Wire(#[from] synodic_core::wire::WireError),
    #[error(transparent)]
    Core(#[from] synodic_core::Error),
}
