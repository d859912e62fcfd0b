//! The registry and the renderer: bounded labels, bucket edges, gauges, and a check of the output
//! against the text exposition format.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use super::*;
use kelson_types::Method;

fn record(
    method: Option<&'static Method<'static>>,
    outcome: RequestOutcome,
    duration: Duration,
) -> RequestRecord<'static> {
    RequestRecord {
        transport: Transport::Http,
        id: None,
        era: RequestEra::Modern,
        method,
        target: Target::None,
        arguments: None,
        duration,
        outcome,
    }
}

/// Records one whole request, the way a probe does.
fn serve(m: &Metrics, rec: &RequestRecord<'_>) {
    m.request_started(rec.transport);
    m.request_finished(rec);
}

/// One sample line: metric name, labels in order, value.
#[derive(Debug)]
struct Sample {
    name: String,
    labels: Vec<(String, String)>,
    value: f64,
}

fn is_metric_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn is_label_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Parses `{a="x",b="y"}` (the braces included) and returns the labels and the rest of the line.
fn parse_labels(s: &str) -> (Vec<(String, String)>, &str) {
    let mut labels = Vec::new();
    let mut rest = s.strip_prefix('{').expect("labels open with {");
    loop {
        if let Some(after) = rest.strip_prefix('}') {
            return (labels, after);
        }
        let eq = rest.find('=').expect("label has =");
        let name = &rest[..eq];
        assert!(is_label_name(name), "label name {name:?}");
        rest = rest[eq + 1..]
            .strip_prefix('"')
            .expect("label value is quoted");
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let end = loop {
            let (i, c) = chars.next().expect("label value is closed");
            match c {
                '\\' => match chars.next().expect("escape is complete").1 {
                    '\\' => value.push('\\'),
                    '"' => value.push('"'),
                    'n' => value.push('\n'),
                    other => panic!("invalid escape \\{other}"),
                },
                '"' => break i,
                '\n' => panic!("raw newline in a label value"),
                c => value.push(c),
            }
        };
        labels.push((name.to_owned(), value));
        rest = &rest[end + 1..];
        if let Some(after) = rest.strip_prefix(',') {
            rest = after;
        }
    }
}

/// Checks `text` against the Prometheus text exposition format 0.0.4 and returns its samples by
/// family. Fails on: a sample before its `# TYPE`, a family split in two, a name outside its
/// family, a duplicate series, a malformed label or value, histogram buckets that are not
/// cumulative, not ordered by `le`, not ending in `+Inf`, or disagreeing with `_count`.
fn validate(text: &str) -> BTreeMap<String, Vec<Sample>> {
    assert!(text.ends_with('\n'), "the last line ends with a newline");
    let mut families: BTreeMap<String, Vec<Sample>> = BTreeMap::new();
    let mut types: BTreeMap<String, String> = BTreeMap::new();
    let mut helped = HashSet::new();
    let mut current: Option<String> = None;
    let mut seen_series = HashSet::new();
    for line in text.lines() {
        assert!(!line.is_empty(), "no empty lines");
        if let Some(help) = line.strip_prefix("# HELP ") {
            let (name, doc) = help.split_once(' ').expect("HELP has a text");
            assert!(is_metric_name(name) && !doc.is_empty());
            assert!(
                helped.insert(name.to_owned()),
                "one HELP per family: {name}"
            );
            continue;
        }
        if let Some(decl) = line.strip_prefix("# TYPE ") {
            let (name, kind) = decl.split_once(' ').expect("TYPE has a type");
            assert!(is_metric_name(name), "{name}");
            assert!(
                ["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind),
                "{kind}"
            );
            assert!(
                types.insert(name.to_owned(), kind.to_owned()).is_none(),
                "one TYPE per family: {name}"
            );
            assert!(!families.contains_key(name), "TYPE before samples: {name}");
            if kind == "counter" {
                assert!(name.ends_with("_total"), "counters end in _total: {name}");
            }
            families.insert(name.to_owned(), Vec::new());
            current = Some(name.to_owned());
            continue;
        }
        assert!(!line.starts_with('#'), "unknown comment {line:?}");
        let name_end = line.find(['{', ' ']).expect("a sample has a value");
        let name = &line[..name_end];
        assert!(is_metric_name(name), "{name}");
        let (labels, rest) = if line[name_end..].starts_with('{') {
            parse_labels(&line[name_end..])
        } else {
            (Vec::new(), &line[name_end..])
        };
        let value_text = rest.strip_prefix(' ').expect("one space before the value");
        assert!(!value_text.contains(' '), "no timestamps: {line}");
        let value: f64 = match value_text {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            "NaN" => f64::NAN,
            v => v.parse().unwrap_or_else(|_| panic!("value {v:?}")),
        };
        let family = current.clone().expect("a sample follows a TYPE");
        let kind = &types[&family];
        let belongs = if kind == "histogram" {
            [
                format!("{family}_bucket"),
                format!("{family}_sum"),
                format!("{family}_count"),
            ]
            .contains(&name.to_owned())
        } else {
            name == family
        };
        assert!(belongs, "{name} inside family {family}");
        let mut names: Vec<&str> = labels.iter().map(|(k, _)| k.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), labels.len(), "no repeated label in {line}");
        assert!(
            seen_series.insert(format!("{name}{labels:?}")),
            "duplicate series {line}"
        );
        families.get_mut(&family).unwrap().push(Sample {
            name: name.to_owned(),
            labels,
            value,
        });
    }
    for (family, kind) in &types {
        assert!(helped.contains(family), "HELP for {family}");
        if kind == "histogram" {
            check_histogram(family, &families[family]);
        }
    }
    families
}

