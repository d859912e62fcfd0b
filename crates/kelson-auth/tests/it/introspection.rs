//! Opaque tokens of a real authorization server, introspected (RFC 7662), and revoked (RFC 7009).

use std::time::Duration;

use kelson_auth::{AuthConfig, Introspection};

use crate::harness::*;
use crate::oidc::{OidcAs, RS};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opaque_tokens_are_introspected_and_a_revoked_one_is_refused() {
    let (listener, url) = listener().await;
    let other = "http://127.0.0.1:1/opaque-other";
    let Some(oidc) = OidcAs::start(&[], &[&url, other]).await else {
        return;
    };
    let mut config = AuthConfig::new(&oidc.issuer, &url);
    let mut introspection = Introspection::new(RS.0, RS.1);
    // Ask every time, so that a revocation is seen at once.
    introspection.cache_ttl = Duration::ZERO;
    config.introspection = Some(introspection);
    let server = protect(listener, config).await;

    let token = oidc.token(&url, "mcp:tools mcp:read").await;
    assert!(!token.contains('.'), "an opaque token: {token}");
    let who = whoami(&server.url, &token).await;
    assert_eq!(who["subject"], "kelson-client");
    assert_eq!(who["clientId"], "kelson-client");
    assert_eq!(who["scopes"], serde_json::json!(["mcp:tools", "mcp:read"]));

    // An active token for another resource is refused by its audience.
    let elsewhere = oidc.token(other, "mcp:tools").await;
    let answer = list_tools(&server.url, Some(&elsewhere)).await;
    assert_eq!(answer.status, 401);
    assert_eq!(
        answer.challenge.unwrap(),
        challenge_401(
            &server.url,
            None,
            Some("the token is not meant for this resource")
        )
    );

    oidc.revoke(&token).await;
    let answer = list_tools(&server.url, Some(&token)).await;
    assert_eq!(answer.status, 401, "{answer:?}");
    assert_eq!(
        answer.challenge.unwrap(),
        challenge_401(&server.url, None, Some("the token is not active"))
    );
    let fresh = oidc.token(&url, "mcp:tools").await;
    assert_eq!(list_tools(&server.url, Some(&fresh)).await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_introspection_endpoint_is_503() {
    let (listener, url) = listener().await;
    let Some(mut oidc) = OidcAs::start(&[], &[&url]).await else {
        return;
    };
    let mut config = AuthConfig::new(&oidc.issuer, &url);
    config.introspection = Some(Introspection::new(RS.0, RS.1));
    let server = protect(listener, config).await;
    let token = oidc.token(&url, "mcp:tools").await;
    oidc.stop().await;
    let answer = list_tools(&server.url, Some(&token)).await;
    assert_eq!(answer.status, 503, "{answer:?}");
    assert_eq!(answer.retry_after.as_deref(), Some("5"));
    assert_eq!(answer.challenge, None);
}
