//! Process identifiers. A pid is one `u64` that names a process anywhere in a
//! cluster: a node index and a per-node serial number, plus a fixed tag in the
//! low bits. The tag lets the Lua layer carry pids as light userdata (which
//! compare by value and work as table keys) and still tell them apart from the
//! aligned pointers other C libraries use as light userdata.

use std::fmt;

const TAG_BITS: u32 = 4;
const TAG: u64 = 0xD;
const NODE_BITS: u32 = 16;
const SERIAL_SHIFT: u32 = TAG_BITS + NODE_BITS;

#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pid(u64);

impl Pid {
    pub const MAX_SERIAL: u64 = (1 << (64 - SERIAL_SHIFT)) - 1;

    pub fn new(node: u16, serial: u64) -> Pid {
        debug_assert!(serial <= Self::MAX_SERIAL);
        Pid(serial << SERIAL_SHIFT | (node as u64) << TAG_BITS | TAG)
    }

    /// Rebuilds a pid from its raw form; `None` when the bits are not a pid.
    pub fn from_raw(raw: u64) -> Option<Pid> {
        (raw & ((1 << TAG_BITS) - 1) == TAG && raw >> SERIAL_SHIFT != 0).then_some(Pid(raw))
    }

    pub fn raw(self) -> u64 {
        self.0
    }

    pub fn node(self) -> u16 {
        (self.0 >> TAG_BITS) as u16
    }

    pub fn serial(self) -> u64 {
        self.0 >> SERIAL_SHIFT
    }
}

impl fmt::Display for Pid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{}.{}>", self.node(), self.serial())
    }
}

impl fmt::Debug for Pid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_non_pids() {
        let pid = Pid::new(3, 123_456);
        assert_eq!(Pid::from_raw(pid.raw()), Some(pid));
        assert_eq!((pid.node(), pid.serial()), (3, 123_456));
        assert_eq!(pid.to_string(), "<3.123456>");
        assert_eq!(Pid::from_raw(0x1000), None, "an aligned pointer is not a pid");
        assert_eq!(Pid::from_raw(TAG), None, "serial 0 is never issued");
    }
}
