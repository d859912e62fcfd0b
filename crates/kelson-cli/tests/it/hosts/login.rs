//! `kelson auth login`, then the client verbs, against `kelson serve` with `[auth]` in front of it and a
//! real authorization server (oidc-provider through `peers/interop/oidc-as.mjs`, which approves
//! for its user at once). The browser is scripted: the test reads the authorization URL the
//! command prints, follows the authorization server's redirects with their cookies, and requests
//! the loopback redirect the command listens for, as a browser would.
//!
//! One run covers what a user meets: dynamic registration, PKCE, the token kept in a 0600 file and
//! never printed, a refresh when the token has expired, a step-up when a resource needs a scope
//! the token lacks (refused with the command to run where nobody can follow a link, done through
//! the browser where someone can), and logout.

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use kelson_client::auth::{Authorizer, FollowRedirects};
use serde_json::Value;

use super::auth::{Oidc, free_port};
use crate::harness::mcp_path;
use crate::serve::support::{Serve, TempDir};

/// `kelson ARGS` with the test's credentials file, and `env`.
fn mcp(credentials: &Path, args: &[&str], env: &[(&str, String)]) -> Command {
    let mut command = Command::new(mcp_path());
    command
        .args(args)
        .env("KELSON_CREDENTIALS", credentials)
        .env_remove("KELSON_AUTH_INTERACTIVE")
        .env_remove("KELSON_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        command.env(k, v);
    }
    command
}

/// Runs to the end: (exit code, stdout, stderr).
fn run(mut command: Command) -> (Option<i32>, String, String) {
    let out = command.output().expect("kelson runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A command that will print an authorization URL: started, its stderr read line by line.
struct Browsing {
    child: Child,
    stderr: mpsc::Receiver<String>,
}

impl Browsing {
    fn start(mut command: Command) -> Browsing {
        let mut child = command.spawn().expect("kelson starts");
        let (tx, stderr) = mpsc::channel();
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        Browsing { child, stderr }
    }

    /// The browser's part: open the URL the command printed, let the authorization server
    /// redirect (it signs the user in and approves), and load the page it finally sends the
    /// browser to, which is the command's loopback listener. Returns the scopes asked for.
    fn approve(&self, issuer: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        let url = loop {
            let line = self
                .stderr
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .expect("the command prints the authorization URL");
            if let Some(at) = line.find(&format!("{issuer}/auth?")) {
                break url::Url::parse(line[at..].trim()).unwrap();
            }
        };
        let scope = url
            .query_pairs()
            .find(|(k, _)| k == "scope")
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default();
        let redirect = url
            .query_pairs()
            .find(|(k, _)| k == "redirect_uri")
            .map(|(_, v)| v.into_owned())
            .expect("a redirect_uri");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let back = FollowRedirects::new(redirect)
                .authorize(url)
                .await
                .expect("the authorization server approves");
            let page = reqwest::get(back.as_str())
                .await
                .expect("the command listens");
            assert_eq!(page.status(), 200);
            let text = page.text().await.unwrap();
            assert!(text.contains("Authorization received"), "{text}");
        });
        scope
    }

    /// Waits for the exit: (code, stdout, the rest of stderr).
    fn finish(mut self) -> (Option<i32>, String, String) {
        let status = self.child.wait().unwrap();
        let mut stdout = String::new();
        std::io::Read::read_to_string(&mut self.child.stdout.take().unwrap(), &mut stdout).unwrap();
        let stderr: Vec<String> = self.stderr.try_iter().collect();
        (status.code(), stdout, stderr.join("\n"))
    }
}

/// The credentials kept for `resource` in the file.
fn kept(credentials: &Path, resource: &str) -> Value {
    let file: Value = serde_json::from_slice(&std::fs::read(credentials).unwrap()).unwrap();
    file[resource].clone()
}

