//! `file://` URIs: how paths become URIs and how a requested URI becomes path segments.
//!
//! The adapter hands out one canonical form, `file://` + the absolute path with every byte outside
//! RFC 3986 `unreserved` percent-encoded (uppercase hex), directories ending in `/` (RFC 8089 with
//! an empty authority). The parser is strict on purpose: it accepts exactly the URIs a root could
//! have handed out, up to the case of hex digits and the encoding of sub-delimiters, and refuses
//! everything else before the filesystem is touched. Refusing is always "resource not found".

use std::fmt::Write as _;
use std::path::{Component, Path};

/// The longest path the kernel resolves (Linux `PATH_MAX`, with its terminating NUL).
pub(crate) const PATH_MAX: usize = 4096;

/// The longest file name (Linux `NAME_MAX`).
pub(crate) const NAME_MAX: usize = 255;

/// The most segments a relative path may have (each takes at least two bytes, `x/`).
const MAX_SEGMENTS: usize = PATH_MAX / 2;

/// Whether a byte stands for itself in a URI we produce (RFC 3986 `unreserved`).
fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// Whether a byte may appear unencoded in a path segment we accept (RFC 3986 `pchar` minus `%`).
fn is_pchar(b: u8) -> bool {
    is_unreserved(b)
        || matches!(
            b,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'@'
        )
}

/// Appends `segment`, percent-encoded, to `out`.
pub(crate) fn encode_segment(out: &mut String, segment: &str) {
    for &b in segment.as_bytes() {
        if is_unreserved(b) {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
}

/// Whether a file name can be named by a URI of ours: valid UTF-8 (the runtime's template matcher
/// only binds UTF-8), not `.` or `..`, no separator of any platform, no NUL, at most `NAME_MAX`.
///
/// Directory listings and change notifications leave out names that fail this, so nothing is
/// advertised that cannot be read.
pub(crate) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= NAME_MAX
        && name != "."
        && name != ".."
        && !name.bytes().any(|b| matches!(b, b'/' | b'\\' | 0))
}

/// The URI of an absolute, normalised path (no `.`, `..` or repeated separators), or `None` if
/// one of its names cannot be named (see [`valid_name`]). `dir` adds the trailing `/`.
pub(crate) fn path_uri(path: &Path, dir: bool) -> Option<String> {
    let mut out = String::from("file://");
    let mut any = false;
    for component in path.components() {
        match component {
            Component::RootDir => {}
            Component::Normal(name) => {
                let name = name.to_str().filter(|n| valid_name(n))?;
                out.push('/');
                encode_segment(&mut out, name);
                any = true;
            }
            Component::Prefix(_) | Component::CurDir | Component::ParentDir => return None,
        }
    }
    if dir || !any {
        out.push('/');
    }
    Some(out)
}

/// The relative reference of a directory entry, as it appears in a listing: the encoded name, and
/// a trailing `/` for a directory. Resolved against the directory's URI, it is the entry's URI.
pub(crate) fn entry_ref(name: &str, dir: bool) -> String {
    let mut out = String::with_capacity(name.len() + 1);
    encode_segment(&mut out, name);
    if dir {
        out.push('/');
    }
    out
}

/// What a URI names inside a root.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct RelPath {
    /// The decoded names from the root down; empty for the root itself.
    pub(crate) segments: Vec<String>,
    /// Whether the URI ended in `/`, which only a directory may.
    pub(crate) trailing_slash: bool,
}

/// Splits `uri` into the names below the root whose URI is `root_uri` (which ends in `/`).
///
/// Refused, as `None`: another scheme, host or root (the prefix is compared byte for byte, so
/// `FILE://`, `file://localhost/` and a differently cased root do not match); a query or fragment;
/// an empty segment (`//`); `.` and `..`, whether written plainly or percent-encoded; an encoded
/// separator (`%2F`, `%5C`) or NUL (`%00`); a malformed escape; a raw character that RFC 3986 does
/// not allow in a path (backslash, space, non-ASCII...); names that are not UTF-8 or are longer
/// than `NAME_MAX`; and paths longer than `PATH_MAX`. No Unicode normalisation is applied: a name
/// is the exact bytes it decodes to, so look-alikes such as `U+FF0E U+FF0E` or `U+2025` are
/// ordinary names, never `..`.
pub(crate) fn parse_relative(root_uri: &str, uri: &str) -> Option<RelPath> {
    let rest = uri.strip_prefix(root_uri)?;
    if rest.is_empty() {
        return Some(RelPath {
            segments: Vec::new(),
            trailing_slash: true,
        });
    }
    // Every decoded byte takes at least one URI byte and at most three.
    if rest.len() > 3 * PATH_MAX {
        return None;
    }
    let (body, trailing_slash) = match rest.strip_suffix('/') {
        Some(body) => (body, true),
        None => (rest, false),
    };
    let mut segments = Vec::new();
    let mut total = 0;
    for raw in body.split('/') {
        if segments.len() == MAX_SEGMENTS {
            return None;
        }
        let name = decode_segment(raw)?;
        total += name.len() + 1;
        if total >= PATH_MAX {
            return None;
        }
        segments.push(name);
    }
    Some(RelPath {
        segments,
        trailing_slash,
    })
}

