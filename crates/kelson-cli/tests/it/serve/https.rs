//! `kelson serve --tls-cert --tls-key`: HTTPS with a certificate made by the test. Our client trusts
//! the test CA with `--ca-cert` or `SSL_CERT_FILE`; HTTP/2 is chosen by ALPN; SIGHUP swaps the
//! certificate for new connections while open ones go on, and a file that does not load leaves the
//! old one; cleartext HTTP and a client that never finishes its handshake leave the server
//! answering others.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};

use super::support::{Serve, TempDir, meta, raw_http, wait_until};
use crate::certs::{ServerCert, TestCa};
use crate::harness::mcp_env;

/// A test CA, a server certificate it signed for localhost and 127.0.0.1, and their files.
struct Https {
    dir: TempDir,
    ca: TestCa,
    ca_file: PathBuf,
    cert: ServerCert,
    cert_file: PathBuf,
    key_file: PathBuf,
}

impl Https {
    fn new() -> Https {
        let dir = TempDir::new();
        let ca = TestCa::new("kelson test CA");
        let ca_file = ca.write(dir.path(), "ca.pem");
        let cert = ca.server(&["localhost", "127.0.0.1"], "first", 1);
        let (cert_file, key_file) = cert.write(dir.path(), "server");
        Https {
            dir,
            ca,
            ca_file,
            cert,
            cert_file,
            key_file,
        }
    }

    fn serve(&self, extra: &[&str]) -> Serve {
        let mut args = vec![
            "--tls-cert",
            self.cert_file.to_str().unwrap(),
            "--tls-key",
            self.key_file.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        Serve::start(self.dir.path(), &args)
    }
}

/// `kelson ARGS --url URL --ca-cert CA`.
fn mcp_trusting(serve: &Serve, ca_file: &Path, args: &[&str]) -> crate::harness::Run {
    let mut all = args.to_vec();
    all.extend(["--url", &serve.url, "--ca-cert", ca_file.to_str().unwrap()]);
    mcp_env(&all, "", &[])
}

fn authority(url: &str) -> String {
    let rest = url.strip_prefix("https://").expect("an https URL");
    rest[..rest.find('/').unwrap_or(rest.len())].to_owned()
}

fn client_config(ca_pem: &str, alpn: &[&[u8]]) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca_pem.as_bytes()).expect("the CA's PEM"))
        .expect("a root");
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

/// A kept-alive HTTPS connection speaking HTTP/1.1, blocking.
struct Conn(rustls::StreamOwned<rustls::ClientConnection, TcpStream>);

impl Conn {
    fn open(url: &str, ca_pem: &str) -> Conn {
        let tcp = TcpStream::connect(authority(url)).expect("connect");
        tcp.set_read_timeout(Some(Duration::from_secs(20)))
            .expect("a read timeout");
        let name = ServerName::try_from("localhost").expect("a name");
        let tls = rustls::ClientConnection::new(client_config(ca_pem, &[b"http/1.1"]), name)
            .expect("a TLS client");
        let mut stream = rustls::StreamOwned::new(tls, tcp);
        while stream.conn.is_handshaking() {
            stream
                .conn
                .complete_io(&mut stream.sock)
                .expect("the TLS handshake");
        }
        Conn(stream)
    }

    /// The certificate the server presented.
    fn server_cert(&self) -> Vec<u8> {
        self.0.conn.peer_certificates().expect("a certificate")[0].to_vec()
    }

    /// POSTs `tools/list` and returns the JSON-RPC response; the connection stays open.
    fn list_tools(&mut self) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
            "params": {"_meta": meta(false)}})
        .to_string();
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
             Mcp-Method: tools/list\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        self.0.write_all(request.as_bytes()).expect("send");
        self.0.flush().expect("send");
        let mut received = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let n = self.0.read(&mut chunk).expect("read the response");
            assert!(n > 0, "the server closed the connection");
            received.extend_from_slice(&chunk[..n]);
            let text = String::from_utf8_lossy(&received);
            if let Some((head, body)) = text.split_once("\r\n\r\n") {
                assert!(head.starts_with("HTTP/1.1 200"), "{head}");
                let length: usize = head
                    .lines()
                    .find_map(|l| {
                        let (name, value) = l.split_once(':')?;
                        name.eq_ignore_ascii_case("content-length")
                            .then(|| value.trim().parse().ok())?
                    })
                    .expect("a content-length");
                if body.len() >= length {
                    return serde_json::from_str(&body[..length]).expect("JSON");
                }
            }
        }
    }
}