#[test]
fn login_then_the_verbs_refresh_step_up_and_logout() {
    let Some(peers) = super::peers() else {
        return;
    };
    let port = free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    // Tokens live three seconds: less than the margin the client refreshes within, so every
    // command after the login refreshes first.
    let oidc = Oidc::start_with(&peers, &resource, &["--ttl", "3"]);
    let scratch = TempDir::new();
    let root = scratch.join("notes");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("note.txt"), "the note\n").unwrap();
    // The metadata names only the sample's read scope, so the login asks for that alone and the
    // files (scope files:read) need a step-up.
    let config = scratch.join("kelson.toml");
    std::fs::write(
        &config,
        format!(
            "[http]\nbind = \"127.0.0.1:{port}\"\n\n[auth]\nissuer = \"{}\"\nresource = \"{resource}\"\nscopes_supported = [\"sample:read\"]\n",
            oidc.issuer
        ),
    )
    .unwrap();
    let _serve = Serve::start_without_bind(
        &scratch.join("data"),
        &[
            "--config",
            config.to_str().unwrap(),
            "--root",
            root.to_str().unwrap(),
        ],
    );
    let credentials = scratch.join("config/credentials.json");
    let redirect_port = free_port().to_string();

    // Without a login, a command where nobody can follow a link says what to run.
    let (code, _, stderr) = run(mcp(&credentials, &["tools", "--url", &resource], &[]));
    assert_eq!(code, Some(3), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "run `kelson auth login --url {resource} --scope sample:read`"
        )),
        "{stderr}"
    );

    // The login: registration, the browser, the token.
    let login = Browsing::start(mcp(
        &credentials,
        &[
            "auth",
            "login",
            "--url",
            &resource,
            "--redirect-port",
            &redirect_port,
        ],
        &[],
    ));
    let scope = login.approve(&oidc.issuer);
    assert_eq!(scope, "sample:read offline_access");
    let (code, stdout, stderr) = login.finish();
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!("logged in to {resource}")),
        "{stdout}"
    );
    assert!(stdout.contains("refresh token yes"), "{stdout}");
    let first = kept(&credentials, &resource);
    let access = first["access_token"]
        .as_str()
        .expect("an access token")
        .to_owned();
    let refresh = first["refresh_token"]
        .as_str()
        .expect("a refresh token")
        .to_owned();
    assert_eq!(first["issuer"], oidc.issuer.as_str());
    assert_eq!(first["grant"], "authorization_code");
    for printed in [&stdout, &stderr] {
        assert!(!printed.contains(&access) && !printed.contains(&refresh));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&credentials)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    // Status never shows a token, in words or as JSON.
    let (code, stdout, _) = run(mcp(&credentials, &["auth", "status", "--json"], &[]));
    assert_eq!(code, Some(0));
    assert!(
        !stdout.contains(&access) && !stdout.contains(&refresh),
        "{stdout}"
    );
    let status: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(status[0]["resource"], resource.as_str());
    assert_eq!(status[0]["has_refresh_token"], true);
    assert_eq!(status[0]["scopes"], serde_json::json!(["sample:read"]));

    // A verb with the kept token: it has expired, so it is refreshed first, and the new one kept.
    std::thread::sleep(Duration::from_secs(1));
    let (code, stdout, stderr) = run(mcp(&credentials, &["tools", "--url", &resource], &[]));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("list_tables"), "{stdout}");
    let renewed = kept(&credentials, &resource);
    assert_ne!(renewed["access_token"].as_str(), Some(access.as_str()));
    let (code, stdout, stderr) = run(mcp(
        &credentials,
        &["call", "list_tables", "--url", &resource],
        &[],
    ));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("customers"), "{stdout}");
    assert!(renewed["expires_at"].as_u64() >= first["expires_at"].as_u64());

    // A file needs files:read. Where nobody can follow a link, the command says which scope to
    // log in with; where someone can, the browser steps up to the union of the scopes.
    let note = format!("file://{}", root.join("note.txt").display());
    let (code, _, stderr) = run(mcp(&credentials, &["read", "--url", &resource, &note], &[]));
    assert_eq!(code, Some(3), "{stderr}");
    assert!(stderr.contains("--scope files:read"), "{stderr}");
    let read = Browsing::start(mcp(
        &credentials,
        &["read", "--url", &resource, &note],
        &[
            ("KELSON_AUTH_INTERACTIVE", "1".to_owned()),
            ("KELSON_AUTH_REDIRECT_PORT", redirect_port.clone()),
        ],
    ));
    let scope = read.approve(&oidc.issuer);
    let mut asked: Vec<&str> = scope.split(' ').collect();
    asked.sort_unstable();
    assert_eq!(asked, ["files:read", "offline_access", "sample:read"]);
    let (code, stdout, stderr) = read.finish();
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("the note"), "{stdout}");
    let stepped = kept(&credentials, &resource);
    let scopes: Vec<&str> = stepped["scopes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        scopes.contains(&"files:read") && scopes.contains(&"sample:read"),
        "{scopes:?}"
    );

    // Logout forgets it; the next command is refused again.
    let (code, stdout, _) = run(mcp(
        &credentials,
        &["auth", "logout", "--url", &resource],
        &[],
    ));
    assert_eq!(code, Some(0));
    assert!(
        stdout.contains(&format!("logged out of {resource}")),
        "{stdout}"
    );
    assert_eq!(kept(&credentials, &resource), Value::Null);
    let (code, stdout, _) = run(mcp(&credentials, &["auth", "status"], &[]));
    assert_eq!(code, Some(0));
    assert!(stdout.contains("no credentials are kept"), "{stdout}");

    // Machine to machine: the client credentials grant, its secret from a file, no browser; the
    // verbs then use the token, and can get a new one without anybody.
    let secret = scratch.join("client-secret");
    std::fs::write(&secret, "kelson-client-secret\n").unwrap();
    let (code, stdout, stderr) = run(mcp(
        &credentials,
        &[
            "auth",
            "login",
            "--url",
            &resource,
            "--client-credentials",
            "--client-id",
            "kelson-client",
            "--client-secret-file",
            secret.to_str().unwrap(),
            "--scope",
            "sample:read",
        ],
        &[],
    ));
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("grant         client_credentials"),
        "{stdout}"
    );
    assert!(!stdout.contains("kelson-client-secret") && !stderr.contains("kelson-client-secret"));
    let machine = kept(&credentials, &resource);
    assert_eq!(machine["grant"], "client_credentials");
    // A verb uses the token while it lasts; once it has expired (three seconds), the verb gets a
    // new one with the kept secret, there being no refresh token.
    let (code, _, stderr) = run(mcp(&credentials, &["tools", "--url", &resource], &[]));
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        kept(&credentials, &resource)["access_token"],
        machine["access_token"]
    );
    let expires = machine["expires_at"].as_u64().unwrap();
    while std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        <= expires
    {
        std::thread::sleep(Duration::from_millis(200));
    }
    let (code, stdout, stderr) = run(mcp(&credentials, &["tools", "--url", &resource], &[]));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("list_tables"), "{stdout}");
    let renewed = kept(&credentials, &resource);
    assert_ne!(renewed["access_token"], machine["access_token"]);
    // The secret stays kept for the next renewal.
    assert_eq!(renewed["client_secret"], "kelson-client-secret");
}
