//! [`Metrics`]: counters, gauges and latency histograms over the observer hook, rendered in the
//! Prometheus text exposition format (version 0.0.4).
//!
//! Every series the hot path touches is an atomic at a fixed index: the era, the method and the
//! outcome class are small enums, error codes and HTTP statuses map onto short fixed lists, so recording a
//! request is a handful of relaxed atomic adds with no lookup, no lock and no allocation. The
//! per-request counters (outcomes, latency buckets, in-flight) are sharded by thread, each shard on
//! cache lines of its own, so that runtime workers on different cores do not bounce one line
//! between them; rendering sums the shards. Only `isError` results, which are not the hot path,
//! look their tool up in a map, and only tools the registry knows get a label.
//!
//! Series of the fixed, small label sets (error codes, HTTP statuses, notifications) are always
//! exported, so alerts can use `rate()` from the first scrape. Per-method series and per-tool
//! `isError` series appear once they have something to count, like the children of a Prometheus
//! client's metric vector.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use super::connections::ConnectionStats;
use super::labels::{METHODS, NOTIFICATIONS, method_index, method_label, notification_index};
use super::text::{family, label_value};
use super::{
    ListenRecord, NotificationRecord, RequestEra, RequestObserver, RequestOutcome, RequestRecord,
    Target, Transport,
};
use kelson_jsonrpc::{Id, code};
use kelson_types::Method;

/// The `Content-Type` of [`Metrics::render`]'s output.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

const OUTCOMES: usize = RequestOutcome::CLASSES.len();
const ERAS: usize = RequestEra::LABELS.len();

/// The `version` labels of legacy requests: the revisions of [`crate::LEGACY_VERSIONS`], then
/// `none` for a request refused for want of a session.
const LEGACY_VERSION_LABELS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "none"];

/// Upper bounds of the latency buckets, in nanoseconds: from 25 µs (a cached list served from
/// memory) to 30 s (a slow tool), roughly 1-2.5-5 per decade.
const BOUNDS_NS: [u64; 19] = [
    25_000,
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    5_000_000_000,
    10_000_000_000,
    30_000_000_000,
];

/// The same bounds in seconds, as the `le` label renders them.
const BOUNDS_LE: [&str; 19] = [
    "0.000025", "0.00005", "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01",
    "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "30",
];

/// Buckets including `+Inf`.
const BUCKETS: usize = BOUNDS_NS.len() + 1;

/// The JSON-RPC error codes with a label of their own (spec 2026-07-28 basic/index, error codes);
/// any other code is `other`.
const CODES: [i64; 8] = [
    code::PARSE_ERROR,
    code::INVALID_REQUEST,
    code::METHOD_NOT_FOUND,
    code::INVALID_PARAMS,
    code::INTERNAL_ERROR,
    code::HEADER_MISMATCH,
    code::MISSING_REQUIRED_CLIENT_CAPABILITY,
    code::UNSUPPORTED_PROTOCOL_VERSION,
];
const CODE_LABELS: [&str; 9] = [
    "-32700", "-32600", "-32601", "-32602", "-32603", "-32020", "-32021", "-32022", "other",
];

/// The HTTP statuses of HTTP-level refusals (spec 2026-07-28 basic/transports/streamable-http
/// names 400, 403 and 405; 406, 413 and 415 are HTTP's own answers to a bad `Accept`, a bad
/// `Content-Type` and a body too large, which the spec leaves open); anything else is `other`.
const STATUSES: [u16; 6] = [400, 403, 405, 406, 413, 415];
const STATUS_LABELS: [&str; 7] = ["400", "403", "405", "406", "413", "415", "other"];