fn check_histogram(family: &str, samples: &[Sample]) {
    let mut by_series: BTreeMap<Vec<(String, String)>, Vec<&Sample>> = BTreeMap::new();
    for s in samples {
        let key: Vec<_> = s
            .labels
            .iter()
            .filter(|(k, _)| k != "le")
            .cloned()
            .collect();
        by_series.entry(key).or_default().push(s);
    }
    for (labels, series) in by_series {
        let buckets: Vec<(f64, f64)> = series
            .iter()
            .filter(|s| s.name.ends_with("_bucket"))
            .map(|s| {
                let le = &s.labels.iter().find(|(k, _)| k == "le").expect("le").1;
                let le = if le == "+Inf" {
                    f64::INFINITY
                } else {
                    le.parse().expect("le is a number")
                };
                (le, s.value)
            })
            .collect();
        assert!(!buckets.is_empty(), "{family}{labels:?} has buckets");
        assert!(
            buckets
                .windows(2)
                .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1),
            "{family}{labels:?}: buckets ordered by le and cumulative: {buckets:?}"
        );
        assert_eq!(buckets.last().unwrap().0, f64::INFINITY, "ends with +Inf");
        let count = series
            .iter()
            .find(|s| s.name.ends_with("_count"))
            .expect("_count")
            .value;
        assert!(series.iter().any(|s| s.name.ends_with("_sum")), "_sum");
        assert_eq!(count, buckets.last().unwrap().1, "_count equals +Inf");
    }
}

fn value(families: &BTreeMap<String, Vec<Sample>>, name: &str, labels: &[(&str, &str)]) -> f64 {
    let family = families
        .iter()
        .find(|(f, _)| name.starts_with(f.as_str()))
        .map(|(_, s)| s)
        .unwrap_or_else(|| panic!("no family for {name}"));
    family
        .iter()
        .find(|s| {
            s.name == name
                && s.labels.len() == labels.len()
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.iter().any(|(sk, sv)| sk == k && sv == v))
        })
        .map_or(0.0, |s| s.value)
}

fn has_series(
    families: &BTreeMap<String, Vec<Sample>>,
    family: &str,
    label: &str,
    v: &str,
) -> bool {
    families[family]
        .iter()
        .any(|s| s.labels.iter().any(|(k, lv)| k == label && lv == v))
}

#[test]
fn fresh_metrics_render_valid_text_with_the_fixed_series() {
    let m = Metrics::new();
    let text = m.render();
    let families = validate(&text);
    assert_eq!(
        families.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "mcp_http_accept_errors_total",
            "mcp_http_connections_closed_total",
            "mcp_http_connections_open",
            "mcp_http_connections_refused_per_address_total",
            "mcp_http_connections_refused_total",
            "mcp_http_connections_total",
            "mcp_http_rejections_total",
            "mcp_http_response_bytes_held",
            "mcp_http_responses_over_memory_total",
            "mcp_jsonrpc_errors_total",
            "mcp_legacy_requests_total",
            "mcp_listen_streams_open",
            "mcp_listen_streams_total",
            "mcp_notifications_total",
            "mcp_request_duration_seconds",
            "mcp_requests_in_flight",
            "mcp_requests_total",
            "mcp_tool_errors_total",
        ]
    );
    // Small fixed label sets are exported from the start, at zero.
    assert_eq!(families["mcp_jsonrpc_errors_total"].len(), 9);
    assert_eq!(families["mcp_http_rejections_total"].len(), 7);
    assert_eq!(families["mcp_http_connections_closed_total"].len(), 3);
    assert_eq!(families["mcp_legacy_requests_total"].len(), 4);
    assert_eq!(value(&families, "mcp_requests_in_flight", &[]), 0.0);
    // Per-method series appear once there is something to count.
    assert!(families["mcp_requests_total"].is_empty());
    assert!(families["mcp_request_duration_seconds"].is_empty());
}

