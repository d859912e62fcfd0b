//! The Host/Origin policy through the binary: hosts parsed exactly, the request target's authority
//! as the host, duplicates refused.

use serde_json::json;

use super::support::{HttpReply, Serve, TempDir, http, meta, raw_http, rpc_headers};

/// A `server/discover` POST to the server's endpoint with `extra` headers (a `Host` among them
/// replaces the one `http` sends).
fn discover(serve: &Serve, extra: &[(&str, &str)]) -> HttpReply {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                      "params": {"_meta": meta(false)}})
    .to_string();
    let mut headers = rpc_headers("server/discover", None);
    headers.extend_from_slice(extra);
    http(&serve.url, "POST", &headers, &body)
}

/// The same request written byte for byte with `target` as its request target and `lines` as
/// extra header lines.
fn discover_raw(serve: &Serve, target: &str, lines: &[&str]) -> HttpReply {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                      "params": {"_meta": meta(false)}})
    .to_string();
    let authority = authority(serve);
    let mut request = format!(
        "POST {target} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: server/discover\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for line in lines {
        request.push_str(line);
        request.push_str("\r\n");
    }
    request.push_str("\r\n");
    request.push_str(&body);
    raw_http(&authority, request.as_bytes())
}

fn authority(serve: &Serve) -> String {
    let rest = serve.url.strip_prefix("http://").expect("an http URL");
    rest[..rest.find('/').expect("a path")].to_owned()
}

#[track_caller]
fn expect(reply: &HttpReply, status: u16, case: &str) {
    assert_eq!(
        reply.status, status,
        "{case}: {}\n{}",
        reply.head, reply.body
    );
}

#[test]
fn hosts_and_origins_are_parsed_exactly_and_duplicates_refused() {
    let scratch = TempDir::new();
    let serve = Serve::start(&scratch.join("data"), &[]);
    let port = authority(&serve).rsplit(':').next().unwrap().to_owned();

    // An IP literal followed by anything but a port is a malformed Host: 400, never `[::1]`.
    for host in ["[::1].evil.com", "[::1]evil.com:80", "[::1]:80.evil.com"] {
        expect(&discover(&serve, &[("Host", host)]), 400, host);
    }
    // An origin like it is not allowed: 403.
    let origin = "http://[::1].evil.com:80";
    expect(&discover(&serve, &[("Origin", origin)]), 403, origin);
    // Two Origin fields: refused, not read for the first one.
    let twice = [
        ("Origin", "http://localhost"),
        ("Origin", "http://evil.example.com"),
    ];
    expect(&discover(&serve, &twice), 403, "two Origin fields");
    expect(&discover(&serve, &twice[..1]), 200, "one local Origin");

    // RFC 9112 §3.2.2: an absolute-form target's authority is the host, whatever Host says.
    expect(
        &discover_raw(&serve, "http://evil.example.com/mcp", &[]),
        403,
        "a foreign absolute-form target",
    );
    expect(
        &discover_raw(&serve, "http://[::1].evil.com/mcp", &[]),
        400,
        "a malformed absolute-form target",
    );
    expect(
        &discover_raw(&serve, &format!("http://localhost:{port}/mcp"), &[]),
        200,
        "a local absolute-form target",
    );
    // Two Host fields: 400 (RFC 9112 §3.2).
    expect(
        &discover_raw(&serve, "/mcp", &["Host: localhost"]),
        400,
        "two Host fields",
    );
}

/// Bound to 0.0.0.0, the server still refuses a `Host` name nobody listed (a DNS-rebinding page
/// reaches it under a name of its own), takes IP addresses and loopback names, and names the
/// hosts and origins it accepts at start. The Origin check for browsers holds in every case.
#[test]
fn off_loopback_unknown_host_names_are_refused_unless_listed() {
    let scratch = TempDir::new();
    let serve = Serve::start_without_bind(
        &scratch.join("data"),
        &["--http", "0.0.0.0:0", "--allowed-host", "mcp.example.com"],
    );
    let log = serve.log();
    assert!(
        log.contains(
            "accepting Host: localhost, 127.0.0.1, [::1], IP addresses, mcp.example.com (other \
             names refused: list them with --allowed-host); browser Origin: \
             http(s)://mcp.example.com"
        ),
        "{log}"
    );
    let port = authority(&serve).rsplit(':').next().unwrap().to_owned();
    for host in [
        "evil.example.com",
        "127.0.0.1.evil.example.com:80",
        "other.example.com",
    ] {
        expect(&discover(&serve, &[("Host", host)]), 403, host);
    }
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        "192.0.2.7:8080".to_owned(),
        "[2001:db8::1]".to_owned(),
        "mcp.example.com".to_owned(),
    ] {
        expect(&discover(&serve, &[("Host", &host)]), 200, &host);
    }
    // Browsers: only from listed hosts or origins, not from pages on loopback or an address.
    for origin in [
        "http://evil.example.com",
        "http://localhost:5173",
        "http://192.0.2.7:8080",
    ] {
        expect(&discover(&serve, &[("Origin", origin)]), 403, origin);
    }
    expect(
        &discover(&serve, &[("Origin", "https://mcp.example.com")]),
        200,
        "a listed host's origin",
    );
}

/// `--allowed-host '*'` takes any host, and browsers are still held to their origin.
#[test]
fn any_host_can_be_allowed_and_origins_are_still_checked() {
    let scratch = TempDir::new();
    let serve = Serve::start_without_bind(
        &scratch.join("data"),
        &["--http", "0.0.0.0:0", "--allowed-host", "*"],
    );
    assert!(
        serve
            .log()
            .contains("accepting Host: any; browser Origin: none"),
        "{}",
        serve.log()
    );
    expect(
        &discover(&serve, &[("Host", "anything.example.com")]),
        200,
        "any host",
    );
    expect(
        &discover(
            &serve,
            &[
                ("Host", "anything.example.com"),
                ("Origin", "http://anything.example.com"),
            ],
        ),
        403,
        "an unlisted origin",
    );
}
