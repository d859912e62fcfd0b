//! The observability settings: the flags over `[observability]` for logs, metrics and traces.

use super::http::check_path;
use super::{Env, MetricsSettings};
use crate::logging::LogFormat;
use crate::serve::ServeArgs;
use crate::serve::file::{FileConfig, ObservabilitySection};

const DEFAULT_METRICS_PATH: &str = "/metrics";

/// Logs, metrics and traces, resolved and checked.
#[derive(Debug)]
pub(crate) struct Observability {
    pub log_format: LogFormat,
    /// Log the arguments of `tools/call` and `prompts/get` (at DEBUG level of `kelson::request`):
    /// the flag or key that asked for it.
    pub log_arguments: Option<&'static str>,
    /// `GET /metrics`, when on.
    pub metrics: Option<MetricsSettings>,
    /// Where traces go (an OTLP/HTTP base URL), and the flag, key or variable that said so.
    #[cfg_attr(
        not(feature = "otel"),
        allow(dead_code, reason = "refused at resolution")
    )]
    pub otlp: Option<(String, &'static str)>,
}

/// The flags over `[observability]` (over the environment, for traces); `mcp_path` is the MCP
/// endpoint's, which the metrics may not take. Settings that do not apply go to `notes`.
pub(super) fn resolve(
    args: &ServeArgs,
    file: &FileConfig,
    mcp_path: &str,
    env: Env<'_>,
    notes: &mut Vec<String>,
) -> Result<Observability, String> {
    let observability = &file.observability;
    let log_format = args
        .log_format
        .or(observability.log_format)
        .unwrap_or_default();
    let log_arguments = if args.log_arguments {
        Some("--log-arguments")
    } else if observability.log_arguments {
        Some("observability.log_arguments")
    } else {
        None
    };
    let metrics = metrics(args, observability, mcp_path, notes)?;
    let otlp = match (&args.otlp_endpoint, &observability.otlp_endpoint) {
        (Some(url), _) => Some((url.clone(), "--otlp-endpoint")),
        (None, Some(url)) => Some((url.clone(), "observability.otlp_endpoint")),
        (None, None) => env("OTEL_EXPORTER_OTLP_ENDPOINT")
            .and_then(|v| v.into_string().ok())
            .filter(|v| !v.trim().is_empty())
            .map(|v| (v, "OTEL_EXPORTER_OTLP_ENDPOINT")),
    };
    if let Some((url, key)) = &otlp {
        match url::Url::parse(url) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {}
            _ => {
                return Err(format!(
                    "{key}: expected the collector's OTLP/HTTP base URL, such as http://127.0.0.1:4318, not {url:?}"
                ));
            }
        }
        if cfg!(not(feature = "otel")) {
            return Err(format!(
                "{key}: this kelson was built without the `otel` feature, so it cannot send traces"
            ));
        }
    }
    Ok(Observability {
        log_format,
        log_arguments,
        metrics,
        otlp,
    })
}

/// Where the metrics are served, if anywhere: on the HTTP listener (`--metrics`,
/// `observability.metrics`), or on an address of their own (`--metrics-addr`,
/// `observability.metrics_addr`), which also works with `--stdio`.
fn metrics(
    args: &ServeArgs,
    file: &ObservabilitySection,
    mcp_path: &str,
    notes: &mut Vec<String>,
) -> Result<Option<MetricsSettings>, String> {
    let addr = match (&args.metrics_addr, &file.metrics_addr) {
        (Some(addr), _) => Some((*addr, "--metrics-addr")),
        (None, Some(text)) => Some((
            crate::flags::listen_addr(text)
                .map_err(|e| format!("observability.metrics_addr: {e}"))?,
            "observability.metrics_addr",
        )),
        (None, None) => None,
    };
    let (path, path_key) = match (&args.metrics_path, &file.metrics_path) {
        (Some(p), _) => (Some(p.clone()), "--metrics-path"),
        (None, Some(p)) => (Some(p.clone()), "observability.metrics_path"),
        (None, None) => (None, "--metrics-path"),
    };
    if let Some(path) = &path {
        check_path(path, path_key, "metrics path")?;
    }
    // On the HTTP listener: asked for there, and no address of their own.
    let mut on_listener = addr.is_none() && (args.metrics || file.metrics);
    if on_listener && args.stdio {
        if args.metrics {
            return Err(
                "--metrics: with --stdio there is no HTTP listener to serve the metrics on; give \
                 them an address of their own with --metrics-addr ADDR"
                    .to_owned(),
            );
        }
        // A file shared by both ways of serving: like [http], this key is for HTTP.
        notes.push(
            "observability.metrics: not served with --stdio, which has no HTTP listener; set \
             observability.metrics_addr to serve them on an address of their own"
                .to_owned(),
        );
        on_listener = false;
    }
    if addr.is_none() && !on_listener {
        if path.is_some() && !(args.stdio && file.metrics) {
            return Err(format!(
                "{path_key}: the metrics are off; turn them on with --metrics (observability.metrics \
                 = true) or give them an address with --metrics-addr (observability.metrics_addr)"
            ));
        }
        return Ok(None);
    }
    let path = path.unwrap_or_else(|| DEFAULT_METRICS_PATH.to_owned());
    if on_listener && path == mcp_path {
        return Err(format!(
            "{path_key}: the metrics path {path:?} is the MCP endpoint's; give it another"
        ));
    }
    Ok(Some(MetricsSettings { path, addr }))
}