fn tool_names(response: &Value) -> Vec<String> {
    response["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {response}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn our_client_reaches_https_with_the_test_ca() {
    let https = Https::new();
    let serve = https.serve(&[]);
    assert!(serve.url.starts_with("https://127.0.0.1:"), "{}", serve.url);

    let run = mcp_trusting(&serve, &https.ca_file, &["tools"]);
    run.expect_code(0);
    assert!(run.stdout.contains("query"), "{}", run.stdout);
    let run = mcp_trusting(
        &serve,
        &https.ca_file,
        &[
            "call",
            "query",
            "--arg",
            "sql=select count(*) as n from products",
            "--json",
        ],
    );
    run.expect_code(0);

    // SSL_CERT_FILE stands for the system's certificates.
    let ca = https.ca_file.as_os_str();
    let run = mcp_env(
        &["tools", "--url", &serve.url],
        "",
        &[("SSL_CERT_FILE", ca)],
    );
    run.expect_code(0);

    // Without the CA, the certificate is not trusted: a transport error that says so.
    let run = mcp_env(&["tools", "--url", &serve.url], "", &[]);
    run.expect_code(3);
    assert!(
        run.stderr.to_lowercase().contains("certificate"),
        "{}",
        run.stderr
    );

    // A CA file that is not one is a clear usage error, before anything is sent.
    let bogus = https.dir.join("bogus.pem");
    std::fs::write(&bogus, "not a certificate").unwrap();
    let run = mcp_trusting(&serve, &bogus, &["tools"]);
    assert_ne!(run.code, Some(0));
    assert!(run.stderr.contains("bogus.pem"), "{}", run.stderr);
}

#[test]
fn http2_is_chosen_by_alpn() {
    let https = Https::new();
    let serve = https.serve(&[]);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        use http_body_util::{BodyExt as _, Full};
        let tcp = tokio::net::TcpStream::connect(authority(&serve.url))
            .await
            .expect("connect");
        let connector =
            tokio_rustls::TlsConnector::from(client_config(&https.ca.pem, &[b"h2", b"http/1.1"]));
        let tls = connector
            .connect(ServerName::try_from("localhost").unwrap(), tcp)
            .await
            .expect("the TLS handshake");
        assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
        let (mut sender, connection) = hyper::client::conn::http2::handshake(
            hyper_util::rt::TokioExecutor::new(),
            hyper_util::rt::TokioIo::new(tls),
        )
        .await
        .expect("the HTTP/2 handshake");
        tokio::spawn(connection);
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
            "params": {"_meta": meta(false)}})
        .to_string();
        let request = http::Request::post(serve.url.as_str())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/list")
            .body(Full::new(bytes::Bytes::from(body)))
            .unwrap();
        let response = sender.send_request(request).await.expect("a response");
        assert_eq!(response.version(), http::Version::HTTP_2);
        assert_eq!(response.status(), 200);
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let message: Value = serde_json::from_slice(&body).expect("JSON");
        assert!(
            tool_names(&message).contains(&"query".to_owned()),
            "{message}"
        );
    });
}

