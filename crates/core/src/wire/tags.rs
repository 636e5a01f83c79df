// The wire format's numbers, in one place. Synodic-core's `Tag`,
// `VERSION` and pid layout use these constants, and crates/lua/build.rs
// includes this file to write the C header `wire_tags.h` that
// crates/lua/csrc/plain.c encodes and decodes with: the two cannot drift.
// Plain constants only (no imports, no attributes that need a crate):
// a build script compiles it as it is.

/// First byte of every message; bump when the layout changes.
pub const VERSION: u8 = 2;

pub const NIL: u8 = 0;
pub const FALSE: u8 = 1;
pub const TRUE: u8 = 2;
pub const INT: u8 = 3;
pub const FLOAT: u8 = 4;
pub const STR: u8 = 5;
pub const TABLE: u8 = 6;
pub const REF: u8 = 7;
pub const FUNCTION: u8 = 8;
pub const PID: u8 = 9;
pub const GLOBALS: u8 = 10;
pub const LIBRARY: u8 = 11;
pub const SHARED_UPVALUE: u8 = 12;
pub const SHARED: u8 = 13;

/// Every value tag, by name (for the C header).
pub const ALL: [(&str, u8); 14] = [
    ("NIL", NIL),
    ("FALSE", FALSE),
    ("TRUE", TRUE),
    ("INT", INT),
    ("FLOAT", FLOAT),
    ("STR", STR),
    ("TABLE", TABLE),
    ("REF", REF),
    ("FUNCTION", FUNCTION),
    ("PID", PID),
    ("GLOBALS", GLOBALS),
    ("LIBRARY", LIBRARY),
    ("SHARED_UPVALUE", SHARED_UPVALUE),
    ("SHARED", SHARED),
];

/// A pid's low bits: a tag that marks a pid (see `Pid`).
pub const PID_TAG_BITS: u32 = 4;
pub const PID_TAG: u64 = 0xD;
