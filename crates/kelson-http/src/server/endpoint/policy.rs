//! Which `Host` and `Origin` values the server accepts: DNS-rebinding protection.
//!
//! spec 2026-07-28 basic/transports/streamable-http (Security): servers MUST validate `Origin` and
//! answer 403 when it is present and invalid; local servers SHOULD bind to loopback. The conformance
//! scenario `dns-rebinding-protection` also expects a loopback server to refuse a `Host` that is not
//! `localhost`, `127.0.0.1` or `[::1]` (any port): a DNS-rebinding attack reaches the server under the
//! attacker's host name, so the `Host` header is what gives it away.
//!
//! The same holds for a server bound to another address: a page whose name the attacker rebinds
//! to a LAN or public address the server listens on reaches it with its own name in `Host`. So off
//! loopback too, `Host` must be a loopback name, an IP address (a request addressed by number
//! cannot come from a rebound name), or a name the operator listed; only
//! [`allow_any_host`](OriginPolicy::allow_any_host) lifts that, leaving `Origin` as the only check
//! for browsers.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};

use http::header::{HOST, ORIGIN};
use http::{HeaderMap, StatusCode, Uri, Version};

/// The `Host` and `Origin` values a server accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OriginPolicy {
    /// Which `Host` values are accepted besides `allowed_hosts`.
    hosts: Hosts,
    /// Extra host names (lowercase, without port) accepted in `Host`, and in the host part of `Origin`.
    allowed_hosts: Vec<String>,
    /// Exact origins (`scheme://host[:port]`, lowercase) accepted in `Origin`.
    allowed_origins: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Hosts {
    /// Loopback names; also accepted as browser origins.
    Loopback,
    /// Loopback names and IP addresses; browser origins only when listed.
    Addresses,
    /// Any host; browser origins only when listed.
    Any,
}

const LOOPBACK_HOSTS: &[&str] = &["localhost", "127.0.0.1", "[::1]"];

/// Why the policy refused a request: the status to answer with and the reason, for the body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// 400 for a request that names its host in a malformed or ambiguous way, 403 for a host or
    /// an origin that is not allowed.
    pub status: StatusCode,
    /// What was wrong, in a sentence.
    pub reason: String,
}

impl Refusal {
    fn bad(reason: impl Into<String>) -> Self {
        Refusal {
            status: StatusCode::BAD_REQUEST,
            reason: reason.into(),
        }
    }

    fn forbidden(reason: impl Into<String>) -> Self {
        Refusal {
            status: StatusCode::FORBIDDEN,
            reason: reason.into(),
        }
    }
}

impl OriginPolicy {
    /// For a server bound to a loopback address: loopback `Host` and `Origin` only.
    pub fn loopback() -> Self {
        Self::with(Hosts::Loopback)
    }

    /// For a server bound to another address: a `Host` that is a loopback name or an IP address
    /// (any port), and no browser `Origin` until allowed. Host names are refused unless allowed
    /// ([`allow_host`](Self::allow_host)), since a DNS-rebinding page reaches the server under a
    /// name of its own.
    pub fn public() -> Self {
        Self::with(Hosts::Addresses)
    }

    /// The secure default for a server bound to `addr`.
    pub fn for_bind(addr: SocketAddr) -> Self {
        if addr.ip().is_loopback() {
            Self::loopback()
        } else {
            Self::public()
        }
    }

    fn with(hosts: Hosts) -> Self {
        OriginPolicy {
            hosts,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
        }
    }

    /// Accepts any `Host`: for a server behind a proxy that checks the host names itself.
    /// Browser requests are still refused unless their origin is allowed.
    #[must_use]
    pub fn allow_any_host(mut self) -> Self {
        self.hosts = Hosts::Any;
        self
    }

    /// Accepts `host` (a name such as `mcp.example.com`, any port) in `Host`, and origins on that
    /// host. This is the one setting a loopback server needs behind a reverse proxy that forwards
    /// the public host name.
    #[must_use]
    pub fn allow_host(mut self, host: &str) -> Self {
        let host = host.trim();
        let name = host_name(host).unwrap_or(host);
        self.allowed_hosts.push(name.to_ascii_lowercase());
        self
    }

