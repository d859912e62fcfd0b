//! Small shapes that many messages share: implementation identity, icons, annotations, roles,
//! result types, cache scopes and log levels.

use serde::{Deserialize, Serialize};

use crate::wire::{open_string_enum, serialize_opt_number};

/// A JSON object: the schema's `JSONObject`, and the type of every plain `_meta` member.
pub type JsonObject = serde_json::Map<String, serde_json::Value>;

/// Extension or experimental settings keyed by identifier, as in `capabilities.extensions`.
pub type ExtensionMap = std::collections::BTreeMap<String, JsonObject>;

/// The sender or recipient of a message in a conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The human side of the conversation.
    User,
    /// The model side of the conversation.
    Assistant,
}

/// The name and version of an MCP implementation, client or server.
///
/// spec 2026-07-28 basic/index: it is self-reported and unverified; use it for logging and
/// display only, never for security decisions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Implementation {
    /// The programmatic name.
    pub name: String,
    /// A human-readable name for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The version string.
    pub version: String,
    /// A human-readable description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The implementation's web site.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub website_url: Option<String>,
    /// Icons that represent the implementation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
}

impl Implementation {
    /// An implementation with a name and a version, and nothing else.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Implementation {
            name: name.into(),
            title: None,
            version: version.into(),
            description: None,
            website_url: None,
            icons: None,
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

    /// Sets the web site address.
    #[must_use]
    pub fn with_website_url(mut self, url: impl Into<String>) -> Self {
        self.website_url = Some(url.into());
        self
    }

    /// Sets the icons.
    #[must_use]
    pub fn with_icons(mut self, icons: Vec<Icon>) -> Self {
        self.icons = Some(icons);
        self
    }
}

/// An icon for display in a user interface.
///
/// spec 2026-07-28 basic/index (icons): `src` is an `https:` or `data:` URI; consumers MUST reject
/// unsafe schemes such as `javascript:` or `file:` and fetch icons without credentials.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Icon {
    /// The icon's URI.
    pub src: String,
    /// The MIME type, when it cannot be inferred from `src`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Sizes the icon suits, such as `"48x48"` or `"any"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Vec<String>>,
    /// The background theme the icon is designed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<IconTheme>,
}

impl Icon {
    /// An icon with only a source URI.
    pub fn new(src: impl Into<String>) -> Self {
        Icon {
            src: src.into(),
            mime_type: None,
            sizes: None,
            theme: None,
        }
    }

    /// Sets the MIME type.
    #[must_use]
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// Sets the sizes.
    #[must_use]
    pub fn with_sizes(mut self, sizes: Vec<String>) -> Self {
        self.sizes = Some(sizes);
        self
    }

    /// Sets the theme.
    #[must_use]
    pub fn with_theme(mut self, theme: IconTheme) -> Self {
        self.theme = Some(theme);
        self
    }
}

/// The background an icon is designed for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IconTheme {
    /// A light background.
    Light,
    /// A dark background.
    Dark,
}

/// Hints to the client about how to use or display an object.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// Who the object is intended for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// How important the object is, from 0 (least) to 1 (most).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_opt_number"
    )]
    pub priority: Option<f64>,
    /// When the object was last modified, as an ISO 8601 timestamp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

open_string_enum! {
    /// The kind of a result, carried as `resultType` on every result.
    ///
    /// spec 2026-07-28 basic/index (resultType): servers MUST always send it; a client MUST treat an absent
    /// value as `complete` and a value it does not recognise as invalid. Extensions may define more
    /// values (the tasks extension adds `"task"`), which land in `Other`.
    pub enum ResultType {
        /// `"complete"`: the final result.
        Complete = "complete",
        /// `"input_required"`: an interim multi round-trip result (see `InputRequiredResult`).
        InputRequired = "input_required",
        /// `"task"`: a task handle (the tasks extension, see `CreateTaskResult`).
        Task = "task",
    }
}

impl Default for ResultType {
    /// `Complete`, which is also what an absent `resultType` means.
    fn default() -> Self {
        ResultType::Complete
    }
}

/// Who may reuse a cached result.
///
/// spec 2026-07-28 server/utilities/caching: a `private` result MUST NOT be shared across
/// authorization contexts; a `public` one may be shared across users.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    /// The result holds no user-specific data.
    Public,
    /// The result may be reused only within the same authorization context.
    Private,
}

/// The severity of a log message, in RFC 5424 order: `Debug` is the least severe, and the derived
/// ordering follows severity, so `level >= threshold` filters as expected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoggingLevel {
    /// Debugging detail.
    Debug,
    /// Informational messages.
    Info,
    /// Normal but significant events.
    Notice,
    /// Warning conditions.
    Warning,
    /// Error conditions.
    Error,
    /// Critical conditions.
    Critical,
    /// Action must be taken immediately.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LoggingLevel {
    /// The wire string of this level.
    pub fn as_str(self) -> &'static str {
        match self {
            LoggingLevel::Debug => "debug",
            LoggingLevel::Info => "info",
            LoggingLevel::Notice => "notice",
            LoggingLevel::Warning => "warning",
            LoggingLevel::Error => "error",
            LoggingLevel::Critical => "critical",
            LoggingLevel::Alert => "alert",
            LoggingLevel::Emergency => "emergency",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn result_type_is_a_plain_string() {
        assert_eq!(
            serde_json::to_value(ResultType::InputRequired).unwrap(),
            json!("input_required")
        );
        let task: ResultType = serde_json::from_value(json!("task")).unwrap();
        assert_eq!(task, ResultType::Task);
        let other: ResultType = serde_json::from_value(json!("later")).unwrap();
        assert_eq!(other, ResultType::Other("later".into()));
        assert_eq!(serde_json::to_value(&other).unwrap(), json!("later"));
        assert_eq!(ResultType::default(), ResultType::Complete);
    }

    #[test]
    fn logging_levels_order_by_severity() {
        assert!(LoggingLevel::Emergency > LoggingLevel::Warning);
        assert!(LoggingLevel::Debug < LoggingLevel::Info);
        let level: LoggingLevel = serde_json::from_value(json!("notice")).unwrap();
        assert_eq!(level.as_str(), "notice");
        assert!(serde_json::from_value::<LoggingLevel>(json!("verbose")).is_err());
    }
}
