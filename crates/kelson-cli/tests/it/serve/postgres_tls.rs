//! `kelson serve` on a PostgreSQL cluster that this test starts itself (`initdb`, `postgres` with
//! `ssl = on` and a certificate made by the test for 127.0.0.1 and db.example, and a pg_hba.conf
//! that accepts TLS connections only): verify-full with the CA file works, from the URL and from
//! the configuration file's keys, and so does the approval ledger; a wrong CA, a host name the
//! certificate is not for, and `sslmode=disable` are refused at start with what went wrong.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::support::{Serve, TempDir, rows, serve_refused};
use crate::certs::TestCa;

/// Where the server binaries may be, besides `PATH`.
const PLACES: &[&str] = &[
    "/usr/local/bin",
    "/usr/lib/postgresql/17/bin",
    "/usr/lib/postgresql/16/bin",
    "/usr/lib/postgresql/15/bin",
];

/// Where `program` is: on `PATH` or in one of [`PLACES`].
pub(super) fn find(program: &str) -> Option<PathBuf> {
    let from_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    from_path
        .into_iter()
        .chain(PLACES.iter().map(PathBuf::from))
        .map(|dir| dir.join(program))
        .find(|path| path.is_file())
}

/// Whether PostgreSQL's server binaries are installed, as `kelson_testenv::require` reports it.
pub(super) fn server_binaries() -> bool {
    kelson_testenv::require(
        find("initdb").is_some() && find("postgres").is_some(),
        "PostgreSQL's server binaries (initdb, postgres) are not installed",
        "install PostgreSQL's server (apt-get install postgresql; scripts/postgres does) or put \
         its bin folder on PATH",
    )
}

pub(super) fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// `program`, run as the `postgres` user when this test runs as root (initdb and postgres refuse
/// to run as root).
pub(super) fn as_cluster_user(program: &Path) -> Command {
    if is_root() {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--"]).arg(program);
        command
    } else {
        Command::new(program)
    }
}

/// A PostgreSQL cluster of the test's own, stopped when dropped.
struct Cluster {
    dir: TempDir,
    data: PathBuf,
    port: u16,
    ca_file: PathBuf,
    server: Child,
}

