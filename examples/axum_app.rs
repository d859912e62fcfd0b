//! An axum application that serves MCP at `/mcp` beside its own routes, both reading one shared
//! state: the `visit` tool counts visits, `GET /visits` shows the count.
//! `cargo run --example axum_app -- --http 127.0.0.1:8080`.
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::extract::State as Shared;
use axum::routing::get;
use kelson::http::server::{HttpConfig, McpService, OriginPolicy};
use kelson::prelude::*;

/// The application's state.
struct Visits {
    count: AtomicU64,
}

/// Records a visit and returns how many there have been.
#[tool]
async fn visit(visits: State<Visits>) -> String {
    (visits.count.fetch_add(1, Ordering::Relaxed) + 1).to_string()
}

async fn show(Shared(visits): Shared<Arc<Visits>>) -> String {
    visits.count.load(Ordering::Relaxed).to_string()
}

#[tokio::main]
async fn main() -> kelson::Result<()> {
    let addr: SocketAddr = match kelson::Transport::from_args()? {
        kelson::Transport::Http(addr) => addr,
        _ => "127.0.0.1:8080".parse()?,
    };
    let visits = Arc::new(Visits {
        count: AtomicU64::new(0),
    });
    let server = Server::builder("axum-app", "1.0.0")
        .shared_state(visits.clone())
        .route(visit_tool())
        .build()?;
    let listener = tokio::net::TcpListener::bind(addr).await?;
    // The same Host and Origin checks the MCP endpoint makes on its own listener.
    let mut config = HttpConfig::default();
    config.policy = OriginPolicy::for_bind(listener.local_addr()?);
    let app = axum::Router::new()
        .route("/visits", get(show))
        .with_state(visits)
        .route_service("/mcp", McpService::new(server, config));
    eprintln!("serving http://{}/mcp and /visits", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}
