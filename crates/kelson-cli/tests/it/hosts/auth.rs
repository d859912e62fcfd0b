//! `kelson serve` with `[auth]` against a real OAuth authorization server (oidc-provider, run by
//! `peers/interop/oidc-as.mjs`): 401 with the metadata challenge without a token, the tools with
//! one; the official TypeScript v2 and Python clients with a bearer token; and the TypeScript
//! client's own OAuth flow finding the authorization server from the 401.

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Stdio};

use base64::Engine as _;
use serde_json::{Value, json};

use super::{Peers, run_peer};
use crate::serve::support::{Serve, TempDir, http, rpc_headers, rpc_message};

/// A running oidc-provider, killed when dropped.
pub(super) struct Oidc {
    pub(super) issuer: String,
    child: Child,
    _keys: TempDir,
}

impl Drop for Oidc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Oidc {
    /// Starts the AS issuing JWT access tokens for `resource`.
    pub(super) fn start(peers: &Peers, resource: &str) -> Oidc {
        Self::start_with(peers, resource, &[])
    }

    /// [`Oidc::start`] with more arguments of `oidc-as.mjs` (`--ttl SECONDS`).
    pub(super) fn start_with(peers: &Peers, resource: &str, more: &[&str]) -> Oidc {
        let keys = TempDir::new();
        let mut child = peers
            .node("interop/oidc-as.mjs")
            .arg("--keys")
            .arg(keys.join("keys.json"))
            .args(["--resource", resource])
            .args(more)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("node starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let started: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("the AS printed {line:?}: {e}"));
        Oidc {
            issuer: started["issuer"].as_str().unwrap().to_owned(),
            child,
            _keys: keys,
        }
    }

    /// A client_credentials token of the client `kelson-client` for `resource`.
    fn token(&self, resource: &str, scope: &str) -> String {
        self.token_of("kelson-client", resource, scope)
    }

    /// A client_credentials token of `client` (`kelson-client` or `mcp-other`, whose secret is its
    /// name and `-secret`) for `resource`: the client is the token's subject.
    pub(super) fn token_of(&self, client: &str, resource: &str, scope: &str) -> String {
        let basic =
            base64::engine::general_purpose::STANDARD.encode(format!("{client}:{client}-secret"));
        let body = format!(
            "grant_type=client_credentials&resource={}&scope={}",
            percent(resource),
            percent(scope)
        );
        let reply = http(
            &format!("{}/token", self.issuer),
            "POST",
            &[
                ("Authorization", &format!("Basic {basic}")),
                ("Content-Type", "application/x-www-form-urlencoded"),
            ],
            &body,
        );
        assert_eq!(reply.status, 200, "{}\n{}", reply.head, reply.body);
        let body: Value = serde_json::from_str(&reply.body).unwrap();
        body["access_token"].as_str().unwrap().to_owned()
    }
}

fn percent(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A free loopback port: the resource URL (the tokens' audience) names it before the server starts.
pub(super) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `kelson serve` on all interfaces with `[auth]` from a configuration file.
fn serve_with_auth(data: &TempDir, issuer: &str, port: u16) -> (Serve, String) {
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let config = data.join("kelson.toml");
    std::fs::write(
        &config,
        format!(
            "[http]\nbind = \"0.0.0.0:{port}\"\n\n[auth]\nissuer = \"{issuer}\"\nresource = \"{resource}\"\nscopes_supported = [\"mcp:tools\", \"sample:read\"]\nclaims = [\"client_id\"]\n"
        ),
    )
    .unwrap();
    let serve =
        Serve::start_without_bind(&data.join("data"), &["--config", config.to_str().unwrap()]);
    (serve, resource)
}

#[test]
fn mcp_serve_with_auth_answers_401_without_a_token_and_serves_with_one() {
    let Some(peers) = super::peers() else {
        return;
    };
    let port = free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let oidc = Oidc::start(&peers, &resource);
    let data = TempDir::new();
    let (serve, _) = serve_with_auth(&data, &oidc.issuer, port);
    let url = format!("http://127.0.0.1:{port}/mcp");
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "auth-test", "version": "1"}
    });
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}})
            .to_string();

    let reply = http(&url, "POST", &rpc_headers("tools/list", None), &body);
    assert_eq!(reply.status, 401, "{}\n{}", reply.head, reply.body);
    assert_eq!(
        reply.header("www-authenticate"),
        Some(
            format!(
                "Bearer resource_metadata=\"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp\", scope=\"mcp:tools sample:read\""
            )
            .as_str()
        )
    );
    let prm = http(
        &format!("http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"),
        "GET",
        &[],
        "",
    );
    assert_eq!(prm.status, 200);
    assert_eq!(
        serde_json::from_str::<Value>(&prm.body).unwrap(),
        json!({
            "resource": resource,
            "authorization_servers": [oidc.issuer],
            "scopes_supported": ["mcp:tools", "sample:read"],
            "bearer_methods_supported": ["header"],
        })
    );

    // A token without the sample's read scope sees none of its tools, and a call gets the step-up
    // challenge naming the scope (with the metadata URL the auth layer adds).
    let narrow = format!("Bearer {}", oidc.token(&resource, "mcp:tools"));
    let mut headers = rpc_headers("tools/list", None);
    headers.push(("Authorization", &narrow));
    let reply = http(&url, "POST", &headers, &body);
    assert_eq!(reply.status, 200, "{}\n{}", reply.head, reply.body);
    assert_eq!(
        rpc_message(&reply)["result"]["tools"],
        json!([]),
        "{}",
        reply.body
    );
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "list_tables", "arguments": {}, "_meta": meta}})
    .to_string();
    let mut headers = rpc_headers("tools/call", Some("list_tables"));
    headers.push(("Authorization", &narrow));
    let reply = http(&url, "POST", &headers, &call);
    assert_eq!(reply.status, 403, "{}\n{}", reply.head, reply.body);
    let challenge = reply
        .header("www-authenticate")
        .unwrap_or_default()
        .to_owned();
    assert!(
        challenge.starts_with(
            "Bearer error=\"insufficient_scope\", scope=\"sample:read\", resource_metadata=\""
        ) && challenge.contains("/.well-known/oauth-protected-resource/mcp"),
        "{challenge}"
    );

    let token = oidc.token(&resource, "mcp:tools sample:read");
    let bearer = format!("Bearer {token}");
    let mut headers = rpc_headers("tools/list", None);
    headers.push(("Authorization", &bearer));
    let reply = http(&url, "POST", &headers, &body);
    assert_eq!(reply.status, 200, "{}\n{}", reply.head, reply.body);
    let tools: Vec<String> = rpc_message(&reply)["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(tools.contains(&"list_tables".to_owned()), "{tools:?}");

    // The kelson client verbs, as docs/serve/authorization.md's walk-through runs them.
    let header = format!("Authorization: Bearer {token}");
    let run = serve.run(&["tools", "--header", &header], "");
    run.expect_code(0);
    assert!(run.stdout.contains("list_tables"), "{}", run.stdout);

    // Off loopback with authorization in front: no warning about an open server; the token never
    // reaches the log.
    let log = serve.log();
    assert!(!log.contains("not a loopback address"), "{log}");
    assert!(log.contains("requiring bearer tokens of"), "{log}");
    assert!(!log.contains(&token), "{log}");
}

