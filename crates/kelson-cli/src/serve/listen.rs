//! The listeners of `kelson serve`: bound before anything is announced or opened, with the usual
//! reasons a bind fails in words; the next step once serving; and `GET /`, a short page pointing
//! at the MCP endpoint when it is elsewhere (behind the same Host/Origin policy).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::future::{Either, Ready, ready};
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use kelson_http::server::{FrontService, IncomingBody, McpBody, OriginPolicy};
use tokio::net::TcpListener;

/// Binds `addr`, given by `key` (`--http`, `http.bind`, `--metrics-addr`, ...) and settable with
/// the flag `flag`; the error says why in words and what to do about it, naming the address.
pub(super) async fn bind(addr: SocketAddr, key: &str, flag: &str) -> Result<TcpListener, String> {
    TcpListener::bind(addr)
        .await
        .map_err(|e| bind_error(addr, key, flag, &e))
}

/// Why `addr` could not be bound, and what to try.
fn bind_error(addr: SocketAddr, key: &str, what: &str, e: &std::io::Error) -> String {
    let port = addr.port();
    let another = port.checked_add(1).unwrap_or(8080);
    match e.kind() {
        std::io::ErrorKind::AddrInUse => format!(
            "{key}: cannot listen on {addr}: the address is in use; another server (perhaps \
             another kelson serve) is running there: stop it, or serve on another port with \
             {what} PORT (e.g. {what} {another})"
        ),
        std::io::ErrorKind::PermissionDenied => format!(
            "{key}: cannot listen on {addr}: permission denied{}; serve on another port with \
             {what} PORT (e.g. {what} 8080)",
            if port < 1024 {
                " (ports below 1024 need privileges)"
            } else {
                ""
            }
        ),
        std::io::ErrorKind::AddrNotAvailable => format!(
            "{key}: cannot listen on {addr}: the address is not one of this machine's; give \
             one of its addresses with {what} HOST:PORT, or 127.0.0.1"
        ),
        _ => format!("{key}: cannot listen on {addr}: {e}"),
    }
}

/// The URL a client on this machine reaches the endpoint at: a wildcard address (0.0.0.0, ::)
/// becomes its loopback address.
pub(super) fn client_url(scheme: &str, local: SocketAddr, path: &str) -> String {
    let mut local = local;
    if local.ip().is_unspecified() {
        local.set_ip(match local.ip() {
            std::net::IpAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            std::net::IpAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    format!("{scheme}://{local}{path}")
}

/// What `GET /` answers when the endpoint has a path of its own.
#[derive(Debug)]
pub(super) struct Landing {
    /// The MCP endpoint's path.
    path: String,
    /// `http` or `https`.
    scheme: &'static str,
    /// The listener's policy, checked first, as for the endpoint.
    policy: OriginPolicy,
    /// The health paths, named on the page.
    health: (String, String),
}

impl Landing {
    /// The page for an endpoint at `path`; `None` when the endpoint is `/` itself.
    pub(super) fn new(
        path: &str,
        scheme: &'static str,
        policy: OriginPolicy,
        health: (String, String),
    ) -> Option<Arc<Landing>> {
        (path != "/").then(|| {
            Arc::new(Landing {
                path: path.to_owned(),
                scheme,
                policy,
                health,
            })
        })
    }

    /// Whether `request` is for the page.
    fn wants(&self, request: &Request<IncomingBody>) -> bool {
        request.uri().path() == "/" && matches!(*request.method(), Method::GET | Method::HEAD)
    }

    /// The page, for a request the policy lets in: plain text naming the endpoint under the host
    /// the request used, and the command that lists its tools.
    fn answer(&self, request: &Request<IncomingBody>) -> Response<McpBody> {
        if let Err(refusal) =
            self.policy
                .check_request(request.version(), request.uri(), request.headers())
        {
            tracing::debug!(why = %refusal.reason, "GET / refused by the Host/Origin policy");
            return text(
                refusal.status,
                format!("{}\n", refusal.reason),
                request.method(),
            );
        }
        // The policy accepted the host, so it is one of this server's names.
        let host = request
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .or_else(|| request.uri().authority().map(http::uri::Authority::as_str))
            .unwrap_or("localhost");
        let url = format!("{}://{host}{}", self.scheme, self.path);
        let body = format!(
            "This is an MCP server (Model Context Protocol), kelson serve {version}.\n\
             \n\
             Its endpoint is {url}\n\
             (Streamable HTTP: MCP clients POST JSON-RPC messages there; a browser has nothing to see).\n\
             \n\
             List its tools: kelson tools --url {url}\n\
             Health: {live} and {ready}\n",
            version = env!("CARGO_PKG_VERSION"),
            live = self.health.0,
            ready = self.health.1,
        );
        text(StatusCode::OK, body, request.method())
    }
}

/// A plain text answer; without its body for HEAD.
fn text(status: StatusCode, body: String, method: &Method) -> Response<McpBody> {
    let length = body.len();
    let body = if *method == Method::HEAD {
        McpBody::from(Bytes::new())
    } else {
        McpBody::from(Bytes::from(body))
    };
    let mut response = Response::new(body);
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// `service` with `GET /` answered by the landing page, when there is one; every other request
/// goes to `service` as it came.
#[derive(Clone)]
pub(super) struct WithLanding<S> {
    inner: S,
    landing: Option<Arc<Landing>>,
}

impl<S> WithLanding<S> {
    pub(super) fn new(inner: S, landing: Option<Arc<Landing>>) -> Self {
        WithLanding { inner, landing }
    }
}

impl<S> tower_service::Service<Request<IncomingBody>> for WithLanding<S>
where
    S: FrontService,
    S::Future: Send + 'static,
{
    type Response = Response<McpBody>;
    type Error = Infallible;
    type Future = Either<Ready<Result<Response<McpBody>, Infallible>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<IncomingBody>) -> Self::Future {
        match &self.landing {
            Some(landing) if landing.wants(&request) => {
                Either::Left(ready(Ok(landing.answer(&request))))
            }
            _ => Either::Right(self.inner.call(request)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_taken_port_says_so_and_what_to_do() {
        let addr: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let e = std::io::Error::from(std::io::ErrorKind::AddrInUse);
        let text = bind_error(addr, "--http", "--http", &e);
        assert!(
            text.starts_with("--http: cannot listen on 127.0.0.1:8080: the address is in use"),
            "{text}"
        );
        assert!(text.contains("another kelson serve"), "{text}");
        assert!(text.contains("--http PORT (e.g. --http 8081)"), "{text}");
        let e = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let text = bind_error("0.0.0.0:80".parse().unwrap(), "http.bind", "--http", &e);
        assert!(text.contains("ports below 1024 need privileges"), "{text}");
    }

    #[test]
    fn a_wildcard_address_is_reached_on_loopback() {
        assert_eq!(
            client_url("http", "0.0.0.0:9000".parse().unwrap(), "/mcp"),
            "http://127.0.0.1:9000/mcp"
        );
        assert_eq!(
            client_url("https", "[::]:9000".parse().unwrap(), "/x"),
            "https://[::1]:9000/x"
        );
        assert_eq!(
            client_url("http", "127.0.0.1:1".parse().unwrap(), "/mcp"),
            "http://127.0.0.1:1/mcp"
        );
    }
}
