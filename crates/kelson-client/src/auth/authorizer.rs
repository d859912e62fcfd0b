//! How the user authorizes: the step of the authorization code grant that happens in a browser.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use url::Url;

use super::AuthError;
use super::token::shown;
use crate::handlers::BoxFuture;

/// Takes the user through the authorization page of the authorization code grant.
///
/// The flow builds the authorization URL for [`redirect_uri`](Self::redirect_uri); the
/// authorizer gets it to the user (prints it, opens a browser) and returns the URL the
/// authorization server redirected back to, query included. The flow checks what that URL
/// carries (`state`, `iss`, `code` or `error`).
pub trait Authorizer: Send + Sync + 'static {
    /// Where the authorization server sends the user back: registered with the server, and sent
    /// in the authorization and token requests.
    fn redirect_uri(&self) -> String;

    /// Lets the user authorize at `url`; returns the redirect back, query included.
    fn authorize(&self, url: Url) -> BoxFuture<'_, Result<Url, AuthError>>;
}

/// The authorizer of a command-line program (RFC 8252 §7.3): a one-shot HTTP listener on the
/// loopback interface receives the redirect. The authorization URL goes to the `show` callback
/// (by default printed on stderr), and a browser is opened only when asked.
pub struct LoopbackAuthorizer {
    listener: Mutex<TcpListener>,
    port: u16,
    timeout: Duration,
    open_browser: bool,
    show: Arc<dyn Fn(&Url) + Send + Sync>,
}

impl std::fmt::Debug for LoopbackAuthorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopbackAuthorizer")
            .field("port", &self.port)
            .field("timeout", &self.timeout)
            .field("open_browser", &self.open_browser)
            .finish_non_exhaustive()
    }
}

impl LoopbackAuthorizer {
    /// Listens on 127.0.0.1:`port` (0: a free port) for the redirect to `/callback`; waits five
    /// minutes for the user by default.
    pub fn bind(port: u16) -> std::io::Result<Self> {
        let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        Ok(LoopbackAuthorizer {
            listener: Mutex::new(listener),
            port,
            timeout: Duration::from_secs(300),
            open_browser: false,
            show: Arc::new(|url: &Url| {
                eprintln!("Open this URL in a browser to authorize:\n\n  {url}\n");
            }),
        })
    }

    /// How long to wait for the redirect.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Whether to open the system's browser at the authorization URL (`xdg-open`, `open`) besides
    /// showing it.
    #[must_use]
    pub fn open_browser(mut self, open: bool) -> Self {
        self.open_browser = open;
        self
    }

    /// How the authorization URL is shown to the user (default: printed on stderr).
    #[must_use]
    pub fn on_url(mut self, show: impl Fn(&Url) + Send + Sync + 'static) -> Self {
        self.show = Arc::new(show);
        self
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    async fn wait(&self) -> Result<Url, AuthError> {
        let failed =
            |e: std::io::Error| AuthError::Authorizer(format!("the redirect listener: {e}"));
        let listener = self
            .listener
            .lock()
            .expect("listener lock")
            .try_clone()
            .map_err(failed)?;
        let listener = tokio::net::TcpListener::from_std(listener).map_err(failed)?;
        loop {
            let (mut stream, _) = listener.accept().await.map_err(failed)?;
            // One request per connection; a broken one is skipped, not fatal.
            let mut head = Vec::new();
            let mut buf = [0u8; 2048];
            let read = tokio::time::timeout(Duration::from_secs(10), async {
                while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
                    let n = stream.read(&mut buf).await?;
                    if n == 0 {
                        break;
                    }
                    head.extend_from_slice(&buf[..n]);
                }
                Ok::<_, std::io::Error>(())
            })
            .await;
            if !matches!(read, Ok(Ok(()))) {
                continue;
            }
            let line = String::from_utf8_lossy(&head);
            let target = line
                .lines()
                .next()
                .and_then(|l| l.strip_prefix("GET "))
                .and_then(|l| l.split(' ').next())
                .unwrap_or_default()
                .to_owned();
            if !target.starts_with("/callback") {
                let _ = stream
                    .write_all(
                        b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                    )
                    .await;
                continue;
            }
            let url = Url::parse(&format!("http://127.0.0.1:{}{target}", self.port))
                .map_err(|e| AuthError::Authorizer(format!("the redirect is not a URL: {e}")))?;
            let refused = url.query_pairs().any(|(k, _)| k == "error");
            let page = if refused {
                "Authorization was refused. You can close this window and return to the terminal."
            } else {
                "Authorization received. You can close this window and return to the terminal."
            };
            let body =
                format!("<!doctype html><meta charset=utf-8><title>kelson</title><p>{page}</p>");
            let _ = stream
                .write_all(
                    format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\ncache-control: no-store\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    )
                    .as_bytes(),
                )
                .await;
            return Ok(url);
        }
    }
}

impl Authorizer for LoopbackAuthorizer {
    fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}/callback", self.port)
    }

    fn authorize(&self, url: Url) -> BoxFuture<'_, Result<Url, AuthError>> {
        Box::pin(async move {
            (self.show)(&url);
            if self.open_browser {
                open_in_browser(&url);
            }
            tokio::time::timeout(self.timeout, self.wait())
                .await
                .map_err(|_| {
                    AuthError::Authorizer(format!(
                        "no redirect from the browser within {:?}",
                        self.timeout
                    ))
                })?
        })
    }
}

