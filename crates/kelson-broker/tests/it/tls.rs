//! TLS to the broker: a Redis and a NATS server of the test's own with certificates from a CA the
//! test makes (rcgen). Changes cross instances over TLS; a certificate from another CA, one for
//! another name, a missing client certificate and a plain URL to a TLS server are all refused,
//! and the reason is kept for `/readyz` and the log.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kelson_broker::Broker;
use kelson_server::Server;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use serde_json::json;

use super::{WAIT, channel, free_port, instance, listen, next, said};

/// A CA of the test's own, and what it signs, as PEM files in a scratch folder.
struct Pki {
    dir: PathBuf,
    issuer: Issuer<'static, KeyPair>,
}

impl Pki {
    fn new(name: &str) -> Pki {
        let dir = std::env::temp_dir().join(format!(
            "mcp-broker-tls-{name}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .subsec_nanos()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let cert = params.self_signed(&key).unwrap();
        std::fs::write(dir.join("ca.pem"), cert.pem()).unwrap();
        Pki {
            dir,
            issuer: Issuer::new(params, key),
        }
    }

    fn ca(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    /// A certificate for `names`, signed by the CA: `(cert, key)` files named after `file`.
    fn issue(&self, file: &str, names: &[&str]) -> (PathBuf, PathBuf) {
        let key = KeyPair::generate().unwrap();
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let mut params = CertificateParams::new(names).unwrap();
        params.distinguished_name.push(DnType::CommonName, file);
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        let (c, k) = (
            self.dir.join(format!("{file}.pem")),
            self.dir.join(format!("{file}.key")),
        );
        std::fs::write(&c, cert.pem()).unwrap();
        std::fs::write(&k, key.serialize_pem()).unwrap();
        (c, k)
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A server process, killed when dropped.
struct Process(Child);

impl Process {
    fn start(program: &str, args: &[&str], port: u16) -> Process {
        let child = Command::new(program)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("{program} runs ({e}; Debian's package, .ci/run installs it)")
            });
        let deadline = Instant::now() + WAIT;
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "{program} did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        Process(child)
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A broker on `url` that must not connect: why, as [`Broker::last_error`] says.
async fn refused(url: &str) -> String {
    let broker = Broker::new(url, &channel("refused")).unwrap();
    let server = Server::builder("t", "1")
        .relay(std::sync::Arc::new(broker.clone()))
        .build()
        .unwrap();
    broker.start(server.relay_inlet());
    let deadline = Instant::now() + WAIT;
    loop {
        assert!(!broker.is_connected(), "{url} connected");
        if let Some(why) = broker.last_error() {
            eprintln!("{url}: {why}");
            assert!(
                !broker.wait_connected(Duration::from_millis(300)).await,
                "{url} connected"
            );
            return why;
        }
        assert!(Instant::now() < deadline, "{url}: no error within 10 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn redis_over_tls_with_client_certificates() {
    if !kelson_testenv::program("redis-server") {
        return;
    }
    let pki = Pki::new("redis-ca");
    let (cert, key) = pki.issue("server", &["localhost"]);
    let (client_cert, client_key) = pki.issue("client", &["mcp-instance"]);
    let port = free_port();
    let _redis = Process::start(
        "redis-server",
        &[
            "--port",
            "0",
            "--tls-port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--tls-cert-file",
            path(&cert),
            "--tls-key-file",
            path(&key),
            "--tls-ca-cert-file",
            path(&pki.ca()),
            "--tls-auth-clients",
            "yes",
            "--save",
            "",
            "--appendonly",
            "no",
        ],
        port,
    );
    let url = format!(
        "rediss://localhost:{port}?sslrootcert={}&sslcert={}&sslkey={}",
        path(&pki.ca()),
        path(&client_cert),
        path(&client_key)
    );
    let channel = channel("tls-redis");
    let a = instance(&url, &channel).await;
    let b = instance(&url, &channel).await;
    assert_eq!(a.broker.describe(), format!("rediss://localhost:{port}"));
    let mut on_a = listen(&a.server, json!({"resourceSubscriptions": ["sql://db/"]})).await;
    b.server.notify_resource_updated("sql://db/t");
    assert_eq!(said(&next(&mut on_a).await), "updated sql://db/t");

    // No client certificate: the server ends the handshake.
    let why = refused(&format!(
        "rediss://localhost:{port}?sslrootcert={}",
        path(&pki.ca())
    ))
    .await;
    assert!(!why.is_empty());
    // The server's certificate checked against another CA, or for another name.
    let other = Pki::new("other-ca");
    let why = refused(&format!(
        "rediss://localhost:{port}?sslrootcert={}",
        path(&other.ca())
    ))
    .await;
    assert!(why.contains("certificate"), "{why}");
    let why = refused(&format!(
        "rediss://127.0.0.1:{port}?sslrootcert={}&sslcert={}&sslkey={}",
        path(&pki.ca()),
        path(&client_cert),
        path(&client_key)
    ))
    .await;
    assert!(why.contains("certificate"), "{why}");
    // Plain text to a TLS port.
    let why = refused(&format!("redis://localhost:{port}")).await;
    assert!(!why.is_empty());
}

#[tokio::test]
async fn nats_over_tls_and_a_plain_url_to_a_tls_server() {
    if !kelson_testenv::program("nats-server") {
        return;
    }
    let pki = Pki::new("nats-ca");
    let (cert, key) = pki.issue("server", &["localhost"]);
    let port = free_port();
    let _nats = Process::start(
        "nats-server",
        &[
            "-a",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "--tls",
            "--tlscert",
            path(&cert),
            "--tlskey",
            path(&key),
        ],
        port,
    );
    let url = format!("tls://localhost:{port}?sslrootcert={}", path(&pki.ca()));
    let channel = channel("tls-nats");
    let a = instance(&url, &channel).await;
    let b = instance(&url, &channel).await;
    assert_eq!(a.broker.describe(), format!("tls://localhost:{port}"));
    let mut on_a = listen(&a.server, json!({"toolsListChanged": true})).await;
    b.server.add_tool("late", || async { "ok" }).unwrap();
    assert_eq!(said(&next(&mut on_a).await), "list_changed");

    let why = refused(&format!("nats://localhost:{port}")).await;
    assert!(why.contains("requires TLS: use a tls:// URL"), "{why}");
    // And TLS asked of a server without it (the plain NATS on 4222), refused in words too.
    if kelson_testenv::nats() {
        let why = refused(&format!(
            "tls://127.0.0.1:4222?sslrootcert={}",
            path(&pki.ca())
        ))
        .await;
        assert!(why.contains("does not offer TLS"), "{why}");
    }
    let other = Pki::new("other-nats-ca");
    let why = refused(&format!(
        "tls://localhost:{port}?sslrootcert={}",
        path(&other.ca())
    ))
    .await;
    assert!(why.contains("certificate"), "{why}");
}
