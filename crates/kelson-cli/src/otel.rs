//! Traces to OpenTelemetry: the spans of target `kelson::trace` (one per request, from
//! `kelson_server::observe::trace`, and one per SQL statement under it) exported with OTLP over
//! HTTP, JSON encoding (`POST {endpoint}/v1/traces`), in batches.
//!
//! The request's span continues the client's trace: the W3C `traceparent` it sent in `_meta`, or
//! else in the HTTP headers (a `mcp.trace_context` span that `kelson-http` puts around the request,
//! which is not exported itself). Without either, a request starts a trace of its own.
//!
//! Export never blocks a request: spans go through a bounded queue (dropped and counted when it is
//! full) to one task that posts them every second or every 512 spans; a collector that is down
//! costs a warning now and then, not latency.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Subscriber, span};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

/// The span `kelson-http` opens to carry a trace context from HTTP headers.
const CONTEXT_SPAN: &str = "mcp.trace_context";
const QUEUE: usize = 4096;
const BATCH: usize = 512;
const EVERY: Duration = Duration::from_secs(1);

/// A finished span, ready to encode.
#[derive(Debug)]
struct Finished {
    trace_id: [u8; 16],
    span_id: [u8; 8],
    parent: Option<[u8; 8]>,
    name: String,
    kind: u8,
    start: u64,
    end: u64,
    attributes: Vec<(String, Value)>,
    trace_state: Option<String>,
}

/// What the layer keeps of an open span.
struct Open {
    trace_id: [u8; 16],
    span_id: [u8; 8],
    parent: Option<[u8; 8]>,
    trace_state: Option<String>,
    start: u64,
    attributes: Vec<(String, Value)>,
    /// A carrier of an HTTP trace context: its children continue it; it is not exported.
    carrier: bool,
}

/// The tracing layer; spans reach [`run_exporter`] through its queue.
pub(crate) struct OtelLayer {
    queue: mpsc::Sender<Finished>,
    dropped: Arc<AtomicU64>,
}

/// The exporting side: the queue's receiving end and where to post.
pub(crate) struct Exporter {
    queue: mpsc::Receiver<Finished>,
    endpoint: String,
    service: String,
    dropped: Arc<AtomicU64>,
}

/// A layer and the exporter that posts what it collects to `endpoint` (the collector's base URL,
/// such as `http://127.0.0.1:4318`) as service `service`.
pub(crate) fn pipeline(endpoint: &str, service: &str) -> (OtelLayer, Exporter) {
    let (tx, rx) = mpsc::channel(QUEUE);
    let dropped = Arc::new(AtomicU64::new(0));
    let endpoint = format!("{}/v1/traces", endpoint.trim_end_matches('/'));
    (
        OtelLayer {
            queue: tx,
            dropped: dropped.clone(),
        },
        Exporter {
            queue: rx,
            endpoint,
            service: service.to_owned(),
            dropped,
        },
    )
}

fn now_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

