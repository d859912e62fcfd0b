//! The ceiling of the side-by-side benchmark: a bare hyper server that reads the POST body and
//! returns a fixed JSON-RPC response, with only the request's id copied in (so that the load tool,
//! which checks ids, counts its answers as correct). No MCP server can be faster on this machine: it
//! parses nothing and validates nothing.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;

const HEAD: &[u8] = br#"{"jsonrpc":"2.0","id":"#;
const TAIL: &[u8] = br#","result":{"resultType":"complete","content":[{"type":"text","text":"hello"}],"structuredContent":{"text":"hello"}}}"#;

/// The digits after the last `"id":` in the body (`kelson bench` writes the id last).
fn id_of(body: &[u8]) -> &[u8] {
    let key = br#""id":"#;
    let Some(at) = body.windows(key.len()).rposition(|w| w == key) else {
        return b"0";
    };
    let rest = &body[at + key.len()..];
    let end = rest.iter().position(|b| !b.is_ascii_digit()).unwrap_or(rest.len());
    &rest[..end]
}

async fn answer(request: Request<hyper::body::Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    // Read the whole body, as any real server must.
    let body = request.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    let id = id_of(&body);
    let mut out = Vec::with_capacity(HEAD.len() + id.len() + TAIL.len());
    out.extend_from_slice(HEAD);
    out.extend_from_slice(id);
    out.extend_from_slice(TAIL);
    let mut response = Response::new(Full::new(Bytes::from(out)));
    response
        .headers_mut()
        .insert("content-type", "application/json".parse().expect("valid"));
    Ok(response)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args().nth(2).ok_or("usage: bare-hyper --http ADDR")?;
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        tokio::spawn(async move {
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service_fn(answer))
                .await;
        });
    }
}
