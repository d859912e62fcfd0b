//! When the JWKS is fetched again: an unknown `kid` may cause a fetch, within a small budget, so
//! that an attacker's made-up kids can neither hammer the authorization server nor keep out a key
//! it rotates in.

use std::time::{Duration, Instant};

use kelson_auth::AuthConfig;

use crate::harness::*;

fn config(url: &str, jwks: &Jwks, interval: Duration) -> AuthConfig {
    let mut config = AuthConfig::new(TEST_ISSUER, url);
    config.jwks_url = Some(jwks.url.clone());
    config.jwks_refetch_interval = interval;
    config
}

/// A token an attacker makes up: a kid nobody publishes, signed with a key of its own.
fn forged(n: usize, url: &str) -> String {
    TestKey::new(&format!("made-up-{n}-{}", now())).sign(&good_claims(url))
}

/// An interval no test outlasts: within it, nothing is fetched by the passing of time.
const LONG: Duration = Duration::from_secs(3600);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jwks_an_attackers_unknown_kid_does_not_keep_out_a_key_rotated_in_after_it() {
    let (k1, k2) = (TestKey::new("k1"), TestKey::new("k2"));
    let jwks = Jwks::start(vec![k1.jwk()]).await;
    let (listener, url) = listener().await;
    let server = protect(listener, config(&url, &jwks, LONG)).await;
    assert_eq!(jwks.hits(), 1, "fetched once at start-up");

    let answer = list_tools(&server.url, Some(&forged(0, &url))).await;
    assert_eq!(answer.status, 401, "{answer:?}");
    assert_eq!(jwks.hits(), 2, "the made-up kid caused a fetch");

    // The issuer rotates k2 in just after, and a token signed with it arrives.
    jwks.publish(vec![k1.jwk(), k2.jwk()]);
    let answer = list_tools(&server.url, Some(&k2.sign(&good_claims(&url)))).await;
    assert_eq!(
        answer.status, 200,
        "the rotated key is accepted: {answer:?}"
    );
    assert_eq!(jwks.hits(), 3);
}

/// The challenge of a 401 for a kid nobody publishes.
fn unknown_challenge(url: &str) -> String {
    challenge_401(
        url,
        None,
        Some("the token is signed with a key the authorization server does not publish"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jwks_made_up_kids_cause_a_small_burst_of_fetches_and_no_more() {
    let (k1, k2) = (TestKey::new("k1"), TestKey::new("k2"));
    let jwks = Jwks::start(vec![k1.jwk()]).await;
    let (listener, url) = listener().await;
    let server = protect(listener, config(&url, &jwks, LONG)).await;
    assert_eq!(jwks.hits(), 1, "fetched once at start-up");
    for n in 0..20 {
        let answer = list_tools(&server.url, Some(&forged(n, &url))).await;
        assert_eq!(
            (answer.status, answer.challenge.as_deref()),
            (401, Some(unknown_challenge(&server.url).as_str()))
        );
    }
    assert_eq!(jwks.hits(), 5, "four fetches, then the budget is spent");
    // With the budget spent (here for an hour), a key rotated in now waits for it to refill.
    jwks.publish(vec![k1.jwk(), k2.jwk()]);
    let answer = list_tools(&server.url, Some(&k2.sign(&good_claims(&url)))).await;
    assert_eq!(answer.status, 401, "{answer:?}");
    assert_eq!(jwks.hits(), 5);
    // A known key needs no fetch at all.
    let answer = list_tools(&server.url, Some(&k1.sign(&good_claims(&url)))).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(jwks.hits(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jwks_after_a_burst_the_budget_refills_and_one_fetch_finds_a_rotated_key() {
    let (k1, k2) = (TestKey::new("k1"), TestKey::new("k2"));
    let jwks = Jwks::start(vec![k1.jwk()]).await;
    let (listener, url) = listener().await;
    // One fetch comes back every half second once the four are spent.
    let server = protect(listener, config(&url, &jwks, Duration::from_secs(2))).await;
    for n in 0..4 {
        let answer = list_tools(&server.url, Some(&forged(n, &url))).await;
        assert_eq!(answer.status, 401, "{answer:?}");
    }
    assert_eq!(jwks.hits(), 5);
    jwks.publish(vec![k1.jwk(), k2.jwk()]);
    let token = k2.sign(&good_claims(&url));
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let answer = list_tools(&server.url, Some(&token)).await;
        if answer.status == 200 {
            break;
        }
        assert_eq!(
            (answer.status, answer.challenge.as_deref()),
            (401, Some(unknown_challenge(&server.url).as_str()))
        );
        assert!(
            Instant::now() < deadline,
            "the rotated key was never fetched"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        jwks.hits(),
        6,
        "refused attempts fetch nothing; the one that may fetch finds the key"
    );
}
