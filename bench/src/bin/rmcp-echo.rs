//! The `echo` tool served by rmcp, the official Rust SDK, for the side-by-side benchmark.
//!
//! `rmcp-echo --http ADDR` serves Streamable HTTP at `/mcp` in rmcp's stateless mode with JSON
//! responses (`legacy_session_mode: false`, `json_response: true`: its fastest configuration for
//! 2026-07-28 traffic; handshake-era clients are served without sessions);
//! `rmcp-echo --http-sessions ADDR` serves handshake-era clients with `Mcp-Session-Id` sessions
//! (`legacy_session_mode: true`, its in-process session manager), still with JSON responses;
//! `rmcp-echo --http-bearer ADDR TOKEN` serves as `--http` does behind an axum middleware that
//! answers 401 unless the request carries `Authorization: Bearer TOKEN`, the check rmcp's own
//! authorization examples make (rmcp ships no token validator; a fixed-string comparison is the
//! cheapest check a server can make, so this is a floor for what authorization costs in rmcp);
//! `rmcp-echo --stdio` serves stdio.

use std::sync::Arc;

use axum::response::IntoResponse as _;
use axum::serve::ListenerExt as _;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServiceExt, tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, JsonSchema)]
struct EchoArgs {
    /// The text to send back.
    text: String,
}

#[derive(Debug, Serialize, JsonSchema)]
struct EchoOutput {
    /// The text that was sent.
    text: String,
}

#[derive(Clone)]
struct Echo;

#[tool_router(server_handler)]
impl Echo {
    #[tool(description = "Returns the given text unchanged, as text and as structured content.")]
    async fn echo(&self, Parameters(args): Parameters<EchoArgs>) -> Json<EchoOutput> {
        Json(EchoOutput { text: args.text })
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("--stdio") => {
            let running = Echo.serve(rmcp::transport::stdio()).await?;
            running.waiting().await?;
        }
        Some("--http") => {
            let addr = args.get(2).ok_or("--http needs an address")?;
            let mut config = StreamableHttpServerConfig::default();
            config.legacy_session_mode = false;
            config.json_response = true;
            let service = StreamableHttpService::new(
                || Ok(Echo),
                Arc::new(NeverSessionManager::default()),
                config,
            );
            let router = axum::Router::new().nest_service("/mcp", service);
            // TCP_NODELAY, as kelson and kelson bench set it: a response written in more than one
            // piece (an SSE event, then the end of the body) would otherwise wait for the
            // client's delayed acknowledgement.
            let listener = tokio::net::TcpListener::bind(addr).await?.tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
            axum::serve(listener, router).await?;
        }
        Some("--http-bearer") => {
            let addr = args.get(2).ok_or("--http-bearer needs an address")?;
            let token = args.get(3).ok_or("--http-bearer needs a token")?;
            let expected: Arc<str> = format!("Bearer {token}").into();
            let mut config = StreamableHttpServerConfig::default();
            config.legacy_session_mode = false;
            config.json_response = true;
            let service = StreamableHttpService::new(
                || Ok(Echo),
                Arc::new(NeverSessionManager::default()),
                config,
            );
            let router = axum::Router::new().nest_service("/mcp", service).layer(
                axum::middleware::from_fn(
                    move |request: axum::extract::Request, next: axum::middleware::Next| {
                        let expected = expected.clone();
                        async move {
                            let authorized = request
                                .headers()
                                .get(axum::http::header::AUTHORIZATION)
                                .is_some_and(|v| v.as_bytes() == expected.as_bytes());
                            if authorized {
                                next.run(request).await
                            } else {
                                axum::http::StatusCode::UNAUTHORIZED.into_response()
                            }
                        }
                    },
                ),
            );
            let listener = tokio::net::TcpListener::bind(addr).await?.tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
            axum::serve(listener, router).await?;
        }
        Some("--http-sessions") => {
            let addr = args.get(2).ok_or("--http-sessions needs an address")?;
            let mut config = StreamableHttpServerConfig::default();
            config.legacy_session_mode = true;
            config.json_response = true;
            let service = StreamableHttpService::new(
                || Ok(Echo),
                Arc::new(LocalSessionManager::default()),
                config,
            );
            let router = axum::Router::new().nest_service("/mcp", service);
            // TCP_NODELAY, as kelson and kelson bench set it: a response written in more than one
            // piece (an SSE event, then the end of the body) would otherwise wait for the
            // client's delayed acknowledgement.
            let listener = tokio::net::TcpListener::bind(addr).await?.tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
            axum::serve(listener, router).await?;
        }
        _ => return Err("usage: rmcp-echo --http ADDR | --http-bearer ADDR TOKEN | --http-sessions ADDR | --stdio".into()),
    }
    Ok(())
}
