//! A handshake-era approval is answered only by the principal it was sent to, with two OAuth
//! principals from a real authorization server (oidc-provider, two client_credentials clients).
//!
//! The review's attack: with `--legacy-http stateless`, Alice's `execute` waits for her approval
//! and Bob, holding a token of his own, POSTs an accepting answer with her request's id; the
//! UPDATE ran. Now his answer is refused as an answer to an unknown id is (400), her call keeps
//! waiting, and her own answer still counts. The same with sessions, where Bob also cannot use
//! her session id.

use serde_json::json;

use super::auth::{Oidc, free_port};
use crate::serve::answers::{Pending, answer, execute, initialize, legacy_headers};
use crate::serve::support::{Serve, TempDir, http, sqlite_scalar};

struct Setup {
    serve: Serve,
    data: std::path::PathBuf,
    alice: String,
    bob: String,
    _oidc: Oidc,
    _scratch: TempDir,
}

fn setup(legacy: &str) -> Option<Setup> {
    let peers = super::peers()?;
    let port = free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let oidc = Oidc::start(&peers, &resource);
    let scratch = TempDir::new();
    let data = scratch.join("data");
    let bind = format!("127.0.0.1:{port}");
    let serve = Serve::start_without_bind(
        &data,
        &[
            "--http",
            &bind,
            "--allow-write",
            "--legacy-http",
            legacy,
            "--auth-issuer",
            &oidc.issuer,
            "--auth-resource",
            &resource,
        ],
    );
    let scope = "mcp:tools sample:read sample:write";
    let alice = format!(
        "Bearer {}",
        oidc.token_of("kelson-client", &resource, scope)
    );
    let bob = format!("Bearer {}", oidc.token_of("mcp-other", &resource, scope));
    Some(Setup {
        serve,
        data,
        alice,
        bob,
        _oidc: oidc,
        _scratch: scratch,
    })
}

fn stock(data: &std::path::Path) -> i64 {
    sqlite_scalar(
        &data.join("sample.db"),
        "select stock from products where id = 1",
    )
    .parse()
    .unwrap()
}

#[test]
fn another_principal_cannot_answer_a_stateless_approval() {
    let Some(s) = setup("stateless") else {
        return;
    };
    let before = stock(&s.data);
    let mut call = Pending::start(
        &s.serve.url,
        &[("Authorization", &s.alice)],
        &execute("UPDATE products SET stock = 4242 WHERE id = 1"),
    );
    let asked = call.next_request();
    assert_eq!(asked["method"], "elicitation/create", "{asked}");

    // Bob knows the id (say he saw it): his accepting answer is refused and runs nothing.
    let reply = http(
        &s.serve.url,
        "POST",
        &legacy_headers(&[("Authorization", &s.bob)]),
        &answer(&asked["id"], true),
    );
    assert_eq!(reply.status, 400, "{}", reply.body);
    assert_eq!(stock(&s.data), before);
    // Nor can he decline it for her.
    let reply = http(
        &s.serve.url,
        "POST",
        &legacy_headers(&[("Authorization", &s.bob)]),
        &answer(&asked["id"], false),
    );
    assert_eq!(reply.status, 400, "{}", reply.body);

    // Alice's own approval runs her statement.
    let reply = http(
        &s.serve.url,
        "POST",
        &legacy_headers(&[("Authorization", &s.alice)]),
        &answer(&asked["id"], true),
    );
    assert_eq!(reply.status, 202, "{}", reply.body);
    let done = call.response();
    assert_ne!(done["result"]["isError"], json!(true), "{done}");
    assert_eq!(stock(&s.data), 4242);
}

#[test]
fn another_principal_cannot_answer_or_use_a_session_approval() {
    let Some(s) = setup("sessions") else {
        return;
    };
    let before = stock(&s.data);
    let alices = initialize(&s.serve.url, &[("Authorization", &s.alice)]);
    let bobs = initialize(&s.serve.url, &[("Authorization", &s.bob)]);
    let mut call = Pending::start(
        &s.serve.url,
        &[("Authorization", &s.alice), ("Mcp-Session-Id", &alices)],
        &execute("UPDATE products SET stock = 4242 WHERE id = 1"),
    );
    let asked = call.next_request();
    assert_eq!(asked["method"], "elicitation/create", "{asked}");

    // On his own session: refused as an unknown id (400). On hers: no such session for him (404).
    for (session, status) in [(&bobs, 400), (&alices, 404)] {
        let reply = http(
            &s.serve.url,
            "POST",
            &legacy_headers(&[("Authorization", &s.bob), ("Mcp-Session-Id", session)]),
            &answer(&asked["id"], true),
        );
        assert_eq!(reply.status, status, "{}", reply.body);
    }
    assert_eq!(stock(&s.data), before);

    // Alice declines: her call ends declined, and nothing was written.
    let reply = http(
        &s.serve.url,
        "POST",
        &legacy_headers(&[("Authorization", &s.alice), ("Mcp-Session-Id", &alices)]),
        &answer(&asked["id"], false),
    );
    assert_eq!(reply.status, 202, "{}", reply.body);
    let done = call.response();
    assert_eq!(done["result"]["isError"], json!(true), "{done}");
    assert_eq!(stock(&s.data), before);
}
