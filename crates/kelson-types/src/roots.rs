//! Roots (deprecated in 2026-07-28): the filesystem locations a client exposes, asked for as a
//! `roots/list` input request of a multi round-trip request.

use serde::{Deserialize, Serialize};

use crate::common::JsonObject;

/// A root directory or file the server may work in (`Root`).
///
/// spec 2026-07-28 client/roots: the URI MUST be a `file://` URI in this revision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Root {
    /// The root's `file://` URI.
    pub uri: String,
    /// A human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl Root {
    /// A root with a URI.
    pub fn new(uri: impl Into<String>) -> Self {
        Root {
            uri: uri.into(),
            name: None,
            meta: None,
        }
    }

    /// Sets the name.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
}

/// The parameters of a `roots/list` input request: nothing but an optional `_meta`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ListRootsRequestParams {
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

/// The client's answer to a `roots/list` input request (`ListRootsResult`), sent in
/// `inputResponses`; like every input response it carries no `resultType`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ListRootsResult {
    /// The roots.
    pub roots: Vec<Root>,
}

impl ListRootsResult {
    /// A result with these roots.
    pub fn new(roots: Vec<Root>) -> Self {
        ListRootsResult { roots }
    }
}