/// Request metrics in the Prometheus text format.
///
/// Cloning is cheap; clones share the same counters. Set it on the server with
/// [`ServerBuilder::metrics`](crate::ServerBuilder::metrics) and serve [`render`](Self::render)
/// (`kelson-http` does: `GET /metrics` on the MCP listener or on a separate address).
///
/// | metric | type | labels |
/// |---|---|---|
/// | `mcp_requests_total` | counter | `method`, `outcome` (`success`, `tool_error`, `input_required`, `error`, `rejected`, `cancelled`), `era` (`modern`, `legacy`) |
/// | `mcp_request_duration_seconds` | histogram | `method`, `era` |
/// | `mcp_legacy_requests_total` | counter | `version` (the session's revision, or `none`) |
/// | `mcp_jsonrpc_errors_total` | counter | `code` |
/// | `mcp_tool_errors_total` | counter | `tool` (registered tools only) |
/// | `mcp_http_rejections_total` | counter | `status` |
/// | `mcp_notifications_total` | counter | `method` |
/// | `mcp_requests_in_flight` | gauge | |
/// | `mcp_runtime_tasks_alive` | gauge | |
/// | `mcp_listen_streams_open` | gauge | |
/// | `mcp_listen_streams_total` | counter | |
///
/// and the HTTP connection series of [`ConnectionStats`], which the transport keeps.
///
/// `method` is one of the spec's request methods or `other`; `code` one of the spec's error codes
/// or `other`; `status` one of 400, 403, 405, 406, 413, 415 or `other`.
///
/// State the request hook does not see (a connection pool's queue, say) is added with
/// [`gauges`](Self::gauges): read from its owner when the metrics are rendered.
#[derive(Clone, Default)]
pub struct Metrics {
    pub(crate) inner: Arc<Registry>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics")
            .field("in_flight", &self.inner.in_flight())
            .field("listen_open", &self.inner.listen_open.load(Relaxed))
            .finish_non_exhaustive()
    }
}

/// One method's request counters and latency histogram within a shard, on cache lines of their
/// own.
#[repr(align(64))]
struct PerMethod {
    outcomes: [AtomicU64; OUTCOMES],
    /// Non-cumulative counts per bucket; rendering accumulates them.
    buckets: [AtomicU64; BUCKETS],
    sum_ns: AtomicU64,
}

impl PerMethod {
    const fn new() -> Self {
        PerMethod {
            outcomes: [const { AtomicU64::new(0) }; OUTCOMES],
            buckets: [const { AtomicU64::new(0) }; BUCKETS],
            sum_ns: AtomicU64::new(0),
        }
    }

    fn observe(&self, duration: Duration) {
        let ns = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
        // `le` buckets: the first bound at or above the value; past the last one, `+Inf`.
        let bucket = BOUNDS_NS.partition_point(|&bound| bound < ns);
        self.buckets[bucket].fetch_add(1, Relaxed);
        self.sum_ns.fetch_add(ns, Relaxed);
    }
}

/// The counters every request touches, for the threads that map to this shard, by era and method.
struct Shard {
    methods: [[PerMethod; METHODS]; ERAS],
    flight: Flight,
}

/// In flight = started - ended, both monotonic. A request may start on one thread and end on
/// another, so a per-shard difference means nothing; the sums do (see [`Registry::in_flight`]).
#[repr(align(64))]
struct Flight {
    started: AtomicU64,
    ended: AtomicU64,
}

impl Shard {
    const fn new() -> Self {
        Shard {
            methods: [const { [const { PerMethod::new() }; METHODS] }; ERAS],
            flight: Flight {
                started: AtomicU64::new(0),
                ended: AtomicU64::new(0),
            },
        }
    }
}

/// Numbers the threads that record metrics, in order of first use; a thread's shard is its
/// number modulo the shard count, so the runtime's workers, which record nearly everything, get
/// shards of their own.
static NEXT_THREAD: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static THREAD_SLOT: Cell<Option<usize>> = const { Cell::new(None) };
}

fn thread_slot() -> usize {
    THREAD_SLOT.with(|slot| {
        slot.get().unwrap_or_else(|| {
            let n = NEXT_THREAD.fetch_add(1, Relaxed);
            slot.set(Some(n));
            n
        })
    })
}

