//! Upstream servers over real HTTP on loopback, a gateway in front of them, and clients of the
//! gateway over the stdio framing, in either era.

use std::convert::Infallible;
use std::future::IntoFuture;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{HeaderMap, Request};
use kelson_client::{Client, ClientBuilder, EraChoice};
use kelson_gateway::{Gateway, GatewayConfig, UpstreamConfig};
use kelson_http::server::{HttpConfig, McpService};
use kelson_server::{HandlerError, RequestContext, Server, ToolDef};
use kelson_types::{CallToolResult, JsonObject, Tool};
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// An upstream served over HTTP whose requests' headers are recorded.
pub struct Upstream {
    pub server: Server,
    pub url: String,
    pub headers: Arc<Mutex<Vec<HeaderMap>>>,
    /// Calls that reached the upstream's tools.
    pub calls: Arc<AtomicUsize>,
    /// Calls of `wait` that stopped (cancelled, or dropped by the server).
    pub cancelled: Arc<AtomicUsize>,
}

pub fn echo_def(description: &str) -> Tool {
    serde_json::from_value(json!({
        "name": "echo",
        "description": description,
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        "annotations": {"readOnlyHint": true}
    }))
    .unwrap()
}

/// A server with `echo` (read-only), `wait` (until cancelled), `count` (progress 1..3) and
/// `delete` (not read-only), served over HTTP.
pub async fn upstream(name: &str) -> Upstream {
    let calls = Arc::new(AtomicUsize::new(0));
    let cancelled = Arc::new(AtomicUsize::new(0));
    let label = name.to_owned();
    let c1 = calls.clone();
    let c2 = calls.clone();
    let c3 = calls.clone();
    let c4 = calls.clone();
    let cancels = cancelled.clone();
    let object = |props: Value| -> JsonObject {
        serde_json::from_value(json!({"type": "object", "properties": props})).unwrap()
    };
    let server = Server::builder(name, "1.0.0")
        .tool_handler(
            ToolDef::from(echo_def("Echoes the text")),
            move |_ctx: RequestContext, args: JsonObject| {
                c1.fetch_add(1, Ordering::SeqCst);
                let label = label.clone();
                async move {
                    let text = args.get("text").and_then(Value::as_str).unwrap_or_default();
                    Ok::<_, HandlerError>(CallToolResult::text(format!("{label}: {text}")))
                }
            },
        )
        .tool_handler(
            ToolDef::from(Tool::new("wait", object(json!({})))),
            move |ctx: RequestContext, _args: JsonObject| {
                c2.fetch_add(1, Ordering::SeqCst);
                let cancels = cancels.clone();
                async move {
                    // Counted however the call stops: its token fires, or the server drops it
                    // (an HTTP response closed by the caller).
                    let _stopped = Stopped(cancels);
                    ctx.cancelled().await;
                    Ok::<_, HandlerError>(CallToolResult::text("cancelled"))
                }
            },
        )
        .tool_handler(
            ToolDef::from(Tool::new("count", object(json!({})))),
            move |ctx: RequestContext, _args: JsonObject| {
                c3.fetch_add(1, Ordering::SeqCst);
                async move {
                    for i in 1..=3 {
                        ctx.progress(f64::from(i), Some(3.0), Some(&format!("step {i}")));
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    Ok::<_, HandlerError>(CallToolResult::text("counted"))
                }
            },
        )
        .tool_handler(
            ToolDef::from(Tool::new(
                "delete",
                object(json!({"id": {"type": "integer"}})),
            )),
            move |_ctx: RequestContext, _args: JsonObject| {
                c4.fetch_add(1, Ordering::SeqCst);
                async move { Ok::<_, HandlerError>(CallToolResult::text("deleted")) }
            },
        )
        .build()
        .unwrap();
    let headers = Arc::new(Mutex::new(Vec::new()));
    let url = serve_recording(server.clone(), headers.clone()).await;
    Upstream {
        server,
        url,
        headers,
        calls,
        cancelled,
    }
}

/// Counts one stopped call when dropped.
struct Stopped(Arc<AtomicUsize>);

impl Drop for Stopped {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Serves `server` over HTTP on loopback, recording each request's headers.
async fn serve_recording(server: Server, headers: Arc<Mutex<Vec<HeaderMap>>>) -> String {
    let service = McpService::new(server, HttpConfig::default());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let service = service.clone();
            let headers = headers.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                    headers.lock().unwrap().push(req.headers().clone());
                    let service = service.clone();
                    async move { Ok::<_, Infallible>(service.handle(req).await) }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(
                    hyper_util::rt::TokioExecutor::new(),
                )
                .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                .into_future()
                .await;
            });
        }
    });
    format!("http://{addr}/mcp")
}

/// A folder of its own for one test's pins and audit log.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kelson-gw-it-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub fn upstream_config(value: Value) -> UpstreamConfig {
    serde_json::from_value(value).unwrap()
}

/// The gateway built and started, and its server.
pub struct Running {
    pub gateway: Gateway,
    pub server: Server,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.gateway.stop();
    }
}

pub async fn gateway(config: GatewayConfig) -> Running {
    let gateway = Gateway::new(config).unwrap();
    let server = gateway
        .prepare(Server::builder("gateway", "1.0.0"))
        .build()
        .unwrap();
    gateway.start(&server).await;
    Running { gateway, server }
}

/// A client of the gateway over an in-memory pipe with the stdio framing.
pub async fn client(server: &Server, era: EraChoice, builder: ClientBuilder) -> Client {
    let (client_end, server_end) = tokio::io::duplex(1 << 20);
    let (sr, sw) = tokio::io::split(server_end);
    tokio::spawn(kelson_server::stdio::serve_stream(
        server.clone(),
        sr,
        sw,
        Default::default(),
    ));
    let (r, w) = tokio::io::split(client_end);
    builder.era(era).connect_stream(r, w).await.unwrap()
}

/// Waits (up to 20 s) until `check` holds.
pub async fn eventually<F: FnMut() -> bool>(what: &str, mut check: F) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !check() {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

pub fn text(result: &CallToolResult) -> String {
    result.content[0].as_text().unwrap_or_default().to_owned()
}

/// The tool names the gateway lists, sorted, read afresh.
pub async fn names(client: &Client) -> Vec<String> {
    let mut names: Vec<String> = client
        .list_all_tools()
        .fresh()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    names.sort();
    names
}
