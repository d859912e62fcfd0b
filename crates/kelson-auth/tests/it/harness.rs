//! A protected MCP server on loopback, a client for it, and keys the tests sign tokens with.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use kelson_auth::{AuthConfig, AuthLayer, Authenticator};
use kelson_http::server::{HttpConfig, McpService};
use kelson_server::{RequestContext, Server};
use kelson_types::{CallToolResult, JsonObject, Tool};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tower_layer::Layer;

pub const VERSION: &str = "2026-07-28";

/// The MCP server behind the layer: `whoami` answers with the caller's principal, `twostep` asks
/// for a second round (MRTR load shedding) and says who resumed it.
pub fn kelson_server() -> Server {
    let object = |v: Value| match v {
        Value::Object(m) => m,
        _ => unreachable!(),
    };
    Server::builder("auth-it", "1.0.0")
        .tool_handler(
            Tool::new("whoami", object(json!({"type": "object"})))
                .with_description("Says who is calling"),
            |ctx: RequestContext, _args: JsonObject| async move {
                let p = ctx.principal();
                let who = json!({
                    "subject": p.subject(),
                    "issuer": p.issuer(),
                    "clientId": p.client_id(),
                    "scopes": p.scopes(),
                    "claims": p.claims(),
                });
                Ok(CallToolResult::text(who.to_string()))
            },
        )
        .tool(
            Tool::new("twostep", object(json!({"type": "object"})))
                .with_description("Needs two rounds"),
            |mut ctx: RequestContext, _args: JsonObject| async move {
                if let Some(first) = ctx.round_state::<String>() {
                    let by = ctx.principal().subject().unwrap_or("anonymous").to_owned();
                    return Ok(CallToolResult::text(format!("{first} resumed by {by}")));
                }
                let by = ctx.principal().subject().unwrap_or("anonymous").to_owned();
                ctx.set_round_state(format!("started by {by}"))?;
                Err(ctx.retry_later())
            },
        )
        .build()
        .expect("the test server builds")
}

/// The layer and the MCP server on `127.0.0.1:<port>/mcp`, stopped when dropped.
pub struct Protected {
    pub addr: SocketAddr,
    /// `http://127.0.0.1:<port>/mcp`: the resource and the audience.
    pub url: String,
    stop: Option<oneshot::Sender<()>>,
}

impl Drop for Protected {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// A bound listener and the resource URL it will serve, for configurations that need the port.
pub async fn listener() -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    (listener, url)
}

/// Serves the test MCP server behind an auth layer made from `config` on `listener`.
pub async fn protect(listener: TcpListener, config: AuthConfig) -> Protected {
    let auth = Arc::new(
        Authenticator::new(config)
            .await
            .expect("the authenticator starts"),
    );
    serve(listener, auth).await
}

pub async fn serve(listener: TcpListener, auth: Arc<Authenticator>) -> Protected {
    let addr = listener.local_addr().unwrap();
    let service = McpService::new(kelson_server(), HttpConfig::default());
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(async move {
        kelson_http::server::serve(listener, service)
            .wrap(|s| AuthLayer::new(auth).layer(s))
            .with_graceful_shutdown(async move {
                let _ = stopped.await;
            })
            .await
    });
    Protected {
        addr,
        url: format!("http://{addr}/mcp"),
        stop: Some(stop),
    }
}

/// A JSON-RPC request of 2026-07-28 with its standard headers, and the bearer token if any.
pub fn rpc(url: &str, token: Option<&str>, method: &str, params: Value) -> reqwest::RequestBuilder {
    let mut params = params;
    params.as_object_mut().unwrap().insert(
        "_meta".into(),
        json!({
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "auth-it", "version": "1.0.0"}
        }),
    );
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", VERSION)
        .header("mcp-method", method);
    if let Some(name) = params["name"].as_str() {
        request = request.header("mcp-name", name);
    }
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.body(json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string())
}

/// A form-encoded body.
pub fn form(pairs: &[(&str, &str)]) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

/// What the server answered: status, `WWW-Authenticate` (if any) and body.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub challenge: Option<String>,
    pub retry_after: Option<String>,
    pub body: Value,
}

pub async fn send(request: reqwest::RequestBuilder) -> Answer {
    let response = tokio::time::timeout(Duration::from_secs(30), request.send())
        .await
        .expect("the server answers in time")
        .expect("the request is sent");
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    };
    let challenge = header("www-authenticate");
    let retry_after = header("retry-after");
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    Answer {
        status,
        challenge,
        retry_after,
        body,
    }
}

