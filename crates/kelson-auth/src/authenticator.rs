//! Validating bearer tokens: JWTs against the authorization server's keys, other tokens by
//! introspection, both remembered until they expire.

use std::borrow::Cow;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, AlgorithmFamily, Validation};
use kelson_server::Principal;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::cache::{TokenCache, token_key};
use crate::claims::{Audience, Claims};
use crate::config::AuthConfig;
use crate::discovery;
use crate::error::Error;
use crate::fetch::Fetcher;
use crate::jwks::{KeyError, KeyStore};
use crate::metadata::ResourceMeta;
use crate::reject::Rejection;

/// The asymmetric algorithms a JWT may be signed with. `none` and HMAC are never accepted: with
/// HMAC, the public key of the JWKS would be the secret (RFC 8725 §2.1, §3.1).
const ALLOWED: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// How long a client is asked to wait when introspection failed.
const INTROSPECTION_RETRY: Duration = Duration::from_secs(5);

/// Validates bearer tokens for one resource; shared by every request through the layer.
pub struct Authenticator {
    issuer: String,
    resource: String,
    claims: Vec<String>,
    required_scopes: Vec<String>,
    leeway: u64,
    /// One per key family: jsonwebtoken wants every algorithm of a validation in the key's family.
    validations: [Validation; 3],
    fetch: Fetcher,
    keys: KeyStore,
    introspection: Option<IntrospectionClient>,
    cache: TokenCache,
    pub(crate) meta: ResourceMeta,
}

struct IntrospectionClient {
    url: String,
    client_id: String,
    client_secret: String,
    cache_ttl: u64,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("issuer", &self.issuer)
            .field("resource", &self.resource)
            .finish_non_exhaustive()
    }
}

/// The header fields read before a key is chosen.
#[derive(Deserialize)]
struct JoseHeader {
    alg: String,
    kid: Option<String>,
}

impl Authenticator {
    /// Sets up validation for `config`: finds the authorization server's endpoints from its
    /// metadata (unless the JWKS URL is configured and introspection is off) and fetches its keys.
    ///
    /// It fails when the metadata cannot be had, or names another issuer; a JWKS that cannot be
    /// fetched yet is only logged, and tried again on the first token.
    pub async fn new(config: AuthConfig) -> Result<Self, Error> {
        let meta = ResourceMeta::new(&config)?;
        let fetch = Fetcher::new(&config)?;
        let introspection_url = config.introspection.as_ref().and_then(|i| i.url.clone());
        let needs_metadata = config.jwks_url.is_none()
            || (config.introspection.is_some() && introspection_url.is_none());
        let metadata = if needs_metadata {
            Some(discovery::discover(&config, &fetch).await?)
        } else {
            None
        };
        let jwks_url = match (&config.jwks_url, &metadata) {
            (Some(url), _) => url.clone(),
            (None, Some(m)) => m
                .jwks_uri
                .clone()
                .ok_or(Error::MissingEndpoint("jwks_uri"))?,
            (None, None) => unreachable!("metadata is fetched when no JWKS URL is configured"),
        };
        check_url("jwks_url", &jwks_url)?;
        let introspection = match &config.introspection {
            None => None,
            Some(i) => {
                let url = match (&i.url, &metadata) {
                    (Some(url), _) => url.clone(),
                    (None, Some(m)) => m
                        .introspection_endpoint
                        .clone()
                        .ok_or(Error::MissingEndpoint("introspection_endpoint"))?,
                    (None, None) => unreachable!("metadata is fetched for introspection"),
                };
                check_url("introspection_url", &url)?;
                Some(IntrospectionClient {
                    url,
                    client_id: i.client_id.clone(),
                    client_secret: i.client_secret.clone(),
                    cache_ttl: i.cache_ttl.as_secs(),
                })
            }
        };

        let validations = [
            AlgorithmFamily::Rsa,
            AlgorithmFamily::Ec,
            AlgorithmFamily::Ed,
        ]
        .map(|family| {
            let mut validation = Validation::new(Algorithm::RS256);
            validation.algorithms = ALLOWED
                .iter()
                .copied()
                .filter(|a| a.family() == family)
                .collect();
            validation.set_issuer(&[&config.issuer]);
            validation.set_audience(&[&config.resource]);
            validation.set_required_spec_claims(&["exp", "iss", "aud"]);
            validation.validate_exp = true;
            validation.validate_nbf = true;
            validation.leeway = config.leeway.as_secs();
            validation
        });

        let keys = KeyStore::new(
            Some(jwks_url),
            config.jwks_refetch_interval,
            config.max_keys,
        );
        keys.warm(&fetch).await;
        Ok(Authenticator {
            issuer: config.issuer,
            resource: config.resource,
            claims: config.claims,
            required_scopes: config.required_scopes,
            leeway: config.leeway.as_secs(),
            validations,
            fetch,
            keys,
            introspection,
            cache: TokenCache::new(config.token_cache),
            meta,
        })
    }

