//! Logs on stderr, for every command: `KELSON_LOG` is the filter (`tracing_subscriber::EnvFilter`
//! syntax), the command picks the default and the format.
//!
//! On stdio, stdout carries only protocol messages, so logs always go to stderr.

mod limit;

use serde::Deserialize;
use tracing_log::AsLog as _;
use tracing_subscriber::EnvFilter;

/// The environment variable that holds the log filter.
pub(crate) const FILTER_VAR: &str = "KELSON_LOG";

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub(crate) enum LogFormat {
    /// Human-readable lines: time, level, target, message and `key=value` fields.
    #[default]
    Text,
    /// One JSON object per line, the event's fields at the top level beside `timestamp`,
    /// `level`, `target` and `message`.
    Json,
}

/// Installs the global subscriber: `KELSON_LOG` when it is set and valid, else `default_filter`. An
/// invalid `KELSON_LOG` is reported (as a warning, once the subscriber is there) and not used.
pub(crate) fn init(default_filter: &str, format: LogFormat) {
    init_with(
        default_filter,
        format,
        None::<tracing_subscriber::layer::Identity>,
    );
}

/// [`init`], with `traces` beside the log lines: a layer that sees only the spans of target
/// `kelson::trace` (requests and SQL statements, for OpenTelemetry), which are never log lines.
pub(crate) fn init_with<L>(default_filter: &str, format: LogFormat, traces: Option<L>)
where
    L: tracing_subscriber::Layer<tracing_subscriber::Registry> + Send + Sync + 'static,
{
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;

    let (filter, invalid) = match std::env::var(FILTER_VAR) {
        Ok(text) if !text.trim().is_empty() => match EnvFilter::try_new(&text) {
            Ok(filter) => (filter, None),
            Err(e) => (EnvFilter::new(default_filter), Some(e)),
        },
        _ => (EnvFilter::new(default_filter), None),
    };
    let filter = filter.add_directive("kelson::trace=off".parse().expect("a valid directive"));
    let traces = traces.map(|layer| {
        layer.with_filter(
            tracing_subscriber::filter::Targets::new()
                .with_target("kelson::trace", tracing::Level::INFO),
        )
    });
    let registry = tracing_subscriber::registry().with(traces);
    match format {
        LogFormat::Text => {
            // Colour only on a terminal (and not under NO_COLOR): logs redirected to a file or a
            // journal stay plain text.
            let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr())
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
            let lines = tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(ansi)
                .with_filter(filter);
            tracing::subscriber::set_global_default(registry.with(lines))
                .expect("the log subscriber is installed once");
        }
        LogFormat::Json => {
            let lines = tracing_subscriber::fmt::layer()
                .json()
                .flatten_event(true)
                .with_current_span(false)
                .with_span_list(false)
                .with_writer(std::io::stderr)
                .with_filter(filter);
            tracing::subscriber::set_global_default(registry.with(lines))
                .expect("the log subscriber is installed once");
        }
    }
    // Libraries that log through `log` (notify, for one) reach the same subscriber, each call
    // site at a bounded rate. Set after the subscriber, whose most verbose level it copies.
    if log::set_boxed_logger(Box::new(limit::LimitedLog::new())).is_ok() {
        log::set_max_level(tracing::level_filters::LevelFilter::current().as_log());
    }
    if let Some(e) = invalid {
        tracing::warn!("{FILTER_VAR}: invalid filter ({e}); using {default_filter:?}");
    }
}