/// Asks the desktop to open `url`; a failure only means the user opens it by hand.
fn open_in_browser(url: &Url) {
    let program = if cfg!(target_os = "macos") {
        "open"
    } else if cfg!(windows) {
        "explorer"
    } else {
        "xdg-open"
    };
    let _ = std::process::Command::new(program)
        .arg(url.as_str())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
}

/// An authorizer without a person: it requests the authorization URL itself and follows the
/// server's redirects (keeping its cookies) until one leads to the redirect URI. It works with
/// authorization servers that approve without asking (test servers, the conformance suite's,
/// one configured to approve a known client automatically); a page that asks a question ends it
/// with an error.
#[derive(Debug)]
pub struct FollowRedirects {
    redirect_uri: String,
    http: reqwest::Client,
}

impl FollowRedirects {
    /// Follows redirects until one reaches `redirect_uri`.
    pub fn new(redirect_uri: impl Into<String>) -> Self {
        FollowRedirects {
            redirect_uri: redirect_uri.into(),
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .timeout(Duration::from_secs(30))
                .build()
                .expect("a reqwest client"),
        }
    }

    /// Through `http` (its TLS roots); it must not follow redirects itself.
    #[must_use]
    pub fn with_client(mut self, http: reqwest::Client) -> Self {
        self.http = http;
        self
    }

    fn is_redirect_uri(&self, url: &Url) -> bool {
        let Ok(target) = Url::parse(&self.redirect_uri) else {
            return false;
        };
        url.scheme() == target.scheme()
            && url.host_str() == target.host_str()
            && url.port_or_known_default() == target.port_or_known_default()
            && url.path() == target.path()
    }
}

impl Authorizer for FollowRedirects {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    fn authorize(&self, url: Url) -> BoxFuture<'_, Result<Url, AuthError>> {
        Box::pin(async move {
            // Cookies by host: an interaction session of the authorization server.
            let mut jar: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
            let mut at = url;
            for _ in 0..20 {
                let host = at.host_str().unwrap_or_default().to_owned();
                let mut request = self.http.get(at.as_str());
                if let Some(cookies) = jar.get(&host).filter(|c| !c.is_empty()) {
                    let header = cookies
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join("; ");
                    request = request.header(http::header::COOKIE, header);
                }
                let response = request
                    .send()
                    .await
                    .map_err(|e| super::token::http_error(at.as_str(), &e))?;
                for value in response.headers().get_all(http::header::SET_COOKIE) {
                    let Ok(value) = value.to_str() else { continue };
                    let pair = value.split(';').next().unwrap_or_default();
                    if let Some((name, value)) = pair.split_once('=') {
                        let cookies = jar.entry(host.clone()).or_default();
                        if value.is_empty() {
                            cookies.remove(name.trim());
                        } else {
                            cookies.insert(name.trim().to_owned(), value.trim().to_owned());
                        }
                    }
                }
                let status = response.status();
                let location = response
                    .headers()
                    .get(http::header::LOCATION)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                let Some(location) = location.filter(|_| status.is_redirection()) else {
                    return Err(AuthError::Authorizer(format!(
                        "{} answered HTTP {} without redirecting; it needs a person to authorize",
                        shown(at.as_str()),
                        status.as_u16()
                    )));
                };
                let next = at.join(&location).map_err(|e| {
                    AuthError::Authorizer(format!("a redirect to {location:?} is not a URL: {e}"))
                })?;
                if self.is_redirect_uri(&next) {
                    return Ok(next);
                }
                at = next;
            }
            Err(AuthError::Authorizer(
                "more than 20 redirects without reaching the redirect URI".to_owned(),
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_loopback_listener_returns_the_redirect_and_answers_the_browser() {
        let shown_url = Arc::new(Mutex::new(None));
        let seen = shown_url.clone();
        let authorizer = LoopbackAuthorizer::bind(0)
            .unwrap()
            .timeout(Duration::from_secs(5))
            .on_url(move |url| *seen.lock().unwrap() = Some(url.to_string()));
        let redirect = authorizer.redirect_uri();
        assert!(redirect.starts_with("http://127.0.0.1:") && redirect.ends_with("/callback"));
        let port = authorizer.port();
        let browser = tokio::spawn(async move {
            // Something else first (a favicon), then the redirect.
            let get = |path: &'static str| async move {
                let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
                    .await
                    .unwrap();
                s.write_all(format!("GET {path} HTTP/1.1\r\nhost: x\r\n\r\n").as_bytes())
                    .await
                    .unwrap();
                let mut answer = String::new();
                s.read_to_string(&mut answer).await.unwrap();
                answer
            };
            assert!(get("/favicon.ico").await.starts_with("HTTP/1.1 404"));
            get("/callback?code=abc&state=xyz").await
        });
        let url = authorizer
            .authorize(Url::parse("https://as.example/authorize?x=1").unwrap())
            .await
            .unwrap();
        assert_eq!(url.path(), "/callback");
        assert_eq!(url.query(), Some("code=abc&state=xyz"));
        assert!(browser.await.unwrap().contains("Authorization received"));
        assert_eq!(
            shown_url.lock().unwrap().as_deref(),
            Some("https://as.example/authorize?x=1")
        );
    }

    #[tokio::test]
    async fn the_loopback_listener_times_out() {
        let authorizer = LoopbackAuthorizer::bind(0)
            .unwrap()
            .timeout(Duration::from_millis(50))
            .on_url(|_| {});
        let err = authorizer
            .authorize(Url::parse("https://as.example/a").unwrap())
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("no redirect from the browser"),
            "{err}"
        );
    }
}
