//! The HTTP load: N keep-alive HTTP/1.1 connections, each sending its next request as soon as the
//! previous answer is read (closed loop). A legacy server gets the handshake once per connection
//! first, and each connection keeps the session the server gave it (`Mcp-Session-Id`), which it
//! ends with `DELETE` when the run is over.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, HOST};
use http::{HeaderMap, HeaderName, HeaderValue, Request, StatusCode, Uri};
use http_body_util::{BodyExt as _, Full};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use kelson_http::headers::{MCP_METHOD, MCP_NAME, MCP_PROTOCOL_VERSION, MCP_SESSION_ID};
use kelson_http::sse::SseParser;
use kelson_types::method_names;

use super::Clock;
use super::era::{self, Failure, Found, Protocol};
use super::stats::{Stats, check_response};
use super::tools::{self, Listed, Unlisted};
use super::workload::{self, Workload};

/// One connection's sender.
pub(crate) type Sender = http1::SendRequest<Full<Bytes>>;

/// The headers of one connection's requests: the modern revision, or a legacy session's.
#[derive(Clone, Debug)]
pub(crate) struct Session {
    headers: HeaderMap,
    legacy: bool,
    /// The `Mcp-Session-Id` the server gave, to end the session with.
    id: Option<HeaderValue>,
}

/// A whole answer: its status and headers, whether it is an event stream, and the body.
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    sse: bool,
    body: Bytes,
}

