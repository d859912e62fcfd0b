//! [`RequestProbe`]: one incoming message on its way to an ending, and [`ListenWatch`], the same for
//! an open listen stream.

use std::sync::Arc;
use std::time::Instant;

use kelson_jsonrpc::{Id, RawValue};
use kelson_types::Method;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::{
    CLIENT_REQUESTS, ListenRecord, NotificationRecord, RequestEra, RequestObserver, RequestOutcome,
    RequestRecord, Target, Transport, Wants,
};
use crate::transport::Outcome;

/// One incoming message, from arrival to its ending, as the observers will see it.
///
/// A transport makes one per message with [`Server::probe`](crate::Server::probe), hands it to the
/// router ([`Server::prepare_observed`](crate::Server::prepare_observed) and
/// [`RequestIo::probe`](crate::transport::RequestIo::probe)), and ends it with exactly one of
/// [`finish`](Self::finish), [`rejected`](Self::rejected), [`cancelled`](Self::cancelled),
/// [`notification`](Self::notification) or [`dismiss`](Self::dismiss). A probe dropped without an
/// ending reports its request as cancelled: that is how a dropped HTTP request future is seen.
///
/// Without observers the probe is empty and every call returns at once.
#[derive(Default)]
pub struct RequestProbe {
    on: Option<On>,
}

struct On {
    observer: Arc<dyn RequestObserver>,
    transport: Transport,
    start: Instant,
    wants: Wants,
    /// Whether `request_started` was called: the message is known to be a request.
    started: bool,
    /// The era, as [`RequestEra::from_byte`] reads it: zero (modern) unless the request turns out
    /// to be a handshake-era one, so a modern request costs nothing here.
    era: u8,
    id: Option<Id>,
    /// Whether the method is known: set once, by the first to read it.
    method_set: bool,
    /// The method; `None` for one outside the spec's whose name the observers did not ask for.
    method: Option<Method<'static>>,
    held: Held,
    arguments: Option<Box<RawValue>>,
}

/// A registered tool or prompt, as a probe sees it: a name. The registry's entries are this, so
/// that a probe keeps one by reference count, never copying its name, without knowing the registry.
pub(crate) trait Named: Send + Sync {
    /// The name the tool or prompt is registered under.
    fn name(&self) -> &str;
}

/// What the request named. Registered tools and prompts are kept by reference count, never copied.
enum Held {
    None,
    Tool(Arc<dyn Named>),
    Prompt(Arc<dyn Named>),
    UnknownTool(Box<str>),
    UnknownPrompt(Box<str>),
    Resource(Box<str>),
}

impl Held {
    fn target(&self) -> Target<'_> {
        match self {
            Held::None => Target::None,
            Held::Tool(t) => Target::Tool {
                name: t.name(),
                registered: true,
            },
            Held::Prompt(p) => Target::Prompt {
                name: p.name(),
                registered: true,
            },
            Held::UnknownTool(name) => Target::Tool {
                name,
                registered: false,
            },
            Held::UnknownPrompt(name) => Target::Prompt {
                name,
                registered: false,
            },
            Held::Resource(uri) => Target::Resource { uri },
        }
    }
}

impl std::fmt::Debug for RequestProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.on {
            None => f.write_str("RequestProbe(disabled)"),
            Some(on) => f
                .debug_struct("RequestProbe")
                .field("transport", &on.transport)
                .field("id", &on.id)
                .field("method", &on.method)
                .finish_non_exhaustive(),
        }
    }
}

impl RequestProbe {
    /// A probe that reports nothing.
    pub const fn disabled() -> Self {
        RequestProbe { on: None }
    }

    pub(crate) fn start(observer: &Arc<dyn RequestObserver>, transport: Transport) -> Self {
        RequestProbe {
            on: Some(On {
                observer: observer.clone(),
                transport,
                start: Instant::now(),
                wants: observer.wants(),
                started: false,
                era: 0,
                id: None,
                method_set: false,
                method: None,
                held: Held::None,
                arguments: None,
            }),
        }
    }

    /// Whether anything is listening.
    pub fn is_enabled(&self) -> bool {
        self.on.is_some()
    }

    /// Moves the probe out, leaving a disabled one: for a transport that hands the request to a
    /// task of its own.
    pub fn take(&mut self) -> RequestProbe {
        std::mem::take(self)
    }

    fn on(&mut self) -> Option<&mut On> {
        self.on.as_mut()
    }

    /// Records the request's id and method; the request is now in flight. Called by the router;
    /// a transport that decodes messages itself calls it too.
    pub fn set_request(&mut self, id: &Id, method: &Method<'_>) {
        let Some(on) = self.on() else { return };
        if on.method_set {
            return;
        }
        on.id = Some(id.clone());
        on.set_method(method);
        on.ensure_started();
    }

    /// Records the era the request came in. The router marks a request without the modern
    /// envelope legacy, and [`Server::legacy_dispatch`] adds its session's revision; a transport
    /// that answers `initialize` itself records the revision of the session it made, and one that
    /// finds a request is a modern client's after all says so.
    ///
    /// [`Server::legacy_dispatch`]: crate::Server::legacy_dispatch
    pub fn set_era(&mut self, era: RequestEra) {
        if let Some(on) = self.on() {
            on.era = match era {
                RequestEra::Modern => 0,
                RequestEra::Legacy { version } => RequestEra::legacy_byte(version),
            };
        }
    }

    pub(crate) fn set_id(&mut self, id: &Id) {
        if let Some(on) = self.on() {
            on.id = Some(id.clone());
        }
    }

