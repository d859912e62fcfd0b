//! The client handle, its builder, connecting (with era detection), and the request core every
//! typed call goes through.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue};
use kelson_http::client::HttpClient;
use kelson_jsonrpc::{Id, RawValue};
use kelson_types::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, DiscoverResult,
    ElicitRequestFormParams, ElicitRequestURLParams, ElicitResult, Implementation, JsonObject,
    ListRootsResult, ParamHeader, RequestMeta, method_names,
};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::process::Command;
use tokio::sync::mpsc;

use crate::cache::Cache;
use crate::era::{self, Era, EraChoice, Verdict};
use crate::handlers::{Handlers, InputHandler};
use crate::request::Options;
use crate::transport::http::HttpTransport;
use crate::transport::process::{ChildProcess, Stderr};
use crate::transport::stdio::StdioTransport;
use crate::transport::{Event, Outgoing, Reply, Transport};
use crate::{Error, StartProblem};

/// After the first line on a stdio server's stdout that is not JSON-RPC, how long it has to answer
/// the era probe before the connection fails.
const NOISE_GRACE: Duration = Duration::from_secs(1);
/// After a stdio server closed its stdout, how long it has to exit for its status to be reported.
const EXIT_WAIT: Duration = Duration::from_millis(500);

/// Tunables; see the builder methods for what each one does.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub(crate) timeout: Duration,
    pub(crate) max_time: Duration,
    pub(crate) probe_timeout: Duration,
    pub(crate) max_rounds: usize,
    pub(crate) shutdown_grace: Duration,
    /// Whether every modern request declares the tasks extension.
    pub(crate) tasks: bool,
    /// The bounds of a `list_all_*` walk.
    pub(crate) list: crate::list::ListBounds,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            timeout: Duration::from_secs(60),
            max_time: Duration::from_secs(600),
            probe_timeout: Duration::from_secs(10),
            max_rounds: 8,
            shutdown_grace: Duration::from_secs(2),
            tasks: true,
            list: crate::list::ListBounds::default(),
        }
    }
}

/// Builds a [`Client`]: identity, input handlers, timeouts, cache, headers, then a `connect_*`.
pub struct ClientBuilder {
    info: Implementation,
    handlers: Handlers,
    pub(crate) config: Config,
    headers: HeaderMap,
    auth_context: String,
    stderr: Stderr,
    cache: bool,
    era: EraChoice,
    oauth: Option<crate::auth::OAuth>,
}

impl std::fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("info", &self.info)
            .field("handlers", &self.handlers)
            .field("config", &self.config)
            .field("cache", &self.cache)
            .field("era", &self.era)
            .finish_non_exhaustive()
    }
}

impl Default for ClientBuilder {
    fn default() -> Self {
        ClientBuilder {
            info: Implementation::new("kelson-client", env!("CARGO_PKG_VERSION")),
            handlers: Handlers::default(),
            config: Config::default(),
            headers: HeaderMap::new(),
            auth_context: String::new(),
            stderr: Stderr::default(),
            cache: false,
            era: EraChoice::Auto,
            oauth: None,
        }
    }
}

impl ClientBuilder {
    /// The identity sent as `clientInfo` (default: `kelson-client` and this crate's version).
    #[must_use]
    pub fn client_info(mut self, info: Implementation) -> Self {
        self.info = info;
        self
    }

    /// Answers form-mode elicitations and declares `elicitation.form`.
    #[must_use]
    pub fn on_elicit_form(
        mut self,
        handler: impl InputHandler<ElicitRequestFormParams, ElicitResult>,
    ) -> Self {
        self.handlers.elicit_form = Some(Arc::new(handler));
        self
    }

    /// Answers URL-mode elicitations and declares `elicitation.url`. The handler must show the full
    /// URL, ask for consent, and answer `accept` only after the user agreed to open it; it must never
    /// prefetch the URL (spec 2026-07-28 client/elicitation).
    #[must_use]
    pub fn on_elicit_url(
        mut self,
        handler: impl InputHandler<ElicitRequestURLParams, ElicitResult>,
    ) -> Self {
        self.handlers.elicit_url = Some(Arc::new(handler));
        self
    }

