//! Requests to the authorization server: token requests of every grant, client authentication,
//! and dynamic registration.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde::Deserialize;
use serde_json::{Value, json};

use super::AuthError;
use super::pkce::random_token;

/// A private key for `private_key_jwt` client authentication (RFC 7523): the client signs a short
/// JWT naming itself instead of sending a secret.
pub struct PrivateKey {
    key: jsonwebtoken::EncodingKey,
    algorithm: jsonwebtoken::Algorithm,
    key_id: Option<String>,
}

impl std::fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrivateKey")
            .field("algorithm", &self.algorithm)
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

impl PrivateKey {
    /// A key from PEM (PKCS#8, or PKCS#1 for RSA, SEC1 for EC) for `algorithm`: `RS256`, `RS384`,
    /// `RS512`, `PS256`, `PS384`, `PS512`, `ES256`, `ES384` or `EdDSA`.
    pub fn from_pem(pem: &[u8], algorithm: &str) -> Result<Self, AuthError> {
        use jsonwebtoken::{Algorithm, EncodingKey};
        let algorithm: Algorithm = algorithm.parse().map_err(|_| {
            AuthError::Config(format!("{algorithm:?} is not a JWT signing algorithm"))
        })?;
        let bad = |e: jsonwebtoken::errors::Error| {
            AuthError::Config(format!(
                "the private key does not load for {algorithm:?}: {e}"
            ))
        };
        let key = match algorithm {
            Algorithm::RS256
            | Algorithm::RS384
            | Algorithm::RS512
            | Algorithm::PS256
            | Algorithm::PS384
            | Algorithm::PS512 => EncodingKey::from_rsa_pem(pem).map_err(bad)?,
            Algorithm::ES256 | Algorithm::ES384 => EncodingKey::from_ec_pem(pem).map_err(bad)?,
            Algorithm::EdDSA => EncodingKey::from_ed_pem(pem).map_err(bad)?,
            _ => {
                return Err(AuthError::Config(format!(
                    "{algorithm:?} is a shared-secret algorithm, not one for a private key"
                )));
            }
        };
        Ok(PrivateKey {
            key,
            algorithm,
            key_id: None,
        })
    }

    /// The `kid` to put in the JWT header, when the server holds several keys of the client.
    #[must_use]
    pub fn with_key_id(mut self, key_id: impl Into<String>) -> Self {
        self.key_id = Some(key_id.into());
        self
    }

    /// A client assertion for `client_id` whose audience is `audience`, valid for five minutes.
    pub(crate) fn assertion(&self, client_id: &str, audience: &str) -> Result<String, AuthError> {
        let now = now();
        let claims = json!({
            "iss": client_id,
            "sub": client_id,
            "aud": audience,
            "iat": now,
            "exp": now + 300,
            "jti": random_token(),
        });
        let mut header = jsonwebtoken::Header::new(self.algorithm);
        header.kid.clone_from(&self.key_id);
        jsonwebtoken::encode(&header, &claims, &self.key)
            .map_err(|e| AuthError::Config(format!("signing the client assertion failed: {e}")))
    }
}

/// Seconds since the Unix epoch.
pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// How the client proves who it is at the token endpoint.
pub(crate) enum ClientAuth<'a> {
    /// A public client: `client_id` in the body.
    None { client_id: &'a str },
    /// `client_secret_basic`: HTTP Basic with the form-encoded id and secret (RFC 6749 §2.3.1).
    Basic { client_id: &'a str, secret: &'a str },
    /// `client_secret_post`: both in the body.
    Post { client_id: &'a str, secret: &'a str },
    /// `private_key_jwt`: a signed assertion in the body (RFC 7523 §2.2).
    Jwt {
        client_id: &'a str,
        key: &'a PrivateKey,
        audience: &'a str,
    },
}

/// A successful token response (RFC 6749 §5.1).
#[derive(Deserialize)]
pub(crate) struct TokenResponse {
    pub(crate) access_token: String,
    #[serde(default)]
    pub(crate) token_type: Option<String>,
    #[serde(default)]
    pub(crate) expires_in: Option<u64>,
    #[serde(default)]
    pub(crate) refresh_token: Option<String>,
    #[serde(default)]
    pub(crate) scope: Option<String>,
}