/// `tools/list` with `token`.
pub async fn list_tools(url: &str, token: Option<&str>) -> Answer {
    send(rpc(url, token, "tools/list", json!({}))).await
}

/// The names of the tools of a successful `tools/list`.
pub fn tool_names(answer: &Answer) -> Vec<String> {
    assert_eq!(answer.status, 200, "{answer:?}");
    answer.body["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("a tools/list result: {answer:?}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The `whoami` tool's answer.
pub async fn whoami(url: &str, token: &str) -> Value {
    let answer = send(rpc(
        url,
        Some(token),
        "tools/call",
        json!({"name": "whoami", "arguments": {}}),
    ))
    .await;
    assert_eq!(answer.status, 200, "{answer:?}");
    let text = answer.body["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a text result: {answer:?}"));
    serde_json::from_str(text).unwrap()
}

/// The challenge of a 401 for `url` with these scopes, and an optional error.
pub fn challenge_401(url: &str, scope: Option<&str>, error: Option<&str>) -> String {
    let metadata = prm_url(url);
    let scope = scope
        .map(|s| format!(", scope=\"{s}\""))
        .unwrap_or_default();
    match error {
        None => format!("Bearer resource_metadata=\"{metadata}\"{scope}"),
        Some(d) => format!(
            "Bearer error=\"invalid_token\", resource_metadata=\"{metadata}\"{scope}, error_description=\"{d}\""
        ),
    }
}

/// The metadata URL of a resource `http://host/mcp`.
pub fn prm_url(url: &str) -> String {
    url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
}

/// An ES256 key the tests sign with.
pub struct TestKey {
    pub kid: String,
    pkcs8: Vec<u8>,
    public: Vec<u8>,
}

impl TestKey {
    pub fn new(kid: &str) -> Self {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pair =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref()).unwrap();
        TestKey {
            kid: kid.to_owned(),
            pkcs8: pkcs8.as_ref().to_vec(),
            public: pair.public_key().as_ref().to_vec(),
        }
    }

    /// The public JWK.
    pub fn jwk(&self) -> Value {
        // An uncompressed SEC1 point: 0x04, x, y.
        let (x, y) = self.public[1..].split_at(32);
        json!({
            "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": self.kid,
            "x": URL_SAFE_NO_PAD.encode(x), "y": URL_SAFE_NO_PAD.encode(y),
        })
    }

    /// The public key's bytes, as an attacker would use them for an HMAC secret.
    pub fn public_bytes(&self) -> &[u8] {
        &self.public
    }

    /// A compact JWT of `claims`, signed with ES256 and naming this key.
    pub fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &EncodingKey::from_ec_der(&self.pkcs8)).unwrap()
    }
}

/// The current Unix time.
pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// A JWKS endpoint the tests control, counting its fetches.
pub struct Jwks {
    pub url: String,
    keys: Arc<Mutex<Vec<Value>>>,
    hits: Arc<AtomicUsize>,
}

impl Jwks {
    pub async fn start(keys: Vec<Value>) -> Self {
        let keys = Arc::new(Mutex::new(keys));
        let hits = Arc::new(AtomicUsize::new(0));
        let (k, h) = (keys.clone(), hits.clone());
        let app = axum::Router::new().route(
            "/jwks",
            axum::routing::get(move || {
                let (k, h) = (k.clone(), h.clone());
                async move {
                    h.fetch_add(1, Ordering::SeqCst);
                    let body = json!({"keys": *k.lock().unwrap()}).to_string();
                    ([(http::header::CONTENT_TYPE, "application/json")], body)
                }
            }),
        );
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/jwks", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Jwks { url, keys, hits }
    }

    pub fn publish(&self, keys: Vec<Value>) {
        *self.keys.lock().unwrap() = keys;
    }

    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

/// The issuer of the tests' own tokens.
pub const TEST_ISSUER: &str = "https://issuer.test";

/// Claims of a good token for `audience`, valid now.
pub fn good_claims(audience: &str) -> Value {
    let now = now();
    json!({
        "iss": TEST_ISSUER, "sub": "alice", "aud": audience, "client_id": "cli",
        "iat": now, "exp": now + 300, "scope": "mcp:tools mcp:read", "email": "alice@example.com"
    })
}