/// Aligned so that the reference count an `Arc` keeps in front of it, which every request's probe
/// touches, is on another cache line than the fields every request reads.
#[repr(align(64))]
pub(crate) struct Registry {
    /// A power of two, about twice the cores.
    shards: Box<[Shard]>,
    errors: [AtomicU64; CODE_LABELS.len()],
    rejections: [AtomicU64; STATUS_LABELS.len()],
    notifications: [AtomicU64; NOTIFICATIONS.len()],
    /// Legacy requests by their session's revision; not sharded, since the modern path, the
    /// hot one, never touches it.
    legacy_versions: [AtomicU64; LEGACY_VERSION_LABELS.len()],
    listen_open: AtomicI64,
    listen_total: AtomicU64,
    /// `isError` results by registered tool name. Reads take the shared lock; a tool's first
    /// `isError` takes the exclusive one once.
    tool_errors: RwLock<BTreeMap<Box<str>, AtomicU64>>,
    /// Gauge families whose values other components keep, read at each render.
    external: RwLock<Vec<External>>,
    /// The HTTP listener's connections, kept by the transport.
    connections: Arc<ConnectionStats>,
}

/// Reports a gauge family's series: calls its argument once per series, with the label values
/// (in the order of the family's label names) and the value.
type ReadGauges = Box<dyn Fn(&mut dyn FnMut(&[&str], i64)) + Send + Sync>;

/// A gauge family added with [`Metrics::gauges`].
struct External {
    name: &'static str,
    /// `gauge` or `counter`.
    kind: &'static str,
    help: &'static str,
    labels: &'static [&'static str],
    read: ReadGauges,
}

impl Default for Registry {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(4, usize::from);
        let shards = (2 * cores).clamp(2, 64).next_power_of_two();
        Registry {
            shards: (0..shards).map(|_| Shard::new()).collect(),
            errors: [const { AtomicU64::new(0) }; CODE_LABELS.len()],
            rejections: [const { AtomicU64::new(0) }; STATUS_LABELS.len()],
            notifications: [const { AtomicU64::new(0) }; NOTIFICATIONS.len()],
            legacy_versions: [const { AtomicU64::new(0) }; LEGACY_VERSION_LABELS.len()],
            listen_open: AtomicI64::new(0),
            listen_total: AtomicU64::new(0),
            tool_errors: RwLock::new(BTreeMap::new()),
            external: RwLock::new(Vec::new()),
            connections: Arc::default(),
        }
    }
}

fn code_index(code: i64) -> usize {
    CODES.iter().position(|&c| c == code).unwrap_or(CODES.len())
}

fn status_index(status: u16) -> usize {
    STATUSES
        .iter()
        .position(|&s| s == status)
        .unwrap_or(STATUSES.len())
}

impl Registry {
    /// This thread's shard.
    #[inline]
    fn shard(&self) -> &Shard {
        // The shard count is a power of two.
        &self.shards[thread_slot() & (self.shards.len() - 1)]
    }

    /// Requests in flight. Every `ended` is counted after its `started`, and both only grow, so
    /// reading all `ended` first gives a total that can never be negative, whichever shards a
    /// request touched.
    fn in_flight(&self) -> i64 {
        let ended: u64 = self
            .shards
            .iter()
            .map(|s| s.flight.ended.load(Relaxed))
            .sum();
        let started: u64 = self
            .shards
            .iter()
            .map(|s| s.flight.started.load(Relaxed))
            .sum();
        i64::try_from(started.saturating_sub(ended)).unwrap_or(i64::MAX)
    }

    fn tool_error(&self, tool: &str) {
        {
            let map = self
                .tool_errors
                .read()
                .unwrap_or_else(PoisonError::into_inner);
            if let Some(count) = map.get(tool) {
                count.fetch_add(1, Relaxed);
                return;
            }
        }
        let mut map = self
            .tool_errors
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        map.entry(tool.into())
            .or_insert_with(|| AtomicU64::new(0))
            .fetch_add(1, Relaxed);
    }
}

impl RequestObserver for Registry {
    fn request_started(&self, _transport: Transport) {
        self.shard().flight.started.fetch_add(1, Relaxed);
    }

