//! The OAuth flow behind an MCP connection: what to do before a request and when the server
//! refuses one.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use http::{HeaderValue, StatusCode};
use url::Url;

use super::challenge::Challenge;
use super::metadata::{
    ResourceMetadata, ServerMetadata, canonical_resource, resource_covers, resource_metadata_urls,
    server_metadata_urls,
};
use super::pkce::{Pkce, random_token};
use super::store::{Credentials, TokenStore};
use super::token::{self, ClientAuth, TokenResponse, now, shown};
use super::{AuthError, Grant, Secret};

/// Seconds before its expiry at which a token is refreshed rather than sent.
const EXPIRY_MARGIN: u64 = 30;

/// What [`OAuthBuilder`](super::OAuthBuilder) collects.
pub(crate) struct Config {
    pub(crate) grant: Grant,
    pub(crate) client_id: Option<String>,
    pub(crate) secret: Option<Secret>,
    pub(crate) auth_method: Option<String>,
    pub(crate) metadata_document: Option<String>,
    pub(crate) client_name: String,
    pub(crate) dynamic_registration: bool,
    pub(crate) scopes: Vec<String>,
    pub(crate) store: Arc<dyn TokenStore>,
    pub(crate) http: Option<reqwest::Client>,
    pub(crate) max_step_ups: u32,
    pub(crate) offline_access: bool,
}

/// A refusal by the MCP server that the flow may answer: its status, its `Bearer` challenge, and
/// the `Authorization` header the refused request carried.
#[derive(Debug)]
pub(crate) struct Refusal {
    pub(crate) status: StatusCode,
    pub(crate) challenge: Option<Challenge>,
    pub(crate) sent: Option<HeaderValue>,
}

impl Refusal {
    /// Whether this is a refusal the flow answers: a 401, or a 403 for insufficient scope.
    pub(crate) fn is_auth(&self) -> bool {
        self.status == StatusCode::UNAUTHORIZED
            || (self.status == StatusCode::FORBIDDEN
                && self
                    .challenge
                    .as_ref()
                    .is_some_and(|c| c.error() == Some("insufficient_scope")))
    }
}

/// What the flow knows of the server, its authorization server and the tokens.
#[derive(Default)]
struct State {
    /// The MCP server's canonical URL, the key of its credentials in the store.
    server: Option<Url>,
    /// Whether the store was read for it.
    loaded: bool,
    resource: Option<ResourceMetadata>,
    server_metadata: Option<ServerMetadata>,
    credentials: Option<Credentials>,
}

pub(crate) struct Flow {
    config: Config,
    http: reqwest::Client,
    /// The header requests carry now, with the time to renew it ([`renewal`]): read without
    /// waiting.
    header: RwLock<Option<(HeaderValue, Option<u64>)>>,
    state: tokio::sync::Mutex<State>,
    /// Step-up authorizations since a request last got through.
    step_ups: AtomicU32,
    /// Whether the current token was just obtained by a full authorization and no request has
    /// got through with it yet: a 401 for it then ends in an error, not in another authorization.
    fresh: AtomicBool,
}

impl Flow {
    pub(crate) fn new(mut config: Config) -> Result<Self, AuthError> {
        let http = match config.http.take() {
            Some(http) => http,
            None => reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .connect_timeout(Duration::from_secs(10))
                .timeout(Duration::from_secs(30))
                .build()
                .map_err(|e| AuthError::Config(format!("the HTTP client: {e}")))?,
        };
        Ok(Flow {
            config,
            http,
            header: RwLock::new(None),
            state: tokio::sync::Mutex::new(State::default()),
            step_ups: AtomicU32::new(0),
            fresh: AtomicBool::new(false),
        })
    }

