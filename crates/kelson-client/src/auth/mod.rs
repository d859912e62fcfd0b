//! OAuth 2.1 for MCP servers that require it (spec 2026-07-28 basic/authorization): the client
//! finds the server's authorization server, obtains a token, sends it on every request, refreshes
//! it, and asks again with more scopes when the server says they are not enough.
//!
//! An [`OAuth`] is given to [`ClientBuilder::oauth`](crate::ClientBuilder::oauth). Then a 401 from
//! the MCP server starts the flow:
//!
//! 1. **Discovery.** The protected resource metadata (RFC 9728) from the challenge's
//!    `resource_metadata`, else from the well-known URIs; its `resource` must cover the server's
//!    URL. The authorization server's metadata (RFC 8414, then OpenID Connect Discovery, in the
//!    spec's order), whose `issuer` must be exactly the one it was looked up for.
//! 2. **Scopes.** The challenge's `scope`, else the resource's `scopes_supported`, else none;
//!    `offline_access` added when the authorization server lists it (for a refresh token).
//! 3. **Registration.** A pre-registered client id (and secret), else a Client ID Metadata
//!    Document URL when the server supports them, else dynamic registration (RFC 7591, deprecated
//!    by the spec and used only as its fallback). Registrations are kept per issuer and never
//!    reused with another.
//! 4. **The grant.** The authorization code grant with PKCE (S256; a server that does not list
//!    PKCE methods is refused) through an [`Authorizer`] that shows the user the authorization
//!    page and returns where it redirected; `state` is checked, and the RFC 9207 `iss` when the
//!    server sends or promises it. Or the client credentials grant for machine-to-machine use,
//!    with a client secret or a private key JWT (RFC 7523). Every token request names the
//!    resource (RFC 8707) and authenticates as the server's metadata allows
//!    (`client_secret_basic`, `client_secret_post`, `none`, `private_key_jwt`).
//!
//! Tokens go in the `Authorization` header of requests to the MCP server only (a redirect to
//! another origin drops it), are kept in a [`TokenStore`] (memory by default, or a 0600 file with
//! [`FileStore`]), and are refreshed with the refresh token when they expire or are refused. A 403
//! with `insufficient_scope` asks for the union of the scopes held and the scopes challenged, a
//! bounded number of times. No token, secret or code appears in an error message, a log line or a
//! `Debug` output.

mod authorizer;
mod challenge;
mod flow;
mod metadata;
mod pkce;
mod store;
mod token;

use std::path::Path;
use std::sync::Arc;

pub use authorizer::{Authorizer, FollowRedirects, LoopbackAuthorizer};
pub use challenge::{Challenge, parse as parse_challenges};
pub use metadata::{ResourceMetadata, ServerMetadata, canonical_resource};
pub use store::{Credentials, FileStore, MemoryStore, TokenStore};
pub use token::PrivateKey;

pub(crate) use flow::Refusal;

/// The `Bearer` challenge among `WWW-Authenticate` values.
pub(crate) fn challenge_bearer(values: &[String]) -> Option<Challenge> {
    challenge::bearer(values.iter().map(String::as_str))
}

