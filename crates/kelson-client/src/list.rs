//! Pagination: one page of a list, and the walk that follows every cursor within the client's
//! bounds.
//!
//! spec 2026-07-28 server/utilities/pagination: cursors are opaque and only an absent
//! `nextCursor` ends a list. The spec sets no limit on how many pages a list has, so a server that
//! answers every page with a new cursor would be followed forever, each page kept. The walk is
//! therefore bounded by pages, items and bytes ([`ListBounds`]), and fails with
//! [`Error::ListTooLong`] at the first bound it passes, holding at most one page beyond it.

use std::collections::HashSet;

use kelson_jsonrpc::code;
use kelson_types::{
    JsonObject, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, Prompt, Resource, ResourceTemplate, Tool, method_names,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::cache::Cacheable;
use crate::client::{ClientBuilder, Inner};
use crate::request::Options;
use crate::{Error, ListLimit, Violation};

/// How much one `list_all_*` walk may receive before it fails with [`Error::ListTooLong`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ListBounds {
    pub(crate) pages: usize,
    pub(crate) items: usize,
    pub(crate) bytes: usize,
}

impl Default for ListBounds {
    /// Far above real servers' lists (a thousand pages of a hundred tools with their schemas is
    /// about 50 MB), and far below what a server that pages forever would have the client hold.
    fn default() -> Self {
        ListBounds {
            pages: 1_000,
            items: 100_000,
            bytes: 64 * 1024 * 1024,
        }
    }
}

impl ClientBuilder {
    /// The most pages one `list_all_*` walk follows (default 1,000). A server that still answers
    /// with a `nextCursor` after that many pages fails the walk with [`Error::ListTooLong`]
    /// instead of being followed forever; see also [`max_list_items`](Self::max_list_items) and
    /// [`max_list_bytes`](Self::max_list_bytes). A cursor the server sends twice fails the walk
    /// at once, whatever the bounds. One-page calls ([`Client::list_tools`], ...) are not
    /// bounded by these.
    ///
    /// [`Client::list_tools`]: crate::Client::list_tools
    #[must_use]
    pub fn max_list_pages(mut self, pages: usize) -> Self {
        self.config.list.pages = pages;
        self
    }

    /// The most items one `list_all_*` walk gathers over all its pages (default 100,000): the
    /// page that takes it past the bound fails the walk with [`Error::ListTooLong`].
    #[must_use]
    pub fn max_list_items(mut self, items: usize) -> Self {
        self.config.list.items = items;
        self
    }

    /// The most bytes of results, as received, one `list_all_*` walk gathers over all its pages
    /// (default 64 MiB): the page that takes it past the bound fails the walk with
    /// [`Error::ListTooLong`]. A page answered from the cache counts the size it had when it was
    /// received. A single page is bounded by the transport's limit on a message.
    #[must_use]
    pub fn max_list_bytes(mut self, bytes: usize) -> Self {
        self.config.list.bytes = bytes;
        self
    }
}

/// A result with the size of its text as received, which is what the cache keeps for the
/// cacheable methods, so that a page answered from the cache still counts its bytes.
#[derive(Clone, Debug)]
pub(crate) struct Received<T> {
    pub(crate) value: T,
    pub(crate) bytes: usize,
}

impl<T: Cacheable> Cacheable for Received<T> {
    fn hints(&self) -> (Option<i64>, Option<kelson_types::CacheScope>) {
        self.value.hints()
    }
}

/// A page of one of the four paginated lists.
pub(crate) trait Page: Cacheable + DeserializeOwned {
    type Item: Send;
    const METHOD: &'static str;
    fn into_parts(self) -> (Vec<Self::Item>, Option<String>);
    /// Applied to a freshly fetched page before it is cached and returned.
    fn prepare(self, _inner: &Inner) -> Self {
        self
    }
}

impl Page for ListToolsResult {
    type Item = Tool;
    const METHOD: &'static str = method_names::TOOLS_LIST;
    fn into_parts(self) -> (Vec<Tool>, Option<String>) {
        (self.tools, self.next_cursor)
    }
    fn prepare(self, inner: &Inner) -> Self {
        inner.index_tools(self)
    }
}

impl Page for ListResourcesResult {
    type Item = Resource;
    const METHOD: &'static str = method_names::RESOURCES_LIST;
    fn into_parts(self) -> (Vec<Resource>, Option<String>) {
        (self.resources, self.next_cursor)
    }
}

impl Page for ListResourceTemplatesResult {
    type Item = ResourceTemplate;
    const METHOD: &'static str = method_names::RESOURCES_TEMPLATES_LIST;
    fn into_parts(self) -> (Vec<ResourceTemplate>, Option<String>) {
        (self.resource_templates, self.next_cursor)
    }
}

