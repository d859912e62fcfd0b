//! The JSON-RPC 2.0 envelope as the Model Context Protocol uses it.
//!
//! This crate knows nothing about MCP methods. It reads one message in two phases: the envelope first
//! ([`decode`]), with `params`, `result` and `error` kept as raw JSON, so that the caller can pick the
//! concrete parameter type from the method name before decoding them. It also writes responses,
//! notifications and requests without building intermediate `Value` trees.
//!
//! ```
//! use kelson_jsonrpc::{decode, Id, Message};
//!
//! let line = br#"{"jsonrpc":"2.0","id":"7","method":"tools/list","params":{"_meta":{}}}"#;
//! match decode(line).unwrap() {
//!     Message::Request(req) => {
//!         assert_eq!(req.id, Id::from("7"));
//!         assert_eq!(req.method, "tools/list");
//!         assert_eq!(req.params.unwrap().get(), r#"{"_meta":{}}"#);
//!     }
//!     other => panic!("not a request: {other:?}"),
//! }
//! ```

mod decode;
mod encode;
mod error;
mod id;

pub use decode::{
    DecodeError, Message, Notification, Request, Response, decode, decode_str, plain_str,
};
pub use encode::{write_error, write_notification, write_request, write_result, write_result_raw};
pub use error::{ErrorObject, code};
pub use id::Id;

/// Raw JSON text borrowed from the input; re-exported so callers need not name `serde_json`.
pub use serde_json::value::RawValue;

/// The only `jsonrpc` version string a message may carry.
pub const VERSION: &str = "2.0";