    /// Answers sampling requests (deprecated in 2026-07-28) and declares `sampling`; with
    /// `with_tools`, also `sampling.tools`, so the server may send `tools` and `toolChoice`.
    #[must_use]
    pub fn on_sampling(
        mut self,
        with_tools: bool,
        handler: impl InputHandler<CreateMessageRequestParams, CreateMessageResult>,
    ) -> Self {
        self.handlers.sampling = Some(Arc::new(handler));
        self.handlers.sampling_tools = with_tools;
        self
    }

    /// Answers roots requests (deprecated in 2026-07-28) and declares `roots`.
    #[must_use]
    pub fn on_roots(mut self, handler: impl InputHandler<(), ListRootsResult>) -> Self {
        self.handlers.roots = Some(Arc::new(handler));
        self
    }

    /// The default wait for an answer, restarted by each progress notification (default 60 s).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.config.timeout = timeout;
        self
    }

    /// The default hard maximum per request, whatever progress says (default 10 min).
    #[must_use]
    pub fn max_request_time(mut self, max_time: Duration) -> Self {
        self.config.max_time = max_time;
        self
    }

    /// How long the stdio era probe waits before taking silence for a legacy server (default 10 s).
    #[must_use]
    pub fn probe_timeout(mut self, timeout: Duration) -> Self {
        self.config.probe_timeout = timeout;
        self
    }

    /// How many `input_required` rounds one call may go through before it fails (default 8).
    #[must_use]
    pub fn max_input_rounds(mut self, rounds: usize) -> Self {
        self.config.max_rounds = rounds;
        self
    }

    /// Whether modern requests declare the tasks extension (`io.modelcontextprotocol/tasks`,
    /// default on), so that a server may answer a long `tools/call` with a task. The client then
    /// drives the task for the caller: [`Client::call_tool`] polls `tasks/get` at the task's
    /// interval, answers its input requests with the installed handlers, and returns the result as
    /// if the call had been plain. Off, no request declares it but those of the explicit task
    /// methods ([`Client::call_tool_as_task`], [`Client::get_task`], ...). Handshake-era sessions
    /// never use tasks.
    #[must_use]
    pub fn tasks(mut self, enabled: bool) -> Self {
        self.config.tasks = enabled;
        self
    }

    /// How long `close` waits after closing a child's stdin, and again after SIGTERM (default 2 s).
    #[must_use]
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.config.shutdown_grace = grace;
        self
    }

    /// Turns the TTL cache on or off (default off). When on, `discover`, the lists and
    /// `resources/read` are answered from the cache while the server's `ttlMs` allows, `private`
    /// results only within the same authorization context; listen notifications invalidate entries.
    #[must_use]
    pub fn cache(mut self, enabled: bool) -> Self {
        self.cache = enabled;
        self
    }

    /// The key of the current authorization context (for example a hash of the `Authorization`
    /// header): `private` cache entries are never shared across different keys.
    #[must_use]
    pub fn auth_context(mut self, key: impl Into<String>) -> Self {
        self.auth_context = key.into();
        self
    }

    /// OAuth for an HTTP server that requires it ([`crate::auth`]): its token goes with every
    /// request, and a 401 (or a 403 for insufficient scope) runs the flow that gets a new one.
    /// Ignored on stdio, which has no authorization.
    #[must_use]
    pub fn oauth(mut self, oauth: crate::auth::OAuth) -> Self {
        self.oauth = Some(oauth);
        self
    }

    /// A header sent on every HTTP request, such as `Authorization`. Ignored on stdio.
    #[must_use]
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.insert(name, value);
        self
    }

    /// Which era to speak (default [`EraChoice::Auto`]: probe with `server/discover`, and run the
    /// `initialize` handshake when the server turns out to be a handshake-era one).
    /// [`EraChoice::Modern`] never sends `initialize`: a server that answers the probe as a
    /// handshake-era server does fails the connection with [`Error::NotModern`].
    /// [`EraChoice::Legacy`] sends `initialize` at once, without a probe, so that a dual-era server
    /// serves a legacy session. A forced era neither uses nor changes this process's record of
    /// what an HTTP origin speaks, except that a modern server found modern is remembered.
    #[must_use]
    pub fn era(mut self, era: EraChoice) -> Self {
        self.era = era;
        self
    }

    /// Where a child server's stderr goes (default: passed through).
    #[must_use]
    pub fn stderr(mut self, stderr: Stderr) -> Self {
        self.stderr = stderr;
        self
    }

    /// Starts `command` as the server, speaking stdio, and detects its era.
    ///
    /// Its stdin and stdout are piped; stderr follows [`stderr`](Self::stderr).
    pub async fn connect_stdio(self, command: Command) -> Result<Client, Error> {
        let (child, stdout, stdin) = ChildProcess::spawn(command, self.stderr)?;
        let transport = StdioTransport::start(stdout, stdin);
        self.connect_lines(transport, Some(child)).await
    }

    /// Speaks the stdio framing over any byte stream (a socket, an in-memory pipe): `reader` is
    /// the server's output, `writer` its input.
    pub async fn connect_stream<R, W>(self, reader: R, writer: W) -> Result<Client, Error>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        self.connect_lines(StdioTransport::start(reader, writer), None)
            .await
    }

    /// Connects to a Streamable HTTP endpoint and detects its era (cached per origin), or speaks
    /// the one [`era`](Self::era) forces.
    pub async fn connect_http(self, url: &str) -> Result<Client, Error> {
        self.connect_http_client(HttpClient::new(url)?).await
    }

    /// [`connect_http`](Self::connect_http) through a client configured by the caller: its own
    /// reqwest client (proxies, TLS roots), or [`HttpClient::with_ca_file`] for a server whose
    /// certificate a private CA issued.
    pub async fn connect_http_client(self, http: HttpClient) -> Result<Client, Error> {
        let headers = self.headers.clone();
        let transport = HttpTransport::new(http, headers, self.oauth.clone());
        let origin = transport.origin();
        let choice = self.era;
        let client = self.into_client(Transport::Http(transport), None);
        if choice == EraChoice::Legacy {
            // Not remembered for the origin: a dual-era server would be taken for a legacy one by
            // the next connection that detects.
            client.inner.initialize().await?;
            return Ok(client);
        }
        match era::cached_era(&origin) {
            Some(Era::Legacy { .. })
                if choice == EraChoice::Auto && client.inner.initialize().await.is_ok() =>
            {
                return Ok(client);
            }
            Some(Era::Modern { version }) => {
                client.inner.set_era(Era::Modern { version });
                return Ok(client);
            }
            _ => {}
        }
        let probe = client.inner.probe();
        let answer = match tokio::time::timeout(client.inner.config.probe_timeout, probe).await {
            Ok(answer) => answer,
            Err(_) => Err(Error::Timeout {
                method: method_names::SERVER_DISCOVER.to_owned(),
                after: client.inner.config.probe_timeout,
                hard: true,
            }),
        };
        client
            .inner
            .decide(era::classify_http(answer), choice)
            .await?;
        era::remember_era(&origin, Some(client.era()));
        Ok(client)
    }

    async fn connect_lines(
        self,
        transport: StdioTransport,
        child: Option<ChildProcess>,
    ) -> Result<Client, Error> {
        let choice = self.era;
        let client = self.into_client(Transport::Stdio(transport), child);
        let Transport::Stdio(lines) = &client.inner.transport else {
            unreachable!("built over stdio just above")
        };
        let (outcome, noisy, probed) = if choice == EraChoice::Legacy {
            let outcome = tokio::select! {
                outcome = client.inner.initialize() => outcome,
                () = lines.noise_then(NOISE_GRACE) => Err(Error::disconnected(
                    "the server printed text that is not JSON-RPC",
                )),
            };
            let noisy = outcome.is_err() && !lines.noise().is_empty();
            (outcome, noisy, Duration::ZERO)
        } else {
            // A server that prints text on stdout gets a short grace to answer anyway, rather
            // than the whole probe timeout and then a legacy handshake it cannot answer either.
            let answer = tokio::select! {
                answer = client.inner.probe() => Some(answer),
                () = tokio::time::sleep(client.inner.config.probe_timeout) => None,
                () = lines.noise_then(NOISE_GRACE) => None,
            };
            let noisy = answer.is_none() && !lines.noise().is_empty();
            let outcome = if noisy {
                Err(Error::disconnected(
                    "the server printed text that is not JSON-RPC",
                ))
            } else {
                client
                    .inner
                    .decide(era::classify_stdio(answer), choice)
                    .await
            };
            (outcome, noisy, client.inner.config.probe_timeout)
        };
        if let Err(e) = outcome {
            let e = client.start_failure(e, noisy, probed).await;
            // Best effort: the connection is useless now.
            let _ = client.close().await;
            return Err(e);
        }
        Ok(client)
    }

    fn into_client(self, transport: Transport, child: Option<ChildProcess>) -> Client {
        let mut capabilities = self.handlers.capabilities();
        if self.config.tasks {
            capabilities = crate::tasks::declare(capabilities);
        }
        Client {
            inner: Arc::new(Inner {
                transport,
                era: Mutex::new(Era::Modern {
                    version: era::MODERN_VERSIONS[0],
                }),
                info: self.info,
                handlers: self.handlers,
                capabilities,
                config: self.config,
                next_id: AtomicI64::new(1),
                cache: self.cache.then(|| Arc::new(Cache::default())),
                auth_context: RwLock::new(self.auth_context),
                tool_headers: Mutex::new(HashMap::new()),
                discovered: Mutex::new(None),
                initialized: Mutex::new(None),
                legacy_subscriptions: tokio::sync::Mutex::new(HashMap::new()),
                child: tokio::sync::Mutex::new(child),
            }),
        }
    }
}

