//! Tokens of a real authorization server (oidc-provider): discovery from its issuer, its JWKS, its
//! JWT access tokens for this resource and for another one, a key rotation.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use kelson_auth::AuthConfig;
use serde_json::{Value, json};

use crate::harness::*;
use crate::oidc::OidcAs;

const OTHER: &str = "http://127.0.0.1:1/other";

fn config(issuer: &str, url: &str) -> AuthConfig {
    let mut config = AuthConfig::new(issuer, url);
    config.scopes_supported = vec![
        "mcp:tools".into(),
        "mcp:read".into(),
        "offline_access".into(),
    ];
    config.resource_name = Some("auth-it".into());
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_as_tokens_work_for_this_resource_only() {
    let (listener, url) = listener().await;
    let Some(oidc) = OidcAs::start(&[&url, OTHER], &[]).await else {
        return;
    };
    let server = protect(listener, config(&oidc.issuer, &url)).await;

    let token = oidc.token(&url, "mcp:tools").await;
    let mut names = tool_names(&list_tools(&server.url, Some(&token)).await);
    names.sort();
    assert_eq!(names, ["twostep", "whoami"]);
    let who = whoami(&server.url, &token).await;
    assert_eq!(who["subject"], "kelson-client");
    assert_eq!(who["clientId"], "kelson-client");
    assert_eq!(who["issuer"], json!(oidc.issuer));
    assert_eq!(who["scopes"], json!(["mcp:tools"]));

    // A token the same AS minted for another resource is refused (RFC 8707, no passthrough).
    let elsewhere = oidc.token(OTHER, "mcp:tools").await;
    let answer = list_tools(&server.url, Some(&elsewhere)).await;
    assert_eq!(answer.status, 401);
    assert_eq!(
        answer.challenge.unwrap(),
        challenge_401(
            &server.url,
            Some("mcp:tools mcp:read"),
            Some("the token is not meant for this resource")
        )
    );
    assert_eq!(list_tools(&server.url, Some(&token)).await.status, 200);

    // No token: the challenge points at the metadata; the query string is refused.
    let answer = list_tools(&server.url, None).await;
    assert_eq!(answer.status, 401);
    assert_eq!(
        answer.challenge.unwrap(),
        challenge_401(&server.url, Some("mcp:tools mcp:read"), None)
    );
    let answer = send(rpc(
        &format!("{}?access_token={token}", server.url),
        None,
        "tools/list",
        json!({}),
    ))
    .await;
    assert_eq!(answer.status, 400);
    assert!(
        answer
            .challenge
            .unwrap()
            .starts_with("Bearer error=\"invalid_request\"")
    );
    assert_eq!(list_tools(&server.url, Some(&token)).await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metadata_is_served_at_both_well_known_paths() {
    let (listener, url) = listener().await;
    let Some(oidc) = OidcAs::start(&[&url], &[]).await else {
        return;
    };
    let server = protect(listener, config(&oidc.issuer, &url)).await;
    let expected = json!({
        "resource": url,
        "authorization_servers": [oidc.issuer],
        "scopes_supported": ["mcp:tools", "mcp:read"],
        "bearer_methods_supported": ["header"],
        "resource_name": "auth-it",
    });
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let response = reqwest::get(format!("http://{}{path}", server.addr))
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{path}");
        assert_eq!(response.headers()["content-type"], "application/json");
        let doc: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
        assert_eq!(doc, expected, "{path}");
    }
    // The metadata URL in challenges is the path-inserted one.
    assert_eq!(
        prm_url(&server.url),
        format!(
            "http://{}/.well-known/oauth-protected-resource/mcp",
            server.addr
        )
    );
    let post = reqwest::Client::new()
        .post(format!(
            "http://{}/.well-known/oauth-protected-resource",
            server.addr
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(post.status(), 405);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_rotation_at_the_as_is_picked_up() {
    let (listener, url) = listener().await;
    let Some(mut oidc) = OidcAs::start(&[&url], &[]).await else {
        return;
    };
    let mut config = config(&oidc.issuer, &url);
    config.jwks_refetch_interval = Duration::from_secs(1);
    let server = protect(listener, config).await;

    let before = oidc.token(&url, "mcp:tools").await;
    assert_eq!(kid(&before), "a");
    assert_eq!(list_tools(&server.url, Some(&before)).await.status, 200);

    oidc.rotate("b").await;
    let after = oidc.token(&url, "mcp:tools").await;
    assert_eq!(kid(&after), "b");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(list_tools(&server.url, Some(&after)).await.status, 200);
    // The old key is still published, so tokens signed before the rotation still pass.
    assert_eq!(list_tools(&server.url, Some(&before)).await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_token_without_a_required_scope_gets_403() {
    let (listener, url) = listener().await;
    let Some(oidc) = OidcAs::start(&[&url], &[]).await else {
        return;
    };
    let mut config = config(&oidc.issuer, &url);
    config.required_scopes = vec!["mcp:tools".into(), "mcp:admin".into()];
    let server = protect(listener, config).await;

    let narrow = oidc.token(&url, "mcp:tools").await;
    let answer = list_tools(&server.url, Some(&narrow)).await;
    assert_eq!(answer.status, 403);
    assert_eq!(
        answer.challenge.unwrap(),
        format!(
            "Bearer error=\"insufficient_scope\", scope=\"mcp:tools mcp:admin\", resource_metadata=\"{}\", error_description=\"the token lacks a scope this resource requires\"",
            prm_url(&server.url)
        )
    );
    let wide = oidc.token(&url, "mcp:tools mcp:admin").await;
    assert_eq!(list_tools(&server.url, Some(&wide)).await.status, 200);
}

fn kid(token: &str) -> String {
    let header = token.split('.').next().unwrap();
    let header: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header).unwrap()).unwrap();
    header["kid"].as_str().unwrap().to_owned()
}
