//! Content blocks and resource contents: what tools return, prompts contain and resources hold.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::common::{Annotations, Icon, JsonObject};

/// One piece of content in a tool result or prompt message (`ContentBlock`), tagged by `type`.
///
/// The bare structs carry no `type` member; this enum writes it, so a block serializes exactly as the
/// schema's `TextContent`, `ImageContent`, and so on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum ContentBlock {
    /// `"text"`: plain text.
    #[serde(rename = "text")]
    Text(TextContent),
    /// `"image"`: a base64-encoded image.
    #[serde(rename = "image")]
    Image(ImageContent),
    /// `"audio"`: base64-encoded audio.
    #[serde(rename = "audio")]
    Audio(AudioContent),
    /// `"resource_link"`: a reference to a resource the client may read.
    #[serde(rename = "resource_link")]
    ResourceLink(ResourceLink),
    /// `"resource"`: a resource's contents, embedded.
    #[serde(rename = "resource")]
    Resource(EmbeddedResource),
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextContent::new(text))
    }

    /// An image block from base64 data and its MIME type.
    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ContentBlock::Image(ImageContent::new(data, mime_type))
    }

    /// An audio block from base64 data and its MIME type.
    pub fn audio(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ContentBlock::Audio(AudioContent::new(data, mime_type))
    }

    /// A link to a resource by URI and name.
    pub fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        ContentBlock::ResourceLink(ResourceLink::new(uri, name))
    }

    /// An embedded resource.
    pub fn embedded(resource: impl Into<ResourceContents>) -> Self {
        ContentBlock::Resource(EmbeddedResource::new(resource))
    }

    /// The text of a text block, or `None` for any other kind.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text(t) => Some(&t.text),
            _ => None,
        }
    }
}

impl From<TextContent> for ContentBlock {
    fn from(value: TextContent) -> Self {
        ContentBlock::Text(value)
    }
}

impl From<ImageContent> for ContentBlock {
    fn from(value: ImageContent) -> Self {
        ContentBlock::Image(value)
    }
}

impl From<AudioContent> for ContentBlock {
    fn from(value: AudioContent) -> Self {
        ContentBlock::Audio(value)
    }
}

impl From<ResourceLink> for ContentBlock {
    fn from(value: ResourceLink) -> Self {
        ContentBlock::ResourceLink(value)
    }
}

impl From<EmbeddedResource> for ContentBlock {
    fn from(value: EmbeddedResource) -> Self {
        ContentBlock::Resource(value)
    }
}

/// Text content (`TextContent`, `type: "text"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl TextContent {
    /// Text content with no annotations.
    pub fn new(text: impl Into<String>) -> Self {
        TextContent {
            text: text.into(),
            annotations: None,
            meta: None,
        }
    }

    /// Sets the annotations.
    #[must_use]
    pub fn with_annotations(mut self, annotations: Annotations) -> Self {
        self.annotations = Some(annotations);
        self
    }
}

/// Image content (`ImageContent`, `type: "image"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    /// The base64-encoded image data.
    pub data: String,
    /// The image's MIME type, such as `image/png`.
    pub mime_type: String,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl ImageContent {
    /// Image content from base64 data and a MIME type.
    pub fn new(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ImageContent {
            data: data.into(),
            mime_type: mime_type.into(),
            annotations: None,
            meta: None,
        }
    }
}

/// Audio content (`AudioContent`, `type: "audio"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AudioContent {
    /// The base64-encoded audio data.
    pub data: String,
    /// The audio's MIME type, such as `audio/wav`.
    pub mime_type: String,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl AudioContent {
    /// Audio content from base64 data and a MIME type.
    pub fn new(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        AudioContent {
            data: data.into(),
            mime_type: mime_type.into(),
            annotations: None,
            meta: None,
        }
    }
}

/// A link to a resource (`ResourceLink`, `type: "resource_link"`).
///
/// spec 2026-07-28 server/tools: a linked resource need not appear in `resources/list`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceLink {
    /// The resource's URI.
    pub uri: String,
    /// The resource's programmatic name.
    pub name: String,
    /// A human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resource is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The resource's MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// The size of the raw content in bytes, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Icons for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl ResourceLink {
    /// A link with a URI and a name.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceLink {
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

/// A resource's contents embedded in a message (`EmbeddedResource`, `type: "resource"`).
///
/// `annotations` belongs on this wrapper, not inside `resource` (one spec page example gets this
/// wrong; the schema governs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EmbeddedResource {
    /// The contents.
    pub resource: ResourceContents,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl EmbeddedResource {
    /// An embedded resource with no annotations.
    pub fn new(resource: impl Into<ResourceContents>) -> Self {
        EmbeddedResource {
            resource: resource.into(),
            annotations: None,
            meta: None,
        }
    }
}

/// The contents of a resource: text or binary, told apart by whether `text` or `blob` is present.
#[derive(Clone, Debug, PartialEq)]
pub enum ResourceContents {
    /// Text contents.
    Text(TextResourceContents),
    /// Binary contents, base64-encoded.
    Blob(BlobResourceContents),
}

impl ResourceContents {
    /// The URI of the resource these contents belong to.
    pub fn uri(&self) -> &str {
        match self {
            ResourceContents::Text(t) => &t.uri,
            ResourceContents::Blob(b) => &b.uri,
        }
    }