/// Why authorization failed. Messages name URLs, issuers, client ids and OAuth error codes, never
/// a token, secret or authorization code.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// The server's protected resource metadata or its authorization server could not be found,
    /// or says something that cannot be used (another resource, no authorization server, an
    /// issuer that does not match).
    #[error("authorization discovery: {0}")]
    Discovery(String),
    /// The authorization server lacks what the flow needs (PKCE, an endpoint, a way to
    /// register).
    #[error("the authorization server cannot be used: {0}")]
    Server(String),
    /// Dynamic client registration failed.
    #[error("client registration failed: {0}")]
    Registration(String),
    /// The user or the authorization server refused (`error` in the authorization response).
    #[error("authorization refused: {error}{}", description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Denied {
        /// The OAuth error code (`access_denied`, ...).
        error: String,
        /// Its description, when the server gave one.
        description: Option<String>,
    },
    /// The authorization response cannot be trusted: `state` or `iss` do not match, or the code
    /// is missing.
    #[error("the authorization response is refused: {0}")]
    Response(String),
    /// The token endpoint refused or answered with something that is not a token.
    #[error("the token request failed: {0}")]
    Token(String),
    /// The MCP server kept refusing for lack of scope after as many new authorizations as
    /// allowed.
    #[error(
        "the server still refuses for insufficient scope after {attempts} new authorizations (scopes asked: {})",
        scopes.join(" ")
    )]
    StepUpLimit {
        /// How many step-up authorizations were made.
        attempts: u32,
        /// The scopes of the last one.
        scopes: Vec<String>,
    },
    /// The [`Authorizer`] could not get the user's answer (timed out, the listener failed).
    #[error("authorization: {0}")]
    Authorizer(String),
    /// The credentials file could not be read or written.
    #[error("{}: {reason}", path.display())]
    Store {
        /// The file.
        path: std::path::PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// An HTTP request to the authorization server or for metadata failed.
    #[error("{url}: {reason}")]
    Http {
        /// The URL (without query).
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// The configuration cannot work (a client credentials grant without credentials, a key that
    /// does not load).
    #[error("OAuth configuration: {0}")]
    Config(String),
}

impl AuthError {
    pub(crate) fn discovery(message: impl Into<String>) -> Self {
        AuthError::Discovery(message.into())
    }

    pub(crate) fn store(path: &Path, reason: impl Into<String>) -> Self {
        AuthError::Store {
            path: path.to_owned(),
            reason: reason.into(),
        }
    }
}

/// Which grant obtains tokens.
#[derive(Clone)]
pub(crate) enum Grant {
    /// The authorization code grant with PKCE, through an authorizer.
    AuthorizationCode(Arc<dyn Authorizer>),
    /// The client credentials grant.
    ClientCredentials,
}

/// How the client authenticates at the token endpoint with pre-registered credentials.
#[derive(Clone)]
pub(crate) enum Secret {
    /// A client secret (`client_secret_basic` or `client_secret_post`, as the server allows).
    Shared(String),
    /// A private key (`private_key_jwt`).
    Key(Arc<PrivateKey>),
}

/// OAuth for one MCP server connection: what [`ClientBuilder::oauth`](crate::ClientBuilder::oauth)
/// takes. Cloning shares the tokens.
#[derive(Clone)]
pub struct OAuth {
    pub(crate) flow: Arc<flow::Flow>,
}

impl std::fmt::Debug for OAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuth").finish_non_exhaustive()
    }
}

impl OAuth {
    /// The authorization code grant: `authorizer` shows the user the authorization page and
    /// returns where the authorization server sent them back ([`LoopbackAuthorizer`] for a
    /// command-line program).
    pub fn authorization_code(authorizer: impl Authorizer) -> OAuthBuilder {
        OAuthBuilder::new(Grant::AuthorizationCode(Arc::new(authorizer)))
    }

    /// The client credentials grant, for a program acting on its own behalf: `client_id` with a
    /// [`client_secret`](OAuthBuilder::client_secret) or a
    /// [`private_key`](OAuthBuilder::private_key).
    pub fn client_credentials(client_id: impl Into<String>) -> OAuthBuilder {
        OAuthBuilder::new(Grant::ClientCredentials).client_id(client_id)
    }

    /// The credentials held now (for `kelson auth status`); secrets included, handle with care.
    pub async fn credentials(&self) -> Option<Credentials> {
        self.flow.credentials().await
    }

    /// Runs the whole flow for the server at `url` now, without waiting for it to refuse a
    /// request (for `kelson auth login`): discovery from the well-known URIs (or the challenge of an
    /// unauthenticated request), then a new token, kept in the store.
    pub async fn login(&self, url: &str) -> Result<Credentials, AuthError> {
        self.flow.login(url).await
    }

    /// Forgets the credentials kept for the server at `url`.
    pub async fn logout(&self, url: &str) -> Result<bool, AuthError> {
        self.flow.logout(url).await
    }
}

/// Settings of an [`OAuth`].
#[must_use]
pub struct OAuthBuilder {
    config: flow::Config,
}

impl std::fmt::Debug for OAuthBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthBuilder").finish_non_exhaustive()
    }
}

