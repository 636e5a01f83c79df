//! The node's log (SPEC §11): one line per record on standard error, with
//! the time, the level, the node and the pid; as text, or as one JSON
//! object a line (`--log-format json`). Records below the node's level
//! (`--log-level`) are dropped before anything is formatted. Crash reports
//! of processes are records too, of level `error`, so they can be
//! filtered, and read by machines.

use std::io::Write;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicU8};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::Pid;

/// How much a record matters; `None` as a node's level drops every record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Debug = 0,
    Info = 1,
    Warn = 2,
    Error = 3,
    None = 4,
}

impl Level {
    /// The level called `name` (`debug`, `info`, `warn`, `error`, `none`).
    pub fn parse(name: &str) -> Option<Level> {
        Some(match name {
            "debug" => Level::Debug,
            "info" => Level::Info,
            "warn" | "warning" => Level::Warn,
            "error" => Level::Error,
            "none" | "off" => Level::None,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        ["debug", "info", "warn", "error", "none"][self as usize]
    }

    fn from_u8(n: u8) -> Level {
        [Level::Debug, Level::Info, Level::Warn, Level::Error, Level::None][(n as usize).min(4)]
    }
}

static LEVEL: AtomicU8 = AtomicU8::new(Level::Info as u8);
static JSON: AtomicBool = AtomicBool::new(false);

/// Sets the node's level: records below it are dropped.
pub fn set_level(level: Level) {
    LEVEL.store(level as u8, Relaxed);
}

/// The node's level.
pub fn level() -> Level {
    Level::from_u8(LEVEL.load(Relaxed))
}

/// Writes records as JSON objects (true) or as text.
pub fn set_json(on: bool) {
    JSON.store(on, Relaxed);
}

/// Whether a record of `level` would be written.
#[inline]
pub fn enabled(level: Level) -> bool {
    level != Level::None && level as u8 >= LEVEL.load(Relaxed)
}

/// A record: `text` at `level`, from `pid` (if a process wrote it) of
/// `node`; `detail` (a traceback) goes on the lines after it as text, or
/// in the field `"traceback"` as JSON.
pub fn write(level: Level, node: &str, pid: Option<Pid>, text: &str, detail: Option<&str>) {
    if !enabled(level) {
        return;
    }
    let time = utc_now();
    let pid = pid.map(|p| p.to_string());
    let line = match JSON.load(Relaxed) {
        true => {
            let mut o = format!("{{\"time\":\"{time}\",\"level\":\"{}\",\"node\":{}", level.name(), json_str(node));
            if let Some(pid) = &pid {
                o += &format!(",\"pid\":\"{pid}\"");
            }
            o += &format!(",\"msg\":{}", json_str(text));
            if let Some(d) = detail {
                o += &format!(",\"traceback\":{}", json_str(d));
            }
            o + "}\n"
        }
        false => {
            let who = pid.map_or_else(String::new, |p| format!(" {p}"));
            let mut o = format!("{time} {} {node}{who}: {text}\n", level.name());
            if let Some(d) = detail {
                o += d;
                o += "\n";
            }
            o
        }
    };
    // One write per record, so that records of many threads do not mix.
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// `text` as a JSON string.
pub fn json_str(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The time now, UTC, as `2026-11-27T18:40:01.123Z`.
fn utc_now() -> String {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let (secs, ms) = (now.as_secs(), now.subsec_millis());
    let (days, rem) = (secs / 86400, secs % 86400);
    let (y, m, d) = civil_from_days(days as i64);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{ms:03}Z", rem / 3600, rem / 60 % 60, rem % 60)
}

/// The calendar date of a day counted from 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + (m <= 2) as i64, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_json_strings() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_784), (2026, 11, 27));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(json_str("a\"b\\c\nd\u{1}"), "\"a\\\"b\\\\c\\nd\\u0001\"");
        assert_eq!(Level::parse("warn"), Some(Level::Warn));
        assert_eq!(Level::parse("loud"), None);
        assert!(Level::Error > Level::Warn);
    }
}