#[test]
fn outcomes_codes_and_statuses_are_counted_apart() {
    let m = Metrics::new();
    let ms = Duration::from_millis(1);
    serve(
        &m,
        &record(Some(&Method::CallTool), RequestOutcome::Success, ms),
    );
    serve(
        &m,
        &record(
            Some(&Method::CallTool),
            RequestOutcome::Error { code: -32602 },
            ms,
        ),
    );
    let mut failed = record(Some(&Method::CallTool), RequestOutcome::ToolError, ms);
    failed.target = Target::Tool {
        name: "fail",
        registered: true,
    };
    serve(&m, &failed);
    serve(&m, &failed);
    serve(
        &m,
        &record(
            Some(&Method::CallTool),
            RequestOutcome::Rejected { status: 406 },
            ms,
        ),
    );
    serve(
        &m,
        &record(None, RequestOutcome::Rejected { status: 403 }, ms),
    );
    serve(
        &m,
        &record(
            Some(&Method::ReadResource),
            RequestOutcome::InputRequired,
            ms,
        ),
    );
    serve(
        &m,
        &record(Some(&Method::GetPrompt), RequestOutcome::Cancelled, ms),
    );

    let f = validate(&m.render());
    let req = |method, outcome| {
        value(
            &f,
            "mcp_requests_total",
            &[("method", method), ("outcome", outcome), ("era", "modern")],
        )
    };
    assert_eq!(req("tools/call", "success"), 1.0);
    assert_eq!(req("tools/call", "error"), 1.0);
    assert_eq!(req("tools/call", "tool_error"), 2.0);
    assert_eq!(req("tools/call", "rejected"), 1.0);
    assert_eq!(req("other", "rejected"), 1.0);
    assert_eq!(req("resources/read", "input_required"), 1.0);
    assert_eq!(req("prompts/get", "cancelled"), 1.0);
    assert_eq!(
        value(&f, "mcp_jsonrpc_errors_total", &[("code", "-32602")]),
        1.0
    );
    assert_eq!(value(&f, "mcp_tool_errors_total", &[("tool", "fail")]), 2.0);
    assert_eq!(
        value(&f, "mcp_http_rejections_total", &[("status", "406")]),
        1.0
    );
    assert_eq!(
        value(&f, "mcp_http_rejections_total", &[("status", "403")]),
        1.0
    );
    // A tool error and an HTTP refusal are not JSON-RPC errors.
    let errors: f64 = f["mcp_jsonrpc_errors_total"].iter().map(|s| s.value).sum();
    assert_eq!(errors, 1.0);
    assert_eq!(m.in_flight(), 0);
    assert_eq!(
        value(
            &f,
            "mcp_request_duration_seconds_count",
            &[("method", "tools/call"), ("era", "modern")]
        ),
        5.0
    );
}