impl OAuthBuilder {
    fn new(grant: Grant) -> Self {
        OAuthBuilder {
            config: flow::Config {
                grant,
                client_id: None,
                secret: None,
                auth_method: None,
                metadata_document: None,
                client_name: "kelson".to_owned(),
                dynamic_registration: true,
                scopes: Vec::new(),
                store: Arc::new(MemoryStore::default()),
                http: None,
                max_step_ups: 2,
                offline_access: true,
            },
        }
    }

    /// A client id registered with the authorization server beforehand (first in the
    /// registration order, before metadata documents and dynamic registration).
    pub fn client_id(mut self, client_id: impl Into<String>) -> Self {
        self.config.client_id = Some(client_id.into());
        self
    }

    /// The pre-registered client's secret.
    pub fn client_secret(mut self, secret: impl Into<String>) -> Self {
        self.config.secret = Some(Secret::Shared(secret.into()));
        self
    }

    /// The pre-registered client's private key, for `private_key_jwt`.
    pub fn private_key(mut self, key: PrivateKey) -> Self {
        self.config.secret = Some(Secret::Key(Arc::new(key)));
        self
    }

    /// The token endpoint authentication method of the pre-registered client
    /// (`client_secret_basic`, `client_secret_post`, `private_key_jwt` or `none`); by default
    /// chosen from what the server supports.
    pub fn token_endpoint_auth_method(mut self, method: impl Into<String>) -> Self {
        self.config.auth_method = Some(method.into());
        self
    }

    /// The https URL of this client's Client ID Metadata Document, used as its client id where
    /// the authorization server supports them.
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.config.metadata_document = Some(url.into());
        self
    }

    /// The name dynamic registration gives the client (default `kelson`).
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.config.client_name = name.into();
        self
    }

    /// Whether dynamic registration may be used when nothing else works (default yes).
    pub fn dynamic_registration(mut self, allowed: bool) -> Self {
        self.config.dynamic_registration = allowed;
        self
    }

    /// Scopes to ask for besides the ones the server names.
    pub fn scopes<I: IntoIterator<Item = S>, S: Into<String>>(mut self, scopes: I) -> Self {
        self.config.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Whether `offline_access` is asked for when the authorization server lists it, for a
    /// refresh token (default yes; authorization code grant only).
    pub fn offline_access(mut self, wanted: bool) -> Self {
        self.config.offline_access = wanted;
        self
    }

    /// Where credentials are kept (default: memory).
    pub fn store(mut self, store: impl TokenStore) -> Self {
        self.config.store = Arc::new(store);
        self
    }

    /// Where credentials are kept, shared with other users of the store.
    pub fn shared_store(mut self, store: Arc<dyn TokenStore>) -> Self {
        self.config.store = store;
        self
    }

    /// The HTTP client for the authorization server and metadata (its TLS roots, a proxy). It
    /// should not follow redirects; by default one that does not, with 30 s timeouts.
    pub fn http_client(mut self, http: reqwest::Client) -> Self {
        self.config.http = Some(http);
        self
    }

    /// How many times in a row a 403 `insufficient_scope` may start a new authorization before
    /// the request fails (default 2).
    pub fn max_step_ups(mut self, n: u32) -> Self {
        self.config.max_step_ups = n;
        self
    }

    /// The settings, checked.
    pub fn build(self) -> Result<OAuth, AuthError> {
        let config = self.config;
        if matches!(config.grant, Grant::ClientCredentials) && config.secret.is_none() {
            return Err(AuthError::Config(
                "the client credentials grant needs a client secret or a private key".to_owned(),
            ));
        }
        if let Some(url) = &config.metadata_document {
            let parsed = url::Url::parse(url).map_err(|e| {
                AuthError::Config(format!("the client metadata URL {url:?} is not a URL: {e}"))
            })?;
            if parsed.scheme() != "https" || parsed.path() == "/" {
                return Err(AuthError::Config(format!(
                    "the client metadata URL {url:?} must be an https URL with a path"
                )));
            }
        }
        Ok(OAuth {
            flow: Arc::new(flow::Flow::new(config)?),
        })
    }
}