/// An OAuth error response (RFC 6749 §5.2).
#[derive(Deserialize)]
struct ErrorResponse {
    error: String,
    #[serde(default)]
    error_description: Option<String>,
}

/// The URL without its query, for messages.
pub(crate) fn shown(url: &str) -> String {
    url.split(['?', '#']).next().unwrap_or(url).to_owned()
}

/// A form body.
fn form<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut out = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        out.append_pair(k, v);
    }
    out.finish()
}

pub(crate) fn http_error(url: &str, e: &reqwest::Error) -> AuthError {
    let mut reason = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        reason = format!("{reason}: {cause}");
        source = cause.source();
    }
    AuthError::Http {
        url: shown(url),
        reason,
    }
}

/// GETs a JSON document; `Ok(None)` for a status other than 2xx (not found, forbidden: the next
/// place may have it).
pub(crate) async fn get_json(
    http: &reqwest::Client,
    url: &str,
) -> Result<Option<Value>, AuthError> {
    let response = http
        .get(url)
        .header(http::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| http_error(url, &e))?;
    if !response.status().is_success() {
        return Ok(None);
    }
    let body = read_limited(response, url).await?;
    serde_json::from_slice(&body)
        .map(Some)
        .map_err(|e| AuthError::Http {
            url: shown(url),
            reason: format!("the answer is not JSON: {e}"),
        })
}

/// Reads a body of at most 1 MiB.
async fn read_limited(mut response: reqwest::Response, url: &str) -> Result<Vec<u8>, AuthError> {
    const LIMIT: usize = 1 << 20;
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| http_error(url, &e))? {
        body.extend_from_slice(&chunk);
        if body.len() > LIMIT {
            return Err(AuthError::Http {
                url: shown(url),
                reason: "the answer is larger than 1 MiB".to_owned(),
            });
        }
    }
    Ok(body)
}