#[test]
fn legacy_requests_are_counted_apart_by_era_and_version() {
    let m = Metrics::new();
    let ms = Duration::from_millis(1);
    serve(
        &m,
        &record(Some(&Method::CallTool), RequestOutcome::Success, ms),
    );
    for (version, n) in [(Some("2025-11-25"), 2), (Some("2025-03-26"), 1), (None, 1)] {
        for _ in 0..n {
            let mut rec = record(Some(&Method::CallTool), RequestOutcome::Success, ms);
            rec.era = RequestEra::Legacy { version };
            serve(&m, &rec);
        }
    }
    let mut failed = record(
        Some(&Method::ListTools),
        RequestOutcome::Error { code: -32602 },
        ms,
    );
    failed.era = RequestEra::Legacy { version: None };
    serve(&m, &failed);

    let f = validate(&m.render());
    let req = |method, outcome, era| {
        value(
            &f,
            "mcp_requests_total",
            &[("method", method), ("outcome", outcome), ("era", era)],
        )
    };
    assert_eq!(req("tools/call", "success", "modern"), 1.0);
    assert_eq!(req("tools/call", "success", "legacy"), 4.0);
    assert_eq!(req("tools/list", "error", "legacy"), 1.0);
    assert_eq!(req("tools/list", "error", "modern"), 0.0);
    let count = |era| {
        value(
            &f,
            "mcp_request_duration_seconds_count",
            &[("method", "tools/call"), ("era", era)],
        )
    };
    assert_eq!(count("modern"), 1.0);
    assert_eq!(count("legacy"), 4.0);
    let version = |v| value(&f, "mcp_legacy_requests_total", &[("version", v)]);
    assert_eq!(version("2025-11-25"), 2.0);
    assert_eq!(version("2025-06-18"), 0.0);
    assert_eq!(version("2025-03-26"), 1.0);
    assert_eq!(version("none"), 2.0);
    // Only the two eras are labels.
    let eras: HashSet<&str> = f["mcp_requests_total"]
        .iter()
        .filter_map(|s| s.labels.iter().find(|(k, _)| k == "era"))
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(eras, HashSet::from(["modern", "legacy"]));
}

#[test]
fn eras_round_trip_through_the_probe_byte() {
    assert_eq!(RequestEra::from_byte(0), RequestEra::Modern);
    assert_eq!(
        RequestEra::from_byte(RequestEra::legacy_byte(None)),
        RequestEra::Legacy { version: None }
    );
    for v in crate::LEGACY_VERSIONS {
        let era = RequestEra::from_byte(RequestEra::legacy_byte(Some(v)));
        assert_eq!(era, RequestEra::Legacy { version: Some(v) });
        assert_eq!(era.as_str(), "legacy");
        assert_eq!(era.legacy_version(), Some(*v));
    }
    // A revision no session can have counts as none, never as a label of its own.
    assert_eq!(
        RequestEra::from_byte(RequestEra::legacy_byte(Some("2026-07-28"))),
        RequestEra::Legacy { version: None }
    );
    assert_eq!(RequestEra::Modern.as_str(), "modern");
    assert_eq!(RequestEra::Modern.legacy_version(), None);
}

#[test]
fn label_values_stay_bounded() {
    let m = Metrics::new();
    // Methods outside the spec's list all count as `other`.
    for name in ["initialize", "ping", "x/1", "x/2", "x/\"3\"\n"] {
        let method = Method::parse(name);
        let mut rec = record(None, RequestOutcome::Error { code: -32601 }, Duration::ZERO);
        rec.method = Some(&method);
        serve(&m, &rec);
    }
    // Codes outside the known set count as `other`.
    for code in [-32000, -32099, 1, -32002] {
        serve(
            &m,
            &record(
                Some(&Method::CallTool),
                RequestOutcome::Error { code },
                Duration::ZERO,
            ),
        );
    }
    // An unregistered tool never becomes a label, whatever the outcome says.
    let mut unknown = record(
        Some(&Method::CallTool),
        RequestOutcome::ToolError,
        Duration::ZERO,
    );
    unknown.target = Target::Tool {
        name: "made-up-by-a-client",
        registered: false,
    };
    serve(&m, &unknown);
    // Nor does a registered prompt or a resource URI.
    let mut prompt = record(
        Some(&Method::GetPrompt),
        RequestOutcome::ToolError,
        Duration::ZERO,
    );
    prompt.target = Target::Prompt {
        name: "p",
        registered: true,
    };
    serve(&m, &prompt);
    // Statuses outside the known set count as `other`.
    serve(
        &m,
        &record(
            None,
            RequestOutcome::Rejected { status: 418 },
            Duration::ZERO,
        ),
    );

    let f = validate(&m.render());
    let methods: HashSet<&str> = f["mcp_requests_total"]
        .iter()
        .map(|s| s.labels[0].1.as_str())
        .collect();
    assert_eq!(
        methods,
        HashSet::from(["other", "tools/call", "prompts/get"])
    );
    assert_eq!(
        value(
            &f,
            "mcp_requests_total",
            &[("method", "other"), ("outcome", "error"), ("era", "modern")]
        ),
        5.0
    );
    assert_eq!(
        value(&f, "mcp_jsonrpc_errors_total", &[("code", "other")]),
        4.0
    );
    assert_eq!(
        value(&f, "mcp_jsonrpc_errors_total", &[("code", "-32601")]),
        5.0
    );
    assert_eq!(f["mcp_jsonrpc_errors_total"].len(), 9);
    assert!(f["mcp_tool_errors_total"].is_empty());
    assert!(!has_series(
        &f,
        "mcp_requests_total",
        "method",
        "initialize"
    ));
    assert_eq!(
        value(&f, "mcp_http_rejections_total", &[("status", "other")]),
        1.0
    );
    assert_eq!(f["mcp_http_rejections_total"].len(), 7);
}

