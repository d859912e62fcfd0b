//! `kelson serve` against a PostgreSQL cluster of the test's own that asks for passwords: each
//! authentication method the adapter's connections speak (SCRAM-SHA-256, MD5, cleartext) lets the
//! right password in and serves a query; a wrong password or a missing one is refused at the start
//! with the server's own words.

use serde_json::json;

use super::pg_restart::Cluster;
use super::postgres_tls::server_binaries;
use super::support::{Serve, TempDir, mcp_in, meta, post};

const HBA: &str = "local all postgres trust
host all scram_r 127.0.0.1/32 scram-sha-256
host all md5_r 127.0.0.1/32 md5
host all clear_r 127.0.0.1/32 password
";

fn cluster() -> Cluster {
    let cluster = Cluster::with_hba(Some(HBA));
    cluster.run(
        "SET password_encryption = 'scram-sha-256';
         CREATE ROLE scram_r LOGIN PASSWORD 'open sesame';
         CREATE ROLE clear_r LOGIN PASSWORD 'open sesame';
         SET password_encryption = 'md5';
         CREATE ROLE md5_r LOGIN PASSWORD 'open sesame';
         GRANT SELECT ON pets TO scram_r, md5_r, clear_r;",
    );
    cluster
}

fn url(cluster: &Cluster, role: &str, password: Option<&str>) -> String {
    match password {
        Some(p) => format!(
            "postgres://{role}:{}@127.0.0.1:{}/postgres",
            p.replace(' ', "%20"),
            cluster.port()
        ),
        None => format!("postgres://{role}@127.0.0.1:{}/postgres", cluster.port()),
    }
}

#[test]
fn every_password_method_lets_the_right_password_in_and_refuses_a_wrong_one() {
    if !server_binaries() {
        return;
    }
    let cluster = cluster();
    let scratch = TempDir::new();
    for role in ["scram_r", "md5_r", "clear_r"] {
        let serve = Serve::start(
            &scratch.join(role),
            &["--db", &url(&cluster, role, Some("open sesame"))],
        );
        let reply = post(
            &serve.url,
            "tools/call",
            Some("query"),
            json!({"name": "query", "arguments": {"sql": "SELECT count(*) FROM pets"}, "_meta": meta(false)}),
        );
        assert_eq!(
            reply["result"]["structuredContent"]["rows"],
            json!([[2]]),
            "{role}: {reply}"
        );

        let wrong = url(&cluster, role, Some("open barley"));
        let run = mcp_in(
            &scratch.join(role),
            &["serve", "--check", "--db", &wrong],
            "",
        );
        run.expect_code(3);
        assert!(
            run.stderr.contains(&format!(
                "password authentication failed for user \"{role}\""
            )),
            "{role}: {}",
            run.stderr
        );
        assert!(!run.stderr.contains("barley"), "{}", run.stderr);

        let missing = url(&cluster, role, None);
        let run = mcp_in(
            &scratch.join(role),
            &["serve", "--check", "--db", &missing],
            "",
        );
        run.expect_code(3);
        assert!(
            run.stderr
                .contains("the server asks for a password, and the connection string has none"),
            "{role}: {}",
            run.stderr
        );
    }
}
