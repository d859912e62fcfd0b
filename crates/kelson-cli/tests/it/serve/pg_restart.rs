//! `kelson serve` while its PostgreSQL server restarts under load, on a cluster this test starts
//! itself (`initdb`, `postgres`; the shared test server is left alone): the calls in flight and
//! those made while the database is down are answered with a tool error that says so, none is
//! lost or left hanging, the server stays up, and once PostgreSQL is back the calls succeed again
//! without a restart of `kelson serve`.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use super::postgres_tls::{as_cluster_user, find, is_root, server_binaries};
use super::support::{Serve, TempDir, meta, post};

/// A plain PostgreSQL cluster of the test's own that can be stopped and started again.
pub(super) struct Cluster {
    /// Holds the data directory and the sockets until the cluster is dropped.
    _dir: TempDir,
    data: PathBuf,
    sockets: PathBuf,
    port: u16,
    server: Option<Child>,
}

impl Cluster {
    fn new() -> Cluster {
        Cluster::with_hba(None)
    }

    /// A cluster whose `pg_hba.conf` is `hba` (the default, trust for everyone, without it).
    pub(super) fn with_hba(hba: Option<&str>) -> Cluster {
        let dir = TempDir::new();
        let data = dir.join("data");
        let sockets = dir.join("sockets");
        std::fs::create_dir_all(&sockets).unwrap();
        if is_root() {
            let status = std::process::Command::new("chown")
                .args(["-R", "postgres:"])
                .arg(dir.path())
                .status()
                .expect("chown");
            assert!(status.success(), "chown the cluster's folder to postgres");
        }
        let out = as_cluster_user(&find("initdb").expect("checked"))
            .arg("-D")
            .arg(&data)
            .args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "-N"])
            .output()
            .expect("initdb runs");
        assert!(
            out.status.success(),
            "initdb failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        if let Some(hba) = hba {
            std::fs::write(data.join("pg_hba.conf"), hba).expect("write pg_hba.conf");
        }
        let port = {
            let probe = TcpListener::bind("127.0.0.1:0").unwrap();
            probe.local_addr().unwrap().port()
        };
        let mut cluster = Cluster {
            _dir: dir,
            data,
            sockets,
            port,
            server: None,
        };
        cluster.start();
        cluster.run(
            "CREATE ROLE reader LOGIN NOSUPERUSER;
             CREATE TABLE pets (id int PRIMARY KEY, name text NOT NULL);
             INSERT INTO pets VALUES (1, 'Rex'), (2, 'Tom');
             GRANT SELECT ON pets TO reader;",
        );
        cluster
    }

    /// Starts the server and waits until it answers.
    fn start(&mut self) {
        let server = as_cluster_user(&find("postgres").expect("checked"))
            .arg("-D")
            .arg(&self.data)
            .args(["-p", &self.port.to_string(), "-k"])
            .arg(&self.sockets)
            .args(["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("postgres starts");
        self.server = Some(server);
        self.run("SELECT 1");
    }

    /// Stops the server the way a restart does (fast shutdown: sessions are ended at once).
    fn stop(&mut self) {
        let status = as_cluster_user(&find("pg_ctl").expect("installed with initdb"))
            .arg("stop")
            .arg("-D")
            .arg(&self.data)
            .args(["-m", "fast", "-w"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("pg_ctl runs");
        assert!(status.success(), "pg_ctl stop");
        if let Some(mut server) = self.server.take() {
            let _ = server.wait();
        }
    }

    /// Runs `sql` over the Unix socket as `postgres`, retrying the connection for 30 seconds.
    pub(super) fn run(&self, sql: &str) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let config = format!(
            "host={} port={} user=postgres dbname=postgres",
            self.sockets.display(),
            self.port
        );
        let began = Instant::now();
        let client = loop {
            match runtime.block_on(tokio_postgres::connect(&config, tokio_postgres::NoTls)) {
                Ok((client, connection)) => {
                    runtime.spawn(connection);
                    break client;
                }
                Err(e) => {
                    assert!(
                        began.elapsed() < Duration::from_secs(30),
                        "the test's PostgreSQL did not start: {e}"
                    );
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        };
        runtime
            .block_on(client.batch_execute(sql))
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    pub(super) fn port(&self) -> u16 {
        self.port
    }

    fn url(&self, role: &str) -> String {
        format!("postgres://{role}@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Some(mut server) = self.server.take() {
            let _ = as_cluster_user(&find("pg_ctl").expect("installed with initdb"))
                .arg("stop")
                .arg("-D")
                .arg(&self.data)
                .args(["-m", "immediate"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
            let _ = server.kill();
            let _ = server.wait();
        }
    }
}

/// How a call came out.
#[derive(Debug, PartialEq)]
enum Answer {
    Rows,
    ToolError(String),
}

fn query(url: &str, sql: &str) -> Answer {
    let reply = post(
        url,
        "tools/call",
        Some("query"),
        json!({"name": "query", "arguments": {"sql": sql}, "_meta": meta(false)}),
    );
    let result = &reply["result"];
    assert!(
        result.is_object(),
        "a result, not a JSON-RPC error: {reply}"
    );
    if result["isError"] == json!(true) {
        Answer::ToolError(
            result["content"][0]["text"]
                .as_str()
                .unwrap_or("")
                .to_owned(),
        )
    } else {
        assert_eq!(result["structuredContent"]["rows"], json!([[2]]), "{reply}");
        Answer::Rows
    }
}

/// Whether a tool error is one of the two a restart gives: the session ended by the shutdown
/// (57P01, in the server's words), or no server to connect to.
fn cut(e: &str) -> bool {
    e.starts_with("The database is unavailable")
        || e.contains("terminating connection due to administrator command (SQLSTATE 57P01)")
}

#[test]
fn a_postgres_restart_under_load_fails_the_calls_it_cuts_and_then_serving_resumes() {
    if !server_binaries() {
        return;
    }
    let mut cluster = Cluster::new();
    let scratch = TempDir::new();
    let serve = Serve::start(
        &scratch.join("data"),
        &["--db", &cluster.url("reader"), "--query-timeout", "1m"],
    );
    assert_eq!(query(&serve.url, "SELECT count(*) FROM pets"), Answer::Rows);

    // Load: four clients calling in a loop, and one call that holds a statement open.
    let stop = Arc::new(AtomicBool::new(false));
    let (sent, answered) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (url, stop) = (serve.url.clone(), stop.clone());
            let (sent, answered) = (sent.clone(), answered.clone());
            std::thread::spawn(move || {
                let mut errors = Vec::new();
                while !stop.load(Ordering::SeqCst) {
                    sent.fetch_add(1, Ordering::SeqCst);
                    if let Answer::ToolError(e) = query(&url, "SELECT count(*) FROM pets") {
                        errors.push(e);
                    }
                    answered.fetch_add(1, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(20));
                }
                errors
            })
        })
        .collect();
    let url = serve.url.clone();
    let held = std::thread::spawn(move || query(&url, "SELECT pg_sleep(30), 1"));
    std::thread::sleep(Duration::from_millis(500));

    cluster.stop();
    std::thread::sleep(Duration::from_millis(500));
    // While it is down: a tool error that says what happened, at once.
    let began = Instant::now();
    let Answer::ToolError(down) = query(&serve.url, "SELECT count(*) FROM pets") else {
        panic!("a call while the database is down succeeded");
    };
    assert!(
        began.elapsed() < Duration::from_secs(15),
        "the call while down took {:?}",
        began.elapsed()
    );
    assert!(
        down.starts_with("The database is unavailable: connection refused at 127.0.0.1:"),
        "{down}"
    );
    // The statement in flight was cut and answered as a tool error, not left hanging.
    match held.join().expect("the held call is answered") {
        Answer::ToolError(e) => assert!(cut(&e), "{e}"),
        Answer::Rows => panic!("pg_sleep(30) finished across a restart"),
    }

    cluster.start();
    // Serving resumes without a restart of kelson serve.
    let deadline = Instant::now() + Duration::from_secs(20);
    while query(&serve.url, "SELECT count(*) FROM pets") != Answer::Rows {
        assert!(Instant::now() < deadline, "calls never succeeded again");
        std::thread::sleep(Duration::from_millis(200));
    }
    stop.store(true, Ordering::SeqCst);
    let mut errors = Vec::new();
    for w in workers {
        errors.extend(w.join().expect("a worker ends"));
    }
    assert_eq!(
        sent.load(Ordering::SeqCst),
        answered.load(Ordering::SeqCst),
        "every call is answered"
    );
    assert!(
        !errors.is_empty(),
        "the restart was seen by the load (tool errors while it was down)"
    );
    // And the load's last calls, after the restart, succeeded.
    for _ in 0..5 {
        assert_eq!(query(&serve.url, "SELECT count(*) FROM pets"), Answer::Rows);
    }
    for e in &errors {
        assert!(cut(e), "{e}");
    }
}
