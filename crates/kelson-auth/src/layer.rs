//! The tower `Layer`: metadata at its well-known paths, bearer tokens checked, the token replaced
//! by a [`Principal`] in the request's extensions, and scope challenges completed on the way out.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::header::{AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE, WWW_AUTHENTICATE};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use kelson_server::{InsufficientScope, Principal};

use crate::authenticator::Authenticator;
use crate::reject::{Rejection, challenge};

/// Puts the resource server in front of a service. See the [crate docs](crate).
#[derive(Clone, Debug)]
pub struct AuthLayer {
    auth: Arc<Authenticator>,
    open: Arc<[String]>,
}

impl AuthLayer {
    /// A layer validating tokens with `auth`.
    pub fn new(auth: Arc<Authenticator>) -> Self {
        AuthLayer {
            auth,
            open: Arc::from(Vec::new()),
        }
    }

    /// Lets requests for these exact paths through without a token (and without a principal;
    /// an `Authorization` header they carry is removed all the same): health checks from a load
    /// balancer, which holds no token. Never the MCP endpoint's path.
    #[must_use]
    pub fn open_paths(mut self, paths: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.open = paths.into_iter().map(Into::into).collect();
        self
    }
}

impl<S> tower_layer::Layer<S> for AuthLayer {
    type Service = AuthService<S>;

    fn layer(&self, inner: S) -> AuthService<S> {
        AuthService {
            inner,
            auth: self.auth.clone(),
            open: self.open.clone(),
        }
    }
}

/// The service [`AuthLayer`] makes.
#[derive(Clone, Debug)]
pub struct AuthService<S> {
    inner: S,
    auth: Arc<Authenticator>,
    open: Arc<[String]>,
}

impl<S> AuthService<S> {
    /// The wrapped service.
    pub fn inner(&self) -> &S {
        &self.inner
    }
}

/// What becomes of a request before the inner service sees it.
enum Admission {
    /// Let through, with its Principal attached and its Authorization header gone.
    Pass,
    /// Answered by the layer.
    Answer(Response<Bytes>),
}

impl Authenticator {
    async fn admit<B>(&self, request: &mut Request<B>) -> Admission {
        let path = request.uri().path();
        if self.meta.paths.iter().any(|p| p == path) {
            return Admission::Answer(self.metadata(request.method()));
        }
        // Only the head is looked at, and not across the await with the body, which need not be Sync.
        match self
            .principal(request.method(), request.uri(), request.headers())
            .await
        {
            Ok(principal) => {
                // The token never reaches the inner service, its handlers or their logs.
                request.headers_mut().remove(AUTHORIZATION);
                request.extensions_mut().insert(principal);
                Admission::Pass
            }
            Err(rejection) => {
                let status = match &rejection {
                    Rejection::Missing | Rejection::InvalidToken(_) => "401",
                    Rejection::InvalidRequest(_) => "400",
                    Rejection::InsufficientScope { .. } => "403",
                    Rejection::Unavailable { .. } => "503",
                };
                tracing::debug!(status, reason = ?rejection, "request refused by the auth layer");
                Admission::Answer(
                    rejection.response(&self.meta.url, self.meta.challenge_scope.as_deref()),
                )
            }
        }
    }

