//! OAuth 2.1 resource server for Model Context Protocol servers over HTTP.
//!
//! [`AuthLayer`] is a tower `Layer` that goes in front of any HTTP service, in particular
//! kelson-http's `McpService` (spec 2026-07-28 basic/authorization):
//!
//! - it serves this resource's protected-resource metadata (RFC 9728) at
//!   `/.well-known/oauth-protected-resource/<path>` and `/.well-known/oauth-protected-resource`;
//! - it takes a bearer token from the `Authorization` header only (a token in the query or a form
//!   body is 400 `invalid_request`), and answers a missing or invalid one with 401 and a
//!   `WWW-Authenticate: Bearer resource_metadata="...", scope="..."` challenge;
//! - it checks a JWT's signature against the authorization server's JWKS (discovered from its
//!   metadata, cached, refetched on an unknown `kid` within a small budget per interval), its
//!   issuer, its audience (this resource, RFC 8707), `exp`, `nbf` and `iat`; it never accepts
//!   `none` or HMAC;
//! - it introspects other tokens (RFC 7662) when configured;
//! - it removes the `Authorization` header and puts a [`Principal`](kelson_server::Principal) in the
//!   request's extensions, so handlers see who calls and never the token;
//! - it completes the 403 `insufficient_scope` challenge of the inner service with its metadata URL.
//!
//! ```no_run
//! # async fn run(mcp: impl Clone) -> Result<(), kelson_auth::Error> {
//! use std::sync::Arc;
//! use kelson_auth::{AuthConfig, AuthLayer, Authenticator};
//! use tower_layer::Layer;
//!
//! let mut config = AuthConfig::new("https://auth.example.com", "https://mcp.example.com/mcp");
//! config.scopes_supported = vec!["mcp:tools".into()];
//! let auth = Arc::new(Authenticator::new(config).await?);
//! let protected = AuthLayer::new(auth).layer(mcp);
//! # let _ = protected;
//! # Ok(())
//! # }
//! ```

mod authenticator;
mod cache;
mod claims;
mod config;
mod discovery;
mod error;
mod fetch;
mod jwks;
mod layer;
mod metadata;
mod reject;

pub use authenticator::Authenticator;
pub use config::{AuthConfig, Introspection};
pub use error::{Error, FetchError};
pub use layer::{AuthLayer, AuthService};
