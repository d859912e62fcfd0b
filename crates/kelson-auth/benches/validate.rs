//! The cost of the auth layer on a request whose token is good and whose signing key is cached:
//! the first time a token is seen (signature check and claims, ES256 and RS256), and again (the
//! validated-token cache). Run: `cargo bench -p kelson-auth --bench validate`.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use futures_util::FutureExt as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use kelson_auth::{AuthConfig, AuthLayer, Authenticator};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tower_layer::Layer as _;
use tower_service::Service as _;

const ISSUER: &str = "https://issuer.bench";
const RESOURCE: &str = "https://mcp.bench/mcp";

/// The inner service: answers at once.
#[derive(Clone)]
struct Ok200;

impl tower_service::Service<http::Request<()>> for Ok200 {
    type Response = http::Response<Bytes>;
    type Error = Infallible;
    type Future = std::future::Ready<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: http::Request<()>) -> Self::Future {
        std::future::ready(Ok(http::Response::new(Bytes::new())))
    }
}

/// Serves `jwks` to every request on a loopback port, on the runtime's threads.
fn serve_jwks(runtime: &tokio::runtime::Runtime, jwks: Value) -> String {
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let url = format!("http://{}/jwks", listener.local_addr().unwrap());
    let body = jwks.to_string();
    runtime.spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else { return };
            let body = body.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = socket.read(&mut buf).await;
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(response.as_bytes()).await;
            });
        }
    });
    url
}

fn claims(n: u64) -> Value {
    let now = jsonwebtoken::get_current_timestamp();
    json!({
        "iss": ISSUER, "sub": "alice", "aud": RESOURCE, "client_id": "bench",
        "iat": now, "exp": now + 3600, "scope": "mcp:tools mcp:read", "jti": n.to_string()
    })
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let rng = SystemRandom::new();
    let ec = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let ec_pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, ec.as_ref()).unwrap();
    let point = ec_pair.public_key().as_ref();
    let rsa = aws_lc_rs::rsa::KeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap();
    let rsa_public = aws_lc_rs::rsa::PublicKeyComponents::<Vec<u8>>::from(rsa.public_key());
    let jwks = json!({"keys": [
        {"kty": "EC", "crv": "P-256", "kid": "ec", "alg": "ES256",
         "x": URL_SAFE_NO_PAD.encode(&point[1..33]), "y": URL_SAFE_NO_PAD.encode(&point[33..])},
        {"kty": "RSA", "kid": "rsa", "alg": "RS256",
         "n": URL_SAFE_NO_PAD.encode(&rsa_public.n), "e": URL_SAFE_NO_PAD.encode(&rsa_public.e)},
    ]});
    let url = serve_jwks(&runtime, jwks);
    let ec_key = EncodingKey::from_ec_der(ec.as_ref());
    let sign = |alg: Algorithm, kid: &str, key: &EncodingKey, n: u64| {
        let mut header = Header::new(alg);
        header.kid = Some(kid.to_owned());
        jsonwebtoken::encode(&header, &claims(n), key).unwrap()
    };

    let layer = |cache: usize| {
        let mut config = AuthConfig::new(ISSUER, RESOURCE);
        config.jwks_url = Some(url.clone());
        config.token_cache = cache;
        let auth = runtime.block_on(Authenticator::new(config)).unwrap();
        AuthLayer::new(Arc::new(auth)).layer(Ok200)
    };
    let request = |token: &str| {
        http::Request::builder()
            .uri("/mcp")
            .header("authorization", format!("Bearer {token}"))
            .body(())
            .unwrap()
    };
    // On the paths measured nothing waits: the keys and tokens are in memory, so the future is
    // ready on its first poll.
    let run = |service: &mut kelson_auth::AuthService<Ok200>, token: &str| {
        let response = service
            .call(request(token))
            .now_or_never()
            .expect("no waiting with the key cached")
            .unwrap();
        assert_eq!(response.status(), 200);
    };

    let mut uncached = layer(0);
    let es = sign(Algorithm::ES256, "ec", &ec_key, 1);
    // jsonwebtoken signs RSA only from PKCS#1, which aws-lc-rs does not export: sign it directly.
    let rs = {
        let header = URL_SAFE_NO_PAD.encode(r#"{"alg":"RS256","typ":"JWT","kid":"rsa"}"#);
        let payload = URL_SAFE_NO_PAD.encode(claims(2).to_string());
        let message = format!("{header}.{payload}");
        let mut signature = vec![0u8; rsa.public_modulus_len()];
        rsa.sign(
            &aws_lc_rs::signature::RSA_PKCS1_SHA256,
            &rng,
            message.as_bytes(),
            &mut signature,
        )
        .unwrap();
        format!("{message}.{}", URL_SAFE_NO_PAD.encode(signature))
    };
    c.bench_function("first sight of an ES256 token (signature checked)", |b| {
        b.iter(|| run(&mut uncached, &es))
    });
    c.bench_function("first sight of an RS256 token (signature checked)", |b| {
        b.iter(|| run(&mut uncached, &rs))
    });
    let mut cached = layer(10_000);
    run(&mut cached, &rs);
    c.bench_function("a token seen before (validated-token cache)", |b| {
        b.iter(|| run(&mut cached, &rs))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
