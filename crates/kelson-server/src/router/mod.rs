//! The request pipeline: decode -> check `_meta` -> route -> validate -> call -> encode.
//!
//! [`Server::prepare`] decodes a message, parses its method once and runs the transport-independent
//! checks that come before a transport's own (HTTP compares headers with the body between the
//! two); [`Server::check`] checks the protocol version and the method once, and
//! [`Server::dispatch`] takes only the [`Checked`] request it makes and runs the rest.
//! The order: JSON parse, JSON-RPC shape, `_meta`, [headers], protocol version, method, params,
//! [`Mcp-Param-*`], client capabilities. spec 2026-07-28 basic/transports/streamable-http fixes no
//! order; this one agrees with every case the official conformance suite pins (a missing `_meta`
//! key beats a header mismatch, which beats an unsupported version).
//!
//! The files: the types a request travels in (request.rs: [`Prepared`], [`Checked`],
//! [`Incoming`]; reply.rs: [`ReplyMessage`], [`Outcome`]; io.rs: [`RequestIo`], [`Reply`]), which
//! depend on no `impl Server`; prepare.rs (decode); dispatch.rs (check and route); run.rs (the
//! handler runner: panics and deadlines).
//!
//! [`Server::prepare`]: crate::Server::prepare
//! [`Server::check`]: crate::Server::check
//! [`Server::dispatch`]: crate::Server::dispatch

mod dispatch;
mod io;
mod prepare;
mod reply;
mod request;
mod run;

pub use io::{NotificationSink, Reply, RequestIo, ToolCallGuard};
pub use reply::{Outcome, ReplyMessage};
pub use request::{Checked, Incoming, IncomingNotification, Prepared};

pub(crate) use reply::error_reply;
pub(crate) use request::CallFields;
pub(crate) use run::{Stopped, human};
