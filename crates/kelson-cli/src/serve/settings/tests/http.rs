//! The HTTP listener's settings: addresses, limits, HTTPS.

use super::*;
use kelson_http::server::{HttpConfig, ListenerConfig};

#[test]
fn addresses_take_a_port_or_localhost_in_flags_and_file() {
    let bind = |argv: &[&str], toml: Option<&str>| resolve_with(argv, toml).unwrap().http.bind;
    assert_eq!(
        bind(&["--http", "8080"], None).to_string(),
        "127.0.0.1:8080"
    );
    assert_eq!(
        bind(&["--http", "localhost:9000"], None).to_string(),
        "127.0.0.1:9000"
    );
    assert_eq!(
        bind(&[], Some("[http]\nbind = \"localhost:8081\"\n")).to_string(),
        "127.0.0.1:8081"
    );
    assert_eq!(
        bind(&[], Some("[http]\nbind = \"8082\"\n")).to_string(),
        "127.0.0.1:8082"
    );
    let metrics = resolve_with(&["--metrics-addr", "9090"], None)
        .unwrap()
        .observability
        .metrics
        .unwrap();
    assert_eq!(metrics.addr.unwrap().0.to_string(), "127.0.0.1:9090");
    let e = Cli::try_parse_from(["serve", "--http", "example.com:80"])
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("invalid address \"example.com:80\""), "{e}");
}

#[test]
fn header_and_per_address_limits_come_from_the_flags_over_the_file() {
    let s = resolve_with(&[], None).unwrap();
    assert_eq!(
        (s.http.max_header_bytes, s.http.max_connections_per_address),
        (64 * 1024, None)
    );
    let file = "[http]\nmax_header_bytes = 16384\nmax_connections_per_address = 20\n";
    let s = resolve_with(&[], Some(file)).unwrap();
    assert_eq!(
        (s.http.max_header_bytes, s.http.max_connections_per_address),
        (16384, Some(20))
    );
    let s = resolve_with(
        &[
            "--max-header-bytes",
            "8192",
            "--max-connections-per-address",
            "4",
        ],
        Some(file),
    )
    .unwrap();
    assert_eq!(
        (s.http.max_header_bytes, s.http.max_connections_per_address),
        (8192, Some(4))
    );
    let err = resolve_with(&["--max-header-bytes", "100"], None).unwrap_err();
    assert!(
        err.contains("--max-header-bytes: must be at least 4096"),
        "{err}"
    );
    let err = resolve_with(&[], Some("[http]\nmax_connections_per_address = 0\n")).unwrap_err();
    assert!(
        err.contains("http.max_connections_per_address: must be at least 1"),
        "{err}"
    );
}

#[test]
fn connection_limits_come_from_the_flags_over_the_file_over_the_defaults() {
    let s = resolve_with(&[], None).unwrap();
    let defaults = ListenerConfig::default();
    assert_eq!(s.http.idle_timeout, Duration::from_secs(120));
    assert_eq!(s.http.write_timeout, Duration::from_secs(30));
    assert_eq!(s.http.max_connections, None);
    assert_eq!(s.http.h2_max_streams, defaults.h2_max_concurrent_streams);
    assert_eq!(s.http.response_memory, 64 * 1024 * 1024);
    let file = "[http]\nidle_timeout = \"5s\"\nwrite_timeout = 7\nmax_connections = 300\n\
                h2_max_streams = 8\nresponse_memory = 2097152\n";
    let s = resolve_with(&[], Some(file)).unwrap();
    assert_eq!(
        (s.http.idle_timeout, s.http.write_timeout),
        (Duration::from_secs(5), Duration::from_secs(7))
    );
    assert_eq!(
        (
            s.http.max_connections,
            s.http.h2_max_streams,
            s.http.response_memory
        ),
        (Some(300), 8, 2 * 1024 * 1024)
    );
    let s = resolve_with(
        &[
            "--idle-timeout",
            "500ms",
            "--write-timeout",
            "1s",
            "--max-connections",
            "9",
            "--h2-max-streams",
            "3",
            "--response-memory",
            "1048576",
        ],
        Some(file),
    )
    .unwrap();
    assert_eq!(
        (s.http.idle_timeout, s.http.write_timeout),
        (Duration::from_millis(500), Duration::from_secs(1))
    );
    assert_eq!(
        (
            s.http.max_connections,
            s.http.h2_max_streams,
            s.http.response_memory
        ),
        (Some(9), 3, 1024 * 1024)
    );
    for (flags, error) in [
        (
            ["--idle-timeout", "0s"],
            "--idle-timeout: must be more than zero",
        ),
        (
            ["--write-timeout", "0"],
            "--write-timeout: must be more than zero",
        ),
        (
            ["--max-connections", "0"],
            "--max-connections: must be at least 1",
        ),
        (
            ["--h2-max-streams", "0"],
            "--h2-max-streams: must be at least 1",
        ),
        (
            ["--response-memory", "65536"],
            "--response-memory: must be at least 1048576",
        ),
    ] {
        assert_eq!(resolve_with(&flags, None).unwrap_err(), error);
    }
}

