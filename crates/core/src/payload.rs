//! Payloads: the bytes of buffers, which messages carry as attachments
//! (shared within a node, sent as raw bytes between nodes). A large payload
//! takes its memory from, and gives it back to, a small cache of memory this
//! OS process has used recently, because fresh memory is slow: the kernel
//! zeroes every page on its first touch (on a virtual machine the host may
//! have to back it first), and a 64 MB message crosses loopback faster than
//! its pages fault in. The allocator cannot keep such memory warm for us: a
//! large block freed by another thread than the one that allocated it (the
//! usual case here: a worker receives it, the process that held it ends
//! elsewhere) is handed back to the kernel.
//!
//! The cache keeps at most [`CACHED_MAX`] allocations and [`CACHED_BYTES`]
//! bytes, each for at most [`KEPT_FOR`] unless it is used again
//! ([`trim`], which the monitor calls every so often, lets the old go).

use std::collections::TryReserveError;
use std::ops::{Deref, DerefMut};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Payloads at least this large give their memory back to the cache.
pub const RECYCLED_FROM: usize = 1 << 20;
const CACHED_MAX: usize = 8;
const CACHED_BYTES: usize = 512 << 20;
const KEPT_FOR: Duration = Duration::from_secs(2);

/// A buffer's bytes.
#[derive(Default, Debug, PartialEq, Eq)]
pub struct Payload(Vec<u8>);

impl Payload {
    pub fn new(bytes: Vec<u8>) -> Payload {
        Payload(bytes)
    }
}

impl From<Vec<u8>> for Payload {
    fn from(bytes: Vec<u8>) -> Payload {
        Payload(bytes)
    }
}

impl Deref for Payload {
    type Target = Vec<u8>;
    fn deref(&self) -> &Vec<u8> {
        &self.0
    }
}

impl DerefMut for Payload {
    fn deref_mut(&mut self) -> &mut Vec<u8> {
        &mut self.0
    }
}

impl Drop for Payload {
    fn drop(&mut self) {
        if self.0.capacity() >= RECYCLED_FROM {
            CACHE.lock().put(std::mem::take(&mut self.0));
        }
    }
}

/// An empty vector with room for `len` bytes, from the cache when it holds
/// one that fits (at most twice as large), else fresh.
pub fn with_capacity(len: usize) -> Result<Vec<u8>, TryReserveError> {
    if len >= RECYCLED_FROM {
        if let Some(v) = CACHE.lock().take(len) {
            return Ok(v);
        }
    }
    let mut v = Vec::new();
    v.try_reserve_exact(len)?;
    Ok(v)
}

/// Lets go of memory the cache has kept for longer than [`KEPT_FOR`].
pub fn trim() {
    let old = CACHE.lock().expire(Instant::now());
    drop(old); // freed outside the lock
}

static CACHE: Mutex<Cache> = Mutex::new(Cache { kept: Vec::new(), bytes: 0 });

struct Cache {
    /// Oldest first.
    kept: Vec<(Vec<u8>, Instant)>,
    bytes: usize,
}

impl Cache {
    fn put(&mut self, mut v: Vec<u8>) {
        v.clear();
        self.bytes += v.capacity();
        self.kept.push((v, Instant::now()));
        while self.kept.len() > CACHED_MAX || self.bytes > CACHED_BYTES {
            let (old, _) = self.kept.remove(0);
            self.bytes -= old.capacity();
        }
    }

    fn take(&mut self, len: usize) -> Option<Vec<u8>> {
        let fits = |v: &Vec<u8>| v.capacity() >= len && v.capacity() / 2 <= len;
        let (i, _) = self.kept.iter().enumerate().filter(|(_, (v, _))| fits(v)).min_by_key(|(_, (v, _))| v.capacity())?;
        let (v, _) = self.kept.remove(i);
        self.bytes -= v.capacity();
        Some(v)
    }

    fn expire(&mut self, now: Instant) -> Vec<(Vec<u8>, Instant)> {
        let fresh = self.kept.partition_point(|(_, at)| now.duration_since(*at) >= KEPT_FOR);
        let old: Vec<_> = self.kept.drain(..fresh).collect();
        self.bytes -= old.iter().map(|(v, _)| v.capacity()).sum::<usize>();
        old
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache() -> Cache {
        Cache { kept: Vec::new(), bytes: 0 }
    }

    #[test]
    fn memory_is_reused_when_it_fits() {
        let mut c = cache();
        c.put(Vec::with_capacity(4 << 20));
        c.put(Vec::with_capacity(2 << 20));
        assert_eq!(c.take(1 << 20).map(|v| v.capacity()), Some(2 << 20), "the smallest that fits");
        assert!(c.take(1 << 20).is_none(), "4 MiB is more than twice 1 MiB");
        assert!(c.take(5 << 20).is_none());
        assert_eq!(c.take(3 << 20).map(|v| v.capacity()), Some(4 << 20));
        assert_eq!(c.bytes, 0);
    }

    #[test]
    fn the_cache_is_bounded_and_forgets() {
        let mut c = cache();
        for _ in 0..CACHED_MAX + 3 {
            c.put(Vec::with_capacity(1 << 20));
        }
        assert_eq!(c.kept.len(), CACHED_MAX);
        assert_eq!(c.bytes, CACHED_MAX << 20);
        assert!(c.expire(Instant::now()).is_empty());
        assert_eq!(c.expire(Instant::now() + KEPT_FOR).len(), CACHED_MAX);
        assert_eq!(c.bytes, 0);
    }

    #[test]
    fn a_dropped_large_payload_is_taken_again() {
        let len = RECYCLED_FROM + 12_345;
        let mut v = with_capacity(len).unwrap();
        v.resize(len, 7);
        let at = v.as_ptr();
        drop(Payload::new(v));
        let again = with_capacity(len).unwrap();
        assert!(again.is_empty());
        assert_eq!(again.as_ptr(), at, "the same memory");
    }
}
