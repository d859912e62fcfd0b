//! The HTTP header names of the Streamable HTTP binding, and where the body value of `Mcp-Name` lives.
//!
//! Header names are case-insensitive (RFC 9110 §5.1); [`HeaderName`] stores them in lowercase, and
//! HTTP/2 and HTTP/3 require lowercase on the wire anyway.

use http::HeaderName;

/// `MCP-Protocol-Version`: the body's `_meta["io.modelcontextprotocol/protocolVersion"]`, on every POST.
pub const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");

/// `Mcp-Method`: the JSON-RPC `method`, on every request.
pub const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");

/// `Mcp-Name`: `params.name`, `params.uri` or `params.taskId`, on the methods listed by
/// [`name_source`].
pub const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");

/// The prefix of the `Mcp-Param-{Name}` headers declared with `x-mcp-header`, in lowercase.
///
/// The full name of a declared header is [`ParamHeader::header_name`](crate::ParamHeader::header_name).
pub const MCP_PARAM_PREFIX: &str = "mcp-param-";

/// `Mcp-Session-Id`: the session header of the 2025 revisions.
///
/// spec 2026-07-28 basic/transports/streamable-http (Backward Compatibility): a modern-only server
/// ignores it and never mints or echoes one.
pub const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");

/// `Last-Event-ID`: SSE resumption, removed in 2026-07-28; a modern-only server ignores it.
pub const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

/// The `params` member that `Mcp-Name` mirrors for `method`, or `None` when the method carries no
/// `Mcp-Name`.
///
/// spec 2026-07-28 basic/transports/streamable-http (Standard Request Headers): `params.name` for
/// `tools/call` and `prompts/get`, `params.uri` for `resources/read`.
///
/// ```
/// use kelson_http::headers::name_source;
///
/// assert_eq!(name_source("tools/call"), Some("name"));
/// assert_eq!(name_source("resources/read"), Some("uri"));
/// assert_eq!(name_source("tasks/get"), Some("taskId"));
/// assert_eq!(name_source("tools/list"), None);
/// ```
pub fn name_source(method: &str) -> Option<&'static str> {
    kelson_types::Method::parse(method).name_param()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_compare_case_insensitively() {
        let parsed = HeaderName::from_bytes(b"MCP-Protocol-Version").unwrap();
        assert_eq!(parsed, MCP_PROTOCOL_VERSION);
        assert_eq!(HeaderName::from_bytes(b"Mcp-Method").unwrap(), MCP_METHOD);
        assert_eq!(HeaderName::from_bytes(b"MCP-NAME").unwrap(), MCP_NAME);
    }

    #[test]
    fn name_sources_are_case_sensitive() {
        assert_eq!(name_source("prompts/get"), Some("name"));
        assert_eq!(name_source("TOOLS/CALL"), None);
    }
}