impl Cluster {
    fn start() -> Cluster {
        let (initdb, postgres) = (
            find("initdb").expect("checked by the test"),
            find("postgres").expect("checked by the test"),
        );
        let dir = TempDir::new();
        let ca = TestCa::new("kelson PostgreSQL test CA");
        let ca_file = ca.write(dir.path(), "ca.pem");
        let (cert, key) = ca
            .server(&["db.example", "127.0.0.1"], "db.example", 11)
            .write(dir.path(), "server");
        let data = dir.join("data");
        let sockets = dir.join("sockets");
        std::fs::create_dir_all(&sockets).unwrap();
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        if is_root() {
            let status = Command::new("chown")
                .args(["-R", "postgres:"])
                .arg(dir.path())
                .status()
                .expect("chown");
            assert!(status.success(), "chown the cluster's folder to postgres");
        }
        let out = as_cluster_user(&initdb)
            .args(["-D"])
            .arg(&data)
            .args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "-N"])
            .output()
            .expect("initdb runs");
        assert!(
            out.status.success(),
            "initdb failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // TLS connections only over TCP; the Unix socket (for setting up) trusts its user.
        std::fs::write(
            data.join("pg_hba.conf"),
            "local all all trust\nhostssl all all 127.0.0.1/32 trust\nhostssl all all ::1/128 trust\n",
        )
        .unwrap();
        let port = {
            let probe = TcpListener::bind("127.0.0.1:0").unwrap();
            probe.local_addr().unwrap().port()
        };
        let server = as_cluster_user(&postgres)
            .arg("-D")
            .arg(&data)
            .args(["-p", &port.to_string(), "-k"])
            .arg(&sockets)
            .args([
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "ssl=on",
                "-c",
                "fsync=off",
            ])
            .arg("-c")
            .arg(format!("ssl_cert_file={}", cert.display()))
            .arg("-c")
            .arg(format!("ssl_key_file={}", key.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("postgres starts");
        let cluster = Cluster {
            dir,
            data,
            port,
            ca_file,
            server,
        };
        cluster.setup(&sockets);
        cluster
    }

    /// Waits until the server answers on its socket, then makes a least-privilege role and a
    /// table.
    fn setup(&self, sockets: &Path) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let config = format!(
            "host={} port={} user=postgres dbname=postgres",
            sockets.display(),
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
            .block_on(client.batch_execute(
                "CREATE ROLE reader LOGIN NOSUPERUSER;
                 CREATE TABLE pets (id int PRIMARY KEY, name text NOT NULL);
                 INSERT INTO pets VALUES (1, 'Rex'), (2, 'Tom');
                 GRANT SELECT ON pets TO reader;
                 CREATE ROLE ledger LOGIN NOSUPERUSER;
                 CREATE SCHEMA ledger AUTHORIZATION ledger;
                 ALTER ROLE ledger SET search_path = ledger;",
            ))
            .expect("set up the test's cluster");
    }

    /// `postgres://ROLE@HOST:PORT/postgres` with `query` after `?`.
    fn url(&self, role: &str, host: &str, query: &str) -> String {
        format!("postgres://{role}@{host}:{}/postgres?{query}", self.port)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let stopped = as_cluster_user(&find("pg_ctl").expect("installed with initdb"))
            .arg("stop")
            .arg("-D")
            .arg(&self.data)
            .args(["-m", "immediate"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if !stopped.is_ok_and(|s| s.success()) {
            let _ = self.server.kill();
        }
        let _ = self.server.wait();
    }
}

#[test]
fn postgres_over_tls_is_verified_fully_and_refused_clearly() {
    if !server_binaries() {
        return;
    }
    let cluster = Cluster::start();
    let ca = cluster.ca_file.display().to_string();
    let scratch = TempDir::new();

    // verify-full with the CA file, in the URL: served, over TLS.
    let url = cluster.url(
        "reader",
        "127.0.0.1",
        &format!("sslmode=verify-full&sslrootcert={ca}"),
    );
    let serve = Serve::start(scratch.path(), &["--db", &url]);
    let pets = serve.query("select name from pets order by id");
    assert_eq!(rows(&pets).len(), 2, "{pets}");
    let ssl = serve.query("select ssl from pg_stat_ssl where pid = pg_backend_pid()");
    assert_eq!(rows(&ssl)[0][0], true, "{ssl}");
    drop(serve);

    // The same from the configuration file's keys, the CA file relative to the file; and the
    // approval ledger over TLS from its URL.
    let config = cluster.dir.join("kelson.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\napproval_ledger = \"{}\"\n\n\
             [databases.pets]\nurl = \"{}\"\nssl_mode = \"verify-full\"\nssl_root_cert = \"ca.pem\"\nallow_write = true\n",
            cluster.url("ledger", "127.0.0.1", &format!("sslmode=verify-full&sslrootcert={ca}")),
            cluster.url("reader", "127.0.0.1", "application_name=pets"),
        ),
    )
    .unwrap();
    let serve = Serve::start(scratch.path(), &["--config", config.to_str().unwrap()]);
    let pets = serve.query("select count(*)::int as n from pets");
    assert_eq!(rows(&pets)[0][0], 2, "{pets}");
    drop(serve);

    // A CA that did not issue the server's certificate.
    let other = TestCa::new("another CA").write(scratch.path(), "other-ca.pem");
    let url = cluster.url(
        "reader",
        "127.0.0.1",
        &format!("sslmode=verify-full&sslrootcert={}", other.display()),
    );
    let run = serve_refused(scratch.path(), &["--http", "127.0.0.1:0", "--db", &url]);
    assert_ne!(run.code, Some(0));
    assert!(
        run.stderr.contains(&format!(
            "certificate not trusted (CA file {})",
            other.display()
        )),
        "{}",
        run.stderr
    );

    // A host name the certificate is not for (it is for db.example and 127.0.0.1).
    let url = cluster.url(
        "reader",
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={ca}"),
    );
    let run = serve_refused(scratch.path(), &["--http", "127.0.0.1:0", "--db", &url]);
    assert!(
        run.stderr
            .contains("host name mismatch: the certificate is for db.example"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("not localhost"), "{}", run.stderr);

    // verify-ca checks the issuer only: the same name is accepted.
    let url = cluster.url(
        "reader",
        "localhost",
        &format!("sslmode=verify-ca&sslrootcert={ca}"),
    );
    let serve = Serve::start(scratch.path(), &["--db", &url]);
    assert_eq!(rows(&serve.query("select 1 as one")).len(), 1);
    drop(serve);

    // No TLS where the server accepts only TLS: the server's refusal, explained.
    let url = cluster.url("reader", "127.0.0.1", "sslmode=disable");
    let run = serve_refused(scratch.path(), &["--http", "127.0.0.1:0", "--db", &url]);
    assert!(run.stderr.contains("no encryption"), "{}", run.stderr);
    assert!(
        run.stderr.contains("this connection is not encrypted"),
        "{}",
        run.stderr
    );

    // The approval ledger with the wrong CA is refused at start, naming the ledger.
    let run = serve_refused(
        scratch.path(),
        &[
            "--http",
            "127.0.0.1:0",
            "--allow-write",
            "--approval-ledger",
            &cluster.url(
                "ledger",
                "127.0.0.1",
                &format!("sslmode=verify-full&sslrootcert={}", other.display()),
            ),
        ],
    );
    assert!(run.stderr.contains("approval ledger"), "{}", run.stderr);
    assert!(
        run.stderr.contains("certificate not trusted"),
        "{}",
        run.stderr
    );
}
