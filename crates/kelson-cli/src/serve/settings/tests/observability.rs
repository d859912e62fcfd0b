//! The observability settings: log format, logged arguments, metrics.

use super::*;
use crate::logging::LogFormat;

#[test]
fn logs_and_metrics() {
    let s = resolve_with(&[], None).unwrap();
    assert_eq!(s.observability.log_format, LogFormat::Text);
    assert!(
        s.observability.log_arguments.is_none()
            && s.observability.metrics.is_none()
            && s.notes.is_empty()
    );

    let s = resolve_with(&["--metrics"], None).unwrap();
    let m = s.observability.metrics.expect("metrics on");
    assert_eq!((m.path.as_str(), m.addr), ("/metrics", None));
    let s = resolve_with(&["--metrics", "--metrics-path", "/m"], None).unwrap();
    assert_eq!(s.observability.metrics.unwrap().path, "/m");
    let s = resolve_with(&["--metrics-addr", "127.0.0.1:9090"], None).unwrap();
    let m = s.observability.metrics.expect("an address turns them on");
    assert_eq!(
        m.addr,
        Some(("127.0.0.1:9090".parse().unwrap(), "--metrics-addr"))
    );
    let s = resolve_with(&["--stdio", "--metrics-addr", "127.0.0.1:0"], None).unwrap();
    assert!(
        s.observability.metrics.unwrap().addr.is_some(),
        "an address works on stdio"
    );

    let e = resolve_with(&["--metrics-path", "/m"], None).unwrap_err();
    assert!(e.starts_with("--metrics-path: the metrics are off"), "{e}");
    let e = resolve_with(&["--metrics", "--metrics-path", "m"], None).unwrap_err();
    assert!(e.starts_with("--metrics-path: invalid metrics path"), "{e}");
    let e = resolve_with(&["--metrics", "--path", "/metrics"], None).unwrap_err();
    assert!(e.contains("is the MCP endpoint's"), "{e}");
    let e = resolve_with(&["--stdio", "--metrics"], None).unwrap_err();
    assert!(e.starts_with("--metrics: with --stdio"), "{e}");
    assert!(e.contains("--metrics-addr"), "{e}");

    let file = "[observability]\nlog_format = \"json\"\nlog_arguments = true\n\
                metrics_addr = \"127.0.0.1:9100\"\nmetrics_path = \"/stats\"\n";
    let s = resolve_with(&[], Some(file)).unwrap();
    assert_eq!(s.observability.log_format, LogFormat::Json);
    assert_eq!(
        s.observability.log_arguments,
        Some("observability.log_arguments")
    );
    let m = s.observability.metrics.unwrap();
    assert_eq!(m.path, "/stats");
    assert_eq!(
        m.addr,
        Some((
            "127.0.0.1:9100".parse().unwrap(),
            "observability.metrics_addr"
        ))
    );
    // Flags win.
    let s = resolve_with(
        &[
            "--log-format",
            "text",
            "--metrics-addr",
            "127.0.0.1:9200",
            "--metrics-path",
            "/p",
        ],
        Some(file),
    )
    .unwrap();
    assert_eq!(s.observability.log_format, LogFormat::Text);
    let m = s.observability.metrics.unwrap();
    assert_eq!(m.path, "/p");
    assert_eq!(
        m.addr,
        Some(("127.0.0.1:9200".parse().unwrap(), "--metrics-addr"))
    );

    // Metrics on the HTTP listener, from a file also used with --stdio: not served there,
    // and said so.
    let file = "[observability]\nmetrics = true\n";
    let s = resolve_with(&["--stdio"], Some(file)).unwrap();
    assert!(s.observability.metrics.is_none());
    assert!(
        s.notes[0].starts_with("observability.metrics: not served with --stdio"),
        "{:?}",
        s.notes
    );
    let s = resolve_with(&[], Some(file)).unwrap();
    assert_eq!(s.observability.metrics.unwrap().path, "/metrics");
}
