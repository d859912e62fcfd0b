//! The HTTP listener's settings: the flags over `[http]`, the limits of its connections, HTTPS,
//! and how handshake-era clients are served.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use kelson_http::server::{HttpConfig, ListenerConfig};

use super::{DEFAULT_BIND, TlsFiles, check_min, check_positive};
use crate::serve::ServeArgs;
use crate::serve::file::{FileConfig, LegacyHttpSetting};

const DEFAULT_PATH: &str = "/mcp";
const DEFAULT_MAX_MESSAGE: usize = 4 * 1024 * 1024;
const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// The smallest header size limit: a request's standard headers and a modest token fit.
const MIN_HEADER_BYTES: usize = 4096;
/// The least response memory: room for one large response of a few hundred kilobytes.
const MIN_RESPONSE_MEMORY: usize = 1024 * 1024;

/// The HTTP listener, resolved and checked.
#[derive(Debug)]
pub(crate) struct Http {
    pub bind: SocketAddr,
    /// The flag or key that gave `bind`: `--http` (also for the default) or `http.bind`.
    pub bind_key: &'static str,
    pub path: String,
    pub allowed_hosts: Vec<String>,
    pub allowed_origins: Vec<String>,
    pub max_message: usize,
    /// How long a new HTTP connection may stay silent, and a request take to arrive once begun.
    pub read_timeout: Duration,
    /// How long an HTTP connection may wait for its next request (HTTP/2: with no open stream).
    pub idle_timeout: Duration,
    /// How long a response may make no progress before it is abandoned.
    pub write_timeout: Duration,
    /// How long to keep serving, not ready, after a stop signal.
    pub shutdown_grace: Duration,
    /// The most HTTP connections open at once; `None`: from the limit of open files.
    pub max_connections: Option<usize>,
    /// The most concurrent streams on one HTTP/2 connection.
    pub h2_max_streams: u32,
    /// The largest request header section, in bytes.
    pub max_header_bytes: usize,
    /// The most connections open at once from one client address; `None`: no such limit.
    pub max_connections_per_address: Option<usize>,
    /// The most bytes large responses may hold at once while clients read them.
    pub response_memory: usize,
    /// HTTPS: the certificate and key files, when served.
    pub tls: Option<TlsFiles>,
}

