use std::fmt;

use mcp_jsonrpc::ErrorObject;
use mcp_types::{InputRequests, JsonObject};
use serde_json::Value;

/// How a handler stops without a normal result.
#[derive(Debug)]
pub enum HandlerError {
    /// Answer this request with a JSON-RPC error.
    Protocol(ErrorObject),
    /// The handler needs input from the client first (MRTR); the runtime answers `input_required`.
    InputRequired(Box<InputRequired>),
    /// The operation failed. A tool reports it to the model as a `CallToolResult` with `isError: true`
    /// (spec 2026-07-28 server/tools: execution errors belong in the result); other methods answer
    /// -32603.
    Failed(String),
}

/// What an `input_required` answer carries, gathered by the request context.
#[derive(Debug, Default)]
pub struct InputRequired {
    pub(crate) requests: InputRequests,
    pub(crate) answers: JsonObject,
    pub(crate) state: Option<Value>,
}

impl HandlerError {
    /// A tool execution failure (or -32603 outside tools) with a message for the model.
    pub fn failed(message: impl fmt::Display) -> Self {
        HandlerError::Failed(message.to_string())
    }

    /// -32602 for an invalid argument or parameter.
    pub fn invalid_params(message: impl fmt::Display) -> Self {
        HandlerError::Protocol(ErrorObject::invalid_params(message))
    }

    /// -32602 with `data.uri`, the error for a resource that does not exist (spec 2026-07-28
    /// server/resources, SEP-2164: never an empty `contents`, never -32002).
    pub fn resource_not_found(uri: &str) -> Self {
        HandlerError::Protocol(resource_not_found(uri))
    }
}

/// The -32602 error for a missing resource, with the URI in `data`.
pub fn resource_not_found(uri: &str) -> ErrorObject {
    ErrorObject::new(mcp_jsonrpc::code::INVALID_PARAMS, "Resource not found")
        .with_data(serde_json::json!({ "uri": uri }))
}

impl From<ErrorObject> for HandlerError {
    fn from(err: ErrorObject) -> Self {
        HandlerError::Protocol(err)
    }
}

impl fmt::Display for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandlerError::Protocol(e) => write!(f, "{e}"),
            HandlerError::InputRequired(r) => {
                write!(f, "input required ({} requests)", r.requests.len())
            }
            HandlerError::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for HandlerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            HandlerError::Protocol(e) => Some(e),
            _ => None,
        }
    }
}

/// Why a server could not be built or a registration was refused.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A tool's input or output schema was refused.
    #[error("tool {tool:?}: invalid {which}: {source}")]
    Schema {
        /// The tool's name.
        tool: String,
        /// `inputSchema` or `outputSchema`.
        which: &'static str,
        /// What was wrong.
        #[source]
        source: crate::schema::SchemaError,
    },
    /// A tool's `x-mcp-header` declarations are invalid.
    #[error("tool {tool:?}: invalid x-mcp-header declaration: {reason}")]
    ParamHeader {
        /// The tool's name.
        tool: String,
        /// What was wrong.
        reason: String,
    },
    /// A tool name breaks the naming rules (1-128 characters of `A-Z a-z 0-9 _ - .`).
    #[error(
        "invalid tool name {0:?}: use 1 to 128 characters from A-Z, a-z, 0-9, '_', '-' and '.'"
    )]
    ToolName(String),
    /// Two registrations share a key (a tool or prompt name, a resource URI, a template).
    #[error("{kind} {name:?} is registered twice")]
    Duplicate {
        /// What kind of registration.
        kind: &'static str,
        /// The duplicated key.
        name: String,
    },
    /// A registration names a scope that is not an RFC 6749 scope token.
    #[error(
        "{kind} {name:?}: invalid scope {scope:?}: use printable ASCII without spaces, '\"' or '\\'"
    )]
    Scope {
        /// What kind of registration.
        kind: &'static str,
        /// Its name or URI.
        name: String,
        /// The refused scope.
        scope: String,
    },
    /// A resource template is not a valid RFC 6570 template.
    #[error(transparent)]
    Template(#[from] crate::registry::TemplateError),
    /// The configured `requestState` key is too short.
    #[error(transparent)]
    StateKey(#[from] crate::mrtr::KeyTooShort),
}
