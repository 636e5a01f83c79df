//! What a frame that arrives over a link does (step 3 of the module's
//! list): the transport's own frames (aliases, flow control) are handled
//! here; every other frame goes to the service that owns its kind
//! (`synodic_core::dist::Services`), with the handles its message carries.

use std::sync::Arc;

use synodic_core::dist::carry::{self, Carried};
use synodic_core::dist::Peer;

use crate::frame::{Arrival, Frame};
use crate::link::{Link, Over};
use crate::Error;

use super::*;

impl Cluster {
    /// One frame from an authenticated peer, with the buffers its message
    /// carries (a parcel's).
    pub(super) fn receive(&self, link: &Arc<Link>, arrival: Arrival<'_>, shared: Vec<Carried>) -> Result<(), Error> {
        let rt = &self.inner.rt;
        let over = Over(link);
        let ours = |pid| over.ours(pid).map_err(Error::Protocol);
        match arrival {
            Arrival::Service { kind, body } => {
                let shared = shared
                    .into_iter()
                    .map(|c| carry::arrive(c, rt))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| Error::Protocol("a malformed future or space handle in a message".into()))?;
                rt.services().receive(rt, &over, kind, body, shared).map_err(Error::Protocol)
            }
            Arrival::Frame(Frame::Node { alias, node }) => {
                let ours = rt.nodes().alias(&node).ok_or_else(|| Error::Protocol("the node table is full".into()))?;
                link.announced(alias, ours);
                Ok(())
            }
            Arrival::Frame(Frame::Busy { pid }) => {
                link.set_busy(ours(pid)?, true);
                Ok(())
            }
            Arrival::Frame(Frame::Ready { pid }) => {
                link.set_busy(ours(pid)?, false);
                Ok(())
            }
            Arrival::Frame(other) => Err(Error::Protocol(format!("unexpected frame {other:?}").chars().take(80).collect())),
        }
    }
}
