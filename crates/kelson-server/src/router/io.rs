//! What a transport hands the router with a request ([`RequestIo`]: who asks, where notifications
//! go, transport checks) and gets back ([`Reply`]).

use std::sync::Arc;

use kelson_jsonrpc::ErrorObject;
use kelson_types::JsonObject;
use tokio_util::sync::CancellationToken;

use super::reply::ReplyMessage;
use crate::hub::ListenStream;
use crate::observe::RequestProbe;
use crate::principal::Principal;

/// Where a request's notifications go: its SSE stream on HTTP, stdout on stdio.
///
/// Each call carries one complete JSON-RPC notification, compact, without a trailing newline.
pub trait NotificationSink: Send + Sync {
    /// Queues one message for delivery before the request's final response.
    fn send(&self, message: Vec<u8>);

    /// Queues a server-to-client request of a handshake-era session (elicitation, sampling,
    /// roots), which unlike a progress or log notification must not be dropped when the client is
    /// slow: the request waits for its answer. By default the same as [`send`](Self::send).
    fn send_request(&self, message: Vec<u8>) {
        self.send(message);
    }
}

impl<F: Fn(Vec<u8>) + Send + Sync> NotificationSink for F {
    fn send(&self, message: Vec<u8>) {
        self(message);
    }
}

/// What [`Server::dispatch`](crate::Server::dispatch) produced.
#[derive(Debug)]
pub enum Reply {
    /// The single response to the request.
    Message(ReplyMessage),
    /// A `subscriptions/listen` stream.
    Listen(ListenStream),
}

/// Checks a `tools/call` against transport-specific rules once the tool is known (HTTP uses this
/// for the `Mcp-Param-*` headers of spec 2026-07-28 basic/transports/streamable-http).
pub trait ToolCallGuard: Send + Sync {
    /// Returns the error to answer with, if the call must be refused.
    fn check(
        &self,
        param_headers: &[kelson_types::ParamHeader],
        arguments: Option<&JsonObject>,
    ) -> Result<(), ErrorObject>;
}

/// What the transport supplies for one request.
pub struct RequestIo<'a> {
    /// Who is calling.
    pub principal: Principal,
    /// Fired when the client cancels the request; handlers observe it.
    pub cancel: CancellationToken,
    /// Where progress and log notifications go; `None` drops them (an HTTP JSON response).
    pub sink: Option<Arc<dyn NotificationSink>>,
    /// Transport checks for `tools/call`.
    pub guard: Option<&'a dyn ToolCallGuard>,
    /// Ends listen streams gracefully (the transport closing); server shutdown always does. `None`
    /// costs nothing, which is what plain requests pass.
    pub close: Option<CancellationToken>,
    /// The request's probe ([`Server::probe`](crate::Server::probe)): the router records what the
    /// request names in it, and hands it to the stream of an accepted `subscriptions/listen`. The
    /// transport ends it.
    pub probe: Option<&'a mut RequestProbe>,
}

impl std::fmt::Debug for RequestIo<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestIo")
            .field("principal", &self.principal)
            .finish_non_exhaustive()
    }
}

impl RequestIo<'_> {
    /// The probe, if the transport supplied one.
    pub(crate) fn probe_mut(&mut self) -> Option<&mut RequestProbe> {
        self.probe.as_deref_mut()
    }
}