    fn request_finished(&self, record: &RequestRecord<'_>) {
        let shard = self.shard();
        shard.flight.ended.fetch_add(1, Relaxed);
        let per = &shard.methods[record.era.index()][method_index(record.method)];
        per.outcomes[record.outcome.index()].fetch_add(1, Relaxed);
        per.observe(record.duration);
        if let RequestEra::Legacy { version } = record.era {
            let at = version
                .and_then(|v| LEGACY_VERSION_LABELS.iter().position(|l| *l == v))
                .unwrap_or(LEGACY_VERSION_LABELS.len() - 1);
            self.legacy_versions[at].fetch_add(1, Relaxed);
        }
        match record.outcome {
            RequestOutcome::Error { code } => {
                self.errors[code_index(code)].fetch_add(1, Relaxed);
            }
            RequestOutcome::Rejected { status } => {
                self.rejections[status_index(status)].fetch_add(1, Relaxed);
            }
            RequestOutcome::ToolError => {
                // An unknown tool is a -32602 error, never an `isError`, but a label must come
                // from the registry all the same: a client can send any name.
                if let Target::Tool {
                    name,
                    registered: true,
                } = record.target
                {
                    self.tool_error(name);
                }
            }
            RequestOutcome::Success | RequestOutcome::InputRequired | RequestOutcome::Cancelled => {
            }
        }
    }

    fn notification(&self, record: &NotificationRecord<'_>) {
        self.notifications[notification_index(record.method)].fetch_add(1, Relaxed);
    }

    fn listen_opened(&self, _transport: Transport, _id: &Id) {
        // The request becomes a stream: it leaves the in-flight gauge and counts as a successful
        // listen request. Its open time is not a latency, so the histogram does not see it.
        let shard = self.shard();
        shard.flight.ended.fetch_add(1, Relaxed);
        self.listen_open.fetch_add(1, Relaxed);
        self.listen_total.fetch_add(1, Relaxed);
        // Listen streams exist only in the modern era.
        shard.methods[RequestEra::Modern.index()][method_index(Some(&Method::SubscriptionsListen))]
            .outcomes[RequestOutcome::Success.index()]
        .fetch_add(1, Relaxed);
    }

    fn listen_closed(&self, _record: &ListenRecord<'_>) {
        self.listen_open.fetch_sub(1, Relaxed);
    }
}

impl RequestObserver for Metrics {
    fn request_started(&self, transport: Transport) {
        self.inner.request_started(transport);
    }

    fn request_finished(&self, record: &RequestRecord<'_>) {
        self.inner.request_finished(record);
    }

    fn notification(&self, record: &NotificationRecord<'_>) {
        self.inner.notification(record);
    }

    fn listen_opened(&self, transport: Transport, id: &Id) {
        self.inner.listen_opened(transport, id);
    }

    fn listen_closed(&self, record: &ListenRecord<'_>) {
        self.inner.listen_closed(record);
    }
}

/// Seconds from nanoseconds (`f64`'s `Display` writes the shortest text that reads back the same
/// value, and never an exponent).
fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}

impl Metrics {
    /// New metrics, all zero.
    pub fn new() -> Self {
        Metrics::default()
    }

    /// The requests in flight now.
    pub fn in_flight(&self) -> i64 {
        self.inner.in_flight()
    }

    /// The listen streams open now.
    pub fn listen_streams_open(&self) -> i64 {
        self.inner.listen_open.load(Relaxed)
    }