#[test]
fn histogram_buckets_are_inclusive_upper_bounds() {
    let m = Metrics::new();
    let us = Duration::from_micros;
    for d in [
        us(25),                        // exactly on the first bound: le="0.000025"
        us(26),                        // just above: le="0.00005"
        Duration::from_nanos(1),       // far below: the first bucket
        Duration::from_millis(1),      // exactly 1 ms
        Duration::from_secs(30),       // the last finite bound
        Duration::from_secs(31),       // only +Inf
        Duration::from_secs(u64::MAX), // saturates rather than overflowing
    ] {
        serve(
            &m,
            &record(Some(&Method::CallTool), RequestOutcome::Success, d),
        );
    }
    let f = validate(&m.render());
    let bucket = |le| {
        value(
            &f,
            "mcp_request_duration_seconds_bucket",
            &[("method", "tools/call"), ("era", "modern"), ("le", le)],
        )
    };
    assert_eq!(bucket("0.000025"), 2.0);
    assert_eq!(bucket("0.00005"), 3.0);
    assert_eq!(bucket("0.0005"), 3.0);
    assert_eq!(bucket("0.001"), 4.0);
    assert_eq!(bucket("10"), 4.0);
    assert_eq!(bucket("30"), 5.0);
    assert_eq!(bucket("+Inf"), 7.0);
    let buckets = f["mcp_request_duration_seconds"]
        .iter()
        .filter(|s| s.name.ends_with("_bucket"))
        .count();
    assert_eq!(buckets, BOUNDS_NS.len() + 1, "one series per bucket");
    // The rendered `le` labels are the nanosecond bounds.
    for (ns, le) in BOUNDS_NS.iter().zip(BOUNDS_LE) {
        assert_eq!(le.parse::<f64>().unwrap(), *ns as f64 / 1e9, "{le}");
    }
}

#[test]
fn histogram_sum_is_in_seconds() {
    let m = Metrics::new();
    for d in [
        Duration::from_micros(150),
        Duration::from_micros(350),
        Duration::from_millis(2),
    ] {
        serve(
            &m,
            &record(Some(&Method::ListTools), RequestOutcome::Success, d),
        );
    }
    let f = validate(&m.render());
    let sum = value(
        &f,
        "mcp_request_duration_seconds_sum",
        &[("method", "tools/list"), ("era", "modern")],
    );
    assert!((sum - 0.0025).abs() < 1e-12, "{sum}");
}

#[test]
fn gauges_follow_requests_and_listen_streams() {
    let m = Metrics::new();
    m.request_started(Transport::Stdio);
    m.request_started(Transport::Stdio);
    assert_eq!(m.in_flight(), 2);
    // A listen request becomes a stream.
    let id = Id::from("listen-1");
    m.listen_opened(Transport::Stdio, &id);
    assert_eq!(m.in_flight(), 1);
    assert_eq!(m.listen_streams_open(), 1);
    m.request_finished(&record(
        Some(&Method::CallTool),
        RequestOutcome::Success,
        Duration::ZERO,
    ));
    assert_eq!(m.in_flight(), 0);
    let f = validate(&m.render());
    assert_eq!(value(&f, "mcp_listen_streams_open", &[]), 1.0);
    assert_eq!(value(&f, "mcp_listen_streams_total", &[]), 1.0);
    assert_eq!(
        value(
            &f,
            "mcp_requests_total",
            &[
                ("method", "subscriptions/listen"),
                ("outcome", "success"),
                ("era", "modern")
            ]
        ),
        1.0
    );
    // Opening a stream is not a latency.
    assert!(!has_series(
        &f,
        "mcp_request_duration_seconds",
        "method",
        "subscriptions/listen"
    ));
    m.listen_closed(&ListenRecord {
        transport: Transport::Stdio,
        id: &id,
        duration: Duration::from_secs(5),
        graceful: false,
    });
    assert_eq!(m.listen_streams_open(), 0);
    let f = validate(&m.render());
    assert_eq!(value(&f, "mcp_listen_streams_open", &[]), 0.0);
    assert_eq!(value(&f, "mcp_listen_streams_total", &[]), 1.0);
}

