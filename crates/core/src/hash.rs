//! A fast hasher for keys the runtime makes itself (tuple classes, object
//! addresses in the codec): multiply and rotate per 8-byte word. These keys
//! come from the program's own processes, so the DoS resistance of the
//! standard SipHash buys nothing and costs a lot on hot paths.

use std::hash::{BuildHasherDefault, Hasher};

#[derive(Default)]
pub struct FastHasher(u64);

impl Hasher for FastHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    #[inline]
    fn write_u16(&mut self, n: u16) {
        self.write_u64(n as u64);
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64)
    }

    #[inline]
    fn write_u8(&mut self, n: u8) {
        self.write_u64(n as u64)
    }
}

/// `HashMap<K, V, FastBuild>` uses [`FastHasher`].
pub type FastBuild = BuildHasherDefault<FastHasher>;