    /// The `Authorization` header for a request to the server at `server_url`: the token held,
    /// read from the store the first time and refreshed first when it has expired; `None` before
    /// any token (the server's 401 then starts the flow).
    pub(crate) async fn header(&self, server_url: &str) -> Result<Option<HeaderValue>, AuthError> {
        if let Some((value, renew_at)) = self.header.read().expect("header lock").as_ref()
            && !renew_at.is_some_and(|at| at <= now())
        {
            return Ok(Some(value.clone()));
        }
        let mut state = self.state.lock().await;
        self.load(&mut state, server_url)?;
        let due = state
            .credentials
            .as_ref()
            .filter(|c| c.access_token.is_some())
            .and_then(renewal)
            .is_some_and(|at| at <= now());
        if due {
            let refreshable = state
                .credentials
                .as_ref()
                .is_some_and(|c| c.refresh_token.is_some());
            let refreshed = if refreshable {
                self.refresh(&mut state).await
            } else {
                Err(AuthError::Token("the access token has expired".to_owned()))
            };
            if let Err(e) = refreshed {
                // The request goes without a token; the server's 401 starts a new authorization.
                tracing::info!(error = %e, "the access token has expired and was not refreshed");
                self.forget_token(&mut state)?;
            }
        }
        Ok(self.current())
    }

    /// Answers the server's refusal: `Ok` when the request may be sent again with the header
    /// [`header`](Self::header) now returns.
    pub(crate) async fn refused(
        &self,
        server_url: &str,
        refusal: Refusal,
    ) -> Result<(), AuthError> {
        let mut state = self.state.lock().await;
        self.load(&mut state, server_url)?;
        if refusal.sent != self.current() {
            // Another request renewed the token while this one was refused: send it again.
            return Ok(());
        }
        let challenge = refusal.challenge.unwrap_or_default();
        if refusal.status == StatusCode::FORBIDDEN {
            let attempts = self.step_ups.fetch_add(1, Ordering::SeqCst) + 1;
            let mut scopes: BTreeSet<String> = state
                .credentials
                .as_ref()
                .map(|c| c.scopes.iter().cloned().collect())
                .unwrap_or_default();
            scopes.extend(challenge.scopes());
            if attempts > self.config.max_step_ups {
                return Err(AuthError::StepUpLimit {
                    attempts: attempts - 1,
                    scopes: scopes.into_iter().collect(),
                });
            }
            tracing::info!(scopes = ?scopes, "the server asks for more scopes; authorizing again");
            return self
                .authorize(&mut state, &challenge, Some(scopes.into_iter().collect()))
                .await;
        }
        // 401: the token is missing, expired or revoked.
        if refusal.sent.is_some() && self.fresh.load(Ordering::SeqCst) {
            return Err(AuthError::Token(
                "the server refuses the token the authorization server has just issued for it"
                    .to_owned(),
            ));
        }
        let refreshable = state
            .credentials
            .as_ref()
            .is_some_and(|c| c.refresh_token.is_some());
        if refusal.sent.is_some() && refreshable {
            match self.refresh(&mut state).await {
                Ok(()) => return Ok(()),
                Err(e) => tracing::info!(error = %e, "refreshing the refused token failed"),
            }
        }
        self.authorize(&mut state, &challenge, None).await
    }

    /// A request got through: step-ups start counting again.
    pub(crate) fn accepted(&self) {
        self.step_ups.store(0, Ordering::Relaxed);
        self.fresh.store(false, Ordering::Relaxed);
    }

    pub(crate) async fn credentials(&self) -> Option<Credentials> {
        self.state.lock().await.credentials.clone()
    }

    pub(crate) async fn login(&self, server_url: &str) -> Result<Credentials, AuthError> {
        let mut state = self.state.lock().await;
        self.load(&mut state, server_url)?;
        let challenge = self.probe(server_url).await;
        self.authorize(&mut state, &challenge, None).await?;
        Ok(state.credentials.clone().expect("authorized"))
    }