impl Page for ListPromptsResult {
    type Item = Prompt;
    const METHOD: &'static str = method_names::PROMPTS_LIST;
    fn into_parts(self) -> (Vec<Prompt>, Option<String>) {
        (self.prompts, self.next_cursor)
    }
}

/// What a walk has received so far, against its bounds.
#[derive(Debug, Default)]
struct Tally {
    pages: usize,
    items: usize,
    bytes: usize,
}

impl Tally {
    /// Counts one page; the bound of items or bytes it passes, if any.
    fn add(&mut self, items: usize, bytes: usize, bounds: &ListBounds) -> Option<ListLimit> {
        self.pages += 1;
        self.items = self.items.saturating_add(items);
        self.bytes = self.bytes.saturating_add(bytes);
        if self.items > bounds.items {
            Some(ListLimit::Items(bounds.items))
        } else if self.bytes > bounds.bytes {
            Some(ListLimit::Bytes(bounds.bytes))
        } else {
            None
        }
    }

    fn error(&self, method: &str, limit: ListLimit) -> Error {
        Error::ListTooLong {
            method: method.to_owned(),
            limit,
            pages: self.pages,
            items: self.items,
            bytes: self.bytes,
        }
    }
}

impl Inner {
    async fn list_page_sized<P: Page>(
        &self,
        cursor: Option<String>,
        options: &Options,
    ) -> Result<Received<P>, Error> {
        let mut params = JsonObject::new();
        if let Some(cursor) = &cursor {
            params.insert("cursor".into(), Value::from(cursor.as_str()));
        }
        self.cacheable::<P>(P::METHOD, cursor, params, options, |p| p.prepare(self))
            .await
    }

    pub(crate) async fn list_page<P: Page>(
        &self,
        cursor: Option<String>,
        options: &Options,
    ) -> Result<P, Error> {
        Ok(self.list_page_sized(cursor, options).await?.value)
    }

    /// Follows every cursor, within the client's bounds. spec 2026-07-28
    /// server/utilities/pagination: only an absent `nextCursor` ends the list (an empty string
    /// is a cursor); an invalidated cursor (-32602) discards the pages and starts over, once. The
    /// bounds count the whole walk, the start over included.
    pub(crate) async fn list_all<P: Page>(&self, options: &Options) -> Result<Vec<P::Item>, Error> {
        let bounds = self.config.list;
        let mut tally = Tally::default();
        let mut restarted = false;
        'start: loop {
            let mut items = Vec::new();
            let mut cursor: Option<String> = None;
            let mut seen = HashSet::new();
            loop {
                let page = match self.list_page_sized::<P>(cursor.clone(), options).await {
                    Ok(page) => page,
                    Err(e)
                        if cursor.is_some()
                            && !restarted
                            && e.code() == Some(code::INVALID_PARAMS) =>
                    {
                        restarted = true;
                        if let Some(cache) = &self.cache {
                            cache.invalidate_method(P::METHOD);
                        }
                        continue 'start;
                    }
                    Err(e) => return Err(e),
                };
                let (mut page_items, next) = page.value.into_parts();
                if let Some(limit) = tally.add(page_items.len(), page.bytes, &bounds) {
                    return Err(tally.error(P::METHOD, limit));
                }
                items.append(&mut page_items);
                let Some(next) = next else {
                    return Ok(items);
                };
                if !seen.insert(next.clone()) {
                    return Err(Violation::CursorLoop {
                        method: P::METHOD.to_owned(),
                        cursor: next,
                    }
                    .into());
                }
                // The next page would be one too many.
                if tally.pages >= bounds.pages {
                    return Err(tally.error(P::METHOD, ListLimit::Pages(bounds.pages)));
                }
                cursor = Some(next);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tally_passes_its_bounds_on_the_page_that_goes_over() {
        let bounds = ListBounds {
            pages: 10,
            items: 25,
            bytes: 1000,
        };
        let mut tally = Tally::default();
        assert_eq!(tally.add(10, 100, &bounds), None);
        assert_eq!(
            tally.add(15, 100, &bounds),
            None,
            "exactly the bound is allowed"
        );
        assert_eq!(tally.add(1, 100, &bounds), Some(ListLimit::Items(25)));
        let mut tally = Tally::default();
        assert_eq!(tally.add(0, 1000, &bounds), None);
        assert_eq!(tally.add(0, 1, &bounds), Some(ListLimit::Bytes(1000)));
        match tally.error("prompts/list", ListLimit::Bytes(1000)) {
            Error::ListTooLong {
                pages,
                items,
                bytes,
                ..
            } => assert_eq!((pages, items, bytes), (2, 0, 1001)),
            other => panic!("{other:?}"),
        }
    }
}
