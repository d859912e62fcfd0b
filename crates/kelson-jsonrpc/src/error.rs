use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// JSON-RPC and MCP error codes.
///
/// spec 2026-07-28 basic (error codes): -32000..-32019 are legacy and not allocated anew; -32020..-32022
/// are MCP's own; -32002 (resource not found) and -32042 are retired and never emitted.
pub mod code {
    /// Invalid JSON was received.
    pub const PARSE_ERROR: i64 = -32700;
    /// The JSON sent is not a valid request object.
    pub const INVALID_REQUEST: i64 = -32600;
    /// The method does not exist, was removed, or needs a server capability that is not advertised.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid method parameters, including a missing `_meta` key and a missing resource.
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal server error.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// An HTTP header is missing, malformed, or disagrees with the body.
    pub const HEADER_MISMATCH: i64 = -32020;
    /// The request needs a client capability it did not declare.
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
    /// The server does not implement the requested protocol version.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
    /// Retired "resource not found" code; accepted from legacy servers, never sent.
    pub const LEGACY_RESOURCE_NOT_FOUND: i64 = -32002;
}

/// The `error` member of a JSON-RPC error response, with one constructor per code.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The error code; see [`code`].
    pub code: i64,
    /// A short, single-sentence description.
    pub message: Cow<'static, str>,
    /// Structured detail, when the code defines some. Boxed, so that an error is small (40 bytes)
    /// in the `Result`s that carry it on every path, and only an error with detail pays for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Box<Value>>,
}

impl ErrorObject {
    /// An error with any code and message, and no data.
    pub fn new(code: i64, message: impl Into<Cow<'static, str>>) -> Self {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Attaches `data` to the error.
    #[must_use]
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(Box::new(data));
        self
    }

    /// The structured detail, if any.
    pub fn data(&self) -> Option<&Value> {
        self.data.as_deref()
    }

    /// -32700: the message is not valid JSON.
    pub fn parse_error(detail: impl fmt::Display) -> Self {
        Self::new(code::PARSE_ERROR, format!("Parse error: {detail}"))
    }

    /// -32600: valid JSON, but not a valid JSON-RPC request.
    pub fn invalid_request(detail: impl fmt::Display) -> Self {
        Self::new(code::INVALID_REQUEST, format!("Invalid request: {detail}"))
    }

    /// -32601: the method is unknown, removed, or not enabled on this server.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            code::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )
    }

    /// -32602: the parameters are invalid.
    pub fn invalid_params(detail: impl fmt::Display) -> Self {
        Self::new(code::INVALID_PARAMS, format!("Invalid params: {detail}"))
    }

    /// -32603: the server failed.
    pub fn internal_error(detail: impl fmt::Display) -> Self {
        Self::new(code::INTERNAL_ERROR, format!("Internal error: {detail}"))
    }

    /// -32020: an HTTP header is missing, malformed, or disagrees with the body.
    pub fn header_mismatch(detail: impl fmt::Display) -> Self {
        Self::new(code::HEADER_MISMATCH, format!("Header mismatch: {detail}"))
    }

    /// -32021: the request needs client capabilities it did not declare.
    ///
    /// `required` is a `ClientCapabilities` object such as `{"elicitation": {}}` (never an array).
    pub fn missing_client_capability(required: Value, detail: impl fmt::Display) -> Self {
        Self::new(
            code::MISSING_REQUIRED_CLIENT_CAPABILITY,
            format!("Missing required client capability: {detail}"),
        )
        .with_data(json!({ "requiredCapabilities": required }))
    }

    /// -32022: the requested protocol version is not one the server implements.
    pub fn unsupported_protocol_version(supported: &[&str], requested: &str) -> Self {
        Self::new(
            code::UNSUPPORTED_PROTOCOL_VERSION,
            format!(
                "Unsupported protocol version: {requested:?} (supported: {})",
                supported.join(", ")
            ),
        )
        .with_data(json!({ "supported": supported, "requested": requested }))
    }
}

impl fmt::Debug for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.code, self.message)?;
        if let Some(data) = &self.data {
            write!(f, " {data}")?;
        }
        Ok(())
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

impl std::error::Error for ErrorObject {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capability_error_carries_an_object() {
        let err = ErrorObject::missing_client_capability(json!({"elicitation": {}}), "elicitation");
        assert_eq!(err.code, -32021);
        assert_eq!(
            err.data(),
            Some(&json!({"requiredCapabilities": {"elicitation": {}}}))
        );
    }

    #[test]
    fn version_error_echoes_the_request() {
        let err = ErrorObject::unsupported_protocol_version(&["2026-07-28"], "v999");
        assert_eq!(
            err.data(),
            Some(&json!({"supported": ["2026-07-28"], "requested": "v999"}))
        );
    }

    #[test]
    fn data_is_omitted_when_absent() {
        let text = serde_json::to_string(&ErrorObject::method_not_found("x")).unwrap();
        assert_eq!(text, r#"{"code":-32601,"message":"Method not found: x"}"#);
    }
}