    pub(crate) async fn logout(&self, server_url: &str) -> Result<bool, AuthError> {
        let mut state = self.state.lock().await;
        let key = canonical_resource(server_url)?;
        let had = self.config.store.load(key.as_str())?.is_some();
        self.config.store.remove(key.as_str())?;
        if state.server.as_ref() == Some(&key) {
            state.credentials = None;
        }
        *self.header.write().expect("header lock") = None;
        Ok(had)
    }

    /// The challenge an unauthenticated request gets, for a login before any request: a POST of
    /// nothing the server would act on. `Default` when the server does not challenge.
    async fn probe(&self, server_url: &str) -> Challenge {
        let response = self
            .http
            .post(server_url)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json, text/event-stream")
            .body(r#"{"jsonrpc":"2.0","id":0,"method":"server/discover","params":{}}"#)
            .send()
            .await;
        response
            .ok()
            .and_then(|r| {
                let values: Vec<String> = r
                    .headers()
                    .get_all(http::header::WWW_AUTHENTICATE)
                    .iter()
                    .filter_map(|v| v.to_str().ok().map(str::to_owned))
                    .collect();
                super::challenge::bearer(values.iter().map(String::as_str))
            })
            .unwrap_or_default()
    }

    fn current(&self) -> Option<HeaderValue> {
        self.header
            .read()
            .expect("header lock")
            .as_ref()
            .map(|(v, _)| v.clone())
    }

    /// Reads the store for `server_url` once, and on a change of server.
    fn load(&self, state: &mut State, server_url: &str) -> Result<(), AuthError> {
        let server = canonical_resource(server_url)?;
        if state.loaded && state.server.as_ref() == Some(&server) {
            return Ok(());
        }
        *state = State {
            credentials: self.config.store.load(server.as_str())?,
            server: Some(server),
            loaded: true,
            ..State::default()
        };
        self.publish(state);
        Ok(())
    }

    /// Makes the credentials' access token the header requests carry.
    fn publish(&self, state: &State) {
        let value = state.credentials.as_ref().and_then(|c| {
            let token = c.access_token.as_ref()?;
            let mut value = HeaderValue::from_str(&format!("Bearer {token}")).ok()?;
            value.set_sensitive(true);
            Some((value, renewal(c)))
        });
        *self.header.write().expect("header lock") = value;
    }

    fn save(&self, state: &State) -> Result<(), AuthError> {
        if let (Some(server), Some(credentials)) = (&state.server, &state.credentials) {
            self.config.store.save(server.as_str(), credentials)?;
        }
        self.publish(state);
        Ok(())
    }

    fn forget_token(&self, state: &mut State) -> Result<(), AuthError> {
        if let Some(c) = state.credentials.as_mut() {
            c.access_token = None;
            c.refresh_token = None;
            c.expires_at = None;
        }
        self.save(state)
    }

    /// The resource metadata and the authorization server's metadata, found from the challenge
    /// (or the well-known URIs) and checked.
    async fn discover(&self, state: &mut State, challenge: &Challenge) -> Result<(), AuthError> {
        let server = state.server.clone().expect("loaded");
        let resource = self.resource_metadata(&server, challenge).await?;
        let Some(issuer) = resource.authorization_servers.first().cloned() else {
            return Err(AuthError::discovery(format!(
                "the protected resource metadata of {server} names no authorization server"
            )));
        };
        let reuse = state
            .server_metadata
            .as_ref()
            .is_some_and(|m| m.issuer == issuer);
        if !reuse {
            state.server_metadata = Some(self.server_metadata(&issuer).await?);
        }
        // spec basic/authorization: credentials belong to the issuer that issued them; a server
        // that moved to another authorization server gets a new registration and new tokens.
        if state
            .credentials
            .as_ref()
            .is_some_and(|c| c.issuer != issuer)
        {
            tracing::info!(%issuer, "the authorization server changed; registering again");
            state.credentials = None;
        }
        state.resource = Some(resource);
        Ok(())
    }

    async fn resource_metadata(
        &self,
        server: &Url,
        challenge: &Challenge,
    ) -> Result<ResourceMetadata, AuthError> {
        let mut places = Vec::new();
        if let Some(url) = challenge.resource_metadata() {
            places.push(Url::parse(url).map_err(|e| {
                AuthError::discovery(format!("the challenge's resource_metadata {url:?}: {e}"))
            })?);
        }
        places.extend(resource_metadata_urls(server));
        let mut tried = Vec::new();
        for url in places {
            let Some(document) = token::get_json(&self.http, url.as_str()).await? else {
                tried.push(shown(url.as_str()));
                continue;
            };
            let metadata: ResourceMetadata = serde_json::from_value(document).map_err(|e| {
                AuthError::discovery(format!(
                    "{} is not protected resource metadata: {e}",
                    shown(url.as_str())
                ))
            })?;
            // RFC 9728 §3.3: metadata for another resource must not be used for this one.
            if !resource_covers(&metadata.resource, server) {
                return Err(AuthError::discovery(format!(
                    "the protected resource metadata at {} is for {:?}, not for {server}",
                    shown(url.as_str()),
                    metadata.resource
                )));
            }
            return Ok(metadata);
        }
        Err(AuthError::discovery(format!(
            "no protected resource metadata for {server} (tried {})",
            tried.join(", ")
        )))
    }

    async fn server_metadata(&self, issuer: &str) -> Result<ServerMetadata, AuthError> {
        let mut mismatched = None;
        for url in server_metadata_urls(issuer)? {
            let Some(document) = token::get_json(&self.http, url.as_str()).await? else {
                continue;
            };
            let Ok(metadata) = serde_json::from_value::<ServerMetadata>(document) else {
                continue;
            };
            // RFC 8414 §3.3: the issuer must be identical to the one looked up, or the document
            // is discarded.
            if metadata.issuer != issuer {
                mismatched = Some((shown(url.as_str()), metadata.issuer));
                continue;
            }
            return Ok(metadata);
        }
        Err(AuthError::discovery(match mismatched {
            Some((url, other)) => format!(
                "the authorization server metadata at {url} names the issuer {other:?}, not {issuer:?}"
            ),
            None => format!("no authorization server metadata for {issuer:?}"),
        }))
    }

    /// A new token: discovery, then the configured grant for `scopes` (or the scopes the
    /// challenge, then the resource, names).
    async fn authorize(
        &self,
        state: &mut State,
        challenge: &Challenge,
        scopes: Option<Vec<String>>,
    ) -> Result<(), AuthError> {
        self.discover(state, challenge).await?;
        let metadata = state.server_metadata.clone().expect("discovered");
        let resource = state.resource.clone().expect("discovered");
        let mut scopes: Vec<String> = match scopes {
            Some(scopes) => scopes,
            None if !challenge.scopes().is_empty() => challenge.scopes(),
            None => resource.scopes_supported.clone().unwrap_or_default(),
        };
        for extra in &self.config.scopes {
            if !scopes.contains(extra) {
                scopes.push(extra.clone());
            }
        }
        let token_endpoint = metadata.token_endpoint.clone().ok_or_else(|| {
            AuthError::Server(format!("{} has no token endpoint", metadata.issuer))
        })?;
        // RFC 8707 with RFC 9728: the resource identifier exactly as the metadata publishes it
        // (a URL parser would add a `/` to a pathless one, which is another identifier).
        let resource_uri = resource.resource.clone();
        let issued = match &self.config.grant {
            Grant::ClientCredentials => {
                let client_id = self.config.client_id.clone().expect("checked by build");
                let scope = scopes.join(" ");
                let mut params = vec![
                    ("grant_type", "client_credentials"),
                    ("resource", resource_uri.as_str()),
                ];
                if !scope.is_empty() {
                    params.push(("scope", &scope));
                }
                let credentials = Credentials {
                    issuer: metadata.issuer.clone(),
                    client_id,
                    grant: Some("client_credentials".to_owned()),
                    ..Credentials::default()
                };
                let auth = self.client_auth(&metadata, &credentials)?;
                let response =
                    token::token_request(&self.http, &token_endpoint, &params, &auth).await?;
                (credentials, response)
            }
            Grant::AuthorizationCode(authorizer) => {
                if self.config.offline_access
                    && metadata.supports_scope("offline_access")
                    && !scopes.iter().any(|s| s == "offline_access")
                {
                    scopes.push("offline_access".to_owned());
                }
                let redirect_uri = authorizer.redirect_uri();
                let mut credentials = self.registration(state, &metadata, &redirect_uri).await?;
                credentials.grant = Some("authorization_code".to_owned());
                let code = self
                    .authorization_code(
                        &metadata,
                        authorizer.as_ref(),
                        &credentials.client_id,
                        &scopes,
                        &resource_uri,
                    )
                    .await?;
                let params = [
                    ("grant_type", "authorization_code"),
                    ("code", code.code.as_str()),
                    ("redirect_uri", redirect_uri.as_str()),
                    ("code_verifier", code.verifier.as_str()),
                    ("resource", resource_uri.as_str()),
                ];
                let auth = self.client_auth(&metadata, &credentials)?;
                let response =
                    token::token_request(&self.http, &token_endpoint, &params, &auth).await?;
                (credentials, response)
            }
        };
        let (mut credentials, response) = issued;
        // A secret kept with the registration (dynamic registration's, or one the application
        // stored with it) stays with it.
        if let Some(old) = &state.credentials
            && credentials.client_secret.is_none()
            && old.issuer == credentials.issuer
            && old.client_id == credentials.client_id
        {
            credentials.client_secret.clone_from(&old.client_secret);
        }
        state.credentials = Some(with_token(credentials, response, &scopes));
        self.fresh.store(true, Ordering::SeqCst);
        self.save(state)
    }

    /// Refreshes the access token with the refresh token (RFC 6749 §6), naming the resource.
    async fn refresh(&self, state: &mut State) -> Result<(), AuthError> {
        let credentials = state
            .credentials
            .clone()
            .ok_or_else(|| AuthError::Token("no credentials to refresh".to_owned()))?;
        let Some(refresh_token) = credentials.refresh_token.clone() else {
            return Err(AuthError::Token("no refresh token was issued".to_owned()));
        };
        let metadata = match &state.server_metadata {
            Some(m) if m.issuer == credentials.issuer => m.clone(),
            _ => {
                let m = self.server_metadata(&credentials.issuer).await?;
                state.server_metadata = Some(m.clone());
                m
            }
        };
        let token_endpoint = metadata.token_endpoint.clone().ok_or_else(|| {
            AuthError::Server(format!("{} has no token endpoint", metadata.issuer))
        })?;
        let resource_uri = match &state.resource {
            Some(r) => r.resource.clone(),
            None => state.server.clone().expect("loaded").to_string(),
        };
        let params = [
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token.as_str()),
            ("resource", resource_uri.as_str()),
        ];
        let auth = self.client_auth(&metadata, &credentials)?;
        let response = token::token_request(&self.http, &token_endpoint, &params, &auth).await?;
        let scopes = credentials.scopes.clone();
        let mut renewed = with_token(credentials, response, &scopes);
        if renewed.refresh_token.is_none() {
            renewed.refresh_token = Some(refresh_token);
        }
        state.credentials = Some(renewed);
        self.save(state)
    }

