//! The OAuth client against scripted servers on loopback: where the token goes (never to another
//! origin after a redirect), refresh of a refused token, and what errors say (never a secret).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use kelson_client::auth::OAuth;
use kelson_client::{Client, Error};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

/// One request as the scripted server saw it.
#[derive(Clone, Debug)]
struct Seen {
    method: String,
    path: String,
    headers: HashMap<String, String>,
    body: String,
}

type Reply = (u16, Vec<(&'static str, String)>, String);

/// A one-request-per-connection HTTP/1.1 server answering with `handle`; returns its base URL and
/// the requests it saw.
async fn scripted(
    handle: impl Fn(&Seen, &str) -> Reply + Send + Sync + 'static,
) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (log, handle, me) = (seen.clone(), Arc::new(handle), base.clone());
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let (log, handle, me) = (log.clone(), handle.clone(), me.clone());
            tokio::spawn(async move {
                let mut data = Vec::new();
                let mut buf = [0u8; 4096];
                let head_end = loop {
                    let n = stream.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    data.extend_from_slice(&buf[..n]);
                    if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
                        break at + 4;
                    }
                };
                let head = String::from_utf8_lossy(&data[..head_end]).into_owned();
                let mut lines = head.lines();
                let first: Vec<&str> = lines.next().unwrap().split(' ').collect();
                let headers: HashMap<String, String> = lines
                    .filter_map(|l| l.split_once(':'))
                    .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
                    .collect();
                let length: usize = headers
                    .get("content-length")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                while data.len() < head_end + length {
                    let n = stream.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    data.extend_from_slice(&buf[..n]);
                }
                let seen = Seen {
                    method: first[0].to_owned(),
                    path: first[1].to_owned(),
                    headers,
                    body: String::from_utf8_lossy(&data[head_end..]).into_owned(),
                };
                log.lock().unwrap().push(seen.clone());
                let (status, headers, body) = handle(&seen, &me);
                let mut out = format!(
                    "HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: close\r\n",
                    body.len()
                );
                for (k, v) in headers {
                    out.push_str(&format!("{k}: {v}\r\n"));
                }
                out.push_str("\r\n");
                out.push_str(&body);
                let _ = stream.write_all(out.as_bytes()).await;
            });
        }
    });
    (base, seen)
}

fn json_reply(value: Value) -> Reply {
    (
        200,
        vec![("content-type", "application/json".to_owned())],
        value.to_string(),
    )
}

/// The answer of an MCP server to a modern request: `server/discover` and `tools/list`.
fn mcp_answer(seen: &Seen) -> Reply {
    let request: Value = serde_json::from_str(&seen.body).unwrap_or_default();
    let result = match request["method"].as_str() {
        Some("server/discover") => json!({
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "scripted", "version": "1"},
        }),
        _ => json!({"resultType": "complete", "tools": []}),
    };
    json_reply(json!({"jsonrpc": "2.0", "id": request["id"], "result": result}))
}

/// The protected resource metadata and authorization server of `base`, whose token endpoint
/// issues `token()` and takes refresh tokens.
fn authorization(seen: &Seen, base: &str, token: &dyn Fn(&Seen) -> Reply) -> Option<Reply> {
    match seen.path.as_str() {
        "/.well-known/oauth-protected-resource/mcp" => Some(json_reply(json!({
            "resource": format!("{base}/mcp"),
            "authorization_servers": [base],
        }))),
        "/.well-known/oauth-authorization-server" => Some(json_reply(json!({
            "issuer": base,
            "token_endpoint": format!("{base}/token"),
            "grant_types_supported": ["client_credentials", "refresh_token"],
        }))),
        "/token" => Some(token(seen)),
        _ => None,
    }
}

fn challenge(base: &str) -> Reply {
    (
        401,
        vec![(
            "www-authenticate",
            format!(
                r#"Bearer resource_metadata="{base}/.well-known/oauth-protected-resource/mcp""#
            ),
        )],
        String::new(),
    )
}

#[tokio::test]
async fn the_token_is_not_sent_to_another_origin_after_a_redirect() {
    let (elsewhere, elsewhere_saw) = scripted(|seen, _| mcp_answer(seen)).await;
    let (base, _) = scripted(move |seen, base| {
        if let Some(reply) = authorization(seen, base, &|_| {
            json_reply(json!({"access_token": "secret-token-1", "token_type": "Bearer"}))
        }) {
            return reply;
        }
        match seen.headers.get("authorization") {
            // With the token, the endpoint moved: to another origin.
            Some(_) => (
                307,
                vec![("location", format!("{elsewhere}/mcp"))],
                String::new(),
            ),
            None => challenge(base),
        }
    })
    .await;
    let oauth = OAuth::client_credentials("c1")
        .client_secret("the-client-secret")
        .build()
        .unwrap();
    let client = Client::builder()
        .oauth(oauth)
        .connect_http(&format!("{base}/mcp"))
        .await
        .expect("connects through the redirect");
    client.list_all_tools().await.unwrap();
    let saw = elsewhere_saw.lock().unwrap().clone();
    assert!(!saw.is_empty(), "the redirect was followed");
    for request in saw {
        // A 307 keeps the method and body; only the token stays behind.
        assert_eq!(request.method, "POST");
        assert_eq!(request.headers.get("authorization"), None, "{request:?}");
    }
}