    /// Accepts a browser origin such as `https://app.example.com`.
    #[must_use]
    pub fn allow_origin(mut self, origin: &str) -> Self {
        self.allowed_origins
            .push(origin.trim().trim_end_matches('/').to_ascii_lowercase());
        self
    }

    /// Checks a request: which host it is addressed to (the `Host` header, else the URI authority, as HTTP/2 sends it) and its `Origin`
    /// (at most one). This is what the endpoint and the metrics path run first.
    pub fn check_request(
        &self,
        version: Version,
        uri: &Uri,
        headers: &HeaderMap,
    ) -> Result<(), Refusal> {
        let host = request_host(version, uri, headers)?;
        let mut origins = headers.get_all(ORIGIN).iter();
        let origin = origins.next();
        if origins.next().is_some() {
            // One page makes a request; two origins are a forgery or a broken proxy, and taking
            // either one would let the other through unchecked.
            return Err(Refusal::forbidden(
                "the request carries more than one Origin field",
            ));
        }
        self.check_host_and_origin(host, origin.map(http::HeaderValue::as_bytes))
    }

    /// Checks a request's host (its `Host` or `:authority`) and `Origin`. `Err` holds the reason
    /// for a 403 (or, when the host is malformed, a 400); [`check_request`](Self::check_request)
    /// also finds the host and refuses duplicates.
    pub fn check(&self, host: Option<&str>, origin: Option<&[u8]>) -> Result<(), String> {
        self.check_host_and_origin(host, origin)
            .map_err(|r| r.reason)
    }

