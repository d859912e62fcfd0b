//! Encoded list pages and opaque cursors.
//!
//! A list none of whose items needs a scope depends only on the registry generation and the server's
//! configuration, so each page is encoded once, on first use, and every later `tools/list` writes
//! the stored bytes (spec 2026-07-28 server/tools: lists do not vary per connection). A list
//! filtered for an authenticated caller is never stored here; its cursors name the caller's view
//! ([`view_of`]).

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
    /// Per list, whether some item needs a scope ([`Registry::restricted`](super::Registry)).
    pub(crate) restricted: OnceLock<[bool; 4]>,
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

/// The cursor for the page starting at `offset`. A list filtered by the caller's scopes names the
/// caller's view of it ([`view_of`]), so that a cursor is only valid for callers who see the same
/// items: for anyone else it is an invalid cursor, never a page of their own list at a shifted
/// offset.
pub(crate) fn encode_cursor(kind: ListKind, offset: usize, view: Option<u64>) -> String {
    match view {
        None => B64.encode(format!("kelson:{}:{offset}", kind.tag())),
        Some(view) => B64.encode(format!("kelson:{}:{offset}:{view:016x}", kind.tag())),
    }
}

/// A digest of which items of a list a caller sees (their positions in the whole list).
pub(crate) fn view_of(total: usize, visible: impl Iterator<Item = usize>) -> u64 {
    use std::hash::{Hash, Hasher};
    // A fixed-key hasher: instances of one build that share a registry agree on cursors.
    let mut hasher = std::hash::DefaultHasher::new();
    total.hash(&mut hasher);
    for index in visible {
        index.hash(&mut hasher);
    }
    hasher.finish()
}

/// The offset a cursor points at. An absent or empty cursor is the first page
/// (spec 2026-07-28 server/utilities/pagination: an empty string is a valid cursor).
pub(crate) fn decode_cursor(
    kind: ListKind,
    cursor: Option<&str>,
    len: usize,
    page_size: usize,
    view: Option<u64>,
) -> Result<usize, ()> {
    let cursor = match cursor {
        None | Some("") => return Ok(0),
        Some(c) => c,
    };
    let text = B64.decode(cursor).map_err(|_| ())?;
    let text = std::str::from_utf8(&text).map_err(|_| ())?;
    let rest = text
        .strip_prefix("kelson:")
        .and_then(|r| r.strip_prefix(kind.tag()))
        .and_then(|r| r.strip_prefix(':'))
        .ok_or(())?;
    let offset = match (view, rest.split_once(':')) {
        (None, None) => rest,
        (Some(view), Some((offset, named))) if named == format!("{view:016x}") => offset,
        _ => return Err(()),
    };
    let offset: usize = offset.parse().map_err(|_| ())?;
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
        let c = encode_cursor(ListKind::Tools, 100, None);
        assert_eq!(
            decode_cursor(ListKind::Tools, Some(&c), 150, 100, None),
            Ok(100)
        );
        assert_eq!(decode_cursor(ListKind::Tools, None, 150, 100, None), Ok(0));
        assert_eq!(
            decode_cursor(ListKind::Tools, Some(""), 150, 100, None),
            Ok(0)
        );
        assert!(decode_cursor(ListKind::Prompts, Some(&c), 150, 100, None).is_err());
        assert!(decode_cursor(ListKind::Tools, Some(&c), 50, 100, None).is_err());
        assert!(
            decode_cursor(
                ListKind::Tools,
                Some(&encode_cursor(ListKind::Tools, 7, None)),
                150,
                100,
                None
            )
            .is_err()
        );
        for junk in ["x", "!!!", "bWNwLXJzOnQ6YQ", "abc=="] {
            assert!(
                decode_cursor(ListKind::Tools, Some(junk), 150, 100, None).is_err(),
                "{junk}"
            );
        }
    }

    #[test]
    fn cursors_of_a_filtered_list_name_the_view() {
        let a = view_of(10, [0, 2, 3].into_iter());
        let b = view_of(10, [0, 3].into_iter());
        assert_ne!(a, b);
        assert_eq!(a, view_of(10, [0, 2, 3].into_iter()));
        assert_ne!(a, view_of(11, [0, 2, 3].into_iter()));
        let c = encode_cursor(ListKind::Tools, 2, Some(a));
        assert_eq!(
            decode_cursor(ListKind::Tools, Some(&c), 3, 2, Some(a)),
            Ok(2)
        );
        // Another view, or the unfiltered list, refuses it; a filtered list refuses a plain one.
        assert!(decode_cursor(ListKind::Tools, Some(&c), 3, 2, Some(b)).is_err());
        assert!(decode_cursor(ListKind::Tools, Some(&c), 3, 2, None).is_err());
        let plain = encode_cursor(ListKind::Tools, 2, None);
        assert!(decode_cursor(ListKind::Tools, Some(&plain), 3, 2, Some(a)).is_err());
        assert_eq!(decode_cursor(ListKind::Tools, None, 3, 2, Some(b)), Ok(0));
    }
}
