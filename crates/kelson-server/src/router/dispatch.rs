//! The dispatcher: a [`Prepared`] request checked once ([`Server::check`]: protocol version and
//! method), then routed to its method's handler ([`Server::dispatch`]), and the whole path for
//! transports without checks of their own ([`Server::handle`]).

use kelson_jsonrpc::ErrorObject;
use kelson_types::Method;

use super::io::{Reply, RequestIo};
use super::reply::{ReplyMessage, error_reply};
use super::request::{Checked, Incoming, Prepared};
use crate::Server;
use crate::observe::{RequestProbe, Transport};
use crate::registry::Registry;

/// Whether `registry` serves `method` in the request's era: the method exists and its capability
/// is advertised.
fn serves(registry: &Registry, method: &Method<'_>, legacy: bool) -> bool {
    match method {
        // Neither exists in the handshake era.
        Method::Discover | Method::SubscriptionsListen => !legacy,
        Method::ListTools | Method::CallTool => registry.has_tools(),
        Method::ListResources | Method::ListResourceTemplates | Method::ReadResource => {
            registry.has_resources()
        }
        Method::ListPrompts | Method::GetPrompt => registry.has_prompts(),
        Method::Complete => registry.has_completions(),
        // The tasks extension (2026-07-28 only); tasks/result and tasks/list were removed.
        Method::GetTask | Method::UpdateTask | Method::CancelTask => {
            !legacy && registry.has_tasks()
        }
        _ => false,
    }
}

// Here rather than beside `RequestIo`, which then knows nothing of the `Server`.
impl RequestIo<'_> {
    /// I/O for an anonymous caller that wants no notifications, with a fresh cancellation token;
    /// listen streams end with `server`'s shutdown.
    pub fn plain(_server: &Server) -> RequestIo<'static> {
        RequestIo {
            principal: crate::Principal::anonymous(),
            cancel: tokio_util::sync::CancellationToken::new(),
            sink: None,
            guard: None,
            close: None,
            probe: None,
        }
    }
}

