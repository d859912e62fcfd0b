//! Resources: definitions, templates, `resources/list`, `resources/templates/list` and
//! `resources/read`.

use serde::{Deserialize, Serialize};

use crate::common::{Annotations, CacheScope, Icon, JsonObject, ResultType};
use crate::content::ResourceContents;
use crate::meta::{RequestMeta, ResultMeta};
use crate::mrtr::InputResponses;

/// A resource the server offers (`Resource`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// The resource's URI.
    pub uri: String,
    /// The programmatic name.
    pub name: String,
    /// A human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resource is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// The size of the raw content in bytes (before base64), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Icons for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl Resource {
    /// A resource with a URI and a name.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Resource {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            annotations: None,
            size: None,
            icons: None,
            meta: None,
        }
    }

    /// Sets the display title.
    #[must_use]
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the description.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the MIME type.
    #[must_use]
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// Sets the size in bytes.
    #[must_use]
    pub fn with_size(mut self, size: u64) -> Self {
        self.size = Some(size);
        self
    }
}

/// A family of resources described by an RFC 6570 URI template (`ResourceTemplate`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    /// The URI template.
    pub uri_template: String,
    /// The programmatic name.
    pub name: String,
    /// A human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resources are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type shared by every matching resource, if there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Icons for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl ResourceTemplate {
    /// A template with a URI template and a name.
    pub fn new(uri_template: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceTemplate {
            uri_template: uri_template.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            annotations: None,
            icons: None,
            meta: None,
        }
    }

    /// Sets the display title.
    #[must_use]
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the description.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the MIME type.
    #[must_use]
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }
}

/// The parameters of `resources/read` (`ReadResourceRequestParams`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadResourceRequestParams {
    /// The request envelope.
    #[serde(rename = "_meta", default)]
    pub meta: RequestMeta,
    /// The URI to read.
    pub uri: String,
    /// Answers to the input requests of a previous `InputRequiredResult` (multi round-trip retry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// The opaque state of a previous `InputRequiredResult`, echoed byte for byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
}

impl ReadResourceRequestParams {
    /// A read of one URI.
    pub fn new(meta: RequestMeta, uri: impl Into<String>) -> Self {
        ReadResourceRequestParams {
            meta,
            uri: uri.into(),
            input_responses: None,
            request_state: None,
        }
    }
}

/// The result of `resources/read` (`ReadResourceResult`), cacheable.
///
/// spec 2026-07-28 server/resources: a missing resource is -32602 with `data.uri`, never an empty
/// `contents` array. Several contents are allowed, for instance when a directory is read.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadResourceResult {
    /// The result kind.
    #[serde(default)]
    pub result_type: ResultType,
    /// The contents read.
    pub contents: Vec<ResourceContents>,
    /// How long the client may cache the result, in milliseconds; absent or negative means 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<i64>,
    /// Who may share the cached result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
}

impl ReadResourceResult {
    /// A result with the given contents, without cache hints.
    pub fn new(contents: Vec<ResourceContents>) -> Self {
        ReadResourceResult {
            contents,
            ..Self::default()
        }
    }

    /// A result with one piece of contents.
    pub fn single(contents: impl Into<ResourceContents>) -> Self {
        Self::new(vec![contents.into()])
    }
}

cache_hints!(ReadResourceResult);

list_result! {
    /// The result of `resources/list` (`ListResourcesResult`), cacheable and paginated.
    ListResourcesResult {
        /// The resources on this page.
        resources: Resource
    }
}

list_result! {
    /// The result of `resources/templates/list` (`ListResourceTemplatesResult`), cacheable and
/// paginated.
    ListResourceTemplatesResult {
        /// The templates on this page.
        resource_templates: ResourceTemplate
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::{BlobResourceContents, TextResourceContents};
    use serde_json::json;

    #[test]
    fn read_result_keeps_content_kinds_and_cache_hints() {
        let result = ReadResourceResult::new(vec![
            TextResourceContents::new("file:///a", "x").into(),
            BlobResourceContents::new("file:///b", "AA==")
                .with_mime_type("image/png")
                .into(),
        ])
        .with_cache(0, CacheScope::Private);
        let wire = serde_json::to_value(&result).unwrap();
        assert_eq!(
            wire,
            json!({"resultType": "complete", "contents": [
                {"uri": "file:///a", "text": "x"},
                {"uri": "file:///b", "mimeType": "image/png", "blob": "AA=="}
            ], "ttlMs": 0, "cacheScope": "private"})
        );
        assert_eq!(
            serde_json::from_value::<ReadResourceResult>(wire).unwrap(),
            result
        );
    }
}
