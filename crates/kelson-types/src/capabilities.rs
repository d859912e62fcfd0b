//! Client and server capabilities.
//!
//! spec 2026-07-28 basic/index (capabilities): client capabilities travel in every request's `_meta`
//! and hold for that request only; server capabilities are returned by `server/discover`. Both are
//! open sets, so every object here keeps the members it does not model in `extra`.

use crate::common::{ExtensionMap, JsonObject};
use crate::wire::open_object;

open_object! {
    /// What a client can do on this request (`ClientCapabilities`).
    ///
    /// spec 2026-07-28 basic/index: the server MUST NOT rely on a capability the client did not
    /// declare on this request; if it cannot proceed without one it answers -32021 with
    /// `data.requiredCapabilities` set to a `ClientCapabilities` object.
    pub struct ClientCapabilities {
        /// Non-standard capabilities, keyed by name.
        pub experimental: Option<ExtensionMap> = "experimental",
        /// The client can answer `roots/list` input requests (deprecated).
        pub roots: Option<JsonObject> = "roots",
        /// The client can answer `sampling/createMessage` input requests (deprecated).
        pub sampling: Option<SamplingCapability> = "sampling",
        /// The client can answer `elicitation/create` input requests.
        pub elicitation: Option<ElicitationCapability> = "elicitation",
        /// Extensions the client supports, keyed by extension identifier.
        pub extensions: Option<ExtensionMap> = "extensions",
    }
}

impl ClientCapabilities {
    /// True when the client accepts form-mode elicitation.
    ///
    /// spec 2026-07-28 client/elicitation: an empty `elicitation` object means form mode only, for
    /// backward compatibility.
    pub fn supports_elicitation_form(&self) -> bool {
        self.elicitation
            .as_ref()
            .is_some_and(|e| e.form.is_some() || e.url.is_none())
    }

    /// True when the client accepts URL-mode elicitation, which needs an explicit `url` member.
    pub fn supports_elicitation_url(&self) -> bool {
        self.elicitation.as_ref().is_some_and(|e| e.url.is_some())
    }

    /// True when the client accepts sampling requests.
    pub fn supports_sampling(&self) -> bool {
        self.sampling.is_some()
    }

    /// True when the client accepts sampling requests that carry `tools` or `toolChoice`.
    pub fn supports_sampling_tools(&self) -> bool {
        self.sampling.as_ref().is_some_and(|s| s.tools.is_some())
    }

    /// True when the client accepts `roots/list` input requests.
    pub fn supports_roots(&self) -> bool {
        self.roots.is_some()
    }

    /// True when the client declares the extension with this identifier.
    pub fn supports_extension(&self, id: &str) -> bool {
        self.extensions.as_ref().is_some_and(|e| e.contains_key(id))
    }

    /// Declares form-mode elicitation (as `{"form": {}}`).
    #[must_use]
    pub fn with_elicitation_form(mut self) -> Self {
        self.elicitation.get_or_insert_with(Default::default).form = Some(JsonObject::new());
        self
    }

    /// Declares URL-mode elicitation (as `{"url": {}}`).
    #[must_use]
    pub fn with_elicitation_url(mut self) -> Self {
        self.elicitation.get_or_insert_with(Default::default).url = Some(JsonObject::new());
        self
    }

    /// Declares sampling support.
    #[must_use]
    pub fn with_sampling(mut self) -> Self {
        self.sampling.get_or_insert_with(Default::default);
        self
    }

    /// Declares roots support.
    #[must_use]
    pub fn with_roots(mut self) -> Self {
        self.roots = Some(JsonObject::new());
        self
    }
}

open_object! {
    /// The client's sampling capability.
    pub struct SamplingCapability {
        /// The client honours the deprecated `includeContext` values `thisServer` and `allServers`.
        pub context: Option<JsonObject> = "context",
        /// The client accepts `tools` and `toolChoice` in sampling requests.
        pub tools: Option<JsonObject> = "tools",
    }
}

open_object! {
    /// The client's elicitation capability. `{}` on its own means form mode only.
    pub struct ElicitationCapability {
        /// Form mode: the client renders a flat form from a schema.
        pub form: Option<JsonObject> = "form",
        /// URL mode: the client opens a URL for an out-of-band flow.
        pub url: Option<JsonObject> = "url",
    }
}

open_object! {
    /// What a server offers (`ServerCapabilities`), returned by `server/discover`.
    ///
    /// spec 2026-07-28 server/index: a method gated by a capability the server did not advertise is
    /// answered with -32601.
    pub struct ServerCapabilities {
        /// Non-standard capabilities, keyed by name.
        pub experimental: Option<ExtensionMap> = "experimental",
        /// The server may send log messages (deprecated).
        pub logging: Option<JsonObject> = "logging",
        /// The server answers `completion/complete`.
        pub completions: Option<JsonObject> = "completions",
        /// The server offers prompts.
        pub prompts: Option<PromptsCapability> = "prompts",
        /// The server offers resources.
        pub resources: Option<ResourcesCapability> = "resources",
        /// The server offers tools.
        pub tools: Option<ToolsCapability> = "tools",
        /// Extensions the server supports, keyed by extension identifier.
        pub extensions: Option<ExtensionMap> = "extensions",
    }
}