    /// The client registration to use with this authorization server, in the spec's order:
    /// pre-registered, a metadata document, one registered earlier, dynamic registration.
    async fn registration(
        &self,
        state: &State,
        metadata: &ServerMetadata,
        redirect_uri: &str,
    ) -> Result<Credentials, AuthError> {
        let base = Credentials {
            issuer: metadata.issuer.clone(),
            ..Credentials::default()
        };
        if let Some(client_id) = &self.config.client_id {
            return Ok(Credentials {
                client_id: client_id.clone(),
                ..base
            });
        }
        if metadata.client_id_metadata_document_supported == Some(true)
            && let Some(url) = &self.config.metadata_document
        {
            return Ok(Credentials {
                client_id: url.clone(),
                auth_method: Some("none".to_owned()),
                ..base
            });
        }
        if let Some(known) = state
            .credentials
            .as_ref()
            .filter(|c| c.issuer == metadata.issuer && !c.client_id.is_empty())
        {
            return Ok(Credentials {
                client_id: known.client_id.clone(),
                client_secret: known.client_secret.clone(),
                auth_method: known.auth_method.clone(),
                ..base
            });
        }
        match (
            &metadata.registration_endpoint,
            self.config.dynamic_registration,
        ) {
            (Some(endpoint), true) => {
                let registered =
                    token::register(&self.http, endpoint, &self.config.client_name, redirect_uri)
                        .await?;
                Ok(Credentials {
                    client_id: registered.client_id,
                    client_secret: registered.client_secret,
                    auth_method: registered.token_endpoint_auth_method,
                    ..base
                })
            }
            _ => Err(AuthError::Server(format!(
                "{} offers no way for this client to register: no pre-registered client id was \
                 given{}, and it has no registration endpoint",
                metadata.issuer,
                if self.config.metadata_document.is_some() {
                    " and it does not accept client metadata documents"
                } else {
                    ""
                }
            ))),
        }
    }