impl Server {
    /// The checks that come before a method runs, run once per request: the protocol version is
    /// supported (-32022) and the method exists and its capability is advertised (-32601). The
    /// request comes back [`Checked`], for [`dispatch`](Self::dispatch), or refused with the error
    /// to send (HTTP answers these with 400 and 404 even when it would stream).
    ///
    /// A transport runs it after its own checks of the request (HTTP compares headers with the
    /// body first). Handshake-era requests are checked by
    /// [`legacy_dispatch`](Self::legacy_dispatch) once their session has filled them in.
    #[inline]
    pub fn check<'a>(&self, req: Prepared<'a>) -> Result<Checked<'a>, ReplyMessage> {
        self.checked(req).map_err(|(_, reply)| reply)
    }

    /// [`check`](Self::check), giving a refused request back with its error. The error is no
    /// larger than the request the success carries, and both are matched at once.
    #[allow(clippy::result_large_err)]
    #[inline]
    fn checked<'a>(&self, req: Prepared<'a>) -> Result<Checked<'a>, (Prepared<'a>, ReplyMessage)> {
        let version = req.protocol_version();
        // A legacy request's version was negotiated at `initialize`.
        if !req.legacy && !self.supported_versions().contains(&version) {
            let e = ErrorObject::unsupported_protocol_version(self.supported_versions(), version);
            let reply = error_reply(Some(&req.id), &e, true);
            return Err((req, reply));
        }
        let registry = self.inner.registry.load_full();
        if serves(&registry, &req.method, req.legacy) {
            Ok(Checked { req, registry })
        } else {
            // Unknown and removed methods (initialize with modern _meta, ping, logging/setLevel,
            // resources/subscribe, resources/unsubscribe), and methods of capabilities this server
            // does not advertise: spec 2026-07-28 schema (`MethodNotFoundError`) and changelog.
            let e = ErrorObject::method_not_found(req.method.as_str());
            let reply = error_reply(Some(&req.id), &e, true);
            Err((req, reply))
        }
    }

    /// [`check`](Self::check) for a transport that goes on to [`dispatch`](Self::dispatch) at once,
    /// whatever the outcome: a refused request is recorded as a dispatched one is (its arguments
    /// in the probe, a span with its error).
    #[inline]
    pub(crate) fn check_to_dispatch<'a>(
        &self,
        req: Prepared<'a>,
        probe: Option<&mut RequestProbe>,
    ) -> Result<Checked<'a>, ReplyMessage> {
        let (req, reply) = match self.checked(req) {
            Ok(checked) => return Ok(checked),
            Err(refused) => refused,
        };
        if let Some(probe) = probe {
            probe.set_request(&req.id, &req.method);
            probe.capture_arguments(&req.method, req.params.as_deref());
        }
        let span = crate::observe::trace::request_span(&req);
        if !span.is_disabled() {
            crate::observe::trace::record_outcome(&span, reply.outcome);
        }
        Err(reply)
    }

    /// Serves a checked request, in a span of its own ([`observe::trace`](crate::observe::trace))
    /// when a subscriber wants one.
    pub async fn dispatch(&self, req: Checked<'_>, io: RequestIo<'_>) -> Reply {
        let span = crate::observe::trace::request_span(&req);
        if span.is_disabled() {
            return self.dispatch_here(req, io).await;
        }
        let reply =
            tracing::Instrument::instrument(self.dispatch_here(req, io), span.clone()).await;
        if let Reply::Message(m) = &reply {
            crate::observe::trace::record_outcome(&span, m.outcome);
        }
        reply
    }

    async fn dispatch_here(&self, req: Checked<'_>, mut io: RequestIo<'_>) -> Reply {
        let Checked { req, registry } = req;
        if let Some(probe) = io.probe_mut() {
            probe.set_request(&req.id, &req.method);
            probe.capture_arguments(&req.method, req.params.as_deref());
        }
        let message = match req.method {
            Method::Discover => self.discover(&req, &registry),
            Method::ListTools => self.list_tools(&req, &registry, &io.principal),
            Method::ListResources => self.list_resources(&req, &registry, &io.principal),
            Method::ListResourceTemplates => self.list_templates(&req, &registry, &io.principal),
            Method::ListPrompts => self.list_prompts(&req, &registry, &io.principal),
            Method::CallTool => self.call_tool(req, &registry, io).await,
            Method::ReadResource => self.read_resource(req, &registry, io).await,
            Method::GetPrompt => self.get_prompt(req, &registry, io).await,
            Method::Complete => self.complete(req, &registry, io).await,
            Method::SubscriptionsListen => return self.listen(req, &registry, io).await,
            Method::GetTask | Method::UpdateTask | Method::CancelTask => {
                // The extension is declared per request; without it, even an unknown task id is
                // answered with -32021 (checked before the params).
                let declared = req
                    .meta
                    .client_capabilities
                    .as_ref()
                    .is_some_and(|c| c.supports_extension(kelson_types::TASKS_EXTENSION));
                if declared {
                    self.task_method(req, io).await
                } else {
                    let e = crate::tasks::undeclared(req.method.as_str());
                    error_reply(Some(&req.id), &e, false)
                }
            }
            // `check` lets no other method through.
            ref other => {
                let e = ErrorObject::method_not_found(other.as_str());
                error_reply(Some(&req.id), &e, true)
            }
        };
        Reply::Message(message)
    }

    /// Prepares, checks and dispatches one message; `None` for messages that get no reply
    /// (notifications, responses). A convenience for transports without checks of their own, and
    /// for tests.
    ///
    /// Without a probe in `io`, observers see the message as [`Transport::InProcess`].
    pub async fn handle(&self, bytes: &[u8], mut io: RequestIo<'_>) -> Option<Reply> {
        let mut own;
        let probe = match io.probe.take() {
            Some(probe) => probe,
            None => {
                own = self.probe(Transport::InProcess);
                &mut own
            }
        };
        match self.prepare_observed(bytes, probe) {
            Incoming::Request(req) => {
                let reply = match self.check_to_dispatch(req, Some(&mut *probe)) {
                    Ok(req) => {
                        let io = RequestIo {
                            probe: Some(&mut *probe),
                            ..io
                        };
                        self.dispatch(req, io).await
                    }
                    Err(reply) => Reply::Message(reply),
                };
                if let Reply::Message(m) = &reply {
                    probe.finish(m.outcome);
                }
                Some(reply)
            }
            Incoming::Rejected(reply) => {
                probe.finish(reply.outcome);
                Some(Reply::Message(reply))
            }
            Incoming::Notification(n) => {
                probe.notification(&n.method);
                None
            }
            Incoming::Legacy(req) => {
                // Without a session (this convenience keeps none), a legacy request is refused as
                // a modern one without its envelope would be.
                let reply = self.without_session(&req);
                probe.finish(reply.outcome);
                Some(Reply::Message(reply))
            }
            Incoming::Response(response) => {
                probe.dismiss();
                self.deliver_response(&response, None, &io.principal);
                None
            }
        }
    }
}
