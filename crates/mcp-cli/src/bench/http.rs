//! The HTTP load: N keep-alive HTTP/1.1 connections, each sending its next request as soon as the
//! previous answer is read (closed loop).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, HOST};
use http::{HeaderMap, HeaderName, HeaderValue, Request, StatusCode, Uri};
use http_body_util::{BodyExt as _, Full};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use mcp_http::headers::{MCP_METHOD, MCP_NAME, MCP_PROTOCOL_VERSION};
use mcp_http::sse::SseParser;

use super::Clock;
use super::stats::{Stats, check_response};
use super::workload::Workload;

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
            bail!("mcp bench speaks plain http:// (put TLS in front of the server separately)");
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
            HeaderValue::from_static(mcp_types::LATEST_PROTOCOL_VERSION),
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

    pub(crate) async fn connect(&self) -> anyhow::Result<http1::SendRequest<Full<Bytes>>> {
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

/// How long one answer may take before the request counts as timed out and its connection is
/// dropped.
const STALL: Duration = Duration::from_secs(30);

/// How long a worker keeps trying to reconnect to a server it has lost before the run ends.
const GIVE_UP: Duration = Duration::from_secs(5);

/// Runs one connection until the clock says stop.
pub(crate) async fn worker(
    target: Arc<Target>,
    workload: Arc<Workload>,
    clock: Arc<Clock>,
) -> Stats {
    let mut stats = Stats::new();
    let mut failing_since: Option<Instant> = None;
    'reconnect: loop {
        let mut sender = match target.connect().await {
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
                break 'reconnect;
            };
            let template = workload.pick(ticket.n);
            let id = ticket.n + 1;
            let mut request = Request::post(target.uri.clone())
                .body(Full::new(template.body(id)))
                .expect("a valid request");
            let headers = request.headers_mut();
            *headers = target.base.clone();
            headers.insert(MCP_METHOD, HeaderValue::from_static(template.method));
            if let Some(name) = &template.name_header {
                headers.insert(MCP_NAME, name.clone());
            }
            let start = Instant::now();
            let outcome = tokio::time::timeout(STALL, async {
                let response = sender.send_request(request).await?;
                let status = response.status();
                let sse = response
                    .headers()
                    .get(CONTENT_TYPE)
                    .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
                let body = response.into_body().collect().await?.to_bytes();
                Ok::<_, hyper::Error>((status, sse, body))
            })
            .await;
            let took = start.elapsed();
            let measured = ticket.measured;
            clock.done(measured);
            match outcome {
                Ok(Ok((status, sse, body))) => {
                    if measured {
                        stats.record(took, classify(status, sse, &body, id), &body);
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
    stats
}

fn classify(status: StatusCode, sse: bool, body: &[u8], id: u64) -> Result<(), String> {
    if !status.is_success() {
        return match check_response(body, id) {
            Err(class) if class.starts_with("jsonrpc_") => {
                Err(format!("http_{}_{class}", status.as_u16()))
            }
            _ => Err(format!("http_{}", status.as_u16())),
        };
    }
    if !sse {
        return check_response(body, id);
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
        last = check_response(event.data.as_bytes(), id);
    }
    last
}