#[test]
fn notifications_are_counted_by_bounded_method() {
    let m = Metrics::new();
    for method in ["notifications/cancelled", "notifications/initialized", "x"] {
        m.notification(&NotificationRecord {
            transport: Transport::Stdio,
            method: &Method::parse(method),
        });
    }
    let f = validate(&m.render());
    assert_eq!(
        value(
            &f,
            "mcp_notifications_total",
            &[("method", "notifications/cancelled")]
        ),
        1.0
    );
    assert_eq!(
        value(&f, "mcp_notifications_total", &[("method", "other")]),
        2.0
    );
    assert_eq!(f["mcp_notifications_total"].len(), 2);
}

#[test]
fn label_values_are_escaped() {
    let m = Metrics::new();
    // Registered tool names cannot hold these characters; the escaper must cope anyway.
    m.inner.tool_error("a\"b\\c\nd");
    let text = m.render();
    assert!(
        text.contains(r#"mcp_tool_errors_total{tool="a\"b\\c\nd"} 1"#),
        "{text}"
    );
    let f = validate(&text);
    assert_eq!(f["mcp_tool_errors_total"][0].labels[0].1, "a\"b\\c\nd");
}

#[test]
fn the_validator_rejects_broken_text() {
    let broken = [
        "mcp_x_total 1\n",                                                  // no TYPE
        "# TYPE a_total counter\n# HELP a_total x\na_total{l=\"v} 1\n",     // unclosed value
        "# HELP a_total x\n# TYPE a_total counter\na_total 1\na_total 2\n", // duplicate
        "# HELP h x\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
        "# HELP h x\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 1\n",
        "# HELP a_total x\n# TYPE a_total counter\na_total 1", // no final newline
    ];
    for text in broken {
        let caught = std::panic::catch_unwind(|| validate(text));
        assert!(caught.is_err(), "accepted: {text:?}");
    }
}

#[test]
fn a_request_may_end_on_another_thread_than_it_started() {
    let m = Metrics::new();
    // Started on threads that map to other shards, ended here.
    for _ in 0..8 {
        let m2 = m.clone();
        std::thread::spawn(move || m2.request_started(Transport::Http))
            .join()
            .unwrap();
    }
    assert_eq!(m.in_flight(), 8);
    for _ in 0..8 {
        m.request_finished(&record(
            Some(&Method::CallTool),
            RequestOutcome::Success,
            Duration::ZERO,
        ));
    }
    assert_eq!(m.in_flight(), 0);
    let f = validate(&m.render());
    assert_eq!(value(&f, "mcp_requests_in_flight", &[]), 0.0);
    assert_eq!(
        value(
            &f,
            "mcp_requests_total",
            &[
                ("method", "tools/call"),
                ("outcome", "success"),
                ("era", "modern")
            ]
        ),
        8.0
    );
}

#[test]
fn added_gauges_are_read_at_each_render() {
    use std::sync::atomic::AtomicI64;

    let m = Metrics::new();
    let waiting = Arc::new(AtomicI64::new(0));
    let seen = waiting.clone();
    m.gauges(
        "app_pool_waiting",
        "Calls waiting for a connection.",
        &["database", "pool"],
        move |emit| {
            emit(&["main", "read"], seen.load(Relaxed));
            emit(&["we\"ird\\", "write"], 1);
        },
    );
    m.gauges("app_up", "Whether the app is up.", &[], |emit| emit(&[], 1));
    let f = validate(&m.render());
    assert_eq!(
        value(
            &f,
            "app_pool_waiting",
            &[("database", "main"), ("pool", "read")]
        ),
        0.0
    );
    assert_eq!(f["app_pool_waiting"][1].labels[0].1, "we\"ird\\");
    assert_eq!(value(&f, "app_up", &[]), 1.0);
    waiting.store(3, Relaxed);
    let f = validate(&m.render());
    assert_eq!(
        value(
            &f,
            "app_pool_waiting",
            &[("database", "main"), ("pool", "read")]
        ),
        3.0
    );
    // Names are the caller's constants: a bad one is a programming error.
    for (name, labels) in [("2x", &[][..]), ("a-b", &[][..]), ("ok", &["a:b"][..])] {
        let m = m.clone();
        let caught = std::panic::catch_unwind(move || m.gauges(name, "x", labels, |_| {}));
        assert!(caught.is_err(), "{name} {labels:?}");
    }
}
