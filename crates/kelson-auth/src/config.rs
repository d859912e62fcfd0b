//! What the resource server is told: who issues its tokens, what it is called, and its limits.

use std::fmt;
use std::time::Duration;

/// The resource server's configuration.
///
/// Only [`issuer`](Self::issuer) and [`resource`](Self::resource) are required; [`AuthConfig::new`]
/// fills in the rest with the defaults documented on each field.
#[derive(Clone)]
#[non_exhaustive]
pub struct AuthConfig {
    /// The authorization server's issuer identifier. Tokens must carry it as `iss`, and its
    /// metadata document must name it exactly (RFC 8414 §3.3).
    pub issuer: String,
    /// This server's public URL (for example `https://mcp.example.com/mcp`): the audience tokens
    /// must name (RFC 8707) and the `resource` of the protected-resource metadata (RFC 9728).
    pub resource: String,
    /// The authorization server's metadata URL, when it is not found from the issuer by the
    /// RFC 8414 / OpenID Connect discovery order.
    pub metadata_url: Option<String>,
    /// The JWKS URL, overriding the metadata's `jwks_uri`. With it and without introspection, no
    /// metadata is fetched at all.
    pub jwks_url: Option<String>,
    /// Token introspection (RFC 7662) for tokens that are not JWTs; off when `None`.
    pub introspection: Option<Introspection>,
    /// Scopes every request must carry; a token without them gets 403 `insufficient_scope`.
    pub required_scopes: Vec<String>,
    /// The scopes the metadata advertises (`offline_access` is never advertised).
    pub scopes_supported: Vec<String>,
    /// A human-readable name for the metadata's `resource_name`.
    pub resource_name: Option<String>,
    /// A documentation URL for the metadata's `resource_documentation`.
    pub resource_documentation: Option<String>,
    /// Claim names passed on to handlers in the [`Principal`](kelson_server::Principal).
    pub claims: Vec<String>,
    /// Clock skew allowed on `exp` and `nbf` (default 60 s).
    pub leeway: Duration,
    /// Paces the JWKS fetches an unknown `kid` causes (default 30 s): at most four at once, then
    /// one per quarter of this interval, so that tokens naming made-up keys can neither hammer
    /// the authorization server nor hold back a key it rotates in for longer than a quarter of
    /// it. After a failed fetch, none for the whole interval.
    pub jwks_refetch_interval: Duration,
    /// The most keys kept from a JWKS (default 32); the rest are ignored.
    pub max_keys: usize,
    /// How long connecting to the authorization server may take (default 5 s).
    pub connect_timeout: Duration,
    /// How long a whole fetch may take (default 10 s).
    pub fetch_timeout: Duration,
    /// The largest document read from the authorization server (default 256 KiB).
    pub max_document: usize,
    /// The most validated tokens remembered (default 10,000).
    pub token_cache: usize,
}

impl AuthConfig {
    /// A configuration for tokens of `issuer` addressed to `resource`, with the defaults.
    pub fn new(issuer: impl Into<String>, resource: impl Into<String>) -> Self {
        AuthConfig {
            issuer: issuer.into(),
            resource: resource.into(),
            metadata_url: None,
            jwks_url: None,
            introspection: None,
            required_scopes: Vec::new(),
            scopes_supported: Vec::new(),
            resource_name: None,
            resource_documentation: None,
            claims: Vec::new(),
            leeway: Duration::from_secs(60),
            jwks_refetch_interval: Duration::from_secs(30),
            max_keys: 32,
            connect_timeout: Duration::from_secs(5),
            fetch_timeout: Duration::from_secs(10),
            max_document: 256 * 1024,
            token_cache: 10_000,
        }
    }
}

impl fmt::Debug for AuthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthConfig")
            .field("issuer", &self.issuer)
            .field("resource", &self.resource)
            .field("metadata_url", &self.metadata_url)
            .field("jwks_url", &self.jwks_url)
            .field("introspection", &self.introspection)
            .field("required_scopes", &self.required_scopes)
            .field("scopes_supported", &self.scopes_supported)
            .field("claims", &self.claims)
            .field("leeway", &self.leeway)
            .finish_non_exhaustive()
    }
}

/// How opaque tokens are introspected (RFC 7662).
#[derive(Clone)]
pub struct Introspection {
    /// The endpoint, overriding the metadata's `introspection_endpoint`.
    pub url: Option<String>,
    /// This resource server's client id at the authorization server.
    pub client_id: String,
    /// Its secret, sent with HTTP Basic authentication (`client_secret_basic`). Never printed.
    pub client_secret: String,
    /// How long an active answer is remembered, at most until the token's `exp` (default 60 s;
    /// zero asks the authorization server every time, so a revocation is seen at once).
    pub cache_ttl: Duration,
}

impl Introspection {
    /// Introspection at the metadata's endpoint with these client credentials.
    pub fn new(client_id: impl Into<String>, client_secret: impl Into<String>) -> Self {
        Introspection {
            url: None,
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            cache_ttl: Duration::from_secs(60),
        }
    }
}

impl fmt::Debug for Introspection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Introspection")
            .field("url", &self.url)
            .field("client_id", &self.client_id)
            .field("client_secret", &"<redacted>")
            .field("cache_ttl", &self.cache_ttl)
            .finish()
    }
}
