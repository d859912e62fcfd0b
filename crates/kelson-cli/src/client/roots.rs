//! `--root` values as the roots a server is offered: a path becomes a `file://` URI, a URI is kept.
//!
//! spec 2026-07-28 client/roots: a root's `uri` is a `file://` URI. People type paths (`.`,
//! `~/notes`), and a server that checks the list refuses all of it for one plain path, so a path is
//! made absolute (`~` is the home directory), canonical (symbolic links and `..` resolved, which
//! needs it to exist), and written as RFC 8089 wants: `file://` with an empty authority and the
//! path percent-encoded, every byte outside RFC 3986 `unreserved` as `%XX` (the form `kelson serve`
//! hands out for its own roots).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use kelson_types::Root;

use super::CliError;

/// The root a `--root` value stands for.
pub(crate) fn root(value: &str) -> Result<Root, CliError> {
    if has_scheme(value) {
        return Ok(Root::new(value));
    }
    let path = expand_home(value)?;
    let path = std::fs::canonicalize(&path)
        .map_err(|e| CliError::usage(format!("--root {value}: {}: {e}", path.display())))?;
    let mut root = Root::new(file_uri(&path));
    if let Some(name) = path.file_name() {
        root = root.with_name(name.to_string_lossy());
    }
    Ok(root)
}

/// Whether `value` starts with an RFC 3986 scheme and its colon (`file:`, `https:`). One letter
/// before the colon is not taken for a scheme, so a path such as `c:notes` stays a path.
fn has_scheme(value: &str) -> bool {
    let Some((scheme, _)) = value.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    scheme.len() > 1
        && chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// `~` and `~/...` with the home directory (`$HOME`); anything else as it is.
fn expand_home(value: &str) -> Result<PathBuf, CliError> {
    let rest = match value.strip_prefix('~') {
        Some("") => "",
        Some(rest) if rest.starts_with('/') => &rest[1..],
        _ => return Ok(PathBuf::from(value)),
    };
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .ok_or_else(|| CliError::usage(format!("--root {value}: HOME is not set")))?;
    Ok(Path::new(&home).join(rest))
}

/// `file://` and the absolute `path`, each byte outside RFC 3986 `unreserved` percent-encoded
/// (uppercase hex), separators kept.
fn file_uri(path: &Path) -> String {
    let mut uri = String::from("file://");
    #[cfg(unix)]
    let bytes = std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str());
    #[cfg(not(unix))]
    let text = path.to_string_lossy().replace('\\', "/");
    #[cfg(not(unix))]
    let bytes = text.as_bytes();
    for &b in bytes {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            uri.push(char::from(b));
        } else {
            let _ = write!(uri, "%{b:02X}");
        }
    }
    uri
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_are_kept_and_paths_are_not_uris() {
        for uri in ["file:///home/me/project", "https://example.com/x", "urn:x"] {
            assert!(has_scheme(uri), "{uri}");
            assert_eq!(root(uri).unwrap().uri, uri);
        }
        for path in ["notes", "./a:b", "c:notes", "/tmp", "~/x", "1a:b"] {
            assert!(!has_scheme(path), "{path}");
        }
    }

    #[test]
    fn paths_are_percent_encoded() {
        assert_eq!(
            file_uri(Path::new("/home/me/My Notes/100%/ü#?")),
            "file:///home/me/My%20Notes/100%25/%C3%BC%23%3F"
        );
        assert_eq!(file_uri(Path::new("/")), "file:///");
    }

    #[test]
    fn home_is_expanded() {
        let home = PathBuf::from(std::env::var_os("HOME").unwrap());
        assert_eq!(expand_home("~").unwrap(), home);
        assert_eq!(expand_home("~/notes").unwrap(), home.join("notes"));
        assert_eq!(expand_home("~user/x").unwrap(), PathBuf::from("~user/x"));
        assert_eq!(expand_home("./~").unwrap(), PathBuf::from("./~"));
    }

    #[test]
    fn a_missing_directory_is_a_usage_error() {
        let e = root("/nonexistent/mcp-cli-root").unwrap_err().to_string();
        assert!(
            e.starts_with("--root /nonexistent/mcp-cli-root: /nonexistent/mcp-cli-root: "),
            "{e}"
        );
    }
}
