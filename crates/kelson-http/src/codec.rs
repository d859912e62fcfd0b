//! The header value codec: plain values, and the base64 sentinel for everything else.
//!
//! spec 2026-07-28 basic/transports/streamable-http (Value Encoding): a value that is not safe as a plain
//! ASCII header value travels as `=?base64?{standard base64 of its UTF-8 bytes}?=`. The same rule covers
//! `Mcp-Name` and every `Mcp-Param-{Name}` header.

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use http::HeaderValue;

/// The sentinel prefix. Case-sensitive: `=?BASE64?` opens a literal value, not an encoded one.
const PREFIX: &str = "=?base64?";
/// The sentinel suffix.
const SUFFIX: &str = "?=";

/// Why a received header value cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderValueError {
    /// A byte that a plain MCP header value may not hold: a control character (TAB included, since the
    /// codec always encodes it), DEL, or a non-ASCII byte (obs-text).
    #[error("byte 0x{byte:02X} at offset {offset} is not allowed in a header value")]
    InvalidByte {
        /// The offending byte.
        byte: u8,
        /// Its offset in the value as received, before whitespace trimming.
        offset: usize,
    },
    /// The value is exactly `=?base64?=`: the prefix and suffix overlap, so there is no payload.
    #[error("the base64 sentinel is truncated")]
    TruncatedSentinel,
    /// The sentinel payload is not canonical, padded, standard-alphabet base64.
    #[error("the base64 sentinel does not hold valid padded standard base64")]
    Base64(#[source] base64::DecodeError),
    /// The sentinel payload decodes to bytes that are not UTF-8.
    #[error("the base64 sentinel does not hold UTF-8 text")]
    Utf8(#[source] std::string::FromUtf8Error),
}

/// Encodes a value for an `Mcp-Name` or `Mcp-Param-*` header.
///
/// The value is returned as is when it is safe as a plain header value, and as the base64 sentinel
/// otherwise: when it holds a non-ASCII or control character (0x00–0x1F, 0x7F), starts or ends with a
/// space or tab, or itself looks like a sentinel (starts with `=?base64?` and ends with `?=`). The empty
/// string stays empty. The result is always a valid [`HeaderValue`].
///
/// ```
/// assert_eq!(kelson_http::encode_value("us-west1"), "us-west1");
/// assert_eq!(kelson_http::encode_value("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
/// ```
pub fn encode_value(value: &str) -> Cow<'_, str> {
    if !needs_sentinel(value) {
        return Cow::Borrowed(value);
    }
    let mut out = String::with_capacity(PREFIX.len() + value.len().div_ceil(3) * 4 + SUFFIX.len());
    out.push_str(PREFIX);
    STANDARD.encode_string(value, &mut out);
    out.push_str(SUFFIX);
    Cow::Owned(out)
}

/// Encodes a value with [`encode_value`] and wraps it as a [`HeaderValue`].
pub fn encode_header_value(value: &str) -> HeaderValue {
    let encoded = match encode_value(value) {
        Cow::Borrowed(plain) => HeaderValue::from_str(plain),
        // An owned sentinel moves into the header without a copy.
        Cow::Owned(sentinel) => HeaderValue::from_maybe_shared(Bytes::from(sentinel)),
    };
    encoded.expect("encode_value only yields visible ASCII and interior spaces")
}

/// Decodes a received `Mcp-Name` or `Mcp-Param-*` header value.
///
/// Surrounding optional whitespace (space and tab) is trimmed, as HTTP parsing does (RFC 9110 §5.5).
/// What remains must be visible ASCII with interior spaces only. A value that starts with the exact,
/// lowercase `=?base64?` and ends with `?=` is decoded strictly: canonical padding, the standard
/// alphabet, and a UTF-8 payload. Any other value is returned as is, without copying.
///
/// ```
/// use http::HeaderValue;
///
/// let value = HeaderValue::from_static("=?base64?IHBhZGRlZCA=?=");
/// assert_eq!(kelson_http::decode_value(&value).unwrap(), " padded ");
/// assert!(kelson_http::decode_value("=?base64?SGVsbG8?=").is_err());
/// ```
pub fn decode_value<V: AsRef<[u8]> + ?Sized>(value: &V) -> Result<Cow<'_, str>, HeaderValueError> {
    let text = plain_value(value.as_ref())?;
    // The exact lowercase markers only; `=?BASE64?...?=` is an ordinary literal.
    if !(text.starts_with(PREFIX) && text.ends_with(SUFFIX)) {
        return Ok(Cow::Borrowed(text));
    }
    if text.len() < PREFIX.len() + SUFFIX.len() {
        return Err(HeaderValueError::TruncatedSentinel);
    }
    let payload = &text[PREFIX.len()..text.len() - SUFFIX.len()];
    let bytes = STANDARD.decode(payload).map_err(HeaderValueError::Base64)?;
    String::from_utf8(bytes)
        .map(Cow::Owned)
        .map_err(HeaderValueError::Utf8)
}

