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

use super::stats::{Stats, check_response};
use super::workload::Workload;
use super::{Clock, Phase};

/// Where to send requests.
pub(crate) struct Target {
    addr: String,
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

    async fn connect(&self) -> anyhow::Result<http1::SendRequest<Full<Bytes>>> {
        let stream = tokio::net::TcpStream::connect(&self.addr)
            .await
            .with_context(|| format!("connecting to {}", self.addr))?;
        stream.set_nodelay(true)?;
        let (sender, conn) = http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(sender)
    }
}

/// Runs one connection until the clock says stop.
pub(crate) async fn worker(
    target: Arc<Target>,
    workload: Arc<Workload>,
    clock: Arc<Clock>,
) -> Stats {
    let mut stats = Stats::new();
    'reconnect: loop {
        let mut sender = match target.connect().await {
            Ok(s) => s,
            Err(_) => {
                if clock.phase(Instant::now()) != Phase::Warmup {
                    stats.error("connect");
                }
                if clock.stopped() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        loop {
            let Some(n) = clock.next() else {
                break 'reconnect;
            };
            let template = workload.pick(n);
            let id = n + 1;
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
            let outcome = match sender.send_request(request).await {
                Ok(response) => {
                    let status = response.status();
                    let sse = response
                        .headers()
                        .get(CONTENT_TYPE)
                        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
                    match response.into_body().collect().await {
                        Ok(body) => Some(classify(status, sse, &body.to_bytes(), id)),
                        Err(_) => None,
                    }
                }
                Err(_) => None,
            };
            let took = start.elapsed();
            let measured = clock.phase(start) == Phase::Measure;
            match outcome {
                Some(result) => {
                    if measured {
                        stats.record(took, result);
                    }
                    clock.done(measured);
                }
                None => {
                    if measured {
                        stats.record(took, Err("transport".to_owned()));
                    }
                    clock.done(measured);
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