/// A connection to one MCP server, over stdio or Streamable HTTP, in either era.
///
/// Cloning is cheap; every clone is the same connection. Calls may run concurrently.
#[derive(Clone, Debug)]
pub struct Client {
    pub(crate) inner: Arc<Inner>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) transport: Transport,
    era: Mutex<Era>,
    pub(crate) info: Implementation,
    pub(crate) handlers: Handlers,
    pub(crate) capabilities: ClientCapabilities,
    pub(crate) config: Config,
    next_id: AtomicI64,
    pub(crate) cache: Option<Arc<Cache>>,
    auth_context: RwLock<String>,
    /// The `x-mcp-header` declarations of each tool, from the latest `tools/list` (HTTP only).
    pub(crate) tool_headers: Mutex<HashMap<String, Vec<ParamHeader>>>,
    /// The latest discover result (legacy: built from `initialize`).
    pub(crate) discovered: Mutex<Option<DiscoverResult>>,
    /// The legacy `initialize` result as received, which a legacy `discover` hands to
    /// `Request::on_result`.
    pub(crate) initialized: Mutex<Option<Box<RawValue>>>,
    /// Legacy `resources/subscribe` per URI, counted over the open listens that want it.
    pub(crate) legacy_subscriptions: tokio::sync::Mutex<HashMap<String, usize>>,
    child: tokio::sync::Mutex<Option<ChildProcess>>,
}

