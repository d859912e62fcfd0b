//! Server-Sent Events framing: an incremental parser for the client, a writer for the server.
//!
//! spec 2026-07-28 basic/transports/streamable-http (Receiving Messages): a request may be answered with a
//! `text/event-stream` that carries request-related notifications and then the response. We frame one
//! JSON-RPC message per event, in `data:` lines with the default event type, and send neither `id:` nor
//! `retry:` (streams are not resumable in this revision). Comment lines serve as keep-alives, and clients
//! MUST ignore them. The parser follows the WHATWG HTML "event stream interpretation" algorithm.
//!
//! ```
//! use kelson_http::sse::{SseParser, write_comment, write_event};
//!
//! let mut wire = Vec::new();
//! write_comment(&mut wire, "keep-alive");
//! write_event(&mut wire, br#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
//!
//! let mut parser = SseParser::new();
//! for chunk in wire.chunks(5) {
//!     parser.feed(chunk).unwrap();
//! }
//! let event = parser.next_event().unwrap();
//! assert_eq!(event.event, "message");
//! assert_eq!(event.data, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
//! assert!(parser.next_event().is_none());
//! ```

mod parser;
mod writer;

pub use parser::{DEFAULT_MAX_EVENT_SIZE, SseError, SseEvent, SseParser};
pub use writer::{write_comment, write_event, write_event_with_id};
