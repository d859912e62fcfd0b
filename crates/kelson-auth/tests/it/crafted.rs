//! Tokens the tests sign with their own keys, published in their own JWKS: every way a JWT can be
//! wrong gets 401 with the exact challenge, and the next good request passes.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use kelson_auth::{AuthConfig, AuthLayer, Authenticator};
use kelson_server::Principal;
use serde_json::{Value, json};

use crate::harness::*;

fn config(url: &str, jwks: &Jwks) -> AuthConfig {
    let mut config = AuthConfig::new(TEST_ISSUER, url);
    config.jwks_url = Some(jwks.url.clone());
    config.scopes_supported = vec!["mcp:tools".into(), "mcp:read".into()];
    config.claims = vec!["email".into()];
    config
}

fn with(claims: &Value, changes: Value) -> Value {
    let mut claims = claims.clone();
    for (k, v) in changes.as_object().unwrap() {
        if v.is_null() {
            claims.as_object_mut().unwrap().remove(k);
        } else {
            claims[k] = v.clone();
        }
    }
    claims
}

/// A token with this header and payload and no or any signature.
fn unsigned(header: Value, claims: &Value, signature: &str) -> String {
    format!(
        "{}.{}.{signature}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    )
}

const SCOPE: Option<&str> = Some("mcp:tools mcp:read");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bad_token_gets_401_invalid_token_and_a_good_one_passes_after_it() {
    let key = TestKey::new("k1");
    let jwks = Jwks::start(vec![key.jwk()]).await;
    let (listener, url) = listener().await;
    let server = protect(listener, config(&url, &jwks)).await;
    let good = good_claims(&url);
    let now = now();

    let hs256 = {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some("k1".into());
        jsonwebtoken::encode(
            &header,
            &good,
            &EncodingKey::from_secret(key.public_bytes()).unwrap(),
        )
        .unwrap()
    };
    let signed = key.sign(&good);
    // The signature cut short by 8 bytes, still well-formed base64url.
    let truncated = {
        let (message, signature) = signed.rsplit_once('.').unwrap();
        let bytes = URL_SAFE_NO_PAD.decode(signature).unwrap();
        format!(
            "{message}.{}",
            URL_SAFE_NO_PAD.encode(&bytes[..bytes.len() - 8])
        )
    };
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "expired",
            key.sign(&with(&good, json!({"iat": now - 900, "exp": now - 120}))),
            "the token has expired",
        ),
        (
            "not yet valid",
            key.sign(&with(&good, json!({"nbf": now + 600}))),
            "the token is not valid yet",
        ),
        (
            "issued in the future",
            key.sign(&with(&good, json!({"iat": now + 600}))),
            "the token was issued in the future",
        ),
        (
            "wrong issuer",
            key.sign(&with(&good, json!({"iss": "https://other.test"}))),
            "the token was issued by another authorization server",
        ),
        (
            "wrong audience",
            key.sign(&with(&good, json!({"aud": ["http://127.0.0.1:1/other"]}))),
            "the token is not meant for this resource",
        ),
        (
            "no audience",
            key.sign(&with(&good, json!({"aud": null}))),
            "the token has no aud claim",
        ),
        (
            "no expiry",
            key.sign(&with(&good, json!({"exp": null}))),
            "the token has no exp claim",
        ),
        (
            "alg none",
            unsigned(json!({"alg": "none", "kid": "k1"}), &good, ""),
            "the signing algorithm none is not accepted",
        ),
        (
            "HS256 with the public key as the secret",
            hs256,
            "the signing algorithm HS256 is not accepted",
        ),
        (
            "truncated signature",
            truncated,
            "the token's signature does not verify",
        ),
        (
            "another key's signature",
            TestKey::new("k1").sign(&good),
            "the token's signature does not verify",
        ),
        (
            "not a JWT",
            "opaque-token-nobody-issued".to_owned(),
            "the token is not a JWT, and this resource does not introspect tokens",
        ),
        (
            "a signature that is not base64url",
            format!("{}.{}", signed.rsplit_once('.').unwrap().0, "AAAAA"),
            "the token is not valid base64url",
        ),
        (
            "a header that is not JSON",
            format!("bm90IGpzb24.{}", signed.split_once('.').unwrap().1),
            "the token's header is not valid JSON",
        ),
    ];
    for (what, token, description) in cases {
        let answer = list_tools(&server.url, Some(&token)).await;
        assert_eq!(answer.status, 401, "{what}: {answer:?}");
        assert_eq!(
            answer.challenge.as_deref(),
            Some(challenge_401(&server.url, SCOPE, Some(description)).as_str()),
            "{what}"
        );
        assert_eq!(
            answer.body,
            json!({"error": "invalid_token", "error_description": description}),
            "{what}: the body names the error and never echoes the token"
        );
        assert!(
            tool_names(&list_tools(&server.url, Some(&signed)).await)
                .contains(&"whoami".to_owned()),
            "after {what}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_without_a_usable_authorization_header_are_challenged() {
    let key = TestKey::new("k1");
    let jwks = Jwks::start(vec![key.jwk()]).await;
    let (listener, url) = listener().await;
    let server = protect(listener, config(&url, &jwks)).await;
    let good = key.sign(&good_claims(&url));
    let plain = challenge_401(&server.url, SCOPE, None);

    // No header, or another scheme: the plain challenge, no error code (RFC 6750 §3.1).
    let answer = list_tools(&server.url, None).await;
    assert_eq!(answer.status, 401);
    assert_eq!(answer.challenge.as_deref(), Some(plain.as_str()));
    let basic = rpc(&server.url, None, "tools/list", json!({})).basic_auth("alice", Some("pw"));
    let answer = send(basic).await;
    assert_eq!(answer.status, 401);
    assert_eq!(answer.challenge.as_deref(), Some(plain.as_str()));

    let invalid_request = |d: &str| {
        format!(
            "Bearer error=\"invalid_request\", resource_metadata=\"{}\", scope=\"mcp:tools mcp:read\", error_description=\"{d}\"",
            prm_url(&server.url)
        )
    };
    // A token in the query string or a form body is refused even with a good header.
    let query = format!("{}?access_token={good}", server.url);
    let answer = send(rpc(&query, Some(&good), "tools/list", json!({}))).await;
    assert_eq!(answer.status, 400, "{answer:?}");
    assert_eq!(
        answer.challenge.unwrap(),
        invalid_request(
            "access tokens are accepted in the Authorization header only, not in the query"
        )
    );
    let form = reqwest::Client::new()
        .post(&server.url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("access_token={good}"));
    let answer = send(form).await;
    assert_eq!(answer.status, 400, "{answer:?}");
    assert_eq!(
        answer.challenge.unwrap(),
        invalid_request(
            "access tokens are accepted in the Authorization header only, not in a form body"
        )
    );
    // Two Authorization headers, or a Bearer header without a token.
    let twice = rpc(&server.url, Some(&good), "tools/list", json!({}))
        .header("authorization", format!("Bearer {good}"));
    let answer = send(twice).await;
    assert_eq!(answer.status, 400, "{answer:?}");
    assert_eq!(
        answer.challenge.unwrap(),
        invalid_request("the request has more than one Authorization header")
    );
    for value in ["Bearer", "Bearer ", "Bearer a b"] {
        let empty = rpc(&server.url, None, "tools/list", json!({})).header("authorization", value);
        let answer = send(empty).await;
        assert_eq!(answer.status, 400, "{value:?}: {answer:?}");
        assert_eq!(
            answer.challenge.unwrap(),
            invalid_request("the Authorization header does not hold a bearer token")
        );
    }
    // The scheme is case-insensitive; the server answers normally afterwards.
    let lower = rpc(&server.url, None, "tools/list", json!({}))
        .header("authorization", format!("bearer {good}"));
    assert!(tool_names(&send(lower).await).contains(&"whoami".to_owned()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_jwks_is_503_with_retry_after() {
    let key = TestKey::new("k1");
    // A port nobody listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}/jwks", closed.local_addr().unwrap());
    drop(closed);
    let (listener, url) = listener().await;
    let mut config = AuthConfig::new(TEST_ISSUER, &url);
    config.jwks_url = Some(dead);
    config.jwks_refetch_interval = Duration::from_secs(30);
    let server = protect(listener, config).await;
    let token = key.sign(&good_claims(&url));
    for _ in 0..2 {
        let answer = list_tools(&server.url, Some(&token)).await;
        assert_eq!(answer.status, 503, "{answer:?}");
        assert_eq!(answer.challenge, None);
        let retry: u64 = answer.retry_after.unwrap().parse().unwrap();
        assert!((1..=30).contains(&retry), "{retry}");
        assert_eq!(
            answer.body,
            json!({"error": "temporarily_unavailable", "error_description": "the authorization server's keys cannot be fetched"})
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn required_scopes_are_all_named_in_a_403() {
    let key = TestKey::new("k1");
    let jwks = Jwks::start(vec![key.jwk()]).await;
    let (listener, url) = listener().await;
    let mut config = config(&url, &jwks);
    config.required_scopes = vec!["mcp:tools".into(), "mcp:admin".into()];
    let server = protect(listener, config).await;
    let claims = good_claims(&url);

    let answer = list_tools(&server.url, Some(&key.sign(&claims))).await;
    assert_eq!(answer.status, 403, "{answer:?}");
    assert_eq!(
        answer.challenge.unwrap(),
        format!(
            "Bearer error=\"insufficient_scope\", scope=\"mcp:tools mcp:admin\", resource_metadata=\"{}\", error_description=\"the token lacks a scope this resource requires\"",
            prm_url(&server.url)
        )
    );
    // The 401 challenge names the required scopes.
    let answer = list_tools(&server.url, None).await;
    assert_eq!(
        answer.challenge.unwrap(),
        challenge_401(&server.url, Some("mcp:tools mcp:admin"), None)
    );
    let enough = with(&claims, json!({"scope": "mcp:admin mcp:tools"}));
    assert!(
        tool_names(&list_tools(&server.url, Some(&key.sign(&enough))).await)
            .contains(&"whoami".to_owned())
    );
}

/// An inner service that reports what reached it.
#[derive(Clone)]
struct Recorder;

impl tower_service::Service<http::Request<()>> for Recorder {
    type Response = http::Response<bytes::Bytes>;
    type Error = std::convert::Infallible;
    type Future = std::future::Ready<Result<Self::Response, Self::Error>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<()>) -> Self::Future {
        let principal = request.extensions().get::<Principal>().cloned();
        let seen = json!({
            "authorization": request.headers().contains_key("authorization"),
            "subject": principal.as_ref().and_then(|p| p.subject().map(str::to_owned)),
        });
        let mut response = http::Response::new(bytes::Bytes::from(seen.to_string()));
        if request.uri().path() == "/forbidden" {
            *response.status_mut() = http::StatusCode::FORBIDDEN;
            response.headers_mut().insert(
                "www-authenticate",
                http::HeaderValue::from_static(
                    "Bearer error=\"insufficient_scope\", scope=\"db:write\"",
                ),
            );
            response
                .extensions_mut()
                .insert(kelson_server::InsufficientScope {
                    scopes: vec!["db:read".into(), "db:write".into()],
                    description: "writing needs db:write".into(),
                });
        }
        std::future::ready(Ok(response))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_is_replaced_by_a_principal_and_scope_challenges_are_completed() {
    use tower_layer::Layer;
    use tower_service::Service;

    let key = TestKey::new("k1");
    let jwks = Jwks::start(vec![key.jwk()]).await;
    let resource = "https://mcp.example.com/mcp";
    let mut config = AuthConfig::new(TEST_ISSUER, resource);
    config.jwks_url = Some(jwks.url.clone());
    let auth = std::sync::Arc::new(Authenticator::new(config).await.unwrap());
    let mut service = AuthLayer::new(auth).layer(Recorder);
    let token = key.sign(&good_claims(resource));

    let request = http::Request::builder()
        .uri("/mcp")
        .header("authorization", format!("Bearer {token}"))
        .body(())
        .unwrap();
    let response = service.call(request).await.unwrap();
    assert_eq!(response.status(), 200);
    let seen: Value = serde_json::from_slice(response.body()).unwrap();
    assert_eq!(seen, json!({"authorization": false, "subject": "alice"}));

    // The inner service's 403 gets this resource's metadata URL and every scope it needs.
    let request = http::Request::builder()
        .uri("/forbidden")
        .header("authorization", format!("Bearer {token}"))
        .body(())
        .unwrap();
    let response = service.call(request).await.unwrap();
    assert_eq!(response.status(), 403);
    assert_eq!(
        response.headers()["www-authenticate"],
        "Bearer error=\"insufficient_scope\", scope=\"db:read db:write\", resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\", error_description=\"writing needs db:write\""
    );
}