    /// How to authenticate at the token endpoint with `credentials`.
    fn client_auth<'a>(
        &'a self,
        metadata: &'a ServerMetadata,
        credentials: &'a Credentials,
    ) -> Result<ClientAuth<'a>, AuthError> {
        let client_id = credentials.client_id.as_str();
        let issuer = metadata.issuer.as_str();
        // Pre-registered credentials of the configuration, else what registration returned.
        let secret = if self.config.client_id.as_deref() == Some(client_id) {
            self.config.secret.as_ref()
        } else {
            None
        };
        let shared = match secret {
            Some(Secret::Key(key)) => {
                // RFC 7523bis (draft-ietf-oauth-rfc7523bis): the audience is the authorization
                // server's issuer identifier, not the endpoint, which closes a mix-up where one
                // server replays an assertion meant for it at another.
                return Ok(ClientAuth::Jwt {
                    client_id,
                    key,
                    audience: issuer,
                });
            }
            Some(Secret::Shared(s)) => Some(s.as_str()),
            None => credentials.client_secret.as_deref(),
        };
        let Some(secret) = shared else {
            return Ok(ClientAuth::None { client_id });
        };
        let method = self
            .config
            .auth_method
            .as_deref()
            .filter(|_| self.config.client_id.as_deref() == Some(client_id))
            .or(credentials.auth_method.as_deref())
            .map(str::to_owned)
            .unwrap_or_else(|| {
                if metadata.supports_auth_method("client_secret_basic") {
                    "client_secret_basic".to_owned()
                } else if metadata.supports_auth_method("client_secret_post") {
                    "client_secret_post".to_owned()
                } else {
                    "client_secret_basic".to_owned()
                }
            });
        Ok(match method.as_str() {
            "client_secret_post" => ClientAuth::Post { client_id, secret },
            "none" => ClientAuth::None { client_id },
            _ => ClientAuth::Basic { client_id, secret },
        })
    }

    /// The authorization request and its response: the code, checked.
    async fn authorization_code(
        &self,
        metadata: &ServerMetadata,
        authorizer: &dyn super::Authorizer,
        client_id: &str,
        scopes: &[String],
        resource: &str,
    ) -> Result<Code, AuthError> {
        // spec basic/authorization: PKCE is required; a server that does not say it supports
        // S256 is not used.
        let methods = metadata.code_challenge_methods_supported.as_deref();
        if !methods.is_some_and(|m| m.iter().any(|x| x == "S256")) {
            return Err(AuthError::Server(format!(
                "{} does not list S256 among its PKCE methods (code_challenge_methods_supported), \
                 so the authorization code cannot be protected",
                metadata.issuer
            )));
        }
        let endpoint = metadata.authorization_endpoint.as_deref().ok_or_else(|| {
            AuthError::Server(format!("{} has no authorization endpoint", metadata.issuer))
        })?;
        let mut url = Url::parse(endpoint).map_err(|e| {
            AuthError::Server(format!("its authorization endpoint {endpoint:?}: {e}"))
        })?;
        let pkce = Pkce::new();
        let expected_state = random_token();
        let redirect_uri = authorizer.redirect_uri();
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", client_id)
                .append_pair("redirect_uri", &redirect_uri)
                .append_pair("code_challenge", &pkce.challenge)
                .append_pair("code_challenge_method", "S256")
                .append_pair("state", &expected_state)
                .append_pair("resource", resource);
            if !scopes.is_empty() {
                query.append_pair("scope", &scopes.join(" "));
            }
        }
        let back = authorizer.authorize(url).await?;
        let param = |name: &str| {
            back.query_pairs()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
        };
        // RFC 9207 §2.4: `iss` compared by simple string equality, required when promised; on a
        // mismatch nothing else of the response is acted on or shown.
        match param("iss") {
            Some(iss) if iss != metadata.issuer => {
                return Err(AuthError::Response(format!(
                    "its iss parameter is not the issuer {:?} (a mix-up attack, or a misconfigured \
                     server)",
                    metadata.issuer
                )));
            }
            None if metadata.authorization_response_iss_parameter_supported == Some(true) => {
                return Err(AuthError::Response(format!(
                    "{} promises an iss parameter and the response has none",
                    metadata.issuer
                )));
            }
            _ => {}
        }
        if param("state").as_deref() != Some(expected_state.as_str()) {
            return Err(AuthError::Response(
                "its state is not the one sent with the request".to_owned(),
            ));
        }
        if let Some(error) = param("error") {
            return Err(AuthError::Denied {
                error,
                description: param("error_description"),
            });
        }
        let code = param("code")
            .filter(|c| !c.is_empty())
            .ok_or_else(|| AuthError::Response("it carries no code".to_owned()))?;
        Ok(Code {
            code,
            verifier: pkce.verifier,
        })
    }
}

/// When the access token should be replaced (seconds since the epoch): a little before it
/// expires when a refresh token can replace it, else when it expires (a token that cannot be
/// refreshed is used to its end). `None`: no expiry was given.
fn renewal(credentials: &Credentials) -> Option<u64> {
    let at = credentials.expires_at?;
    Some(if credentials.refresh_token.is_some() {
        at.saturating_sub(EXPIRY_MARGIN)
    } else {
        at
    })
}

/// An authorization code and the PKCE verifier of its request.
struct Code {
    code: String,
    verifier: String,
}

/// `credentials` with the token of `response`; the scopes are the granted ones when the server
/// says, else the requested ones.
fn with_token(
    mut credentials: Credentials,
    response: TokenResponse,
    requested: &[String],
) -> Credentials {
    credentials.access_token = Some(response.access_token);
    if response.refresh_token.is_some() {
        credentials.refresh_token = response.refresh_token;
    }
    credentials.expires_at = response.expires_in.map(|s| now().saturating_add(s));
    credentials.scopes = match response.scope {
        Some(granted) if !granted.trim().is_empty() => granted
            .split_ascii_whitespace()
            .map(str::to_owned)
            .collect(),
        _ => requested.to_vec(),
    };
    credentials
}