    fn check_host_and_origin(
        &self,
        host: Option<&str>,
        origin: Option<&[u8]>,
    ) -> Result<(), Refusal> {
        if let Some(host) = host {
            // RFC 9112 §3.2: a Host field with an invalid value is a 400, whatever the policy.
            let Some(name) = host_name(host) else {
                return Err(Refusal::bad(format!("the host {host:?} is malformed")));
            };
            if !self.host_allowed(name) {
                return Err(Refusal::forbidden(format!("Host {host:?} is not allowed")));
            }
        } else if self.hosts != Hosts::Any {
            return Err(Refusal::forbidden("the request has no Host header"));
        }
        if let Some(origin) = origin {
            let Ok(origin) = std::str::from_utf8(origin) else {
                return Err(Refusal::forbidden("the Origin header is not valid text"));
            };
            let origin = origin.trim().to_ascii_lowercase();
            if self.allowed_origins.contains(&origin) {
                return Ok(());
            }
            match origin_host(&origin) {
                Some(name) if self.origin_host_allowed(name) => {}
                _ => {
                    return Err(Refusal::forbidden(format!(
                        "Origin {origin:?} is not allowed"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Whether `name` (a host without port) is accepted in `Host`. Names compare
    /// case-insensitively, in place (this runs on every request).
    fn host_allowed(&self, name: &str) -> bool {
        match self.hosts {
            Hosts::Any => true,
            Hosts::Loopback => is_loopback_name(name) || self.listed(name),
            Hosts::Addresses => is_loopback_name(name) || is_ip_literal(name) || self.listed(name),
        }
    }

    /// Whether `name` is accepted as the host of a browser's `Origin`: on loopback the loopback
    /// names, elsewhere only the names listed.
    fn origin_host_allowed(&self, name: &str) -> bool {
        (self.hosts == Hosts::Loopback && is_loopback_name(name)) || self.listed(name)
    }

    fn listed(&self, name: &str) -> bool {
        self.allowed_hosts
            .iter()
            .any(|h| h.eq_ignore_ascii_case(name))
    }
}

/// What the policy accepts, in a sentence (for the log at start).
impl fmt::Display for OriginPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Host: ")?;
        match self.hosts {
            Hosts::Any => f.write_str("any")?,
            Hosts::Loopback | Hosts::Addresses => {
                f.write_str("localhost, 127.0.0.1, [::1]")?;
                if self.hosts == Hosts::Addresses {
                    f.write_str(", IP addresses")?;
                }
                for host in &self.allowed_hosts {
                    write!(f, ", {host}")?;
                }
                if self.hosts == Hosts::Addresses {
                    f.write_str(" (other names refused: list them with --allowed-host)")?;
                }
            }
        }
        f.write_str("; browser Origin: ")?;
        let mut origins: Vec<String> = Vec::new();
        if self.hosts == Hosts::Loopback {
            origins.extend(LOOPBACK_HOSTS.iter().map(|h| format!("http(s)://{h}")));
        }
        origins.extend(self.allowed_hosts.iter().map(|h| format!("http(s)://{h}")));
        origins.extend(self.allowed_origins.iter().cloned());
        if origins.is_empty() {
            f.write_str("none (list them with --allowed-origin)")
        } else {
            f.write_str(&origins.join(", "))
        }
    }
}

fn is_loopback_name(name: &str) -> bool {
    LOOPBACK_HOSTS.iter().any(|h| h.eq_ignore_ascii_case(name))
}

/// An IPv4 address, or an IPv6 address in brackets.
fn is_ip_literal(name: &str) -> bool {
    match name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
        Some(v6) => v6.parse::<Ipv6Addr>().is_ok(),
        None => name.parse::<Ipv4Addr>().is_ok(),
    }
}

/// The authority a request is addressed to, by the rules of its protocol.
///
/// - HTTP/1.1 (RFC 9112 §3.2.2): with an absolute-form target (`POST http://host/mcp`), the
///   target's authority is the host and `Host` is ignored; otherwise it is `Host`.
/// - HTTP/2 (RFC 9113 §8.3.1): `:authority`, or `Host` without it; both present and different make
///   the request malformed.
///
/// More than one `Host` field is a 400 on either (RFC 9112 §3.2), and so is a value that is not
/// text. `None`: the request names no host (HTTP/1.0 may not).
pub(crate) fn request_host<'a>(
    version: Version,
    uri: &'a Uri,
    headers: &'a HeaderMap,
) -> Result<Option<&'a str>, Refusal> {
    let mut fields = headers.get_all(HOST).iter();
    let field = fields.next();
    if fields.next().is_some() {
        return Err(Refusal::bad("the request carries more than one Host field"));
    }
    let field = field
        .map(|v| v.to_str())
        .transpose()
        .map_err(|_| Refusal::bad("the Host field is not valid text"))?;
    match (uri.authority().map(http::uri::Authority::as_str), field) {
        (Some(target), Some(host))
            if version == Version::HTTP_2 && !target.eq_ignore_ascii_case(host) =>
        {
            Err(Refusal::bad(format!(
                "the Host field {host:?} differs from the :authority {target:?}"
            )))
        }
        (Some(target), _) => Ok(Some(target)),
        (None, host) => Ok(host),
    }
}

/// The host of an authority `host[:port]`, parsed exactly (RFC 3986 §3.2.2): an IP literal in
/// brackets, or a name (or IPv4 address) of the characters a `reg-name` may hold; then nothing, or
/// `:` and a port of digits. `None` for anything else: user information, a second colon, text
/// after the brackets (`[::1].evil.com`, `[::1]evil.com:80`).
fn host_name(authority: &str) -> Option<&str> {
    let (host, port) = if authority.starts_with('[') {
        let end = authority.find(']')?;
        let inner = &authority[1..end];
        let literal = !inner.is_empty()
            && inner
                .bytes()
                .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.');
        if !literal {
            return None;
        }
        let rest = &authority[end + 1..];
        let port = match rest.strip_prefix(':') {
            Some(port) => port,
            None if rest.is_empty() => "",
            None => return None,
        };
        (&authority[..=end], port)
    } else {
        let (host, port) = authority.split_once(':').unwrap_or((authority, ""));
        let name = !host.is_empty()
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._~%!$&'()*+,;=".contains(&b));
        if !name {
            return None;
        }
        (host, port)
    };
    (port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit())).then_some(host)
}

/// The host of an origin `scheme://host[:port]`; `None` for `null`, other opaque origins and
/// anything malformed.
fn origin_host(origin: &str) -> Option<&str> {
    let (scheme, rest) = origin.split_once("://")?;
    if !matches!(scheme, "http" | "https") {
        return None;
    }
    host_name(rest)
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
    fn public_servers_take_addresses_and_listed_names_but_no_unlisted_origin() {
        let p = OriginPolicy::public();
        for host in [
            "localhost:8080",
            "127.0.0.1",
            "192.0.2.7:8080",
            "0.0.0.0:1",
            "[2001:db8::1]:443",
            "[::1]",
        ] {
            assert!(p.check(Some(host), None).is_ok(), "{host}");
        }
        // A DNS-rebinding page reaches the server under a name of its own.
        for host in [
            "anything.example",
            "192.0.2.7.evil.example",
            "1.2.3",
            "[fe80::1%25eth0]",
        ] {
            assert!(p.check(Some(host), None).is_err(), "{host}");
        }
        assert!(p.check(None, None).is_err());
        // Browsers only from listed origins, not even from loopback pages.
        for origin in [
            "https://app.example.com",
            "http://localhost:5173",
            "http://192.0.2.7",
        ] {
            assert!(
                p.check(Some("192.0.2.7"), Some(origin.as_bytes())).is_err(),
                "{origin}"
            );
        }
        let p = p
            .allow_origin("https://app.example.com/")
            .allow_host("mcp.example.com");
        assert!(
            p.check(Some("192.0.2.7"), Some(b"https://APP.example.com"))
                .is_ok()
        );
        assert!(
            p.check(
                Some("mcp.example.com:443"),
                Some(b"https://mcp.example.com")
            )
            .is_ok()
        );
        assert!(p.check(Some("other.example.com"), None).is_err());
    }

    #[test]
    fn any_host_can_be_allowed_but_origins_are_still_checked() {
        let p = OriginPolicy::public().allow_any_host();
        assert!(p.check(Some("anything.example"), None).is_ok());
        assert!(p.check(None, None).is_ok());
        assert!(p.check(Some("[::1]x"), None).is_err(), "still parsed");
        assert!(
            p.check(Some("x.example"), Some(b"https://evil.example"))
                .is_err()
        );
    }

    #[test]
    fn the_policy_says_what_it_accepts() {
        assert_eq!(
            OriginPolicy::loopback().to_string(),
            "Host: localhost, 127.0.0.1, [::1]; browser Origin: http(s)://localhost, \
             http(s)://127.0.0.1, http(s)://[::1]"
        );
        assert_eq!(
            OriginPolicy::public()
                .allow_host("mcp.example.com")
                .allow_origin("https://app.example.com")
                .to_string(),
            "Host: localhost, 127.0.0.1, [::1], IP addresses, mcp.example.com (other names \
             refused: list them with --allowed-host); browser Origin: http(s)://mcp.example.com, \
             https://app.example.com"
        );
        assert_eq!(
            OriginPolicy::public().allow_any_host().to_string(),
            "Host: any; browser Origin: none (list them with --allowed-origin)"
        );
    }

    #[test]
    fn hosts_are_parsed_exactly() {
        for (authority, host) in [
            ("localhost", "localhost"),
            ("localhost:8080", "localhost"),
            ("localhost:", "localhost"),
            ("127.0.0.1:80", "127.0.0.1"),
            ("[::1]", "[::1]"),
            ("[::1]:9", "[::1]"),
            ("[::ffff:127.0.0.1]:443", "[::ffff:127.0.0.1]"),
            ("mcp.example.com", "mcp.example.com"),
        ] {
            assert_eq!(host_name(authority), Some(host), "{authority}");
        }
        for authority in [
            "",
            ":80",
            "[::1].evil.com",
            "[::1]evil.com:80",
            "[::1]:80.evil.com",
            "[::1",
            "[]",
            "[evil.com]",
            "localhost:80:80",
            "localhost:8o",
            "localhost:123456",
            "user@localhost",
            "localhost/evil",
            "local host",
        ] {
            assert_eq!(host_name(authority), None, "{authority}");
        }
    }

    #[test]
    fn bracketed_hosts_and_origins_with_a_tail_are_refused() {
        let p = OriginPolicy::loopback();
        for host in ["[::1].evil.com", "[::1]evil.com:80", "[::1]:80.evil.com"] {
            let refusal = p.check_host_and_origin(Some(host), None).unwrap_err();
            assert_eq!(refusal.status, StatusCode::BAD_REQUEST, "{host}");
        }
        for origin in [
            "http://[::1].evil.com:80",
            "http://[::1]evil.com",
            "http://localhost:80/",
            "http://user@localhost",
        ] {
            let refusal = p
                .check_host_and_origin(Some("localhost"), Some(origin.as_bytes()))
                .unwrap_err();
            assert_eq!(refusal.status, StatusCode::FORBIDDEN, "{origin}");
        }
        // Even a server that takes any Host refuses a malformed one.
        assert!(OriginPolicy::public().check(Some("[::1]x"), None).is_err());
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (name, value) in pairs {
            h.append(
                http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                http::HeaderValue::from_str(value).unwrap(),
            );
        }
        h
    }

    fn check(version: Version, target: &str, pairs: &[(&str, &str)]) -> Result<(), StatusCode> {
        let uri: Uri = target.parse().unwrap();
        OriginPolicy::loopback()
            .check_request(version, &uri, &headers(pairs))
            .map_err(|r| r.status)
    }

    #[test]
    fn an_absolute_form_target_names_the_host() {
        const H1: Version = Version::HTTP_11;
        // RFC 9112 §3.2.2: the target's authority wins over Host, whichever of the two is foreign.
        assert_eq!(
            check(H1, "http://evil.example.com/mcp", &[("host", "localhost")]),
            Err(StatusCode::FORBIDDEN)
        );
        assert_eq!(
            check(H1, "http://[::1].evil.com/mcp", &[("host", "localhost")]),
            Err(StatusCode::BAD_REQUEST)
        );
        assert_eq!(
            check(
                H1,
                "http://localhost:8080/mcp",
                &[("host", "evil.example.com")]
            ),
            Ok(())
        );
        assert_eq!(check(H1, "/mcp", &[("host", "localhost:8080")]), Ok(()));
        assert_eq!(
            check(H1, "/mcp", &[("host", "localhost"), ("host", "evil.com")]),
            Err(StatusCode::BAD_REQUEST)
        );
    }

    #[test]
    fn on_http2_authority_and_host_must_agree() {
        const H2: Version = Version::HTTP_2;
        assert_eq!(check(H2, "http://localhost:1/mcp", &[]), Ok(()));
        assert_eq!(
            check(H2, "http://localhost:1/mcp", &[("host", "LOCALHOST:1")]),
            Ok(())
        );
        assert_eq!(
            check(H2, "http://evil.example.com/mcp", &[("host", "localhost")]),
            Err(StatusCode::BAD_REQUEST)
        );
        assert_eq!(
            check(H2, "http://localhost/mcp", &[("host", "evil.example.com")]),
            Err(StatusCode::BAD_REQUEST)
        );
        assert_eq!(
            check(H2, "/mcp", &[("host", "localhost"), ("host", "localhost")]),
            Err(StatusCode::BAD_REQUEST)
        );
        assert_eq!(check(H2, "/mcp", &[("host", "localhost")]), Ok(()));
    }

    #[test]
    fn a_second_origin_is_refused() {
        let pairs = [
            ("host", "localhost"),
            ("origin", "http://localhost"),
            ("origin", "http://evil.example.com"),
        ];
        assert_eq!(
            check(Version::HTTP_11, "/mcp", &pairs),
            Err(StatusCode::FORBIDDEN)
        );
        assert_eq!(check(Version::HTTP_11, "/mcp", &pairs[..2]), Ok(()));
    }
}
