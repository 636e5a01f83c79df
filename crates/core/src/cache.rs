//! What the runtime knows of the machine's memory: the size of the
//! last-level cache, which decides from how many live processes on a woken
//! process has likely left the caches (see `Runtime::wakes_cold`), read from
//! Linux's sysfs (elsewhere, or if it cannot be read, a common size is
//! assumed); and its physical memory, the bound on any one block a program
//! may ask for ([`largest_block`]).

/// Assumed when the size cannot be read.
const USUAL_LAST_LEVEL: usize = 8 << 20;

/// The size in bytes of the largest, outermost cache of the first CPU.
pub(crate) fn last_level_bytes() -> usize {
    (0..8)
        .map_while(|i| {
            let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{i}");
            let level = std::fs::read_to_string(format!("{dir}/level")).ok()?;
            let size = std::fs::read_to_string(format!("{dir}/size")).ok()?;
            Some((level.trim().parse::<u32>().ok()?, parse_size(size.trim())?))
        })
        .max()
        .map_or(USUAL_LAST_LEVEL, |(_, bytes)| bytes)
}

/// The largest single block of memory a program may ask for (a buffer, a
/// string, a message): the machine's physical memory. The allocator
/// reserves address space lazily, so a larger request could succeed and then
/// bring the machine down as it is filled; refused, it fails as an error.
pub fn largest_block() -> usize {
    static BYTES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *BYTES.get_or_init(|| {
        // SAFETY: sysconf has no preconditions.
        let (pages, size) = unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGESIZE)) };
        if pages > 0 && size > 0 {
            (pages as usize).saturating_mul(size as usize)
        } else {
            usize::MAX
        }
    })
}

/// `"32768K"`, `"2M"`, `"512"` as bytes.
fn parse_size(text: &str) -> Option<usize> {
    let (digits, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((at, _)) => text.split_at(at),
        None => (text, ""),
    };
    let n: usize = digits.parse().ok()?;
    match unit {
        "" => Some(n),
        "K" => n.checked_mul(1 << 10),
        "M" => n.checked_mul(1 << 20),
        "G" => n.checked_mul(1 << 30),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_read_as_sysfs_writes_them() {
        assert_eq!(parse_size("32768K"), Some(32 << 20));
        assert_eq!(parse_size("2M"), Some(2 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("12Q"), None);
        assert_eq!(parse_size(""), None);
        assert!(last_level_bytes() >= 64 << 10, "a last-level cache of at least 64 KB, read or assumed");
    }
}