/// What the HTTP binding mirrors into headers for one request.
#[derive(Clone, Debug, Default)]
pub(crate) struct Hints {
    pub(crate) name: Option<String>,
    pub(crate) param_headers: Vec<(HeaderName, HeaderValue)>,
}

impl Client {
    /// A builder with the defaults.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// The era the server speaks, and the revision in use.
    pub fn era(&self) -> Era {
        self.inner.era()
    }

    /// The server's discover result as last seen, without asking again: the answer to the era
    /// probe, the legacy handshake's, or the last [`discover`](Self::discover). `None` when none
    /// came yet (an HTTP origin whose era this process knew already is not probed again).
    pub fn discovered(&self) -> Option<DiscoverResult> {
        self.inner.discovered.lock().expect("discover lock").clone()
    }

    /// The capabilities this client declares on every modern request: from its input handlers,
    /// and the tasks extension unless [`ClientBuilder::tasks`] turned it off. The handshake's
    /// `initialize` declares those of the handlers only.
    pub fn capabilities(&self) -> &ClientCapabilities {
        &self.inner.capabilities
    }

    /// Switches the authorization context used to key `private` cache entries.
    pub fn set_auth_context(&self, key: impl Into<String>) {
        *self.inner.auth_context.write().expect("auth lock") = key.into();
    }

