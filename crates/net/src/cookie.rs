//! The cookie: the shared secret that a console (and, later, a node) must
//! know to be let in. It is the content of a file, `~/.synodic/cookie` by
//! default, created with a fresh random secret, readable by its owner only,
//! on first use.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::Error;

/// Shorter cookies are easy to guess: a warning says so.
pub const MIN_LEN: usize = 16;

/// The dashboard's key (hex): HMAC-SHA256 of "synodic dashboard" under the
/// cookie. A page proves the cookie by an HMAC of a fresh nonce under this
/// key, which the browser derives from the cookie the user types; the node
/// keeps only the key.
pub fn dashboard_key(cookie: &str) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, cookie.as_bytes());
    ring::hmac::sign(&key, b"synodic dashboard").as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// The default cookie file: `~/.synodic/cookie`.
pub fn default_file() -> Option<PathBuf> {
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".synodic").join("cookie"))
}

/// Reads the cookie, creating the file (readable by its owner only) with a
/// fresh random cookie if it does not exist. Warnings (a file others can
/// read, a short cookie) come back with it, one line each.
pub fn load_or_create(path: &Path) -> Result<(String, Vec<String>), Error> {
    let fail = |why| Error::Cookie { path: path.display().to_string(), why };
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let cookie = text.trim().to_string();
            if cookie.is_empty() {
                return Err(fail(std::io::Error::other("it is empty")));
            }
            let mut warnings = Vec::new();
            if std::fs::metadata(path).map_err(fail)?.permissions().mode() & 0o077 != 0 {
                warnings.push(format!("cookie file {} can be read by others than its owner (chmod 600 it)", path.display()));
            }
            if cookie.len() < MIN_LEN {
                warnings.push(format!("the cookie in {} is shorter than {MIN_LEN} characters: easy to guess", path.display()));
            }
            Ok((cookie, warnings))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(fail)?;
            }
            let mut bytes = [0u8; 16];
            std::fs::File::open("/dev/urandom").and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes)).map_err(fail)?;
            let cookie: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path).map_err(fail)?;
            writeln!(file, "{cookie}").map_err(fail)?;
            Ok((cookie, Vec::new()))
        }
        Err(e) => Err(fail(e)),
    }
}

/// Compares two secrets in time that does not depend on where they differ.
pub fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cookie_file_is_created_private_and_reused() {
        let dir = std::env::temp_dir().join(format!("synodic-cookie-{}", std::process::id()));
        let path = dir.join("sub").join("cookie");
        let (first, warnings) = load_or_create(&path).unwrap();
        assert_eq!(first.len(), 32);
        assert!(warnings.is_empty());
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(load_or_create(&path).unwrap().0, first);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_weak_cookie_is_warned_about() {
        let dir = std::env::temp_dir().join(format!("synodic-weak-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("cookie");
        std::fs::write(&path, "short\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let (cookie, warnings) = load_or_create(&path).unwrap();
        assert_eq!(cookie, "short");
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        std::fs::write(&path, "\n").unwrap();
        assert!(load_or_create(&path).unwrap_err().to_string().contains("it is empty"));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd") && !same(b"abc", b"ab"));
    }
}