#[test]
fn tls_files_come_in_pairs_from_the_flags_or_the_file() {
    let tls = resolve_with(&["--tls-cert", "c.pem", "--tls-key", "k.pem"], None)
        .unwrap()
        .http
        .tls
        .expect("HTTPS");
    assert_eq!(
        (tls.cert, tls.key, tls.from),
        (PathBuf::from("c.pem"), PathBuf::from("k.pem"), "--tls-cert")
    );
    // The file's paths are relative to the file; the flags win over it.
    let file = "[http]\ntls_cert = \"c.pem\"\ntls_key = \"k.pem\"\n";
    let tls = resolve_with(&[], Some(file))
        .unwrap()
        .http
        .tls
        .expect("HTTPS");
    assert_eq!(tls.cert, PathBuf::from("/etc/mcp/c.pem"));
    assert_eq!(tls.from, "http.tls_cert");
    let tls = resolve_with(&["--tls-cert", "a", "--tls-key", "b"], Some(file))
        .unwrap()
        .http
        .tls
        .unwrap();
    assert_eq!(tls.cert, PathBuf::from("a"));
    // One without the other is an error that names the missing key.
    let err = resolve_with(&[], Some("[http]\ntls_cert = \"c.pem\"\n")).unwrap_err();
    assert!(
        err.starts_with("http.tls_cert: http.tls_key is missing"),
        "{err}"
    );
    let err = resolve_with(&[], Some("[http]\ntls_key = \"k.pem\"\n")).unwrap_err();
    assert!(err.starts_with("http.tls_key:"), "{err}");
    // With --stdio there is no listener: a note, and no TLS.
    let s = resolve_with(&["--stdio"], Some(file)).unwrap();
    assert!(s.http.tls.is_none());
    assert!(
        s.notes
            .iter()
            .any(|n| n.starts_with("http.tls_cert: not used")),
        "{:?}",
        s.notes
    );
}

#[test]
fn the_sessions_per_client_come_from_the_flag_over_the_file_over_the_default() {
    let per_client = |argv: &[&str], toml: Option<&str>| {
        resolve_with(argv, toml).map(|s| s.max_sessions_per_client)
    };
    assert_eq!(
        per_client(&[], None).unwrap(),
        HttpConfig::default().max_sessions_per_caller
    );
    let file = "[http]\nmax_sessions_per_client = 12\n";
    assert_eq!(per_client(&[], Some(file)).unwrap(), 12);
    assert_eq!(
        per_client(&["--max-sessions-per-client", "3"], Some(file)).unwrap(),
        3
    );
    let err = per_client(&[], Some("[http]\nmax_sessions_per_client = 0\n")).unwrap_err();
    assert!(
        err.contains("http.max_sessions_per_client: must be at least 1"),
        "{err}"
    );
}
