//! What transports are built from: the stdio transport itself, and the plumbing a transport
//! of its own (Streamable HTTP in `kelson-http`, or one of yours) feeds the server through. A server
//! author needs none of it beyond [`stdio::serve_stdio`].
//!
//! A transport hands each message to [`Server::handle`](crate::Server::handle), or splits the
//! work: [`Server::prepare`](crate::Server::prepare) decodes it into an [`Incoming`] (a
//! [`Prepared`] request, its method parsed once), [`Server::check`](crate::Server::check) checks
//! the request's version and method once and makes it [`Checked`], and
//! [`Server::dispatch`](crate::Server::dispatch) serves it. A [`RequestIo`] says who is asking
//! and where notifications go ([`NotificationSink`]); the transport writes the [`Reply`] back.
//! [`ListenStream`] is a `subscriptions/listen` stream; the `Legacy*` types carry the handshake
//! era's sessions.

mod process_io;
pub mod stdio;

pub use crate::hub::ListenStream;
pub use crate::legacy::{LegacyNotifications, LegacySession, TrackGuard};
pub use crate::router::{
    Checked, Incoming, IncomingNotification, NotificationSink, Outcome, Prepared, Reply,
    ReplyMessage, RequestIo, ToolCallGuard,
};