    /// Adds a gauge family whose values another component keeps, such as a connection pool's
    /// queue: `read` is called at each render and reports every series of the family, with the
    /// values of `labels` in order. Label values should come from configuration (a database's
    /// name), never from requests, so that the series stay few.
    ///
    /// # Panics
    ///
    /// If `name` or a label is not a valid Prometheus name, or `help` holds a backslash or a
    /// line break: they are the caller's constants, so this is a programming error.
    pub fn gauges(
        &self,
        name: &'static str,
        help: &'static str,
        labels: &'static [&'static str],
        read: impl Fn(&mut dyn FnMut(&[&str], i64)) + Send + Sync + 'static,
    ) {
        self.external("gauge", name, help, labels, Box::new(read));
    }

    /// Adds a counter family whose values another component keeps (a broker connection's
    /// events published and lost), as [`gauges`](Self::gauges) does for gauges. The values must
    /// only grow, and `name` should end in `_total`.
    ///
    /// # Panics
    ///
    /// As [`gauges`](Self::gauges).
    pub fn counters(
        &self,
        name: &'static str,
        help: &'static str,
        labels: &'static [&'static str],
        read: impl Fn(&mut dyn FnMut(&[&str], i64)) + Send + Sync + 'static,
    ) {
        self.external("counter", name, help, labels, Box::new(read));
    }

    fn external(
        &self,
        kind: &'static str,
        name: &'static str,
        help: &'static str,
        labels: &'static [&'static str],
        read: ReadGauges,
    ) {
        assert!(valid_name(name, true), "invalid metric name {name:?}");
        for label in labels {
            assert!(valid_name(label, false), "invalid label name {label:?}");
        }
        assert!(
            !help.contains(['\\', '\n']),
            "a help text holds no backslash or line break"
        );
        self.inner
            .external
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .push(External {
                name,
                kind,
                help,
                labels,
                read,
            });
    }

    /// The connection counters an HTTP transport keeps (`kelson-http`'s accept loop does), rendered
    /// with the rest.
    pub fn connections(&self) -> Arc<ConnectionStats> {
        self.inner.connections.clone()
    }

    /// Every metric in the Prometheus text exposition format, version 0.0.4 (serve it with
    /// [`CONTENT_TYPE`]).
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(4096);
        self.render_into(&mut out);
        out
    }

    /// Appends [`render`](Self::render)'s text to `out`.
    pub fn render_into(&self, out: &mut String) {
        let r = &*self.inner;

        family(
            out,
            "mcp_requests_total",
            "counter",
            "MCP requests by method, outcome class and protocol era.",
        );
        for kind in 0..METHODS {
            for (e, era) in RequestEra::LABELS.iter().enumerate() {
                for (i, class) in RequestOutcome::CLASSES.iter().enumerate() {
                    let n: u64 = r
                        .shards
                        .iter()
                        .map(|s| s.methods[e][kind].outcomes[i].load(Relaxed))
                        .sum();
                    if n > 0 {
                        let _ = writeln!(
                            out,
                            "mcp_requests_total{{method=\"{}\",outcome=\"{class}\",era=\"{era}\"}} {n}",
                            method_label(kind)
                        );
                    }
                }
            }
        }

        family(
            out,
            "mcp_request_duration_seconds",
            "histogram",
            "MCP request latency from arrival to response, by method and protocol era.",
        );
        for kind in 0..METHODS {
            for (e, era) in RequestEra::LABELS.iter().enumerate() {
                let per = |s: &Shard| -> u64 { s.methods[e][kind].sum_ns.load(Relaxed) };
                let counts: [u64; BUCKETS] = std::array::from_fn(|i| {
                    r.shards
                        .iter()
                        .map(|s| s.methods[e][kind].buckets[i].load(Relaxed))
                        .sum()
                });
                let total: u64 = counts.iter().sum();
                if total == 0 {
                    continue;
                }
                let method = method_label(kind);
                let mut cumulative = 0;
                for (i, n) in counts.iter().enumerate() {
                    cumulative += n;
                    let le = BOUNDS_LE.get(i).copied().unwrap_or("+Inf");
                    let _ = writeln!(
                        out,
                        "mcp_request_duration_seconds_bucket{{method=\"{method}\",era=\"{era}\",le=\"{le}\"}} {cumulative}"
                    );
                }
                let sum_ns: u64 = r.shards.iter().map(per).sum();
                let _ = writeln!(
                    out,
                    "mcp_request_duration_seconds_sum{{method=\"{method}\",era=\"{era}\"}} {}",
                    seconds(sum_ns)
                );
                // The count is the sum of the buckets read above, so `_count` always equals the
                // `+Inf` bucket even while requests are being recorded.
                let _ = writeln!(
                    out,
                    "mcp_request_duration_seconds_count{{method=\"{method}\",era=\"{era}\"}} {total}"
                );
            }
        }

        family(
            out,
            "mcp_legacy_requests_total",
            "counter",
            "Handshake-era requests by the revision of their session (none: no session).",
        );
        for (i, label) in LEGACY_VERSION_LABELS.iter().enumerate() {
            let n = r.legacy_versions[i].load(Relaxed);
            let _ = writeln!(out, "mcp_legacy_requests_total{{version=\"{label}\"}} {n}");
        }

        family(
            out,
            "mcp_jsonrpc_errors_total",
            "counter",
            "JSON-RPC error responses by error code.",
        );
        for (i, label) in CODE_LABELS.iter().enumerate() {
            let n = r.errors[i].load(Relaxed);
            let _ = writeln!(out, "mcp_jsonrpc_errors_total{{code=\"{label}\"}} {n}");
        }

        family(
            out,
            "mcp_tool_errors_total",
            "counter",
            "Tool results with isError: true, by registered tool.",
        );
        {
            let map = r.tool_errors.read().unwrap_or_else(PoisonError::into_inner);
            for (tool, n) in map.iter() {
                out.push_str("mcp_tool_errors_total{tool=\"");
                label_value(out, tool);
                let _ = writeln!(out, "\"}} {}", n.load(Relaxed));
            }
        }

        family(
            out,
            "mcp_http_rejections_total",
            "counter",
            "Requests refused at the HTTP level, before JSON-RPC, by status.",
        );
        for (i, label) in STATUS_LABELS.iter().enumerate() {
            let n = r.rejections[i].load(Relaxed);
            let _ = writeln!(out, "mcp_http_rejections_total{{status=\"{label}\"}} {n}");
        }

        family(
            out,
            "mcp_notifications_total",
            "counter",
            "Client notifications by method.",
        );
        for (i, label) in NOTIFICATIONS.iter().enumerate() {
            let n = r.notifications[i].load(Relaxed);
            let _ = writeln!(out, "mcp_notifications_total{{method=\"{label}\"}} {n}");
        }

        family(
            out,
            "mcp_requests_in_flight",
            "gauge",
            "MCP requests being served now.",
        );
        let _ = writeln!(out, "mcp_requests_in_flight {}", r.in_flight());

        // The tasks alive on the runtime that renders the metrics (the server's, when it serves
        // them): a count that keeps growing under steady load is a leak.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            family(
                out,
                "mcp_runtime_tasks_alive",
                "gauge",
                "Tasks alive on the server's Tokio runtime.",
            );
            let _ = writeln!(
                out,
                "mcp_runtime_tasks_alive {}",
                runtime.metrics().num_alive_tasks()
            );
        }

        family(
            out,
            "mcp_listen_streams_open",
            "gauge",
            "subscriptions/listen streams open now.",
        );
        let _ = writeln!(
            out,
            "mcp_listen_streams_open {}",
            r.listen_open.load(Relaxed)
        );

        family(
            out,
            "mcp_listen_streams_total",
            "counter",
            "subscriptions/listen streams opened.",
        );
        let _ = writeln!(
            out,
            "mcp_listen_streams_total {}",
            r.listen_total.load(Relaxed)
        );

        let external = r.external.read().unwrap_or_else(PoisonError::into_inner);
        for gauge in external.iter() {
            family(out, gauge.name, gauge.kind, gauge.help);
            (gauge.read)(&mut |values, value| {
                debug_assert_eq!(values.len(), gauge.labels.len(), "{}", gauge.name);
                out.push_str(gauge.name);
                for (i, (label, v)) in gauge.labels.iter().zip(values).enumerate() {
                    out.push(if i == 0 { '{' } else { ',' });
                    out.push_str(label);
                    out.push_str("=\"");
                    label_value(out, v);
                    out.push('"');
                }
                if !gauge.labels.is_empty() {
                    out.push('}');
                }
                let _ = writeln!(out, " {value}");
            });
        }
        r.connections.render_into(out);
    }
}

/// A metric name (`[a-zA-Z_:][a-zA-Z0-9_:]*`) or, without the colons, a label name.
fn valid_name(name: &str, colons: bool) -> bool {
    let ok = |c: char| c.is_ascii_alphanumeric() || c == '_' || (colons && c == ':');
    name.chars()
        .next()
        .is_some_and(|c| ok(c) && !c.is_ascii_digit())
        && name.chars().all(ok)
}

#[cfg(test)]
mod tests;
