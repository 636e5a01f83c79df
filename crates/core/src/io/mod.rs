//! Sockets for processes: a process that waits on a socket waits as it
//! waits on anything else (a store wait, see `waiting`), and the
//! scheduler's own threads watch the sockets, as they watch the cluster's
//! links (`netpoll`): one netpoller per node, so a socket becoming ready
//! costs one wake-up, of the process that waits on it.
//!
//! - [`poller`]: epoll and an eventfd; links level-triggered, sockets edge-triggered;
//! - [`SocketCell`]: a socket's descriptor, shared by the handles that
//!   processes hold on it;
//! - [`Sockets`]: who waits on which descriptor, for reading or writing,
//!   and the runtime's [`Netpoll`](crate::netpoll::Netpoll), which also
//!   reads the cluster's links when a cluster is installed.
//!
//! The sockets' system calls, buffers and API belong to the layer above;
//! this module only knows descriptors, their holders and their waiters.

mod cell;
pub mod poller;
mod sockets;

pub use cell::{Layer, Open, SocketCell};

pub use sockets::{Interest, Sockets};
pub(crate) use sockets::Netpoller;