    pub(crate) fn set_tool<T: Named + 'static>(&mut self, tool: &Arc<T>) {
        if let Some(on) = self.on() {
            on.held = Held::Tool(tool.clone());
        }
    }

    pub(crate) fn set_unknown_tool(&mut self, name: &str) {
        if let Some(on) = self.on()
            && on.wants.names
        {
            on.held = Held::UnknownTool(name.into());
        }
    }

    pub(crate) fn set_prompt<T: Named + 'static>(&mut self, prompt: &Arc<T>) {
        if let Some(on) = self.on() {
            on.held = Held::Prompt(prompt.clone());
        }
    }

    pub(crate) fn set_unknown_prompt(&mut self, name: &str) {
        if let Some(on) = self.on()
            && on.wants.names
        {
            on.held = Held::UnknownPrompt(name.into());
        }
    }

    pub(crate) fn set_resource(&mut self, uri: &str) {
        if let Some(on) = self.on()
            && on.wants.names
        {
            on.held = Held::Resource(uri.into());
        }
    }

    /// Keeps `params.arguments` of a `tools/call` or `prompts/get` when an observer asked for it.
    pub(crate) fn capture_arguments(&mut self, method: &Method<'_>, params: Option<&RawValue>) {
        #[derive(Deserialize)]
        struct Arguments<'a> {
            #[serde(borrow, default)]
            arguments: Option<&'a RawValue>,
        }
        let Some(on) = self.on() else { return };
        if !on.wants.arguments || !matches!(method, Method::CallTool | Method::GetPrompt) {
            return;
        }
        on.arguments = params
            .and_then(|raw| serde_json::from_str::<Arguments<'_>>(raw.get()).ok())
            .and_then(|a| a.arguments)
            .map(RawValue::to_owned);
    }

    /// The request ended with this reply.
    pub fn finish(&mut self, outcome: Outcome) {
        self.end(outcome.into());
    }

    /// The HTTP layer refused the message with `status` before reading it as JSON-RPC.
    /// `method_header` is the `Mcp-Method` header, if any: the only hint of the method there is.
    pub fn rejected(&mut self, status: u16, method_header: Option<&str>) {
        if let Some(on) = self.on()
            && !on.method_set
            && let Some(method) = method_header
        {
            on.set_method(&Method::parse(method));
        }
        self.end(RequestOutcome::Rejected { status });
    }

    /// The client cancelled the request; nothing was or will be sent for it.
    pub fn cancelled(&mut self) {
        self.end(RequestOutcome::Cancelled);
    }

    /// The message was a client notification with this method.
    pub fn notification(&mut self, method: &Method<'_>) {
        let Some(on) = self.on.take() else { return };
        on.observer.notification(&NotificationRecord {
            transport: on.transport,
            method,
        });
    }

    /// The message was neither a request nor a notification (a stray JSON-RPC response on
    /// stdio); nothing is reported.
    pub fn dismiss(&mut self) {
        if let Some(on) = self.on.take()
            && on.started
        {
            // A request that turned out to be something else still leaves the in-flight count.
            on.report(RequestOutcome::Cancelled);
        }
    }

    /// A listen request became a stream: the observers are told it opened, and the returned watch
    /// tells them when it closes.
    pub(crate) fn hand_to_listen(
        &mut self,
        id: &Id,
        close: &CancellationToken,
    ) -> Option<ListenWatch> {
        let mut on = self.on.take()?;
        if !on.started {
            // Only a transport that skipped `set_request` gets here; keep the pairs balanced.
            on.ensure_started();
        }
        on.observer.listen_opened(on.transport, id);
        Some(ListenWatch {
            observer: on.observer.clone(),
            transport: on.transport,
            id: id.clone(),
            start: Instant::now(),
            close: close.clone(),
        })
    }

    fn end(&mut self, outcome: RequestOutcome) {
        if let Some(mut on) = self.on.take() {
            on.ensure_started();
            on.report(outcome);
        }
    }
}

impl On {
    fn set_method(&mut self, method: &Method<'_>) {
        self.method_set = true;
        // 2026-07-28's client requests are always kept (it costs nothing); any other method only
        // when the observers asked for names.
        self.method = (CLIENT_REQUESTS.contains(method) || self.wants.names)
            .then(|| method.reborrow().into_owned());
    }

    fn ensure_started(&mut self) {
        if !self.started {
            self.started = true;
            self.observer.request_started(self.transport);
        }
    }

    fn report(self, outcome: RequestOutcome) {
        let record = RequestRecord {
            transport: self.transport,
            id: self.id.as_ref(),
            era: RequestEra::from_byte(self.era),
            method: self.method.as_ref(),
            target: self.held.target(),
            arguments: self.arguments.as_deref(),
            duration: self.start.elapsed(),
            outcome,
        };
        self.observer.request_finished(&record);
    }
}

impl Drop for RequestProbe {
    fn drop(&mut self) {
        // Dropped without an ending: the future serving the request was dropped (the HTTP client
        // went away) or a transport gave up on it. Only a known request is reported.
        if let Some(on) = self.on.take()
            && on.started
        {
            on.report(RequestOutcome::Cancelled);
        }
    }
}

/// An open listen stream, as the observers see it; dropping it reports the close.
pub(crate) struct ListenWatch {
    observer: Arc<dyn RequestObserver>,
    transport: Transport,
    id: Id,
    start: Instant,
    /// Cancelled when the server ends the stream gracefully.
    close: CancellationToken,
}

impl Drop for ListenWatch {
    fn drop(&mut self) {
        self.observer.listen_closed(&ListenRecord {
            transport: self.transport,
            id: &self.id,
            duration: self.start.elapsed(),
            graceful: self.close.is_cancelled(),
        });
    }
}