/// POSTs a token request: `params` plus the client authentication.
pub(crate) async fn token_request(
    http: &reqwest::Client,
    endpoint: &str,
    params: &[(&str, &str)],
    auth: &ClientAuth<'_>,
) -> Result<TokenResponse, AuthError> {
    let mut pairs: Vec<(&str, &str)> = params.to_vec();
    let assertion;
    let mut request = http.post(endpoint);
    match auth {
        ClientAuth::None { client_id } => pairs.push(("client_id", client_id)),
        ClientAuth::Basic { client_id, secret } => {
            let encode =
                |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
            let credentials = format!("{}:{}", encode(client_id), encode(secret));
            request = request.header(
                http::header::AUTHORIZATION,
                format!("Basic {}", B64.encode(credentials)),
            );
        }
        ClientAuth::Post { client_id, secret } => {
            pairs.push(("client_id", client_id));
            pairs.push(("client_secret", secret));
        }
        ClientAuth::Jwt {
            client_id,
            key,
            audience,
        } => {
            assertion = key.assertion(client_id, audience)?;
            pairs.push(("client_id", client_id));
            pairs.push((
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            ));
            pairs.push(("client_assertion", &assertion));
        }
    }
    let response = request
        .header(
            http::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .header(http::header::ACCEPT, "application/json")
        .body(form(pairs))
        .send()
        .await
        .map_err(|e| http_error(endpoint, &e))?;
    let status = response.status();
    let body = read_limited(response, endpoint).await?;
    if !status.is_success() {
        return Err(AuthError::Token(
            match serde_json::from_slice::<ErrorResponse>(&body) {
                Ok(e) => format!(
                    "{} answered HTTP {}: {}{}",
                    shown(endpoint),
                    status.as_u16(),
                    e.error,
                    e.error_description
                        .map(|d| format!(" ({d})"))
                        .unwrap_or_default()
                ),
                Err(_) => format!("{} answered HTTP {}", shown(endpoint), status.as_u16()),
            },
        ));
    }
    let token: TokenResponse = serde_json::from_slice(&body).map_err(|e| {
        AuthError::Token(format!(
            "{} answered with something that is not a token response: {e}",
            shown(endpoint)
        ))
    })?;
    if token.access_token.is_empty() {
        return Err(AuthError::Token(format!(
            "{} answered with an empty access token",
            shown(endpoint)
        )));
    }
    if let Some(kind) = &token.token_type
        && !kind.eq_ignore_ascii_case("bearer")
    {
        return Err(AuthError::Token(format!(
            "{} issued a {kind:?} token; only bearer tokens are supported",
            shown(endpoint)
        )));
    }
    Ok(token)
}

/// What dynamic registration returned.
#[derive(Deserialize)]
pub(crate) struct Registration {
    pub(crate) client_id: String,
    #[serde(default)]
    pub(crate) client_secret: Option<String>,
    #[serde(default)]
    pub(crate) token_endpoint_auth_method: Option<String>,
}

/// Registers a public client for the authorization code grant (RFC 7591).
pub(crate) async fn register(
    http: &reqwest::Client,
    endpoint: &str,
    client_name: &str,
    redirect_uri: &str,
) -> Result<Registration, AuthError> {
    let redirect_is_local = url::Url::parse(redirect_uri).is_ok_and(|u| {
        matches!(
            u.host(),
            Some(url::Host::Ipv4(ip)) if ip.is_loopback()
        ) || matches!(u.host(), Some(url::Host::Ipv6(ip)) if ip.is_loopback())
            || u.host_str() == Some("localhost")
            || u.scheme() != "https"
    });
    let body = json!({
        "client_name": client_name,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        // spec basic/authorization: native for desktop and command-line clients, whose redirect
        // goes to the loopback interface; web otherwise.
        "application_type": if redirect_is_local { "native" } else { "web" },
    });
    let response = http
        .post(endpoint)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json")
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| http_error(endpoint, &e))?;
    let status = response.status();
    let bytes = read_limited(response, endpoint).await?;
    if !status.is_success() {
        let detail = serde_json::from_slice::<ErrorResponse>(&bytes)
            .map(|e| format!(": {}", e.error))
            .unwrap_or_default();
        return Err(AuthError::Registration(format!(
            "{} answered HTTP {}{detail}",
            shown(endpoint),
            status.as_u16()
        )));
    }
    serde_json::from_slice(&bytes).map_err(|e| {
        AuthError::Registration(format!(
            "{} answered with something that is not a registration: {e}",
            shown(endpoint)
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_private_key_signs_an_assertion_naming_the_client_and_the_audience() {
        let pem = fresh_ec_key();
        let key = PrivateKey::from_pem(pem.as_bytes(), "ES256")
            .unwrap()
            .with_key_id("k1");
        let jwt = key
            .assertion("client-1", "https://as.example/token")
            .unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let decode = |s: &str| -> Value {
            serde_json::from_slice(
                &base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .decode(s)
                    .unwrap(),
            )
            .unwrap()
        };
        let (header, claims) = (decode(parts[0]), decode(parts[1]));
        assert_eq!(header["alg"], "ES256");
        assert_eq!(header["kid"], "k1");
        assert_eq!(claims["iss"], "client-1");
        assert_eq!(claims["sub"], "client-1");
        assert_eq!(claims["aud"], "https://as.example/token");
        assert_eq!(
            claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap(),
            300
        );
        assert!(claims["jti"].as_str().unwrap().len() >= 32);
        assert!(!format!("{key:?}").contains("BEGIN"));
        assert!(PrivateKey::from_pem(pem.as_bytes(), "HS256").is_err());
        assert!(PrivateKey::from_pem(b"not a key", "RS256").is_err());
        assert!(PrivateKey::from_pem(pem.as_bytes(), "XY999").is_err());
    }

    /// A fresh PKCS#8 P-256 private key.
    fn fresh_ec_key() -> String {
        rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
            .expect("a key")
            .serialize_pem()
    }

    #[test]
    fn forms_encode_and_urls_are_shown_without_their_query() {
        assert_eq!(form([("a", "b c"), ("x", "&=")]), "a=b+c&x=%26%3D");
        assert_eq!(shown("https://as/token?code=secret#f"), "https://as/token");
    }
}