    /// Sets a header sent on every later HTTP request (a refreshed `Authorization`, ...). Ignored on
    /// stdio.
    pub fn set_header(&self, name: HeaderName, value: HeaderValue) {
        if let Transport::Http(t) = &self.inner.transport {
            t.set_header(name, value);
        }
    }

    /// The legacy session id the server minted, on a legacy HTTP server.
    pub fn session_id(&self) -> Option<String> {
        match &self.inner.transport {
            Transport::Http(t) => t.session().and_then(|v| v.to_str().ok().map(str::to_owned)),
            Transport::Stdio(_) => None,
        }
    }

    /// What a child server wrote to stderr, when it is captured ([`Stderr::Capture`]): the last
    /// 1 MiB, complete once [`close`](Self::close) returned.
    pub async fn stderr(&self) -> Option<String> {
        self.inner.child.lock().await.as_ref()?.stderr()
    }

    /// Closes the connection. A child server gets its stdin closed, then SIGTERM, then SIGKILL, each
    /// after the grace period; its exit status is returned. Requests in flight fail. On a legacy
    /// HTTP server the session's GET stream is closed (open listens end with an error) and the
    /// session is ended with DELETE.
    pub async fn close(&self) -> Result<Option<std::process::ExitStatus>, Error> {
        match &self.inner.transport {
            Transport::Stdio(t) => t.close(),
            Transport::Http(t) => {
                t.close_standalone();
                // spec 2025-11-25 transports: a client that no longer needs a session SHOULD end it.
                if let Some(session) = t.session() {
                    let _ = t.end_session(session).await;
                }
            }
        }
        let mut child = self.inner.child.lock().await;
        match child.as_mut() {
            Some(child) => Ok(Some(
                child.shutdown(self.inner.config.shutdown_grace).await?,
            )),
            None => Ok(None),
        }
    }
}

impl Client {
    /// Says why a connection over stdio failed before it spoke MCP, with what the server printed:
    /// a server process that exited, printed text that is not JSON-RPC, or stayed silent through
    /// the probe (`probed` long, zero when the era was forced to legacy) and `initialize`, or
    /// through the probe of a connection forced to modern, becomes [`Error::ServerStart`], and is
    /// stopped. Other errors are returned as they are.
    async fn start_failure(&self, error: Error, noisy: bool, probed: Duration) -> Error {
        let Transport::Stdio(lines) = &self.inner.transport else {
            return error;
        };
        let stdout = lines.noise();
        let mut child = self.inner.child.lock().await;
        let Some(child) = child.as_mut() else {
            if noisy {
                return Error::malformed(
                    method_names::SERVER_DISCOVER,
                    format!("the server printed text that is not JSON-RPC: {stdout:?}"),
                );
            }
            return error;
        };
        let problem = match &error {
            _ if noisy => StartProblem::NotJsonRpc,
            Error::Disconnected { .. } | Error::Io(_) => {
                StartProblem::Exited(child.exited_within(EXIT_WAIT).await)
            }
            Error::Timeout { method, after, .. }
                if method == method_names::INITIALIZE && !lines.heard() =>
            {
                StartProblem::Silent(probed + *after)
            }
            Error::NotModern { .. } if !lines.heard() => StartProblem::Silent(probed),
            _ => return error,
        };
        // Of no use now: stopped at once, so that its stderr is complete.
        lines.close();
        let _ = child.shutdown(Duration::from_millis(100)).await;
        Error::ServerStart {
            command: child.command().to_owned(),
            problem,
            stdout,
            stderr_tail: child.stderr_tail(),
        }
    }
}