    /// The MIME type, when given.
    pub fn mime_type(&self) -> Option<&str> {
        match self {
            ResourceContents::Text(t) => t.mime_type.as_deref(),
            ResourceContents::Blob(b) => b.mime_type.as_deref(),
        }
    }
}

impl From<TextResourceContents> for ResourceContents {
    fn from(value: TextResourceContents) -> Self {
        ResourceContents::Text(value)
    }
}

impl From<BlobResourceContents> for ResourceContents {
    fn from(value: BlobResourceContents) -> Self {
        ResourceContents::Blob(value)
    }
}

impl Serialize for ResourceContents {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ResourceContents::Text(t) => t.serialize(serializer),
            ResourceContents::Blob(b) => b.serialize(serializer),
        }
    }
}

/// Every member either kind of contents may have, read in one pass; the kind is chosen afterwards.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AnyResourceContents {
    uri: String,
    #[serde(default)]
    mime_type: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    blob: Option<String>,
    #[serde(rename = "_meta", default)]
    meta: Option<JsonObject>,
}

impl<'de> Deserialize<'de> for ResourceContents {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let any = AnyResourceContents::deserialize(deserializer)?;
        let AnyResourceContents {
            uri,
            mime_type,
            text,
            blob,
            meta,
        } = any;
        match (text, blob) {
            (Some(text), None) => Ok(ResourceContents::Text(TextResourceContents {
                uri,
                mime_type,
                text,
                meta,
            })),
            (None, Some(blob)) => Ok(ResourceContents::Blob(BlobResourceContents {
                uri,
                mime_type,
                blob,
                meta,
            })),
            (Some(_), Some(_)) => Err(D::Error::custom(
                "resource contents have both `text` and `blob`",
            )),
            (None, None) => Err(D::Error::custom(
                "resource contents need a `text` or a `blob` member",
            )),
        }
    }
}

/// Text contents of a resource (`TextResourceContents`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextResourceContents {
    /// The resource's URI.
    pub uri: String,
    /// The MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The text.
    pub text: String,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl TextResourceContents {
    /// Text contents for a URI.
    pub fn new(uri: impl Into<String>, text: impl Into<String>) -> Self {
        TextResourceContents {
            uri: uri.into(),
            mime_type: None,
            text: text.into(),
            meta: None,
        }
    }

    /// Sets the MIME type.
    #[must_use]
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }
}

/// Binary contents of a resource (`BlobResourceContents`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlobResourceContents {
    /// The resource's URI.
    pub uri: String,
    /// The MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The base64-encoded bytes.
    pub blob: String,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl BlobResourceContents {
    /// Binary contents for a URI, from base64 data.
    pub fn new(uri: impl Into<String>, blob: impl Into<String>) -> Self {
        BlobResourceContents {
            uri: uri.into(),
            mime_type: None,
            blob: blob.into(),
            meta: None,
        }
    }

    /// Sets the MIME type.
    #[must_use]
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn blocks_are_tagged_by_type() {
        let cases = [
            (
                ContentBlock::text("hi"),
                json!({"type": "text", "text": "hi"}),
            ),
            (
                ContentBlock::image("AA==", "image/png"),
                json!({"type": "image", "data": "AA==", "mimeType": "image/png"}),
            ),
            (
                ContentBlock::audio("AA==", "audio/wav"),
                json!({"type": "audio", "data": "AA==", "mimeType": "audio/wav"}),
            ),
            (
                ContentBlock::resource_link("file:///a", "a"),
                json!({"type": "resource_link", "uri": "file:///a", "name": "a"}),
            ),
            (
                ContentBlock::embedded(TextResourceContents::new("file:///a", "x")),
                json!({"type": "resource", "resource": {"uri": "file:///a", "text": "x"}}),
            ),
        ];
        for (block, wire) in cases {
            assert_eq!(serde_json::to_value(&block).unwrap(), wire);
            assert_eq!(serde_json::from_value::<ContentBlock>(wire).unwrap(), block);
        }
    }

    #[test]
    fn unknown_or_missing_tags_are_refused() {
        assert!(
            serde_json::from_value::<ContentBlock>(json!({"type": "video", "data": ""})).is_err()
        );
        assert!(serde_json::from_value::<ContentBlock>(json!({"text": "x"})).is_err());
        assert!(serde_json::from_value::<ContentBlock>(json!({"type": "text"})).is_err());
    }

    #[test]
    fn resource_contents_kind_follows_the_key() {
        let text: ResourceContents =
            serde_json::from_value(json!({"uri": "u", "text": "t", "mimeType": "text/plain"}))
                .unwrap();
        assert!(matches!(text, ResourceContents::Text(_)));
        assert_eq!(text.mime_type(), Some("text/plain"));
        let blob: ResourceContents =
            serde_json::from_value(json!({"blob": "AA==", "uri": "u"})).unwrap();
        assert!(matches!(blob, ResourceContents::Blob(_)));
        assert!(serde_json::from_value::<ResourceContents>(json!({"uri": "u"})).is_err());
        assert!(
            serde_json::from_value::<ResourceContents>(json!({"uri": "u", "text": "", "blob": ""}))
                .is_err()
        );
    }

    #[test]
    fn whole_number_priority_stays_an_integer() {
        let wire = json!({"type": "text", "text": "x", "annotations": {"priority": 1, "audience": ["user"]}});
        let block: ContentBlock = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(serde_json::to_value(&block).unwrap(), wire);
    }
}