    /// The URL of this resource's metadata document, as challenges name it.
    pub fn resource_metadata_url(&self) -> &str {
        &self.meta.url
    }

    /// The principal a bearer token stands for, or why it is refused.
    pub(crate) async fn authenticate(&self, token: &str) -> Result<Principal, Rejection> {
        let now = unix_now();
        let key = token_key(token);
        if let Some(principal) = self.cache.get(&key, now) {
            return Ok(principal);
        }
        let (principal, until) = if looks_like_jwt(token) {
            self.validate_jwt(token, now).await?
        } else {
            self.introspect(token, now).await?
        };
        self.cache.insert(key, principal.clone(), until, now);
        Ok(principal)
    }

    /// The scopes every request needs that `principal` lacks: all required scopes, if any is missing.
    pub(crate) fn check_required_scopes(&self, principal: &Principal) -> Result<(), Rejection> {
        if self.required_scopes.iter().all(|s| principal.has_scope(s)) {
            return Ok(());
        }
        Err(Rejection::InsufficientScope {
            scopes: self.required_scopes.join(" "),
            description: "the token lacks a scope this resource requires".into(),
        })
    }

    async fn validate_jwt(&self, token: &str, now: u64) -> Result<(Principal, u64), Rejection> {
        let invalid = |d: &'static str| Rejection::InvalidToken(Cow::Borrowed(d));
        let header = token.split('.').next().unwrap_or_default();
        let header: JoseHeader = URL_SAFE_NO_PAD
            .decode(header)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .ok_or_else(|| invalid("the token's header is not valid JSON"))?;
        let alg = allowed_algorithm(&header.alg).ok_or_else(|| {
            Rejection::InvalidToken(Cow::Owned(format!(
                "the signing algorithm {} is not accepted",
                header.alg
            )))
        })?;
        let key = self
            .keys
            .key(&self.fetch, header.kid.as_deref(), alg)
            .await
            .map_err(|e| match e {
                KeyError::Unknown => invalid(
                    "the token is signed with a key the authorization server does not publish",
                ),
                KeyError::WrongAlgorithm => invalid("the token's algorithm does not fit its key"),
                KeyError::Ambiguous => {
                    invalid("the token names no key and several could verify it")
                }
                KeyError::Unavailable { retry_after } => Rejection::Unavailable {
                    retry_after,
                    description: "the authorization server's keys cannot be fetched",
                },
            })?;
        let validation = match alg.family() {
            AlgorithmFamily::Rsa => &self.validations[0],
            AlgorithmFamily::Ec => &self.validations[1],
            _ => &self.validations[2],
        };
        let data = jsonwebtoken::decode::<Claims>(token, &key.key, validation).map_err(|e| {
            invalid(match e.kind() {
                ErrorKind::ExpiredSignature => "the token has expired",
                ErrorKind::ImmatureSignature => "the token is not valid yet",
                ErrorKind::InvalidIssuer => "the token was issued by another authorization server",
                ErrorKind::InvalidAudience => "the token is not meant for this resource",
                ErrorKind::MissingRequiredClaim(c) if c == "exp" => "the token has no exp claim",
                ErrorKind::MissingRequiredClaim(c) if c == "aud" => "the token has no aud claim",
                ErrorKind::MissingRequiredClaim(_) => "the token has no iss claim",
                ErrorKind::InvalidSignature => "the token's signature does not verify",
                ErrorKind::InvalidAlgorithm => "the token's algorithm does not fit its key",
                ErrorKind::Base64(_) => "the token is not valid base64url",
                _ => "the token is malformed",
            })
        })?;
        let claims = data.claims;
        // RFC 7519 §4.1.6: a token issued in the future (beyond the leeway) is not trusted.
        if let Some(iat) = claims.rest.get("iat").and_then(Value::as_u64)
            && iat > now + self.leeway
        {
            return Err(invalid("the token was issued in the future"));
        }
        let until = claims.exp.unwrap_or(0).saturating_add(self.leeway);
        let principal = claims
            .principal(&self.issuer, &self.claims)
            .ok_or_else(|| invalid("the token names no subject or client"))?;
        Ok((principal, until))
    }

