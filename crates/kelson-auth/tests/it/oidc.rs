//! A real authorization server: oidc-provider in a Node child process (peers/interop/oidc-as.mjs).

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The scopes the AS grants its client.
pub const CLIENT: (&str, &str) = ("kelson-client", "kelson-client-secret");
/// The resource server's own credentials, for introspection.
pub const RS: (&str, &str) = ("kelson", "kelson-secret");

/// The peers' folder, when Node and oidc-provider are installed there; `None` (said in one line)
/// otherwise.
fn peers() -> Option<kelson_testenv::Peers> {
    kelson_testenv::Peers::get(&[
        "node_modules/.bin/node",
        "node_modules/oidc-provider/package.json",
    ])
}

/// A running oidc-provider, killed when dropped.
pub struct OidcAs {
    pub issuer: String,
    port: u16,
    keys: tempfile_path::TempDir,
    resources: Vec<String>,
    opaque: Vec<String>,
    child: Child,
}

/// A temporary folder removed when dropped (the keys file lives there).
mod tempfile_path {
    use std::path::{Path, PathBuf};

    pub struct TempDir(PathBuf);

    impl TempDir {
        pub fn new() -> Self {
            let path = std::env::temp_dir().join(format!(
                "mcp-auth-it-{}-{}",
                std::process::id(),
                rand_suffix()
            ));
            std::fs::create_dir_all(&path).unwrap();
            TempDir(path)
        }

        pub fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn rand_suffix() -> u64 {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos() as u64;
        t ^ (NEXT.fetch_add(1, Ordering::SeqCst) << 32)
    }
}

impl OidcAs {
    /// Starts the AS issuing JWTs for `resources` and opaque tokens for `opaque`; `None` when
    /// oidc-provider is not installed.
    pub async fn start(resources: &[&str], opaque: &[&str]) -> Option<Self> {
        peers()?;
        let keys = tempfile_path::TempDir::new();
        let resources: Vec<String> = resources.iter().map(|s| s.to_string()).collect();
        let opaque: Vec<String> = opaque.iter().map(|s| s.to_string()).collect();
        let (child, issuer, port) = launch(&keys, 0, "a", &resources, &opaque).await;
        Some(OidcAs {
            issuer,
            port,
            keys,
            resources,
            opaque,
            child,
        })
    }

    /// Restarts on the same port (same issuer), signing with key `kid` from now on and publishing
    /// it first, with the old keys after it: a key rotation.
    pub async fn rotate(&mut self, kid: &str) {
        self.child.kill().await.unwrap();
        let (child, issuer, _) =
            launch(&self.keys, self.port, kid, &self.resources, &self.opaque).await;
        assert_eq!(issuer, self.issuer);
        self.child = child;
    }

    /// Stops the AS (an outage).
    pub async fn stop(&mut self) {
        self.child.kill().await.unwrap();
    }

    /// A client_credentials access token for `resource` with `scope`.
    pub async fn token(&self, resource: &str, scope: &str) -> String {
        let response = reqwest::Client::new()
            .post(format!("{}/token", self.issuer))
            .basic_auth(CLIENT.0, Some(CLIENT.1))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(crate::harness::form(&[
                ("grant_type", "client_credentials"),
                ("resource", resource),
                ("scope", scope),
            ]))
            .send()
            .await
            .unwrap();
        let status = response.status();
        let body: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
        assert_eq!(status, 200, "the token request: {body}");
        body["access_token"].as_str().unwrap().to_owned()
    }

    /// Revokes a token (RFC 7009) as the client it was issued to.
    pub async fn revoke(&self, token: &str) {
        let response = reqwest::Client::new()
            .post(format!("{}/token/revocation", self.issuer))
            .basic_auth(CLIENT.0, Some(CLIENT.1))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(crate::harness::form(&[("token", token)]))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "revocation");
    }
}

async fn launch(
    keys: &tempfile_path::TempDir,
    port: u16,
    sign: &str,
    resources: &[String],
    opaque: &[String],
) -> (Child, String, u16) {
    let peers = peers().expect("checked by OidcAs::start");
    let mut command = Command::from(peers.node("interop/oidc-as.mjs"));
    command
        .arg("--keys")
        .arg(keys.path().join("keys.json"))
        .arg("--port")
        .arg(port.to_string())
        .arg("--sign")
        .arg(sign);
    for r in resources {
        command.arg("--resource").arg(r);
    }
    for r in opaque {
        command.arg("--opaque").arg(r);
    }
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let mut child = command.spawn().expect("node starts");
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .expect("the AS starts in time")
        .unwrap()
        .expect("the AS prints its issuer");
    let started: Value = serde_json::from_str(&line).unwrap();
    // Keep reading stdout so the child never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (
        child,
        started["issuer"].as_str().unwrap().to_owned(),
        started["port"].as_u64().unwrap() as u16,
    )
}