fn hang_up(serve: &Serve) {
    let status = Command::new("kill")
        .args(["-HUP", &serve.pid().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
}

#[test]
fn sighup_reloads_the_certificate_and_open_connections_go_on() {
    let https = Https::new();
    let serve = https.serve(&[]);
    let mut open = Conn::open(&serve.url, &https.ca.pem);
    assert_eq!(open.server_cert(), https.cert.der, "the first certificate");
    assert!(tool_names(&open.list_tools()).contains(&"query".to_owned()));

    // A new certificate (another common name and serial) in the same files, then SIGHUP.
    let second = https.ca.server(&["localhost", "127.0.0.1"], "second", 2);
    second.write(https.dir.path(), "server");
    hang_up(&serve);
    wait_until("the server reloaded", || {
        serve.log().contains("SIGHUP: reloaded the certificate")
    });
    let fresh = Conn::open(&serve.url, &https.ca.pem);
    assert_eq!(
        fresh.server_cert(),
        second.der,
        "new connections get the new one"
    );
    // The connection opened before goes on, with the certificate it began with.
    assert!(tool_names(&open.list_tools()).contains(&"query".to_owned()));
    assert_eq!(open.server_cert(), https.cert.der);

    // A certificate file that does not load: an error in the log, and the second one stays.
    std::fs::write(
        &https.cert_file,
        "-----BEGIN CERTIFICATE-----\nnot base64\n",
    )
    .unwrap();
    hang_up(&serve);
    wait_until("the reload failed", || {
        serve
            .log()
            .contains("still serving the previous certificate")
    });
    let mut after = Conn::open(&serve.url, &https.ca.pem);
    assert_eq!(after.server_cert(), second.der);
    assert!(tool_names(&after.list_tools()).contains(&"query".to_owned()));
    let log = serve.log();
    assert!(
        log.contains("server.pem"),
        "the error names the file:\n{log}"
    );
}

#[test]
fn cleartext_and_a_silent_handshake_leave_the_server_answering() {
    let https = Https::new();
    let serve = https.serve(&["--read-timeout", "1s"]);
    let authority = authority(&serve.url);

    // A TLS record header that announces a ClientHello which never comes.
    let mut silent = TcpStream::connect(&authority).expect("connect");
    silent
        .write_all(&[0x16, 0x03, 0x01, 0x01, 0x00, 0x01])
        .unwrap();
    silent
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let began = Instant::now();

    // Cleartext HTTP to the HTTPS port: a 400 that says what to do.
    let reply = raw_http(
        &authority,
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n\r\n{}",
    );
    assert_eq!(reply.status, 400, "{}", reply.head);
    assert!(reply.body.contains("https://"), "{}", reply.body);

    // Others are served meanwhile.
    let run = mcp_trusting(&serve, &https.ca_file, &["tools"]);
    run.expect_code(0);

    // The silent client is let go after the read timeout, which bounds the handshake.
    let mut rest = Vec::new();
    let ended = silent.read_to_end(&mut rest);
    let waited = began.elapsed();
    assert!(
        ended.is_ok()
            || ended
                .as_ref()
                .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset),
        "{ended:?} after {waited:?}"
    );
    assert!(waited < Duration::from_secs(10), "dropped after {waited:?}");
    mcp_trusting(&serve, &https.ca_file, &["tools"]).expect_code(0);
}

#[test]
fn a_certificate_that_does_not_load_stops_the_start_with_its_name() {
    let https = Https::new();
    let other = https.ca.server(&["localhost"], "other", 3);
    // The key of another certificate.
    let wrong_key = https.dir.join("other.key");
    std::fs::write(&wrong_key, &other.key_pem).unwrap();
    let run = super::support::serve_refused(
        https.dir.path(),
        &[
            "--http",
            "127.0.0.1:0",
            "--tls-cert",
            https.cert_file.to_str().unwrap(),
            "--tls-key",
            wrong_key.to_str().unwrap(),
        ],
    );
    assert_ne!(run.code, Some(0));
    assert!(run.stderr.contains("--tls-cert"), "{}", run.stderr);
    assert!(run.stderr.contains("other.key"), "{}", run.stderr);
    let run = super::support::serve_refused(
        https.dir.path(),
        &[
            "--http",
            "127.0.0.1:0",
            "--tls-cert",
            https.cert_file.to_str().unwrap(),
        ],
    );
    assert_ne!(run.code, Some(0));
}