/// Decodes one path segment, or refuses it.
fn decode_segment(raw: &str) -> Option<String> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hi = hex(*bytes.get(i + 1)?)?;
                let lo = hex(*bytes.get(i + 2)?)?;
                out.push(hi << 4 | lo);
                i += 3;
            }
            b if is_pchar(b) => {
                out.push(b);
                i += 1;
            }
            _ => return None,
        }
    }
    let name = String::from_utf8(out).ok()?;
    valid_name(&name).then_some(name)
}

fn hex(b: u8) -> Option<u8> {
    char::from(b)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: &str = "file:///srv/data/";

    fn segs(uri: &str) -> Option<Vec<String>> {
        parse_relative(ROOT, uri).map(|r| r.segments)
    }

    #[test]
    fn paths_become_canonical_uris() {
        assert_eq!(
            path_uri(Path::new("/srv/my data/ü+x#1.txt"), false).unwrap(),
            "file:///srv/my%20data/%C3%BC%2Bx%231.txt"
        );
        assert_eq!(
            path_uri(Path::new("/srv/data"), true).unwrap(),
            "file:///srv/data/"
        );
        assert_eq!(path_uri(Path::new("/"), true).unwrap(), "file:///");
        assert_eq!(path_uri(Path::new("/"), false).unwrap(), "file:///");
        assert_eq!(path_uri(Path::new("/a\\b"), false), None);
        assert_eq!(path_uri(Path::new("/a/../b"), false), None);
        assert_eq!(entry_ref("a b", true), "a%20b/");
        assert_eq!(entry_ref("{x}", false), "%7Bx%7D");
    }

    #[test]
    fn uris_round_trip() {
        for name in [
            "plain.txt",
            "a b",
            "ü",
            "%41",
            "x?y#z",
            "semi;colon",
            "~tilde",
            "{+path}",
        ] {
            let uri = path_uri(&Path::new("/srv/data").join(name), false).unwrap();
            assert_eq!(segs(&uri), Some(vec![name.to_owned()]), "{uri}");
        }
    }

    #[test]
    fn accepted_forms() {
        assert_eq!(
            parse_relative(ROOT, ROOT),
            Some(RelPath {
                segments: vec![],
                trailing_slash: true
            })
        );
        assert_eq!(
            parse_relative(ROOT, "file:///srv/data/a/b/"),
            Some(RelPath {
                segments: vec!["a".into(), "b".into()],
                trailing_slash: true
            })
        );
        // Sub-delimiters may be written plainly or encoded, hex digits in either case.
        assert_eq!(segs("file:///srv/data/a+b"), Some(vec!["a+b".into()]));
        assert_eq!(segs("file:///srv/data/a%2bb"), Some(vec!["a+b".into()]));
        assert_eq!(segs("file:///srv/data/%c3%bc"), Some(vec!["ü".into()]));
        // Look-alike dots are names, not traversal.
        assert_eq!(
            segs("file:///srv/data/%EF%BC%8E%EF%BC%8E"),
            Some(vec!["\u{FF0E}\u{FF0E}".into()])
        );
    }

    #[test]
    fn refused_forms() {
        let long_name = format!("file:///srv/data/{}", "a".repeat(NAME_MAX + 1));
        let long_path = format!("file:///srv/data/{}x", "abcdefg/".repeat(PATH_MAX / 8));
        let deep = format!("file:///srv/data/{}x", "a/".repeat(MAX_SEGMENTS + 1));
        for uri in [
            "file:///srv/data/..",
            "file:///srv/data/../etc/passwd",
            "file:///srv/data/a/../../etc/passwd",
            "file:///srv/data/./a",
            "file:///srv/data/%2e%2e/etc/passwd",
            "file:///srv/data/%2E%2E/etc/passwd",
            "file:///srv/data/.%2e/etc/passwd",
            "file:///srv/data/%2e",
            "file:///srv/data/..%2Fetc%2Fpasswd",
            "file:///srv/data/a%2Fb",
            "file:///srv/data/a%2fb",
            "file:///srv/data/a%5Cb",
            "file:///srv/data/..%5C..%5Cetc",
            "file:///srv/data/a\\b",
            "file:///srv/data/a%00.txt",
            "file:///srv/data//etc/passwd",
            "file:///srv/data/a//b",
            "file:///srv/data/a?x=1",
            "file:///srv/data/a#frag",
            "file:///srv/data/a b",
            "file:///srv/data/ü",
            "file:///srv/data/%",
            "file:///srv/data/%4",
            "file:///srv/data/%zz",
            "file:///srv/data/%FF",
            "FILE:///srv/data/a",
            "File:///srv/data/a",
            "file://localhost/srv/data/a",
            "file://srv/data/a",
            "file:/srv/data/a",
            "file:///SRV/data/a",
            "file:///srv/data2/a",
            "file:///srv/dat",
            "file:///srv/data",
            "/srv/data/a",
            long_name.as_str(),
            long_path.as_str(),
            deep.as_str(),
        ] {
            assert_eq!(parse_relative(ROOT, uri), None, "{uri}");
        }
    }
}