#[test]
fn official_clients_reach_mcp_serve_through_the_auth_layer() {
    let Some(peers) = super::peers() else {
        return;
    };
    let port = free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let oidc = Oidc::start(&peers, &resource);
    let data = TempDir::new();
    let (_serve, _) = serve_with_auth(&data, &oidc.issuer, port);
    let token = oidc.token(&resource, "mcp:tools sample:read");

    let check = |summary: &Value| {
        assert_eq!(summary["steps"]["connect"], true, "{summary}");
        let tools = summary["steps"]["listTools"].as_array().unwrap();
        assert!(tools.contains(&json!("list_tables")), "{summary}");
        assert_eq!(
            summary["steps"]["listTables"]["isError"], false,
            "{summary}"
        );
        assert!(
            summary["steps"]["listTables"]["text"]
                .as_str()
                .is_some_and(|t| t.contains("items") || t.contains("sample") || !t.is_empty()),
            "{summary}"
        );
    };

    // TypeScript v2 and Python with a bearer token.
    let mut ts = peers.node("interop/ts-auth-client.mjs");
    ts.args([&resource, "token", &token]);
    check(&summary(run_peer(ts, |_| {})));
    let mut py = peers.python("interop/py_auth_client.py");
    py.args([&resource, &token]);
    check(&summary(run_peer(py, |_| {})));

    // The TypeScript client's own OAuth flow: the 401's resource_metadata, the metadata, the
    // authorization server's metadata, a client_credentials token, and the retried request.
    let mut ts = peers.node("interop/ts-auth-client.mjs");
    ts.args([
        &resource,
        "client-credentials",
        "kelson-client",
        "kelson-client-secret",
        &oidc.issuer,
        "mcp:tools sample:read",
    ]);
    let flow = summary(run_peer(ts, |_| {}));
    check(&flow);
    let requests: Vec<(String, String, u64)> = flow["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["method"].as_str().unwrap().to_owned(),
                r["url"].as_str().unwrap().to_owned(),
                r["status"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    let prm = format!("http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp");
    let position = |what: &dyn Fn(&(String, String, u64)) -> bool| {
        requests
            .iter()
            .position(what)
            .unwrap_or_else(|| panic!("no such request in {requests:#?}"))
    };
    let challenged = position(&|r| r.1 == resource && r.2 == 401);
    let metadata = position(&|r| r.1 == prm && r.2 == 200);
    let as_metadata =
        position(&|r| r.1.starts_with(&oidc.issuer) && r.1.contains("/.well-known/") && r.2 == 200);
    let token_request = position(&|r| r.1 == format!("{}/token", oidc.issuer) && r.2 == 200);
    let served = position(&|r| r.1 == resource && r.2 == 200);
    assert!(
        challenged < metadata
            && metadata < as_metadata
            && as_metadata < token_request
            && token_request < served,
        "{requests:#?}"
    );
}

fn summary(run: super::PeerRun) -> Value {
    run.stdout
        .lines()
        .rev()
        .find_map(|l| {
            serde_json::from_str::<Value>(l)
                .ok()
                .filter(|v| v.get("steps").is_some())
        })
        .filter(|s| s["errors"].as_array().is_some_and(Vec::is_empty) && run.success)
        .unwrap_or_else(|| panic!("the client failed:\n{run}"))
}