    async fn principal(
        &self,
        method: &Method,
        uri: &http::Uri,
        headers: &http::HeaderMap,
    ) -> Result<Principal, Rejection> {
        // RFC 6750 §2.3 and §2.2 allow a token in the query or a form body, and OAuth 2.1 §5.2
        // forbids the query; this resource accepts the Authorization header only and says so in
        // its metadata (`bearer_methods_supported`), so any other carrier is a malformed request.
        if let Some(query) = uri.query()
            && url::form_urlencoded::parse(query.as_bytes()).any(|(k, _)| k == "access_token")
        {
            return Err(Rejection::InvalidRequest(
                "access tokens are accepted in the Authorization header only, not in the query",
            ));
        }
        if method != Method::GET && is_form(headers) {
            return Err(Rejection::InvalidRequest(
                "access tokens are accepted in the Authorization header only, not in a form body",
            ));
        }
        let mut values = headers.get_all(AUTHORIZATION).iter();
        let Some(value) = values.next() else {
            return Err(Rejection::Missing);
        };
        // RFC 6750 §3.1: a request with more than one set of credentials is invalid_request.
        if values.next().is_some() {
            return Err(Rejection::InvalidRequest(
                "the request has more than one Authorization header",
            ));
        }
        let value = value.as_bytes();
        let (scheme, token) = match value.iter().position(|b| *b == b' ') {
            Some(i) => (&value[..i], &value[i + 1..]),
            None => (value, &b""[..]),
        };
        // RFC 7235 §2.1: the scheme is case-insensitive. Another scheme carries no bearer
        // credentials, so the answer is the plain challenge.
        if !scheme.eq_ignore_ascii_case(b"bearer") {
            return Err(Rejection::Missing);
        }
        let token = trim_spaces(token);
        // RFC 6750 §2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=".
        if !is_b64token(token) {
            return Err(Rejection::InvalidRequest(
                "the Authorization header does not hold a bearer token",
            ));
        }
        let token = std::str::from_utf8(token).expect("b64token is ASCII");
        let principal = self.authenticate(token).await?;
        self.check_required_scopes(&principal)?;
        Ok(principal)
    }

    fn metadata(&self, method: &Method) -> Response<Bytes> {
        let mut response = if method == Method::GET || method == Method::HEAD {
            let mut r = Response::new(if method == Method::GET {
                self.meta.document.clone()
            } else {
                Bytes::new()
            });
            r.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            r.headers_mut()
                .insert(CACHE_CONTROL, HeaderValue::from_static("max-age=3600"));
            r
        } else {
            let mut r = Response::new(Bytes::new());
            *r.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
            r.headers_mut()
                .insert(http::header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            r
        };
        // Browser-based clients read the metadata from another origin; it is public.
        response.headers_mut().insert(
            http::header::ACCESS_CONTROL_ALLOW_ORIGIN,
            HeaderValue::from_static("*"),
        );
        response
    }

    /// A 403 of the inner service for want of scope gets the full challenge of RFC 6750 §3 with
    /// this resource's metadata URL (spec 2026-07-28 basic/authorization: runtime insufficient
    /// scope).
    fn complete<B>(&self, response: &mut Response<B>) {
        if response.status() != StatusCode::FORBIDDEN {
            return;
        }
        let Some(needed) = response.extensions().get::<InsufficientScope>() else {
            return;
        };
        let scopes = needed.scopes.join(" ");
        let value = challenge(
            Some(("insufficient_scope", &needed.description)),
            Some(&scopes),
            &self.meta.url,
            true,
        );
        response.headers_mut().insert(WWW_AUTHENTICATE, value);
    }
}

fn is_form(headers: &http::HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|m| {
            m.trim()
                .eq_ignore_ascii_case("application/x-www-form-urlencoded")
        })
}

fn trim_spaces(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

fn is_b64token(token: &[u8]) -> bool {
    let body_end = token.iter().rposition(|b| *b != b'=').map_or(0, |i| i + 1);
    body_end > 0
        && token[..body_end].iter().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/')
        })
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, B, ResBody> tower_service::Service<Request<B>> for AuthService<S>
where
    S: tower_service::Service<Request<B>, Response = Response<ResBody>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    B: Send + 'static,
    ResBody: From<Bytes> + Send + 'static,
{
    type Response = Response<ResBody>;
    type Error = S::Error;
    type Future = BoxFuture<Result<Response<ResBody>, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        // The clone that was made ready is the one that serves this request (tower's usual swap).
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let auth = self.auth.clone();
        if self.open.iter().any(|p| p == request.uri().path()) {
            request.headers_mut().remove(AUTHORIZATION);
            return Box::pin(async move { inner.call(request).await });
        }
        Box::pin(async move {
            if let Admission::Answer(response) = auth.admit(&mut request).await {
                return Ok(response.map(ResBody::from));
            }
            let mut response = inner.call(request).await?;
            auth.complete(&mut response);
            Ok(response)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens_have_the_b64token_syntax() {
        assert!(is_b64token(b"abc.DEF-_~+/=="));
        assert!(!is_b64token(b""));
        assert!(!is_b64token(b"=="));
        assert!(!is_b64token(b"a b"));
        assert!(!is_b64token(b"a=b"));
        assert_eq!(trim_spaces(b"  t \t"), b"t");
    }
}