/// The listener's address, endpoint path, accepted hosts and origins, limits and HTTPS files:
/// the flags over `[http]` (whose relative paths `in_file` resolves) over the defaults; and the
/// HTTP server's defaults, which the session settings ([`sessions`]) fall back on too.
pub(super) fn resolve(
    args: &ServeArgs,
    file: &FileConfig,
    in_file: &dyn Fn(&Path) -> PathBuf,
) -> Result<(Http, HttpConfig), String> {
    let (bind, bind_key) = match (&args.http, &file.http.bind) {
        (Some(addr), _) => (*addr, "--http"),
        (None, Some(text)) => (
            crate::flags::listen_addr(text).map_err(|e| format!("http.bind: {e}"))?,
            "http.bind",
        ),
        (None, None) => (
            DEFAULT_BIND.parse().expect("the default address parses"),
            "--http",
        ),
    };
    let (path, path_key) = match (&args.path, &file.http.path) {
        (Some(p), _) => (p.clone(), "--path"),
        (None, Some(p)) => (p.clone(), "http.path"),
        (None, None) => (DEFAULT_PATH.to_owned(), "--path"),
    };
    check_path(&path, path_key, "endpoint path")?;
    if path == "/healthz" || path == "/readyz" {
        return Err(format!(
            "{path_key}: {path} is where health is served; choose another endpoint path"
        ));
    }
    let mut allowed_hosts = Vec::new();
    for (i, host) in file.http.allowed_hosts.iter().enumerate() {
        check_host(host).map_err(|e| format!("http.allowed_hosts[{i}]: {e}"))?;
        allowed_hosts.push(host.clone());
    }
    for host in &args.allowed_hosts {
        check_host(host).map_err(|e| format!("--allowed-host: {e}"))?;
        allowed_hosts.push(host.clone());
    }
    let mut allowed_origins = Vec::new();
    for (i, origin) in file.http.allowed_origins.iter().enumerate() {
        check_origin(origin).map_err(|e| format!("http.allowed_origins[{i}]: {e}"))?;
        allowed_origins.push(origin.clone());
    }
    for origin in &args.allowed_origins {
        check_origin(origin).map_err(|e| format!("--allowed-origin: {e}"))?;
        allowed_origins.push(origin.clone());
    }
    let max_message = match (args.max_message, file.http.max_message) {
        (Some(n), _) => check_min(n, 1024, "--max-message")?,
        (None, Some(n)) => check_min(n, 1024, "http.max_message")?,
        (None, None) => DEFAULT_MAX_MESSAGE,
    };
    let read_timeout = match (args.read_timeout, &file.http.read_timeout) {
        (Some(d), _) => check_positive(d, "--read-timeout")?,
        (None, Some(s)) => check_positive(s.0, "http.read_timeout")?,
        (None, None) => DEFAULT_READ_TIMEOUT,
    };
    let http_defaults = HttpConfig::default();
    let listener_defaults = ListenerConfig::default();
    let idle_timeout = match (args.idle_timeout, &file.http.idle_timeout) {
        (Some(d), _) => check_positive(d, "--idle-timeout")?,
        (None, Some(s)) => check_positive(s.0, "http.idle_timeout")?,
        (None, None) => listener_defaults.idle_timeout,
    };
    let write_timeout = match (args.write_timeout, &file.http.write_timeout) {
        (Some(d), _) => check_positive(d, "--write-timeout")?,
        (None, Some(s)) => check_positive(s.0, "http.write_timeout")?,
        (None, None) => listener_defaults.write_timeout,
    };
    let shutdown_grace = match (args.shutdown_grace, &file.http.shutdown_grace) {
        (Some(d), _) => d,
        (None, Some(s)) => s.0,
        (None, None) => Duration::ZERO,
    };
    let max_connections = match (args.max_connections, file.http.max_connections) {
        (Some(n), _) => Some(check_min(n, 1, "--max-connections")?),
        (None, Some(n)) => Some(check_min(n, 1, "http.max_connections")?),
        (None, None) => None,
    };
    let h2_max_streams = match (args.h2_max_streams, file.http.h2_max_streams) {
        (Some(n), _) => check_min(n, 1, "--h2-max-streams")?,
        (None, Some(n)) => check_min(n, 1, "http.h2_max_streams")?,
        (None, None) => listener_defaults.h2_max_concurrent_streams,
    };
    let max_header_bytes = match (args.max_header_bytes, file.http.max_header_bytes) {
        (Some(n), _) => check_min(n, MIN_HEADER_BYTES, "--max-header-bytes")?,
        (None, Some(n)) => check_min(n, MIN_HEADER_BYTES, "http.max_header_bytes")?,
        (None, None) => listener_defaults.max_header_bytes,
    };
    let max_connections_per_address = match (
        args.max_connections_per_address,
        file.http.max_connections_per_address,
    ) {
        (Some(n), _) => Some(check_min(n, 1, "--max-connections-per-address")?),
        (None, Some(n)) => Some(check_min(n, 1, "http.max_connections_per_address")?),
        (None, None) => None,
    };
    let response_memory = match (args.response_memory, file.http.response_memory) {
        (Some(n), _) => check_min(n, MIN_RESPONSE_MEMORY, "--response-memory")?,
        (None, Some(n)) => check_min(n, MIN_RESPONSE_MEMORY, "http.response_memory")?,
        (None, None) => listener_defaults.response_memory,
    };

    // HTTPS: both files, from the flags or else from the file.
    let tls = match (
        &args.tls_cert,
        &args.tls_key,
        &file.http.tls_cert,
        &file.http.tls_key,
    ) {
        (Some(cert), Some(key), _, _) => Some(TlsFiles {
            cert: cert.clone(),
            key: key.clone(),
            from: "--tls-cert",
        }),
        (Some(_), None, _, _) | (None, Some(_), _, _) => {
            return Err("--tls-cert and --tls-key: give both, or neither".to_owned());
        }
        (None, None, Some(cert), Some(key)) => Some(TlsFiles {
            cert: in_file(cert),
            key: in_file(key),
            from: "http.tls_cert",
        }),
        (None, None, Some(_), None) => {
            return Err("http.tls_cert: http.tls_key is missing; give both, or neither".to_owned());
        }
        (None, None, None, Some(_)) => {
            return Err("http.tls_key: http.tls_cert is missing; give both, or neither".to_owned());
        }
        (None, None, None, None) => None,
    };
    let http = Http {
        bind,
        bind_key,
        path,
        allowed_hosts,
        allowed_origins,
        max_message,
        read_timeout,
        idle_timeout,
        write_timeout,
        shutdown_grace,
        max_connections,
        h2_max_streams,
        max_header_bytes,
        max_connections_per_address,
        response_memory,
        tls,
    };
    Ok((http, http_defaults))
}