impl Inner {
    pub(crate) fn era(&self) -> Era {
        *self.era.lock().expect("era lock")
    }

    fn set_era(&self, era: Era) {
        *self.era.lock().expect("era lock") = era;
    }

    pub(crate) fn auth_context(&self) -> String {
        self.auth_context.read().expect("auth lock").clone()
    }

    pub(crate) fn is_http(&self) -> bool {
        matches!(self.transport, Transport::Http(_))
    }

    fn next_id(&self) -> Id {
        Id::Int(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Sends the era probe: a modern `server/discover`.
    async fn probe(&self) -> Result<Reply, Error> {
        let out = self.outgoing(
            method_names::SERVER_DISCOVER,
            JsonObject::new(),
            Hints::default(),
            &Options::default(),
        );
        let out = Outgoing {
            cancel_on_drop: false,
            ..out
        };
        let (tx, _rx) = mpsc::unbounded_channel();
        self.transport.request(out, tx).await
    }

    /// Acts on a probe's verdict: a connection forced to the modern era never falls back.
    async fn decide(&self, verdict: Verdict, choice: EraChoice) -> Result<(), Error> {
        match verdict {
            Verdict::Modern { version, discover } => {
                self.set_era(Era::Modern { version });
                *self.discovered.lock().expect("discover lock") = discover.map(|d| *d);
                Ok(())
            }
            Verdict::Legacy(answer) if choice == EraChoice::Modern => {
                Err(Error::NotModern { answer })
            }
            Verdict::Legacy(_) => self.initialize().await,
            Verdict::Fail(e) => Err(e),
        }
    }

    /// The legacy handshake: `initialize`, then `notifications/initialized`.
    async fn initialize(&self) -> Result<(), Error> {
        let id = self.next_id();
        let params = era::initialize_params(&self.info, &self.handlers.capabilities());
        let mut body = Vec::with_capacity(256);
        kelson_jsonrpc::write_request(&mut body, &id, method_names::INITIALIZE, &params)
            .expect("initialize params serialize");
        let out = Outgoing {
            id,
            method: method_names::INITIALIZE,
            body: Bytes::from(body),
            version: None,
            legacy: true,
            name: None,
            param_headers: Vec::new(),
            wants_log: false,
            cancel_on_drop: true,
        };
        let reply = self.exchange(out, &Options::default()).await?;
        let raw = reply
            .outcome
            .map_err(|e| Error::protocol(method_names::INITIALIZE, e))?;
        let (version, discover) = era::from_initialize(&raw)?;
        self.set_era(Era::Legacy { version });
        *self.discovered.lock().expect("discover lock") = Some(discover);
        *self.initialized.lock().expect("initialize lock") = Some(raw);
        match &self.transport {
            Transport::Stdio(t) => t.answer_server_requests(self.handlers.clone()),
            Transport::Http(t) => t.set_legacy(version, self.handlers.clone(), self.cache.clone()),
        }
        let body = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        self.transport
            .notify(
                method_names::NOTIFICATIONS_INITIALIZED,
                Bytes::from_static(body),
            )
            .await?;
        if let Transport::Http(t) = &self.transport {
            // spec 2025-11-25 transports: the session's GET stream carries the server's requests and
            // notifications that belong to no client request; it is in place before the first call.
            t.open_standalone(self.config.probe_timeout).await;
        }
        Ok(())
    }

    /// The `_meta` of a request: the full envelope on a modern server, only the progress token on
    /// a legacy one.
    fn meta(&self, id: &Id, options: &Options) -> Value {
        let era = self.era();
        if era.is_legacy() {
            let mut meta = JsonObject::new();
            if options.progress.is_some() {
                meta.insert("progressToken".into(), id.to_value());
            }
            return Value::Object(meta);
        }
        let capabilities = if options.declare_tasks && !self.config.tasks {
            crate::tasks::declare(self.capabilities.clone())
        } else {
            self.capabilities.clone()
        };
        let mut meta =
            RequestMeta::new(era.version(), capabilities).with_client_info(self.info.clone());
        if let Some((level, _)) = &options.log {
            meta = meta.with_log_level(*level);
        }
        if options.progress.is_some() {
            // The token of a request is its id: unique among active requests, as required.
            meta = meta.with_progress_token(id.clone());
        }
        serde_json::to_value(meta).expect("request meta serializes")
    }

    /// Encodes one request under a new id.
    pub(crate) fn outgoing(
        &self,
        method: &'static str,
        mut params: JsonObject,
        hints: Hints,
        options: &Options,
    ) -> Outgoing {
        let id = self.next_id();
        let meta = self.meta(&id, options);
        if meta.as_object().is_some_and(|m| !m.is_empty()) {
            params.insert("_meta".into(), meta);
        }
        let mut body = Vec::with_capacity(256);
        kelson_jsonrpc::write_request(&mut body, &id, method, &params)
            .expect("request params serialize");
        let era = self.era();
        Outgoing {
            id,
            method,
            body: Bytes::from(body),
            version: Some(era.version()),
            legacy: era.is_legacy(),
            name: hints.name,
            param_headers: hints.param_headers,
            wants_log: options.log.is_some(),
            cancel_on_drop: true,
        }
    }

    /// Sends one request and returns its raw result; a JSON-RPC error becomes [`Error::Protocol`].
    pub(crate) async fn send(
        &self,
        method: &'static str,
        params: JsonObject,
        hints: Hints,
        options: &Options,
    ) -> Result<Box<RawValue>, Error> {
        let out = self.outgoing(method, params, hints, options);
        let reply = self.exchange(out, options).await?;
        reply.outcome.map_err(|e| Error::protocol(method, e))
    }

    /// Runs one request under the idle timeout (reset by progress) and the hard maximum, and
    /// delivers its notifications to the call's callbacks. A timeout drops the request, which
    /// cancels it in the transport's way.
    pub(crate) async fn exchange(&self, out: Outgoing, options: &Options) -> Result<Reply, Error> {
        let method = out.method;
        let idle = options.timeout.unwrap_or(self.config.timeout);
        let hard = options.max_time.unwrap_or(self.config.max_time);
        let (tx, mut rx) = mpsc::unbounded_channel();
        let request = self.transport.request(out, tx);
        tokio::pin!(request);
        let start = tokio::time::Instant::now();
        let hard_deadline = start + hard;
        let mut idle_deadline = start + idle;
        let result = loop {
            let hard_first = hard_deadline <= idle_deadline;
            let deadline = if hard_first {
                hard_deadline
            } else {
                idle_deadline
            };
            tokio::select! {
                biased;
                result = &mut request => break result,
                Some(event) = rx.recv() => {
                    if matches!(event, Event::Progress(_)) {
                        idle_deadline = tokio::time::Instant::now() + idle;
                    }
                    deliver(event, options);
                }
                () = tokio::time::sleep_until(deadline) => {
                    return Err(Error::Timeout {
                        method: method.to_owned(),
                        after: if hard_first { hard } else { idle },
                        hard: hard_first,
                    });
                }
                // Returning drops the request, which cancels it in the transport's way.
                () = options.cancelled() => {
                    return Err(Error::Cancelled { method: method.to_owned(), task_id: None });
                }
            }
        };
        while let Ok(event) = rx.try_recv() {
            deliver(event, options);
        }
        result
    }
}

fn deliver(event: Event, options: &Options) {
    match event {
        Event::Progress(p) => {
            if let Some(callback) = &options.progress {
                callback(&p);
            }
        }
        Event::Log(m) => {
            if let Some((_, callback)) = &options.log {
                callback(&m);
            }
        }
    }
}
