//! Handlers see the principal, and a sealed `requestState` is bound to it.

use serde_json::json;

use kelson_auth::AuthConfig;

use crate::harness::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handlers_see_the_principal_and_request_state_is_bound_to_it() {
    let key = TestKey::new("k1");
    let jwks = Jwks::start(vec![key.jwk()]).await;
    let (listener, url) = listener().await;
    let mut config = AuthConfig::new(TEST_ISSUER, &url);
    config.jwks_url = Some(jwks.url.clone());
    config.claims = vec!["email".into(), "tenant".into()];
    let server = protect(listener, config).await;

    let alice = key.sign(&good_claims(&url));
    let mut bob_claims = good_claims(&url);
    bob_claims["sub"] = json!("bob");
    let bob = key.sign(&bob_claims);

    let who = whoami(&server.url, &alice).await;
    assert_eq!(
        who,
        json!({
            "subject": "alice",
            "issuer": TEST_ISSUER,
            "clientId": "cli",
            "scopes": ["mcp:tools", "mcp:read"],
            "claims": {"email": "alice@example.com"},
        })
    );

    // Alice's first round leaves a sealed state bound to her.
    let call = |token: &str, state: Option<&str>| {
        let mut params = json!({"name": "twostep", "arguments": {}});
        if let Some(state) = state {
            params["requestState"] = json!(state);
        }
        send(rpc(&server.url, Some(token), "tools/call", params))
    };
    let first = call(&alice, None).await;
    assert_eq!(first.status, 200, "{first:?}");
    assert_eq!(first.body["result"]["resultType"], "input_required");
    let state = first.body["result"]["requestState"]
        .as_str()
        .unwrap()
        .to_owned();

    // Bob cannot continue it.
    let stolen = call(&bob, Some(&state)).await;
    assert_eq!(stolen.body["error"]["code"], -32602, "{stolen:?}");
    assert!(
        stolen.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("invalid requestState"),
        "{stolen:?}"
    );
    // Alice can.
    let second = call(&alice, Some(&state)).await;
    assert_eq!(
        second.body["result"]["content"][0]["text"], "started by alice resumed by alice",
        "{second:?}"
    );
}
