//! The core's error type: one variant per way a runtime operation can be refused.

use crate::Pid;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    #[error("no such process {0}")]
    NoProcess(Pid),
    #[error("name '{0}' is already registered")]
    NameTaken(String),
    #[error("no such channel")]
    NoSuchChannel,
    #[error("too many processes on this node")]
    TooManyProcesses,
    #[error("no such node '{0}'")]
    NoSuchNode(String),
    #[error("cannot start the runtime: {0}")]
    Start(String),
    #[error(transparent)]
    Wire(#[from] crate::wire::WireError),
}