/// How handshake-era clients are served over HTTP, resolved and checked.
pub(super) struct Sessions {
    pub(super) legacy_http: LegacyHttpSetting,
    pub(super) max_sessions: usize,
    pub(super) max_sessions_per_client: usize,
    pub(super) session_idle: Duration,
}

/// The handshake-era sessions: the flags over `[http]` over the HTTP server's defaults.
pub(super) fn sessions(
    args: &ServeArgs,
    file: &FileConfig,
    http_defaults: &HttpConfig,
) -> Result<Sessions, String> {
    let legacy_http = args
        .legacy_http
        .or(file.http.legacy)
        .unwrap_or(LegacyHttpSetting::Sessions);
    let max_sessions = match (args.max_sessions, file.http.max_sessions) {
        (Some(n), _) => check_min(n, 1, "--max-sessions")?,
        (None, Some(n)) => check_min(n, 1, "http.max_sessions")?,
        (None, None) => http_defaults.max_sessions,
    };
    let max_sessions_per_client = match (
        args.max_sessions_per_client,
        file.http.max_sessions_per_client,
    ) {
        (Some(n), _) => check_min(n, 1, "--max-sessions-per-client")?,
        (None, Some(n)) => check_min(n, 1, "http.max_sessions_per_client")?,
        (None, None) => http_defaults.max_sessions_per_caller,
    };
    let session_idle = match (args.session_idle, &file.http.session_idle) {
        (Some(d), _) => check_positive(d, "--session-idle")?,
        (None, Some(s)) => check_positive(s.0, "http.session_idle")?,
        (None, None) => http_defaults.session_idle,
    };
    Ok(Sessions {
        legacy_http,
        max_sessions,
        max_sessions_per_client,
        session_idle,
    })
}

/// An HTTP path: it starts with '/' and holds no white space.
pub(super) fn check_path(path: &str, key: &str, what: &str) -> Result<(), String> {
    if !path.starts_with('/') || path.contains(char::is_whitespace) {
        return Err(format!(
            "{key}: invalid {what} {path:?}: it must start with '/'"
        ));
    }
    Ok(())
}

fn check_host(host: &str) -> Result<(), String> {
    let ok = !host.is_empty()
        && !host.contains("://")
        && !host.contains('/')
        && !host.contains(char::is_whitespace);
    if ok {
        Ok(())
    } else {
        Err(format!(
            "invalid host {host:?}: give a host name such as mcp.example.com"
        ))
    }
}

fn check_origin(origin: &str) -> Result<(), String> {
    let rest = origin
        .strip_prefix("https://")
        .or_else(|| origin.strip_prefix("http://"));
    let ok = rest.is_some_and(|host| {
        let host = host.trim_end_matches('/');
        !host.is_empty() && !host.contains('/') && !host.contains(char::is_whitespace)
    });
    if ok {
        Ok(())
    } else {
        Err(format!(
            "invalid origin {origin:?}: give scheme://host[:port], such as https://app.example.com"
        ))
    }
}
