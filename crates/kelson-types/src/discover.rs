//! `server/discover`: what the server supports.

use serde::{Deserialize, Serialize};

use crate::capabilities::ServerCapabilities;
use crate::common::{CacheScope, ResultType};
use crate::meta::ResultMeta;

/// The result of `server/discover` (`DiscoverResult`), cacheable.
///
/// spec 2026-07-28 server/discover: every server MUST implement `server/discover`. The
/// server's identity travels in `_meta["io.modelcontextprotocol/serverInfo"]`; there is no top-level
/// `serverInfo`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    /// The result kind.
    #[serde(default)]
    pub result_type: ResultType,
    /// The protocol revisions the server implements.
    pub supported_versions: Vec<String>,
    /// What the server offers.
    pub capabilities: ServerCapabilities,
    /// How to use the server, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// How long the client may cache the result, in milliseconds; absent or negative means 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<i64>,
    /// Who may share the cached result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Result metadata, with the server's identity.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
}

impl DiscoverResult {
    /// A result listing the supported revisions and capabilities, without cache hints.
    pub fn new(supported_versions: Vec<String>, capabilities: ServerCapabilities) -> Self {
        DiscoverResult {
            supported_versions,
            capabilities,
            ..Self::default()
        }
    }

    /// Sets the instructions.
    #[must_use]
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Sets the result metadata.
    #[must_use]
    pub fn with_meta(mut self, meta: ResultMeta) -> Self {
        self.meta = Some(meta);
        self
    }
}

cache_hints!(DiscoverResult);
