//! A response as the router encodes it ([`ReplyMessage`]), and how it ended ([`Outcome`]).

use kelson_jsonrpc::{ErrorObject, Id};

/// How a reply ended, for transports (HTTP maps it to a status) and for logs and metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A normal result.
    Success,
    /// A `tools/call` result with `isError: true`.
    ToolError,
    /// An `input_required` result.
    InputRequired,
    /// A JSON-RPC error response.
    Error {
        /// The error code.
        code: i64,
        /// Whether the request was refused before any method ran (a malformed envelope or `_meta`).
        /// Over HTTP such a -32602 is a 400, while a -32602 from a method is answered in band.
        rejected: bool,
    },
}

/// One complete JSON-RPC response, encoded.
#[derive(Debug)]
pub struct ReplyMessage {
    /// The response, compact JSON without a trailing newline.
    pub body: Vec<u8>,
    /// How it ended.
    pub outcome: Outcome,
}

/// The error response to the request `id` (`None`: the id could not be read).
pub(crate) fn error_reply(id: Option<&Id>, error: &ErrorObject, rejected: bool) -> ReplyMessage {
    let mut body = Vec::with_capacity(96 + error.message.len());
    kelson_jsonrpc::write_error(&mut body, id, error);
    ReplyMessage {
        body,
        outcome: Outcome::Error {
            code: error.code,
            rejected,
        },
    }
}
