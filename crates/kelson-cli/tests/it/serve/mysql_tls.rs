//! `kelson serve` on a MariaDB server that this test starts itself (`mariadb-install-db`, `mariadbd`
//! with a certificate made by the test for 127.0.0.1 and db.example, and an account that must
//! connect over TLS): verify-full with the CA file works, from the URL and from the configuration
//! file's keys; `require` encrypts without a CA file; a wrong CA and a host name the certificate is
//! not for are refused at start with what went wrong; `verify-ca`, which the driver cannot do, is
//! refused in words.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::support::{Serve, TempDir, rows, serve_refused};
use crate::certs::TestCa;

/// Where `program` is: on `PATH` or in /usr/sbin and /usr/bin.
fn find(program: &str) -> Option<PathBuf> {
    let from_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    from_path
        .into_iter()
        .chain(["/usr/sbin", "/usr/bin"].map(PathBuf::from))
        .map(|dir| dir.join(program))
        .find(|path| path.is_file())
}

/// Whether MariaDB's server binaries are installed, as `kelson_testenv::require` reports it.
fn server_binaries() -> bool {
    kelson_testenv::require(
        find("mariadbd").is_some() && find("mariadb-install-db").is_some(),
        "MariaDB's server binaries (mariadbd, mariadb-install-db) are not installed",
        "install MariaDB's server (apt-get install mariadb-server; scripts/mariadb does)",
    )
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// A MariaDB server of the test's own, stopped when dropped.
struct Server {
    dir: TempDir,
    port: u16,
    ca_file: PathBuf,
    child: Child,
}

impl Server {
    fn start() -> Server {
        let dir = TempDir::new();
        let ca = TestCa::new("kelson MariaDB test CA");
        let ca_file = ca.write(dir.path(), "ca.pem");
        let (cert, key) = ca
            .server(&["db.example", "127.0.0.1"], "db.example", 12)
            .write(dir.path(), "server");
        let data = dir.join("data");
        // As root, the server runs as root too (`--user=root`) rather than changing owners.
        let user = if is_root() {
            "--user=root".to_owned()
        } else {
            format!(
                "--user={}",
                std::env::var("USER").unwrap_or_else(|_| "nobody".into())
            )
        };
        let out = Command::new(find("mariadb-install-db").expect("checked by the test"))
            .args(["--no-defaults", "--auth-root-authentication-method=normal"])
            .arg("--skip-test-db")
            .arg(&user)
            .arg(format!("--datadir={}", data.display()))
            .output()
            .expect("mariadb-install-db runs");
        assert!(
            out.status.success(),
            "mariadb-install-db failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let port = {
            let probe = TcpListener::bind("127.0.0.1:0").unwrap();
            probe.local_addr().unwrap().port()
        };
        let socket = dir.join("mariadb.sock");
        let child = Command::new(find("mariadbd").expect("checked by the test"))
            .arg("--no-defaults")
            .arg(&user)
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--pid-file={}", dir.join("mariadb.pid").display()))
            .arg(format!("--port={port}"))
            .args(["--bind-address=127.0.0.1", "--skip-log-bin"])
            .args(["--innodb-buffer-pool-size=16M", "--innodb-log-file-size=8M"])
            .arg(format!("--ssl-cert={}", cert.display()))
            .arg(format!("--ssl-key={}", key.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("mariadbd starts");
        let server = Server {
            dir,
            port,
            ca_file,
            child,
        };
        server.setup();
        server
    }

    /// Waits until the server answers, then makes an account that may connect only over TLS, and
    /// a table it may read.
    fn setup(&self) {
        use mysql_async::prelude::Queryable as _;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let url = format!("mysql://root@127.0.0.1:{}/mysql", self.port);
        let began = Instant::now();
        let mut conn = loop {
            match runtime.block_on(mysql_async::Conn::from_url(url.as_str())) {
                Ok(conn) => break conn,
                Err(e) => {
                    assert!(
                        began.elapsed() < Duration::from_secs(60),
                        "the test's MariaDB did not start: {e}"
                    );
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        };
        for statement in [
            "CREATE DATABASE pets",
            "CREATE TABLE pets.pets (id int PRIMARY KEY, name varchar(20) NOT NULL)",
            "INSERT INTO pets.pets VALUES (1, 'Rex'), (2, 'Tom')",
            "CREATE USER 'reader'@'%' REQUIRE SSL",
            "GRANT SELECT ON pets.* TO 'reader'@'%'",
        ] {
            runtime
                .block_on(conn.query_drop(statement))
                .unwrap_or_else(|e| panic!("{statement}: {e}"));
        }
        let _ = runtime.block_on(conn.disconnect());
    }

    fn url(&self, host: &str, query: &str) -> String {
        format!("mysql://reader@{host}:{}/pets?{query}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = &self.dir;
    }
}

#[test]
fn mysql_over_tls_is_verified_fully_and_refused_clearly() {
    if !server_binaries() {
        return;
    }
    let server = Server::start();
    let ca = server.ca_file.display().to_string();
    let scratch = TempDir::new();
    let cipher = |serve: &Serve| {
        let status = serve.query("SHOW SESSION STATUS LIKE 'Ssl_cipher'");
        rows(&status)[0][1].as_str().unwrap_or_default().to_owned()
    };

    // verify-full with the CA file, in the URL: served, over TLS.
    let url = server.url(
        "127.0.0.1",
        &format!("sslmode=verify-full&sslrootcert={ca}"),
    );
    let serve = Serve::start(scratch.path(), &["--db", &url]);
    let pets = serve.query("select name from pets order by id");
    assert_eq!(rows(&pets).len(), 2, "{pets}");
    assert!(!cipher(&serve).is_empty());
    drop(serve);

    // The same from the configuration file's keys, the CA file relative to the file.
    let config = server.dir.join("kelson.toml");
    std::fs::write(
        &config,
        format!(
            "[databases.pets]\nurl = \"{}\"\nssl_mode = \"verify-full\"\nssl_root_cert = \"ca.pem\"\n",
            server.url("127.0.0.1", "")
        ),
    )
    .unwrap();
    let serve = Serve::start(scratch.path(), &["--config", config.to_str().unwrap()]);
    assert_eq!(
        rows(&serve.query("select count(*) as n from pets"))[0][0],
        2
    );
    drop(serve);

    // MySQL's own names for the settings; `REQUIRED` without a CA file encrypts, unchecked.
    let url = server.url("127.0.0.1", "ssl-mode=REQUIRED");
    let serve = Serve::start(scratch.path(), &["--db", &url]);
    assert!(!cipher(&serve).is_empty());
    drop(serve);

    // A CA that did not issue the server's certificate.
    let other = TestCa::new("another CA").write(scratch.path(), "other-ca.pem");
    let url = server.url(
        "127.0.0.1",
        &format!("sslmode=verify-full&ssl-ca={}", other.display()),
    );
    let run = serve_refused(scratch.path(), &["--http", "127.0.0.1:0", "--db", &url]);
    assert_ne!(run.code, Some(0));
    assert!(
        run.stderr.contains("not signed by a trusted CA"),
        "{}",
        run.stderr
    );

    // A host name the certificate is not for (it is for db.example and 127.0.0.1).
    let url = server.url(
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={ca}"),
    );
    let run = serve_refused(scratch.path(), &["--http", "127.0.0.1:0", "--db", &url]);
    assert!(
        run.stderr
            .contains("the certificate is not for the host name localhost"),
        "{}",
        run.stderr
    );

    // verify-ca is not supported for MySQL, and says so; `require` with a CA file checks the
    // whole certificate, name included.
    let url = server.url("localhost", &format!("sslmode=verify-ca&sslrootcert={ca}"));
    let run = serve_refused(scratch.path(), &["--http", "127.0.0.1:0", "--db", &url]);
    assert!(
        run.stderr
            .contains("sslmode verify-ca is not supported for MySQL"),
        "{}",
        run.stderr
    );
    let url = server.url("localhost", &format!("sslmode=require&sslrootcert={ca}"));
    let run = serve_refused(scratch.path(), &["--http", "127.0.0.1:0", "--db", &url]);
    assert!(
        run.stderr.contains("not for the host name localhost"),
        "{}",
        run.stderr
    );
    let url = server.url("127.0.0.1", &format!("sslmode=require&sslrootcert={ca}"));
    let serve = Serve::start(scratch.path(), &["--db", &url]);
    assert!(!cipher(&serve).is_empty());
    drop(serve);

    // No TLS for an account that must use it: the server's refusal.
    let url = server.url("127.0.0.1", "sslmode=disable");
    let run = serve_refused(scratch.path(), &["--http", "127.0.0.1:0", "--db", &url]);
    assert!(run.stderr.contains("Access denied"), "{}", run.stderr);
    // `prefer` is not supported, and says so.
    let url = server.url("127.0.0.1", "sslmode=prefer");
    let run = serve_refused(scratch.path(), &["--http", "127.0.0.1:0", "--db", &url]);
    assert!(
        run.stderr
            .contains("sslmode prefer is not supported for MySQL"),
        "{}",
        run.stderr
    );
}