#[tokio::test]
async fn a_refused_token_is_refreshed_and_the_request_sent_again() {
    let issued = Arc::new(Mutex::new(0));
    let count = issued.clone();
    let first_uses = Arc::new(Mutex::new(0));
    let (base, saw) = scripted(move |seen, base| {
        let token = |seen: &Seen| {
            let mut n = count.lock().unwrap();
            *n += 1;
            if *n > 1 {
                assert!(
                    seen.body.contains("grant_type=refresh_token"),
                    "{}",
                    seen.body
                );
                assert!(
                    seen.body.contains("refresh_token=refresh-1"),
                    "{}",
                    seen.body
                );
                assert!(seen.body.contains("resource="), "{}", seen.body);
            }
            json_reply(json!({
                "access_token": format!("access-{n}"),
                "token_type": "Bearer",
                "refresh_token": format!("refresh-{n}"),
                "expires_in": 3600,
            }))
        };
        if let Some(reply) = authorization(seen, base, &token) {
            return reply;
        }
        // The first token serves the connection, then is revoked; the second serves the rest.
        match seen.headers.get("authorization").map(String::as_str) {
            Some("Bearer access-1") => {
                let mut uses = first_uses.lock().unwrap();
                *uses += 1;
                if *uses == 1 {
                    mcp_answer(seen)
                } else {
                    challenge(base)
                }
            }
            Some("Bearer access-2") => mcp_answer(seen),
            _ => challenge(base),
        }
    })
    .await;
    let oauth = OAuth::client_credentials("c1")
        .client_secret("s")
        .build()
        .unwrap();
    let client = Client::builder()
        .oauth(oauth.clone())
        .connect_http(&format!("{base}/mcp"))
        .await
        .unwrap();
    client.list_all_tools().await.unwrap();
    assert_eq!(*issued.lock().unwrap(), 2, "one grant, then one refresh");
    let kept = oauth.credentials().await.unwrap();
    assert_eq!(kept.access_token.as_deref(), Some("access-2"));
    assert_eq!(kept.refresh_token.as_deref(), Some("refresh-2"));
    let tokens = saw
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.path == "/token")
        .count();
    assert_eq!(tokens, 2);
}

#[tokio::test]
async fn a_refusal_at_the_token_endpoint_is_an_error_that_shows_no_secret() {
    let (base, _) = scripted(|seen, base| {
        if let Some(reply) = authorization(seen, base, &|_| {
            (
                401,
                vec![("content-type", "application/json".to_owned())],
                json!({"error": "invalid_client", "error_description": "unknown client"})
                    .to_string(),
            )
        }) {
            return reply;
        }
        challenge(base)
    })
    .await;
    let oauth = OAuth::client_credentials("c1")
        .client_secret("the-client-secret")
        .build()
        .unwrap();
    let err = Client::builder()
        .oauth(oauth)
        .connect_http(&format!("{base}/mcp"))
        .await
        .unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, Error::Auth(_)), "{err:?}");
    assert!(
        message.contains("invalid_client") && message.contains("unknown client"),
        "{message}"
    );
    assert!(!message.contains("the-client-secret"), "{message}");
    assert!(!format!("{err:?}").contains("the-client-secret"));
}

#[tokio::test]
async fn metadata_for_another_resource_is_refused() {
    let (base, saw) = scripted(|seen, base| match seen.path.as_str() {
        "/.well-known/oauth-protected-resource/mcp" => json_reply(json!({
            "resource": "https://elsewhere.example/mcp",
            "authorization_servers": [base],
        })),
        "/token" => json_reply(json!({"access_token": "t", "token_type": "Bearer"})),
        _ => challenge(base),
    })
    .await;
    let oauth = OAuth::client_credentials("c1")
        .client_secret("s")
        .build()
        .unwrap();
    let err = Client::builder()
        .oauth(oauth)
        .connect_http(&format!("{base}/mcp"))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("https://elsewhere.example/mcp"),
        "{err}"
    );
    assert!(!saw.lock().unwrap().iter().any(|s| s.path == "/token"));
}

#[tokio::test]
async fn a_server_that_refuses_every_token_ends_in_an_error_not_a_loop() {
    let (base, saw) = scripted(|seen, base| {
        authorization(seen, base, &|_| {
            json_reply(json!({"access_token": "t", "token_type": "Bearer"}))
        })
        .unwrap_or_else(|| challenge(base))
    })
    .await;
    let oauth = OAuth::client_credentials("c1")
        .client_secret("s")
        .build()
        .unwrap();
    let err = Client::builder()
        .oauth(oauth)
        .connect_http(&format!("{base}/mcp"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("refuses the token"), "{err}");
    let tokens = saw
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.path == "/token")
        .count();
    assert_eq!(tokens, 1, "one token request, not a loop");
}
