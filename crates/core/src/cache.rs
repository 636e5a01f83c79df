//! What the runtime knows of the machine's memory: the size of the
//! last-level cache, which decides from how many live processes on a woken
//! process has likely left the caches (see `Runtime::wakes_cold`), read from
//! Linux's sysfs (elsewhere, or if it cannot be read, a common size is
//! assumed); and its physical memory, the bound on any one block a program
//! may ask for ([`largest_block`]).

/// Assumed when the size cannot be read.
const USUAL_LAST_LEVEL: usize = 8 << 20;

/// The size in bytes of the largest, outermost cache of the first CPU: as
/// the processor describes it where it can (x86), else as sysfs does (its
/// sixteen small files took ~80 µs of every node's start).
pub(crate) fn last_level_bytes() -> usize {
    described_by_processor().unwrap_or_else(from_sysfs)
}

/// The largest cache the processor's deterministic cache parameters list
/// (CPUID leaf 4 on Intel, 0x8000001D on AMD and Hygon): one instance's
/// size, as sysfs gives it, not the sum over the package.
#[cfg(target_arch = "x86_64")]
fn described_by_processor() -> Option<usize> {
    use std::arch::x86_64::__cpuid_count;
    let vendor = __cpuid_count(0, 0);
    let amd = (vendor.ebx, vendor.edx, vendor.ecx) == (0x6874_7541, 0x6974_6e65, 0x444d_4163) || (vendor.ebx, vendor.edx, vendor.ecx) == (0x6f67_7948, 0x6e65_476e, 0x656e_6975);
    let leaf = if amd { 0x8000_001d } else { 4 };
    let highest = __cpuid_count(leaf & 0x8000_0000, 0).eax;
    if highest < leaf {
        return None;
    }
    (0..16)
        .map(|sub| __cpuid_count(leaf, sub))
        .take_while(|r| r.eax & 0x1f != 0)
        .map(|r| {
            let level = (r.eax >> 5) & 0x7;
            let (ways, partitions, line, sets) = ((r.ebx >> 22) as usize + 1, ((r.ebx >> 12) & 0x3ff) as usize + 1, (r.ebx & 0xfff) as usize + 1, r.ecx as usize + 1);
            (level, ways * partitions * line * sets)
        })
        .max()
        .map(|(_, bytes)| bytes)
        .filter(|&bytes| bytes > 0)
}

#[cfg(not(target_arch = "x86_64"))]
fn described_by_processor() -> Option<usize> {
    None
}

fn from_sysfs() -> usize {
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

    #[test]
    fn the_processor_and_sysfs_agree_on_the_last_level_cache() {
        let sysfs_knows = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache/index0/size").exists();
        if let Some(bytes) = described_by_processor().filter(|_| sysfs_knows) {
            assert_eq!(bytes, from_sysfs(), "CPUID's size of the largest cache is sysfs's");
        }
    }
}
