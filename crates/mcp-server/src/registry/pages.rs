//! Encoded list pages and opaque cursors.
//!
//! A list result depends only on the registry generation and the server's configuration, so each page
//! is encoded once, on first use, and every later `tools/list` writes the stored bytes
//! (spec 2026-07-28 server/tools: lists do not vary per connection).

use std::borrow::Cow;
use std::sync::OnceLock;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use serde_json::value::RawValue;

/// The four paginated lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ListKind {
    Tools = 0,
    Resources = 1,
    Templates = 2,
    Prompts = 3,
}

impl ListKind {
    fn tag(self) -> &'static str {
        match self {
            ListKind::Tools => "t",
            ListKind::Resources => "r",
            ListKind::Templates => "rt",
            ListKind::Prompts => "p",
        }
    }
}

/// The encoded pages of one list, allocated when the list is first asked for.
type Pages = OnceLock<Box<[OnceLock<Box<RawValue>>]>>;

/// Encoded results for one registry generation.
#[derive(Default)]
pub(crate) struct PageCache {
    pub(crate) discover: OnceLock<Box<RawValue>>,
    lists: [Pages; 4],
}

impl PageCache {
    /// The encoded page starting at `offset`, encoding it with `encode` the first time.
    ///
    /// `len` is the number of items in the list and `page_size` the number per page; `offset` must be
    /// a page boundary no greater than `len` (checked by the cursor decoder).
    pub(crate) fn page(
        &self,
        kind: ListKind,
        len: usize,
        page_size: usize,
        offset: usize,
        encode: impl FnOnce() -> Box<RawValue>,
    ) -> Cow<'_, RawValue> {
        let pages = self.lists[kind as usize].get_or_init(|| {
            let count = len.div_ceil(page_size).max(1);
            (0..count).map(|_| OnceLock::new()).collect()
        });
        let index = offset / page_size;
        match pages.get(index) {
            Some(slot) => Cow::Borrowed(slot.get_or_init(encode)),
            // The cursor decoder refuses offsets past the end, so this is only a safety net.
            None => Cow::Owned(encode()),
        }
    }
}

/// The cursor for the page starting at `offset`.
pub(crate) fn encode_cursor(kind: ListKind, offset: usize) -> String {
    B64.encode(format!("mcp-rs:{}:{offset}", kind.tag()))
}

/// The offset a cursor points at. An absent or empty cursor is the first page
/// (spec 2026-07-28 server/utilities/pagination: an empty string is a valid cursor).
pub(crate) fn decode_cursor(
    kind: ListKind,
    cursor: Option<&str>,
    len: usize,
    page_size: usize,
) -> Result<usize, ()> {
    let cursor = match cursor {
        None | Some("") => return Ok(0),
        Some(c) => c,
    };
    let text = B64.decode(cursor).map_err(|_| ())?;
    let text = std::str::from_utf8(&text).map_err(|_| ())?;
    let rest = text
        .strip_prefix("mcp-rs:")
        .and_then(|r| r.strip_prefix(kind.tag()))
        .and_then(|r| r.strip_prefix(':'))
        .ok_or(())?;
    let offset: usize = rest.parse().map_err(|_| ())?;
    if offset == 0 || offset >= len || !offset.is_multiple_of(page_size) {
        return Err(());
    }
    Ok(offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_refuse_junk() {
        let c = encode_cursor(ListKind::Tools, 100);
        assert_eq!(decode_cursor(ListKind::Tools, Some(&c), 150, 100), Ok(100));
        assert_eq!(decode_cursor(ListKind::Tools, None, 150, 100), Ok(0));
        assert_eq!(decode_cursor(ListKind::Tools, Some(""), 150, 100), Ok(0));
        assert!(decode_cursor(ListKind::Prompts, Some(&c), 150, 100).is_err());
        assert!(decode_cursor(ListKind::Tools, Some(&c), 50, 100).is_err());
        assert!(
            decode_cursor(
                ListKind::Tools,
                Some(&encode_cursor(ListKind::Tools, 7)),
                150,
                100
            )
            .is_err()
        );
        for junk in ["x", "!!!", "bWNwLXJzOnQ6YQ", "abc=="] {
            assert!(
                decode_cursor(ListKind::Tools, Some(junk), 150, 100).is_err(),
                "{junk}"
            );
        }
    }
}
