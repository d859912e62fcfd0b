use std::fmt;

use kelson_jsonrpc::ErrorObject;
use kelson_types::{InputRequests, JsonObject};
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

    /// A JSON-RPC error on purpose: the request is answered with `error` instead of a result
    /// (for a tool, instead of an `isError` result).
    pub fn protocol(error: ErrorObject) -> Self {
        HandlerError::Protocol(error)
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
    ErrorObject::new(kelson_jsonrpc::code::INVALID_PARAMS, "Resource not found")
        .with_data(serde_json::json!({ "uri": uri }))
}

/// Any error converts: `?` works in handlers on `std::io::Error`, `serde_json::Error`, `anyhow`'s
/// errors, a `String` or a `&str`. An [`ErrorObject`] stays a protocol error (the request is
/// answered with it); everything else is a failure whose message, with the messages of its sources
/// joined by `: `, the model reads in an `isError` tool result.
///
/// `HandlerError` does not implement `std::error::Error` itself, so that this conversion can
/// exist (the same choice `anyhow::Error` makes).
impl<E> From<E> for HandlerError
where
    E: Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
{
    fn from(err: E) -> Self {
        let boxed: Box<dyn std::error::Error + Send + Sync + 'static> = err.into();
        match boxed.downcast::<ErrorObject>() {
            Ok(protocol) => HandlerError::Protocol(*protocol),
            Err(other) => HandlerError::Failed(error_chain(&*other)),
        }
    }
}

/// The message of `err` followed by those of its sources, each once.
fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        // Wrappers often repeat their source's message in their own; say it once.
        if !message.ends_with(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    message
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
    /// A handler takes `State<S>` but no state of type `S` was given to the builder.
    #[error(
        "{item}: the handler takes State<{type_name}>, but no such state was given (ServerBuilder::state)"
    )]
    MissingState {
        /// The registration, as `tool "name"`.
        item: String,
        /// The state's type.
        type_name: &'static str,
    },
    /// A template resource handler's arguments need a variable the URI template does not bind.
    #[error(
        "resource template {template:?}: its arguments need {variable:?}, which the template does not bind"
    )]
    TemplateVariable {
        /// The URI template.
        template: String,
        /// The variable.
        variable: String,
    },
    /// The configured `requestState` key is too short.
    #[error(transparent)]
    StateKey(#[from] crate::mrtr::KeyTooShort),
}