    async fn introspect(&self, token: &str, now: u64) -> Result<(Principal, u64), Rejection> {
        let invalid = |d: &'static str| Rejection::InvalidToken(Cow::Borrowed(d));
        let Some(client) = &self.introspection else {
            return Err(invalid(
                "the token is not a JWT, and this resource does not introspect tokens",
            ));
        };
        // RFC 7662 §2.1: the token in a form body, the resource server authenticated.
        let answer: Map<String, Value> = self
            .fetch
            .post_form_json(
                &client.url,
                &client.client_id,
                &client.client_secret,
                &[("token", token), ("token_type_hint", "access_token")],
            )
            .await
            .map_err(|e| {
                tracing::warn!(url = %client.url, error = %crate::error::chain(&e), "token introspection failed");
                Rejection::Unavailable {
                    retry_after: INTROSPECTION_RETRY,
                    description: "the authorization server cannot introspect the token",
                }
            })?;
        // RFC 7662 §2.2: anything but `"active": true` is an inactive token.
        if answer.get("active") != Some(&Value::Bool(true)) {
            return Err(invalid("the token is not active"));
        }
        if let Some(iss) = answer.get("iss")
            && iss.as_str() != Some(self.issuer.as_str())
        {
            return Err(invalid(
                "the token was issued by another authorization server",
            ));
        }
        if let Some(aud) = answer.get("aud") {
            let fits = serde_json::from_value::<Audience>(aud.clone())
                .is_ok_and(|a| a.contains(&self.resource));
            if !fits {
                return Err(invalid("the token is not meant for this resource"));
            }
        }
        let exp = answer.get("exp").and_then(Value::as_u64);
        if exp.is_some_and(|exp| exp.saturating_add(self.leeway) <= now) {
            return Err(invalid("the token has expired"));
        }
        if answer
            .get("nbf")
            .and_then(Value::as_u64)
            .is_some_and(|nbf| nbf > now + self.leeway)
        {
            return Err(invalid("the token is not valid yet"));
        }
        let claims: Claims = serde_json::from_value(Value::Object(answer))
            .map_err(|_| invalid("the introspection answer is malformed"))?;
        let principal = claims
            .principal(&self.issuer, &self.claims)
            .ok_or_else(|| invalid("the token names no subject or client"))?;
        let until = now.saturating_add(client.cache_ttl);
        let until = exp.map_or(until, |exp| until.min(exp));
        Ok((principal, until))
    }
}

/// The allowed algorithm of this `alg` name (`none` and HMAC are not among them).
fn allowed_algorithm(name: &str) -> Option<Algorithm> {
    Some(match name {
        "RS256" => Algorithm::RS256,
        "RS384" => Algorithm::RS384,
        "RS512" => Algorithm::RS512,
        "PS256" => Algorithm::PS256,
        "PS384" => Algorithm::PS384,
        "PS512" => Algorithm::PS512,
        "ES256" => Algorithm::ES256,
        "ES384" => Algorithm::ES384,
        "EdDSA" => Algorithm::EdDSA,
        _ => return None,
    })
}

/// Whether a token has the compact JWS shape: three base64url segments.
fn looks_like_jwt(token: &str) -> bool {
    let mut segments = 0;
    for segment in token.split('.') {
        segments += 1;
        if segments > 3
            || !segment
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return false;
        }
    }
    segments == 3
}

fn check_url(field: &'static str, value: &str) -> Result<(), Error> {
    let url = url::Url::parse(value).map_err(|source| Error::UrlSyntax {
        field,
        value: value.to_owned(),
        source,
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Error::Url {
            field,
            value: value.to_owned(),
            reason: "it must be an http or https URL",
        });
    }
    Ok(())
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_three_base64url_segments_look_like_a_jwt() {
        assert!(looks_like_jwt("eyJh.eyJi.c2ln"));
        assert!(
            looks_like_jwt("eyJh.eyJi."),
            "an empty signature is refused later"
        );
        assert!(!looks_like_jwt("opaque-token_123"));
        assert!(!looks_like_jwt("a.b.c.d"));
        assert!(!looks_like_jwt("a.b+c.d"));
    }
}