fn random<const N: usize>() -> [u8; N] {
    loop {
        let mut bytes = [0u8; N];
        getrandom::fill(&mut bytes).expect("the operating system provides random bytes");
        // All-zero ids are invalid in W3C trace context.
        if bytes.iter().any(|b| *b != 0) {
            return bytes;
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>` (W3C Trace Context, version 00; later
/// versions keep this prefix). Invalid or all-zero ids give `None`.
pub(crate) fn parse_traceparent(text: &str) -> Option<([u8; 16], [u8; 8])> {
    let text = text.trim();
    let mut parts = text.split('-');
    let version = parts.next()?;
    let trace = parts.next()?;
    let parent = parts.next()?;
    let flags = parts.next()?;
    if version.len() != 2 || version == "ff" || trace.len() != 32 || parent.len() != 16 {
        return None;
    }
    if flags.len() != 2 || (version == "00" && parts.next().is_some()) {
        return None;
    }
    let lower_hex = |s: &str| {
        s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    if ![version, trace, parent, flags].iter().all(|s| lower_hex(s)) {
        return None;
    }
    let mut trace_id = [0u8; 16];
    let mut span_id = [0u8; 8];
    for (i, byte) in trace_id.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&trace[2 * i..2 * i + 2], 16).ok()?;
    }
    for (i, byte) in span_id.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&parent[2 * i..2 * i + 2], 16).ok()?;
    }
    if trace_id == [0; 16] || span_id == [0; 8] {
        return None;
    }
    Some((trace_id, span_id))
}

/// Collects a span's fields as OTLP attributes.
#[derive(Default)]
struct Fields(Vec<(String, Value)>);

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push((field.name().to_owned(), Value::from(value)));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.push((field.name().to_owned(), Value::from(value)));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.push((field.name().to_owned(), Value::from(value)));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.push((field.name().to_owned(), Value::from(value)));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .push((field.name().to_owned(), Value::from(format!("{value:?}"))));
    }
}

impl Fields {
    fn take(&mut self, name: &str) -> Option<Value> {
        let at = self.0.iter().position(|(k, _)| k == name)?;
        Some(self.0.remove(at).1)
    }
}

fn merge(into: &mut Vec<(String, Value)>, from: Vec<(String, Value)>) {
    for (key, value) in from {
        match into.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => into.push((key, value)),
        }
    }
}

impl<S> Layer<S> for OtelLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        let carrier = attrs.metadata().name() == CONTEXT_SPAN;
        let own_parent = fields
            .take("traceparent")
            .and_then(|v| v.as_str().and_then(parse_traceparent));
        let own_state = fields
            .take("tracestate")
            .and_then(|v| v.as_str().map(str::to_owned))
            .filter(|s| !s.is_empty());
        // The nearest enclosing span this layer keeps, if any.
        let enclosing = span.parent().and_then(|p| {
            let ext = p.extensions();
            ext.get::<Open>().map(|o| {
                (
                    o.trace_id,
                    o.span_id,
                    o.parent,
                    o.carrier,
                    o.trace_state.clone(),
                )
            })
        });
        let (trace_id, parent, trace_state) = match (own_parent, enclosing) {
            // The client's context in `_meta` wins.
            (Some((trace, parent)), _) => (trace, Some(parent), own_state),
            // A carrier's children continue the context it carries.
            (None, Some((trace, _, parent, true, state))) => (trace, parent, state),
            (None, Some((trace, span_id, _, false, state))) => (trace, Some(span_id), state),
            (None, None) => (random(), None, None),
        };
        let open = Open {
            trace_id,
            span_id: random(),
            parent,
            trace_state,
            start: now_nanos(),
            attributes: fields.0,
            carrier,
        };
        span.extensions_mut().insert(open);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut fields = Fields::default();
        values.record(&mut fields);
        if let Some(open) = span.extensions_mut().get_mut::<Open>() {
            merge(&mut open.attributes, fields.0);
        }
    }

    fn on_close(&self, id: span::Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let Some(open) = span.extensions_mut().remove::<Open>() else {
            return;
        };
        if open.carrier {
            return;
        }
        let metadata = span.metadata();
        let (name, kind) = if metadata.name() == "mcp.request" {
            // OpenTelemetry's MCP conventions: "{mcp.method.name} {target}", a server span.
            let attr = |k: &str| {
                open.attributes
                    .iter()
                    .find(|(key, _)| key == k)
                    .and_then(|(_, v)| v.as_str())
            };
            let method = attr("mcp.method.name").unwrap_or("mcp.request");
            let target = attr("gen_ai.tool.name")
                .or_else(|| attr("gen_ai.prompt.name"))
                .or_else(|| attr("mcp.resource.uri"));
            let name = match target {
                Some(t) => format!("{method} {t}"),
                None => method.to_owned(),
            };
            (name, 2)
        } else if metadata.target().starts_with("kelson::trace::sql") {
            // A call to the database: a client span.
            (metadata.name().to_owned(), 3)
        } else {
            (metadata.name().to_owned(), 1)
        };
        let finished = Finished {
            trace_id: open.trace_id,
            span_id: open.span_id,
            parent: open.parent,
            name,
            kind,
            start: open.start,
            end: now_nanos(),
            attributes: open.attributes,
            trace_state: open.trace_state,
        };
        if self.queue.try_send(finished).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn attribute(key: &str, value: &Value) -> Value {
    let value = match value {
        Value::Bool(b) => json!({"boolValue": b}),
        Value::Number(n) if n.is_i64() || n.is_u64() => json!({"intValue": n.to_string()}),
        Value::Number(n) => json!({"doubleValue": n.as_f64()}),
        Value::String(s) => json!({"stringValue": s}),
        other => json!({"stringValue": other.to_string()}),
    };
    json!({"key": key, "value": value})
}

/// The OTLP/JSON body of one export request.
fn encode(service: &str, spans: &[Finished]) -> Value {
    let spans: Vec<Value> = spans
        .iter()
        .map(|s| {
            let failed = s
                .attributes
                .iter()
                .find(|(k, _)| k == "error.type")
                .map(|(_, v)| v.as_str().map_or_else(|| v.to_string(), str::to_owned));
            let mut span = json!({
                "traceId": hex(&s.trace_id),
                "spanId": hex(&s.span_id),
                "name": s.name,
                "kind": s.kind,
                "startTimeUnixNano": s.start.to_string(),
                "endTimeUnixNano": s.end.to_string(),
                "attributes": s.attributes.iter().map(|(k, v)| attribute(k, v)).collect::<Vec<_>>(),
                "status": match &failed {
                    Some(kind) => json!({"code": 2, "message": kind}),
                    None => json!({"code": 0}),
                },
            });
            if let Some(parent) = &s.parent {
                span["parentSpanId"] = hex(parent).into();
            }
            if let Some(state) = &s.trace_state {
                span["traceState"] = state.clone().into();
            }
            span
        })
        .collect();
    json!({
        "resourceSpans": [{
            "resource": {"attributes": [
                attribute("service.name", &Value::from(service)),
                attribute("telemetry.sdk.name", &Value::from("kelson")),
                attribute("telemetry.sdk.language", &Value::from("rust")),
                attribute("telemetry.sdk.version", &Value::from(env!("CARGO_PKG_VERSION"))),
            ]},
            "scopeSpans": [{
                "scope": {"name": "kelson", "version": env!("CARGO_PKG_VERSION")},
                "spans": spans,
            }],
        }],
    })
}

/// Posts batches until the layer is gone (the process ends).
pub(crate) async fn run_exporter(mut exporter: Exporter) {
    let http = match reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
    {
        Ok(client) => client,
        Err(e) => {
            tracing::warn!(error = %e, "cannot make the OTLP client; traces are not exported");
            return;
        }
    };
    let mut failures: u64 = 0;
    let mut batch: Vec<Finished> = Vec::with_capacity(BATCH);
    let mut reported_drops = 0;
    loop {
        let deadline = tokio::time::sleep(EVERY);
        tokio::pin!(deadline);
        let mut open = true;
        while batch.len() < BATCH {
            tokio::select! {
                () = &mut deadline => break,
                span = exporter.queue.recv() => match span {
                    Some(span) => batch.push(span),
                    None => { open = false; break; }
                },
            }
        }
        if !batch.is_empty() {
            let body = encode(&exporter.service, &batch);
            let sent = http
                .post(&exporter.endpoint)
                .header("content-type", "application/json")
                .body(body.to_string())
                .send()
                .await;
            let error = match sent {
                Ok(r) if r.status().is_success() => None,
                Ok(r) => Some(format!("HTTP {}", r.status())),
                Err(e) => Some(e.to_string()),
            };
            if let Some(error) = error {
                failures += 1;
                if failures == 1 || failures.is_multiple_of(60) {
                    tracing::warn!(
                        endpoint = %exporter.endpoint,
                        error,
                        spans = batch.len(),
                        "could not export traces; they are dropped"
                    );
                }
            } else {
                failures = 0;
            }
            batch.clear();
        }
        let dropped = exporter.dropped.load(Ordering::Relaxed);
        if dropped > reported_drops {
            tracing::warn!(
                dropped = dropped - reported_drops,
                "spans were dropped: the export queue was full"
            );
            reported_drops = dropped;
        }
        if !open {
            return;
        }
    }
}

/// For tests: the attributes of an encoded span by key.
#[cfg(test)]
fn attributes_of(span: &Value) -> std::collections::HashMap<String, Value> {
    span["attributes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["key"].as_str().unwrap().to_owned(), a["value"].clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use tracing_subscriber::layer::SubscriberExt as _;

    use super::*;

    #[test]
    fn traceparent_is_read_strictly() {
        let (trace, parent) =
            parse_traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01").unwrap();
        assert_eq!(hex(&trace), "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(hex(&parent), "b7ad6b7169203331");
        for bad in [
            "",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
            "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
            "00-0af7651916cd43dd8448eb211c8031-b7ad6b7169203331-01",
        ] {
            assert!(parse_traceparent(bad).is_none(), "{bad}");
        }
        // A later version may add fields after the flags.
        assert!(
            parse_traceparent("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-xyz")
                .is_some()
        );
    }

    #[test]
    fn spans_continue_the_callers_trace_and_nest() {
        let (layer, mut exporter) = pipeline("http://127.0.0.1:1", "test");
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, || {
            let carrier = tracing::info_span!(
                target: "kelson::trace",
                "mcp.trace_context",
                traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
                tracestate = "k=v",
            );
            let _c = carrier.enter();
            let request = tracing::info_span!(
                target: "kelson::trace",
                "mcp.request",
                mcp.method.name = "tools/call",
                gen_ai.tool.name = "query",
                error.type = tracing::field::Empty,
            );
            let _r = request.enter();
            {
                let sql = tracing::info_span!(target: "kelson::trace::sql", "sql.statement", db.system.name = "sqlite");
                let _s = sql.enter();
            }
            request.record("error.type", "tool_error");
        });
        let mut spans = Vec::new();
        while let Ok(s) = exporter.queue.try_recv() {
            spans.push(s);
        }
        // The carrier is not exported; the request and the statement are, in one trace.
        assert_eq!(spans.len(), 2, "{spans:?}");
        let body = encode("test", &spans);
        let out = body["resourceSpans"][0]["scopeSpans"][0]["spans"]
            .as_array()
            .unwrap();
        let sql = &out[0];
        let request = &out[1];
        assert_eq!(request["name"], "tools/call query");
        assert_eq!(request["kind"], 2);
        assert_eq!(request["traceId"], "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(request["parentSpanId"], "b7ad6b7169203331");
        assert_eq!(request["traceState"], "k=v");
        assert_eq!(request["status"]["code"], 2);
        assert_eq!(
            attributes_of(request)["gen_ai.tool.name"],
            json!({"stringValue": "query"})
        );
        assert_eq!(sql["name"], "sql.statement");
        assert_eq!(sql["kind"], 3);
        assert_eq!(sql["traceId"], request["traceId"]);
        assert_eq!(sql["parentSpanId"], request["spanId"]);
        assert_eq!(sql["status"]["code"], 0);
    }
}