/// Trims surrounding spaces and tabs and checks that the rest is visible ASCII with interior spaces.
///
/// This is the reading of a header that never carries the sentinel (`MCP-Protocol-Version`,
/// `Mcp-Method`).
pub(crate) fn plain_value(raw: &[u8]) -> Result<&str, HeaderValueError> {
    let is_ows = |b: &u8| *b == b' ' || *b == b'\t';
    let start = raw.iter().position(|b| !is_ows(b)).unwrap_or(raw.len());
    let end = raw
        .iter()
        .rposition(|b| !is_ows(b))
        .map_or(start, |i| i + 1);
    let trimmed = &raw[start..end];
    // RFC 9110 allows an interior HTAB, but the MCP codec always encodes a tab, so a raw one can only
    // come from a non-conforming sender; refusing it keeps "plain" meaning one thing on both sides.
    if let Some(i) = trimmed
        .iter()
        .position(|&b| !(b == b' ' || b.is_ascii_graphic()))
    {
        return Err(HeaderValueError::InvalidByte {
            byte: trimmed[i],
            offset: start + i,
        });
    }
    Ok(std::str::from_utf8(trimmed).expect("visible ASCII is UTF-8"))
}

/// Whether a value must travel as the sentinel (spec 2026-07-28 Value Encoding).
fn needs_sentinel(value: &str) -> bool {
    let bytes = value.as_bytes();
    let unsafe_byte = bytes.iter().any(|&b| !b.is_ascii() || b.is_ascii_control());
    let padded =
        matches!(bytes.first(), Some(b' ' | b'\t')) || matches!(bytes.last(), Some(b' ' | b'\t'));
    // A plain value that matches the sentinel pattern would be decoded by the receiver, so it is
    // encoded too; the check allows the markers to overlap, exactly as the receiver's check does.
    let looks_encoded = value.starts_with(PREFIX) && value.ends_with(SUFFIX);
    unsafe_byte || padded || looks_encoded
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The encoding table of spec 2026-07-28 Value Encoding.
    const EXAMPLES: &[(&str, &str)] = &[
        ("us-west1", "us-west1"),
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
        ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
    ];

    #[test]
    fn spec_examples_encode_and_decode() {
        for (plain, wire) in EXAMPLES {
            assert_eq!(encode_value(plain), *wire, "encoding {plain:?}");
            assert_eq!(decode_value(*wire).unwrap(), *plain, "decoding {wire:?}");
            assert_eq!(encode_header_value(plain), *wire);
        }
    }

    #[test]
    fn plain_values_are_borrowed() {
        assert!(matches!(encode_value("a b"), Cow::Borrowed("a b")));
        assert!(matches!(decode_value("a b").unwrap(), Cow::Borrowed("a b")));
        assert_eq!(encode_value(""), "");
        assert_eq!(decode_value("").unwrap(), "");
    }

    #[test]
    fn every_trigger_selects_the_sentinel() {
        for value in [
            "tab\tinside",
            "cr\rinside",
            "nul\0",
            "del\u{7f}",
            "\ttab first",
            "space last ",
            "é",
            "=?base64?=",
        ] {
            let encoded = encode_value(value);
            assert!(encoded.starts_with(PREFIX), "{value:?} was sent plain");
            assert_eq!(decode_value(encoded.as_ref()).unwrap(), value);
        }
        // Only the exact pattern is encoded; near misses are plain.
        for value in ["=?base64?abc", "abc?=", "=?BASE64?abc?=", "x=?base64?abc?="] {
            assert_eq!(encode_value(value), value);
        }
    }

    #[test]
    fn surrounding_whitespace_is_trimmed() {
        assert_eq!(decode_value(" \tfoo \t").unwrap(), "foo");
        assert_eq!(
            decode_value("  =?base64?IHBhZGRlZCA=?=\t").unwrap(),
            " padded "
        );
        assert_eq!(decode_value(" \t ").unwrap(), "");
    }

    #[test]
    fn malformed_sentinels_are_refused() {
        // Missing padding, a bad character, non-canonical trailing bits, inner whitespace.
        for wire in [
            "=?base64?SGVsbG8?=",
            "=?base64?SGVs*G8=?=",
            "=?base64?SGVsbG9=?=",
            "=?base64?SGVs bG8=?=",
        ] {
            assert!(
                matches!(decode_value(wire), Err(HeaderValueError::Base64(_))),
                "{wire:?} was accepted"
            );
        }
        // "\xff" is not UTF-8.
        assert!(matches!(
            decode_value("=?base64?/w==?="),
            Err(HeaderValueError::Utf8(_))
        ));
        assert_eq!(
            decode_value("=?base64?="),
            Err(HeaderValueError::TruncatedSentinel)
        );
        assert_eq!(decode_value("=?base64??=").unwrap(), "");
    }

    #[test]
    fn the_uppercase_sentinel_is_a_literal() {
        assert_eq!(
            decode_value("=?BASE64?SGVsbG8?=").unwrap(),
            "=?BASE64?SGVsbG8?="
        );
    }

    #[test]
    fn bytes_outside_visible_ascii_are_refused() {
        for (raw, byte, offset) in [
            (&b"a\xe9"[..], 0xE9, 1),
            (b" a\x7f", 0x7F, 2),
            (b"a\tb", b'\t', 1),
            (b"a\0", 0, 1),
            (b"a\nb", b'\n', 1),
        ] {
            assert_eq!(
                decode_value(raw),
                Err(HeaderValueError::InvalidByte { byte, offset })
            );
        }
        // obs-text survives http's own parser, so it must be caught here.
        let value = HeaderValue::from_bytes(b"caf\xc3\xa9").unwrap();
        assert!(decode_value(&value).is_err());
    }
}
