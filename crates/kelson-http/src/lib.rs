//! The Streamable HTTP binding of the Model Context Protocol, revision 2026-07-28.
//!
//! This crate holds the rules that the HTTP server and the HTTP client share, independent of any HTTP
//! stack:
//!
//! - the header names ([`headers`]) and the value codec with its base64 sentinel ([`encode_value`],
//!   [`decode_value`]);
//! - `x-mcp-header` declarations in a tool's `inputSchema` ([`param_headers`]);
//! - the client side, which mirrors body values into headers ([`param_header_values`],
//!   [`name_header_value`]);
//! - the server side, which checks headers against the body and answers -32020 HeaderMismatch
//!   ([`check_standard_headers`], [`check_param_headers`]);
//! - Server-Sent Events framing ([`sse`]).
//!
//! The server (`server` feature) and the client transport (`client` feature, [`client`]) build on
//! these. The `tls` feature adds HTTPS to the server's accept loop (`server::ServerTls`, with a
//! certificate that can be reloaded while serving).
//!
//! ```
//! use http::HeaderMap;
//! use kelson_http::{check_param_headers, param_header_values, param_headers};
//! use serde_json::json;
//!
//! // The tool declares that `region` is mirrored into `Mcp-Param-Region`.
//! let schema = json!({
//!     "type": "object",
//!     "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}
//! });
//! let decls = param_headers(schema.as_object().unwrap()).unwrap();
//!
//! // The client builds the headers from the call's arguments; non-ASCII goes through the sentinel.
//! let arguments = json!({"region": "Zürich"});
//! let mut request_headers = HeaderMap::new();
//! request_headers.extend(param_header_values(&decls, arguments.as_object().unwrap()));
//! assert_eq!(request_headers["mcp-param-region"], "=?base64?WsO8cmljaA==?=");
//!
//! // The server checks them against the body it received.
//! assert!(check_param_headers(&decls, arguments.as_object(), &request_headers).is_ok());
//!
//! // A header that disagrees with the body is a -32020 HeaderMismatch.
//! let tampered = json!({"region": "Basel"});
//! let err = check_param_headers(&decls, tampered.as_object(), &request_headers).unwrap_err();
//! assert_eq!(err.code, kelson_jsonrpc::code::HEADER_MISMATCH);
//! assert!(err.message.contains("Mcp-Param-Region"));
//! ```

mod check;
#[cfg(feature = "client")]
pub mod client;
mod codec;
pub mod headers;
mod mirror;
#[cfg(feature = "server")]
pub mod server;
pub mod sse;

pub use check::{check_param_headers, check_standard_headers};
pub use codec::{HeaderValueError, decode_value, encode_header_value, encode_value};
pub use kelson_types::{DeclarationError, ParamHeader, ParamKind, param_headers};
pub use mirror::{name_header_value, param_header_values};
