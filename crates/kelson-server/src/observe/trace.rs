//! A `tracing` span per request, for distributed tracing (OpenTelemetry).
//!
//! The span's target is [`TRACE_TARGET`] and its fields follow OpenTelemetry's semantic conventions
//! for MCP: `mcp.method.name`, `jsonrpc.request.id`, `gen_ai.tool.name` (a `tools/call`),
//! `gen_ai.prompt.name` (a `prompts/get`), `mcp.resource.uri` (a `resources/read`),
//! `mcp.protocol.version`, and at the end `error.type` and `rpc.jsonrpc.error_code` when the
//! request failed. The W3C trace context the client sent in `_meta` (`traceparent`, `tracestate`)
//! is recorded as the fields of the same names, for an exporter to continue the client's trace; a
//! transport that received it in HTTP headers wraps the request in a span of its own that carries
//! it (`kelson-http`), which the request's span then has as its parent.
//!
//! Work a handler does inside the request (the SQL adapter's statements) makes child spans of it
//! through `tracing`'s current span. Without a subscriber interested in [`TRACE_TARGET`], the span
//! is disabled and costs one check.

use kelson_types::Method;
use tracing::Span;

use crate::router::{Outcome, Prepared};

/// The target of the request spans (and of child spans of the built-in adapters, under it:
/// `kelson::trace::sql`).
pub const TRACE_TARGET: &str = "kelson::trace";

/// The span of one request, disabled unless a subscriber wants it.
pub(crate) fn request_span(req: &Prepared<'_>) -> Span {
    // Given when the span is made, so that a subscriber sees the parent context at once.
    let context = |key: &str| req.meta.extra.get(key).and_then(|v| v.as_str());
    let span = tracing::info_span!(
        target: "kelson::trace",
        "mcp.request",
        mcp.method.name = %req.method,
        jsonrpc.request.id = tracing::field::Empty,
        gen_ai.tool.name = tracing::field::Empty,
        gen_ai.prompt.name = tracing::field::Empty,
        mcp.resource.uri = tracing::field::Empty,
        mcp.protocol.version = tracing::field::Empty,
        traceparent = context("traceparent"),
        tracestate = context("tracestate"),
        error.type = tracing::field::Empty,
        rpc.jsonrpc.error_code = tracing::field::Empty,
    );
    if span.is_disabled() {
        return span;
    }
    span.record("jsonrpc.request.id", tracing::field::display(&req.id));
    if let Some(name) = &req.name {
        let field = match req.method {
            Method::CallTool => Some("gen_ai.tool.name"),
            Method::GetPrompt => Some("gen_ai.prompt.name"),
            Method::ReadResource => Some("mcp.resource.uri"),
            _ => None,
        };
        if let Some(field) = field {
            span.record(field, name.as_ref());
        }
    }
    if let Some(version) = &req.meta.protocol_version {
        span.record("mcp.protocol.version", version.as_str());
    }
    span
}

/// Records how the request ended on its span.
pub(crate) fn record_outcome(span: &Span, outcome: Outcome) {
    match outcome {
        Outcome::Success | Outcome::InputRequired => {}
        Outcome::ToolError => {
            span.record("error.type", "tool_error");
        }
        Outcome::Error { code, .. } => {
            span.record("error.type", code);
            span.record("rpc.jsonrpc.error_code", code);
        }
    }
}
