//! A message as it sits in a mailbox: the encoded bytes of its values
//! (see [`crate::wire`]). Small messages — most of them — are stored inline,
//! so sending one allocates nothing and the receiver reads it from the
//! mailbox's own memory. A message may also carry attachments: objects
//! shared with the sender instead of copied (a buffer's bytes, a tuple
//! space), which its bytes refer to by index.

use std::any::Any;
use std::ops::Deref;
use std::sync::Arc;

/// Something a message carries beside its bytes, shared rather than copied.
/// What it is, the layer that made the message knows (and checks, with a
/// downcast, when it reads one).
pub type Attachment = Arc<dyn Any + Send + Sync>;

const INLINE: usize = 30;

#[derive(Clone)]
pub struct Message(Repr);

#[derive(Clone)]
enum Repr {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<[u8]>),
    Attached(Box<(Box<[u8]>, Vec<Attachment>)>),
}

impl Message {
    /// Messages up to this many bytes are stored inline.
    pub const INLINE: usize = INLINE;

    /// Copies `bytes` (small) or takes them over (large).
    #[inline]
    pub fn from_vec(bytes: Vec<u8>) -> Message {
        if bytes.len() <= INLINE {
            Message::from_slice(&bytes)
        } else {
            Message(Repr::Heap(bytes.into_boxed_slice()))
        }
    }

    /// A message of no values (what an answer without a tuple carries).
    pub fn no_values() -> Message {
        Message::from_vec(crate::wire::Writer::message(0).finish_small())
    }

    /// A message whose bytes refer to `attachments` by index.
    #[inline]
    pub fn with_attachments(bytes: Vec<u8>, attachments: Vec<Attachment>) -> Message {
        if attachments.is_empty() {
            Message::from_vec(bytes)
        } else {
            Message(Repr::Attached(Box::new((bytes.into_boxed_slice(), attachments))))
        }
    }

    /// Bytes it takes, for memory limits: its encoded bytes and those of
    /// what it carries (attachments count as the size of their bytes when
    /// they are byte buffers, or as a word).
    pub fn size(&self) -> usize {
        self.len() + self.attachments().iter().map(|a| a.downcast_ref::<crate::payload::Payload>().map_or(8, |p| p.len())).sum::<usize>()
    }

    /// The message with `attachments` added to none.
    pub fn attach(self, attachments: Vec<Attachment>) -> Message {
        match (self.0, attachments.is_empty()) {
            (repr, true) => Message(repr),
            (Repr::Inline { len, bytes }, false) => Message(Repr::Attached(Box::new((bytes[..len as usize].into(), attachments)))),
            (Repr::Heap(b), false) => Message(Repr::Attached(Box::new((b, attachments)))),
            (Repr::Attached(a), false) => Message(Repr::Attached(Box::new((a.0, attachments)))),
        }
    }

    /// Its bytes, to change in place (pids mapped on arrival).
    #[inline]
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        match &mut self.0 {
            Repr::Inline { len, bytes } => &mut bytes[..*len as usize],
            Repr::Heap(b) => b,
            Repr::Attached(a) => &mut a.0,
        }
    }

    /// The attachments.
    #[inline]
    pub fn attachments(&self) -> &[Attachment] {
        match &self.0 {
            Repr::Attached(a) => &a.1,
            _ => &[],
        }
    }

    /// A message of the first `len` bytes of `bytes` (at most [`Message::INLINE`]).
    #[inline]
    pub fn inline(bytes: [u8; INLINE], len: usize) -> Message {
        assert!(len <= INLINE);
        Message(Repr::Inline { len: len as u8, bytes })
    }

    /// The message's bytes, taken over (copied only when inline); its
    /// attachments are dropped.
    pub fn into_vec(self) -> Vec<u8> {
        match self.0 {
            Repr::Inline { len, bytes } => bytes[..len as usize].to_vec(),
            Repr::Heap(b) => b.into_vec(),
            Repr::Attached(a) => a.0.into_vec(),
        }
    }

    pub fn from_slice(bytes: &[u8]) -> Message {
        if bytes.len() <= INLINE {
            let mut inline = [0; INLINE];
            inline[..bytes.len()].copy_from_slice(bytes);
            Message(Repr::Inline { len: bytes.len() as u8, bytes: inline })
        } else {
            Message(Repr::Heap(bytes.into()))
        }
    }
}

impl Deref for Message {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { len, bytes } => &bytes[..*len as usize],
            Repr::Heap(b) => b,
            Repr::Attached(a) => &a.0,
        }
    }
}

impl std::fmt::Debug for Message {
    #[inline]
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Message({} bytes)", self.len())
    }
}

impl PartialEq for Message {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_inline_large_on_heap() {
        assert_eq!(std::mem::size_of::<Message>(), 32);
        let small = Message::from_vec(vec![1, 2, 3]);
        assert!(matches!(small.0, Repr::Inline { .. }) && *small == [1, 2, 3]);
        let large = Message::from_vec(vec![7; 100]);
        assert!(matches!(large.0, Repr::Heap(_)) && large.len() == 100);
        assert_eq!(&*Message::from_slice(&[]), &[] as &[u8]);
    }
}