impl ServerCapabilities {
    /// Advertises tools.
    #[must_use]
    pub fn with_tools(mut self, list_changed: bool) -> Self {
        self.tools = Some(ToolsCapability {
            list_changed: list_changed.then_some(true),
            extra: JsonObject::new(),
        });
        self
    }

    /// Advertises prompts.
    #[must_use]
    pub fn with_prompts(mut self, list_changed: bool) -> Self {
        self.prompts = Some(PromptsCapability {
            list_changed: list_changed.then_some(true),
            extra: JsonObject::new(),
        });
        self
    }

    /// Advertises resources.
    #[must_use]
    pub fn with_resources(mut self, subscribe: bool, list_changed: bool) -> Self {
        self.resources = Some(ResourcesCapability {
            subscribe: subscribe.then_some(true),
            list_changed: list_changed.then_some(true),
            extra: JsonObject::new(),
        });
        self
    }

    /// Advertises completions.
    #[must_use]
    pub fn with_completions(mut self) -> Self {
        self.completions = Some(JsonObject::new());
        self
    }

    /// Advertises logging (deprecated).
    #[must_use]
    pub fn with_logging(mut self) -> Self {
        self.logging = Some(JsonObject::new());
        self
    }

    /// Advertises an extension with its settings (`{}` for none).
    #[must_use]
    pub fn with_extension(mut self, id: impl Into<String>, settings: JsonObject) -> Self {
        self.extensions
            .get_or_insert_with(Default::default)
            .insert(id.into(), settings);
        self
    }
}

open_object! {
    /// The server's prompts capability.
    pub struct PromptsCapability {
        /// The server sends `notifications/prompts/list_changed` to listeners that ask for it.
        pub list_changed: Option<bool> = "listChanged",
    }
}

open_object! {
    /// The server's resources capability.
    pub struct ResourcesCapability {
        /// The server honours `resourceSubscriptions` in `subscriptions/listen`.
        pub subscribe: Option<bool> = "subscribe",
        /// The server sends `notifications/resources/list_changed` to listeners that ask for it.
        pub list_changed: Option<bool> = "listChanged",
    }
}

open_object! {
    /// The server's tools capability.
    pub struct ToolsCapability {
        /// The server sends `notifications/tools/list_changed` to listeners that ask for it.
        pub list_changed: Option<bool> = "listChanged",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn caps(value: serde_json::Value) -> ClientCapabilities {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn empty_elicitation_means_form_only() {
        let c = caps(json!({"elicitation": {}}));
        assert!(c.supports_elicitation_form());
        assert!(!c.supports_elicitation_url());

        let c = caps(json!({"elicitation": {"url": {}}}));
        assert!(!c.supports_elicitation_form());
        assert!(c.supports_elicitation_url());

        let c = caps(json!({"elicitation": {"form": {}, "url": {}}}));
        assert!(c.supports_elicitation_form() && c.supports_elicitation_url());

        let c = caps(json!({}));
        assert!(!c.supports_elicitation_form() && !c.supports_elicitation_url());
    }

    #[test]
    fn sampling_and_roots() {
        let c = caps(json!({"sampling": {}, "roots": {}}));
        assert!(c.supports_sampling() && !c.supports_sampling_tools() && c.supports_roots());
        let c = caps(json!({"sampling": {"tools": {}}}));
        assert!(c.supports_sampling_tools());
        assert!(!c.supports_roots());
    }

    #[test]
    fn unknown_capability_keys_survive_at_every_level() {
        let wire = json!({
            "elicitation": {"form": {"x": 1}, "com.example/mode": {}},
            "sampling": {"context": {}, "future": true},
            "extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html"]}},
            "com.example/new": {"a": [1, 2]},
        });
        let c = caps(wire.clone());
        assert!(c.extra.contains_key("com.example/new"));
        assert!(
            c.elicitation
                .as_ref()
                .unwrap()
                .extra
                .contains_key("com.example/mode")
        );
        assert!(c.sampling.as_ref().unwrap().extra.contains_key("future"));
        assert!(c.supports_extension("io.modelcontextprotocol/ui"));
        assert_eq!(serde_json::to_value(&c).unwrap(), wire);

        let wire = json!({"tools": {"listChanged": true, "x": 1}, "com.example/y": {}});
        let s: ServerCapabilities = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(s.tools.as_ref().unwrap().list_changed, Some(true));
        assert_eq!(serde_json::to_value(&s).unwrap(), wire);
    }

    #[test]
    fn builders_write_empty_objects() {
        let c = ClientCapabilities::default()
            .with_elicitation_url()
            .with_roots();
        assert_eq!(
            serde_json::to_value(&c).unwrap(),
            json!({"roots": {}, "elicitation": {"url": {}}})
        );
        let s = ServerCapabilities::default()
            .with_tools(false)
            .with_resources(true, false);
        assert_eq!(
            serde_json::to_value(&s).unwrap(),
            json!({"tools": {}, "resources": {"subscribe": true}})
        );
    }
}