/// Sends one request and reads all of its answer.
async fn exchange(
    sender: &mut Sender,
    request: Request<Full<Bytes>>,
) -> Result<Answer, hyper::Error> {
    let response = sender.send_request(request).await?;
    let status = response.status();
    let sse = response
        .headers()
        .get(CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    let (parts, body) = response.into_parts();
    let body = body.collect().await?.to_bytes();
    Ok(Answer {
        status,
        headers: parts.headers,
        sse,
        body,
    })
}

/// The JSON-RPC message that answers a request: the body, or the last event of a stream that is
/// not a notification or a request of the server.
fn message_of(sse: bool, body: &[u8]) -> Option<Vec<u8>> {
    if !sse {
        return (!body.is_empty()).then(|| body.to_vec());
    }
    let mut parser = SseParser::new();
    parser.feed(body).ok()?;
    let mut last = None;
    while let Some(event) = parser.next_event() {
        if !event.data.contains("\"method\"") {
            last = Some(event.data.into_bytes());
        }
    }
    last
}

/// How long the era probe waits for its answer.
const PROBE_WAIT: Duration = Duration::from_secs(10);

/// Where to send requests.
pub(crate) struct Target {
    pub(crate) addr: String,
    uri: Uri,
    base: HeaderMap,
}

impl Target {
    pub(crate) fn parse(url: &str, extra: &[(HeaderName, HeaderValue)]) -> anyhow::Result<Self> {
        let uri: Uri = url
            .parse()
            .with_context(|| format!("invalid URL {url:?}"))?;
        if uri.scheme_str() != Some("http") {
            bail!("kelson bench speaks plain http:// (put TLS in front of the server separately)");
        }
        let authority = uri.authority().context("the URL has no host")?.clone();
        let port = authority.port_u16().unwrap_or(80);
        let addr = format!("{}:{port}", authority.host().trim_matches(['[', ']']));
        let mut base = HeaderMap::new();
        base.insert(HOST, HeaderValue::from_str(authority.as_str())?);
        base.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        base.insert(
            ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        base.insert(
            MCP_PROTOCOL_VERSION,
            HeaderValue::from_static(kelson_types::LATEST_PROTOCOL_VERSION),
        );
        for (k, v) in extra {
            base.append(k.clone(), v.clone());
        }
        let path = uri
            .path_and_query()
            .map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned());
        Ok(Target {
            addr,
            uri: path.parse()?,
            base,
        })
    }

    pub(crate) async fn connect(&self) -> anyhow::Result<Sender> {
        let stream = tokio::time::timeout(STALL, tokio::net::TcpStream::connect(&self.addr))
            .await
            .map_err(|_| anyhow::anyhow!("no answer within {} s", STALL.as_secs()))?
            .with_context(|| format!("cannot connect to {}", self.addr))?;
        stream.set_nodelay(true)?;
        let (sender, conn) = http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(sender)
    }
}

impl Target {
    fn post(&self, body: Bytes, headers: HeaderMap) -> Request<Full<Bytes>> {
        let mut request = Request::post(self.uri.clone())
            .body(Full::new(body))
            .expect("a valid request");
        *request.headers_mut() = headers;
        request
    }

    /// The headers of a modern connection.
    pub(crate) fn modern(&self) -> Session {
        Session {
            headers: self.base.clone(),
            legacy: false,
            id: None,
        }
    }

    /// Asks the server's era once, on a connection of its own, with a modern `server/discover`.
    pub(crate) async fn probe(&self) -> anyhow::Result<Found> {
        let mut sender = self.connect().await?;
        let mut headers = self.base.clone();
        headers.insert(
            MCP_METHOD,
            HeaderValue::from_static(method_names::SERVER_DISCOVER),
        );
        let request = self.post(workload::discover()?.body(era::PROBE_ID), headers);
        let answer = tokio::time::timeout(PROBE_WAIT, exchange(&mut sender, request))
            .await
            .map_err(|_| {
                anyhow::anyhow!(
                    "no answer to server/discover within {} s",
                    PROBE_WAIT.as_secs()
                )
            })?
            .context(method_names::SERVER_DISCOVER)?;
        let message = message_of(answer.sse, &answer.body);
        Ok(era::classify_http(answer.status, message.as_deref()))
    }

    /// The tools the server lists (every page, up to [`tools::MAX_PAGES`]) on `session`, on a
    /// connection of its own.
    pub(crate) async fn tools(&self, session: &Session) -> Result<Listed, Unlisted> {
        let other = |e: &dyn std::fmt::Display| Unlisted::Other(format!("tools/list: {e}"));
        let mut sender = self
            .connect()
            .await
            .map_err(|e| other(&format_args!("{e:#}")))?;
        let mut listed = Listed::default();
        let mut cursor: Option<String> = None;
        for page in 0..tools::MAX_PAGES {
            let mut headers = session.headers.clone();
            if !session.legacy {
                headers.insert(
                    MCP_METHOD,
                    HeaderValue::from_static(method_names::TOOLS_LIST),
                );
            }
            let body = tools::request(page, cursor.as_deref(), session.legacy);
            let request = self.post(body, headers);
            let answer = tokio::time::timeout(PROBE_WAIT, exchange(&mut sender, request))
                .await
                .map_err(|_| other(&"no answer"))?
                .map_err(|e| other(&format_args!("{e:#}")))?;
            let message = message_of(answer.sse, &answer.body).ok_or_else(|| {
                other(&format_args!(
                    "HTTP {} without a JSON-RPC answer",
                    answer.status
                ))
            })?;
            match listed.add(&message)? {
                Some(next) => cursor = Some(next),
                None => {
                    listed.complete = true;
                    break;
                }
            }
        }
        Ok(listed)
    }

    /// The legacy handshake on `sender`: `initialize` (without `MCP-Protocol-Version`, which
    /// comes after it), then `notifications/initialized` on the session the server gave, if any.
    pub(crate) async fn handshake(
        &self,
        sender: &mut Sender,
    ) -> Result<(Protocol, Session), Failure> {
        let transport =
            |what: &str, e: &dyn std::fmt::Display| Failure::Transport(format!("{what}: {e}"));
        let mut headers = self.base.clone();
        headers.remove(MCP_PROTOCOL_VERSION);
        let body = workload::initialize()
            .map_err(|e| transport(method_names::INITIALIZE, &e))?
            .body(era::INITIALIZE_ID);
        let answer = tokio::time::timeout(STALL, exchange(sender, self.post(body, headers)))
            .await
            .map_err(|_| transport(method_names::INITIALIZE, &"no answer within 30 s"))?
            .map_err(|e| transport(method_names::INITIALIZE, &e))?;
        let message = message_of(answer.sse, &answer.body);
        if !answer.status.is_success() {
            // A JSON-RPC error on a 4xx is the server's word on the request; any other refusal,
            // and a server in trouble (5xx, "too many sessions"), the exchange's.
            if !answer.status.is_server_error()
                && let Some(error) = message.as_deref().and_then(era::jsonrpc_error)
            {
                return Err(Failure::Protocol(format!(
                    "initialize: {error} (HTTP {})",
                    answer.status.as_u16()
                )));
            }
            let sample = String::from_utf8_lossy(&answer.body[..answer.body.len().min(300)])
                .trim()
                .to_owned();
            // The hint the load would give for the same answer (a wrong path, authorization).
            let hint = super::stats::hint(&format!("http_{}", answer.status.as_u16()), &sample)
                .map(|h| format!("; {h}"))
                .unwrap_or_default();
            return Err(transport(
                method_names::INITIALIZE,
                &format_args!("HTTP {}: {sample}{hint}", answer.status),
            ));
        }
        let version = era::initialized(message.as_deref().unwrap_or_default())?;
        let id = answer.headers.get(MCP_SESSION_ID).cloned();
        let mut headers = self.base.clone();
        headers.insert(
            MCP_PROTOCOL_VERSION,
            HeaderValue::from_str(&version).expect("a known revision is a header value"),
        );
        if let Some(id) = &id {
            headers.insert(MCP_SESSION_ID, id.clone());
        }
        let request = self.post(Bytes::from_static(workload::INITIALIZED), headers.clone());
        let answer = tokio::time::timeout(STALL, exchange(sender, request))
            .await
            .map_err(|_| {
                transport(
                    method_names::NOTIFICATIONS_INITIALIZED,
                    &"no answer within 30 s",
                )
            })?
            .map_err(|e| transport(method_names::NOTIFICATIONS_INITIALIZED, &e))?;
        if !answer.status.is_success() {
            return Err(transport(
                method_names::NOTIFICATIONS_INITIALIZED,
                &format_args!("HTTP {}", answer.status),
            ));
        }
        let protocol = Protocol {
            legacy: true,
            version,
        };
        let session = Session {
            headers,
            legacy: true,
            id,
        };
        Ok((protocol, session))
    }

    /// Ends a legacy session (spec 2025-11-25 transports: a client that no longer needs it SHOULD),
    /// on `sender` when it is still usable; best effort, briefly.
    pub(crate) async fn end(&self, sender: Option<Sender>, session: &Session) {
        if session.id.is_none() {
            return;
        }
        let ending = async {
            let mut sender = match sender {
                Some(s) => s,
                None => self.connect().await?,
            };
            let mut request = Request::delete(self.uri.clone())
                .body(Full::new(Bytes::new()))
                .expect("a valid request");
            *request.headers_mut() = session.headers.clone();
            sender.send_request(request).await?;
            Ok::<_, anyhow::Error>(())
        };
        let _ = tokio::time::timeout(Duration::from_secs(2), ending).await;
    }
}

/// How long one answer may take before the request counts as timed out and its connection is
/// dropped.
const STALL: Duration = Duration::from_secs(30);

/// How long a worker keeps trying to reconnect to a server it has lost before the run ends.
const GIVE_UP: Duration = Duration::from_secs(5);

/// Runs one connection until the clock says stop, starting on `first` when the handshake left
/// one open. A connection that breaks is opened again, on the same session.
pub(crate) async fn worker(
    target: Arc<Target>,
    workload: Arc<Workload>,
    clock: Arc<Clock>,
    session: Session,
    first: Option<Sender>,
) -> Stats {
    let mut stats = Stats::new();
    let mut failing_since: Option<Instant> = None;
    let mut idle = first;
    'reconnect: loop {
        let connected = match idle.take() {
            Some(s) => Ok(s),
            None => target.connect().await,
        };
        let mut sender = match connected {
            Ok(s) => {
                failing_since = None;
                s
            }
            Err(e) => {
                let now = Instant::now();
                if !clock.in_warmup(now) {
                    stats.error(None, "connect", &format_args!("{e:#}"));
                }
                let since = *failing_since.get_or_insert(now);
                if now.duration_since(since) >= GIVE_UP {
                    clock.abort(format!(
                        "lost the server: connecting to {} failed for {} s ({e:#})",
                        target.addr,
                        GIVE_UP.as_secs()
                    ));
                }
                if clock.stopped() || clock.expired() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        loop {
            let Some(ticket) = clock.next() else {
                idle = Some(sender);
                break 'reconnect;
            };
            let template = workload.pick(ticket.n);
            let id = ticket.n + 1;
            let mut headers = session.headers.clone();
            // The headers that mirror the body are the modern era's.
            if !session.legacy {
                headers.insert(MCP_METHOD, HeaderValue::from_static(template.method));
                if let Some(name) = &template.name_header {
                    headers.insert(MCP_NAME, name.clone());
                }
                for (name, value) in &template.param_headers {
                    headers.insert(name.clone(), value.clone());
                }
            }
            let request = target.post(template.body(id), headers);
            let start = Instant::now();
            let outcome = tokio::time::timeout(STALL, exchange(&mut sender, request)).await;
            let took = start.elapsed();
            let measured = ticket.measured;
            clock.done(measured);
            match outcome {
                Ok(Ok(answer)) => {
                    if measured {
                        let outcome =
                            classify(answer.status, answer.sse, &answer.body, id, session.legacy);
                        stats.record(took, outcome, &answer.body);
                    }
                }
                Ok(Err(e)) => {
                    if measured {
                        stats.error(Some(took), "transport", &e);
                    }
                    continue 'reconnect;
                }
                Err(_) => {
                    if measured {
                        stats.error(Some(took), "timeout", &"no answer within 30 s");
                    }
                    continue 'reconnect;
                }
            }
        }
    }
    target.end(idle, &session).await;
    stats
}

fn classify(
    status: StatusCode,
    sse: bool,
    body: &[u8],
    id: u64,
    legacy: bool,
) -> Result<(), String> {
    if !status.is_success() {
        return match check_response(body, id, legacy) {
            Err(class) if class.starts_with("jsonrpc_") => {
                Err(format!("http_{}_{class}", status.as_u16()))
            }
            _ => Err(format!("http_{}", status.as_u16())),
        };
    }
    if !sse {
        return check_response(body, id, legacy);
    }
    // A streamed answer: notifications, then the response.
    let mut parser = SseParser::new();
    if parser.feed(body).is_err() {
        return Err("invalid_sse".to_owned());
    }
    let mut last = Err("no_response_in_stream".to_owned());
    while let Some(event) = parser.next_event() {
        if event.data.contains("\"method\"") {
            continue;
        }
        last = check_response(event.data.as_bytes(), id, legacy);
    }
    last
}
