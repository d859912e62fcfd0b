//! What transports are built from: the stdio transport itself, and the plumbing a transport
//! of its own (Streamable HTTP in `kelson-http`, or one of yours) feeds the server through. A server
//! author needs none of it beyond [`stdio::serve_stdio`].
//!
//! A transport hands each message to [`Server::handle`](crate::Server::handle) (or splits the
//! work with [`Server::prepare`](crate::Server::prepare) and [`Prepared`]) with a [`RequestIo`]
//! saying who is asking and where notifications go ([`NotificationSink`]), and writes the
//! [`Reply`] back; [`ListenStream`] is a `subscriptions/listen` stream; the `Legacy*` types carry
//! the handshake era's sessions.

pub mod stdio;

pub use crate::context::NotificationSink;
pub use crate::hub::ListenStream;
pub use crate::legacy::{LegacyNotifications, LegacySession, TrackGuard};
pub use crate::router::{
    Incoming, Outcome, Prepared, Reply, ReplyMessage, RequestIo, ToolCallGuard,
};
