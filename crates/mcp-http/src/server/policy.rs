//! Which `Host` and `Origin` values the server accepts: DNS-rebinding protection.
//!
//! spec 2026-07-28 basic/transports/streamable-http (Security): servers MUST validate `Origin` and
//! answer 403 when it is present and invalid; local servers SHOULD bind to loopback. The conformance
//! scenario `dns-rebinding-protection` also expects a loopback server to refuse a `Host` that is not
//! `localhost`, `127.0.0.1` or `[::1]` (any port): a DNS-rebinding attack reaches the server under the
//! attacker's host name, so the `Host` header is what gives it away.

use std::net::SocketAddr;

/// The `Host` and `Origin` values a server accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OriginPolicy {
    /// Require a loopback `Host` (or one of `allowed_hosts`).
    loopback: bool,
    /// Extra host names (lowercase, without port) accepted in `Host`, and in the host part of `Origin`.
    allowed_hosts: Vec<String>,
    /// Exact origins (`scheme://host[:port]`, lowercase) accepted in `Origin`.
    allowed_origins: Vec<String>,
}

const LOOPBACK_HOSTS: &[&str] = &["localhost", "127.0.0.1", "[::1]"];

impl OriginPolicy {
    /// For a server bound to a loopback address: loopback `Host` and `Origin` only.
    pub fn loopback() -> Self {
        OriginPolicy {
            loopback: true,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
        }
    }

    /// For a server bound to a public address: any `Host`, and no browser `Origin` until allowed.
    pub fn public() -> Self {
        OriginPolicy {
            loopback: false,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
        }
    }

    /// The secure default for a server bound to `addr`.
    pub fn for_bind(addr: SocketAddr) -> Self {
        if addr.ip().is_loopback() {
            Self::loopback()
        } else {
            Self::public()
        }
    }

    /// Accepts `host` (a name such as `mcp.example.com`, any port) in `Host`, and origins on that
    /// host. This is the one setting a loopback server needs behind a reverse proxy that forwards
    /// the public host name.
    #[must_use]
    pub fn allow_host(mut self, host: &str) -> Self {
        self.allowed_hosts
            .push(strip_port(host.trim()).to_ascii_lowercase());
        self
    }

    /// Accepts a browser origin such as `https://app.example.com`.
    #[must_use]
    pub fn allow_origin(mut self, origin: &str) -> Self {
        self.allowed_origins
            .push(origin.trim().trim_end_matches('/').to_ascii_lowercase());
        self
    }

    /// Checks a request's `Host` (or `:authority`) and `Origin`. `Err` holds the reason for a 403.
    pub fn check(&self, host: Option<&str>, origin: Option<&[u8]>) -> Result<(), String> {
        if self.loopback || !self.allowed_hosts.is_empty() {
            let Some(host) = host else {
                return Err("the request has no Host header".to_owned());
            };
            if !self.host_allowed(strip_port(host)) {
                return Err(format!("Host {host:?} is not allowed"));
            }
        }
        if let Some(origin) = origin {
            let Ok(origin) = std::str::from_utf8(origin) else {
                return Err("the Origin header is not valid text".to_owned());
            };
            let origin = origin.trim().to_ascii_lowercase();
            if self.allowed_origins.contains(&origin) {
                return Ok(());
            }
            let Some(host) = origin_host(&origin) else {
                return Err(format!("Origin {origin:?} is not allowed"));
            };
            if !self.host_allowed(host) {
                return Err(format!("Origin {origin:?} is not allowed"));
            }
        }
        Ok(())
    }

    /// Host names compare case-insensitively, in place (this runs on every request).
    fn host_allowed(&self, name: &str) -> bool {
        let same = |h: &&str| h.eq_ignore_ascii_case(name);
        (self.loopback && LOOPBACK_HOSTS.iter().any(same))
            || self
                .allowed_hosts
                .iter()
                .map(String::as_str)
                .any(|h| same(&h))
    }
}

/// `example.com:8080` -> `example.com`, `[::1]:80` -> `[::1]`.
fn strip_port(host: &str) -> &str {
    if host.starts_with('[') {
        return host.find(']').map_or(host, |end| &host[..=end]);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

/// The host of an origin `scheme://host[:port]`; `None` for `null` and other opaque origins.
fn origin_host(origin: &str) -> Option<&str> {
    let (scheme, rest) = origin.split_once("://")?;
    if !matches!(scheme, "http" | "https") || rest.contains('/') || rest.is_empty() {
        return None;
    }
    Some(strip_port(rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_accepts_local_names_on_any_port() {
        let p = OriginPolicy::loopback();
        for host in [
            "localhost",
            "localhost:3000",
            "127.0.0.1:8080",
            "[::1]:9",
            "LOCALHOST",
        ] {
            assert!(p.check(Some(host), None).is_ok(), "{host}");
        }
        for origin in [
            "http://localhost:5173",
            "http://127.0.0.1",
            "https://[::1]:8443",
        ] {
            assert!(
                p.check(Some("localhost"), Some(origin.as_bytes())).is_ok(),
                "{origin}"
            );
        }
    }

    #[test]
    fn loopback_refuses_rebinding() {
        let p = OriginPolicy::loopback();
        assert!(p.check(Some("evil.example.com"), None).is_err());
        assert!(p.check(Some("127.0.0.1.evil.com:80"), None).is_err());
        assert!(p.check(None, None).is_err());
        for origin in [
            "http://evil.example.com",
            "null",
            "file://",
            "http://localhost.evil.com",
        ] {
            assert!(
                p.check(Some("localhost"), Some(origin.as_bytes())).is_err(),
                "{origin}"
            );
        }
    }

    #[test]
    fn a_reverse_proxy_host_can_be_allowed() {
        let p = OriginPolicy::loopback().allow_host("mcp.example.com");
        assert!(
            p.check(Some("mcp.example.com"), Some(b"https://mcp.example.com"))
                .is_ok()
        );
        assert!(p.check(Some("localhost:1"), None).is_ok());
        assert!(p.check(Some("other.example.com"), None).is_err());
    }

    #[test]
    fn public_servers_allow_any_host_but_no_unlisted_origin() {
        let p = OriginPolicy::public();
        assert!(p.check(Some("anything.example"), None).is_ok());
        assert!(p.check(None, None).is_ok());
        assert!(
            p.check(Some("x"), Some(b"https://app.example.com"))
                .is_err()
        );
        let p = p.allow_origin("https://app.example.com/");
        assert!(p.check(Some("x"), Some(b"https://APP.example.com")).is_ok());
    }
}
