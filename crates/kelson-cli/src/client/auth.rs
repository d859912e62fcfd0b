//! `kelson auth login|logout|status`, and OAuth for the client verbs: a server that answers 401 gets
//! the stored token, refreshed when it expires, or a new authorization in the browser when the
//! terminal can ask (else a hint to log in).

use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Subcommand};
use kelson_client::BoxFuture;
use kelson_client::auth::{
    AuthError, Authorizer, Credentials, FileStore, LoopbackAuthorizer, OAuth, OAuthBuilder,
    PrivateKey, TokenStore, canonical_resource,
};
use serde_json::json;

use super::CliError;
use super::output::{Style, clean_line};

/// The loopback port of the redirect by default: fixed, because a dynamically registered client
/// is registered with one redirect URI.
const DEFAULT_REDIRECT_PORT: u16 = 33418;

/// The loopback port of the client verbs' redirect: KELSON_AUTH_REDIRECT_PORT, else the default.
fn redirect_port() -> u16 {
    std::env::var("KELSON_AUTH_REDIRECT_PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(DEFAULT_REDIRECT_PORT)
}

/// `kelson auth`.
#[derive(Subcommand, Debug, Clone)]
pub(crate) enum AuthAction {
    /// Authorize with the server's authorization server and keep the token (in the browser for
    /// the authorization code grant; at once for --client-credentials).
    Login(LoginArgs),
    /// Forget the credentials kept for a server.
    Logout(LogoutArgs),
    /// Show the credentials kept (never the tokens): server, issuer, client, scopes, expiry.
    Status(StatusArgs),
}

#[derive(Args, Debug, Clone)]
pub(crate) struct LoginArgs {
    /// The server's Streamable HTTP endpoint, e.g. https://mcp.example.com/mcp.
    #[arg(long, value_name = "URL")]
    url: String,
    /// A client id registered with the authorization server beforehand (else a client metadata
    /// document URL, else dynamic registration).
    #[arg(long, value_name = "ID")]
    client_id: Option<String>,
    /// The file holding the client's secret (or set KELSON_CLIENT_SECRET); never a flag, so that it
    /// stays out of the shell history and the process list.
    #[arg(long, value_name = "FILE", requires = "client_id")]
    client_secret_file: Option<PathBuf>,
    /// The client's private key (PEM) for private_key_jwt, with --client-credentials.
    #[arg(long, value_name = "FILE", requires = "client_credentials")]
    private_key: Option<PathBuf>,
    /// The private key's signing algorithm (ES256, RS256, EdDSA, ...); by default the first that
    /// loads the key of ES256, RS256, EdDSA.
    #[arg(long, value_name = "ALG", requires = "private_key")]
    algorithm: Option<String>,
    /// The client credentials grant (machine to machine): --client-id with a secret or a
    /// private key, no browser.
    #[arg(long, requires = "client_id")]
    client_credentials: bool,
    /// The https URL of this client's Client ID Metadata Document, used as its client id where
    /// the authorization server accepts them.
    #[arg(long, value_name = "URL")]
    client_metadata_url: Option<String>,
    /// A scope to ask for besides the ones the server names (repeatable).
    #[arg(long = "scope", value_name = "SCOPE")]
    scopes: Vec<String>,
    /// Open the authorization page in the system's browser (it is printed either way).
    #[arg(long)]
    open: bool,
    /// The loopback port the browser is sent back to (the other commands use
    /// KELSON_AUTH_REDIRECT_PORT, or the same default, when they must authorize again).
    #[arg(long, value_name = "PORT", env = "KELSON_AUTH_REDIRECT_PORT", default_value_t = DEFAULT_REDIRECT_PORT)]
    redirect_port: u16,
    /// How long to wait for the browser.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = crate::flags::duration)]
    timeout: Duration,
    /// Trust the CA certificates in this PEM file for the server and its authorization server.
    #[arg(long, value_name = "FILE")]
    ca_cert: Option<PathBuf>,
    /// Print what was stored as JSON (without the tokens).
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug, Clone)]
pub(crate) struct LogoutArgs {
    /// The server's endpoint.
    #[arg(long, value_name = "URL")]
    url: String,
}

#[derive(Args, Debug, Clone)]
pub(crate) struct StatusArgs {
    /// Only this server.
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    /// As JSON (never the tokens).
    #[arg(long)]
    json: bool,
}

/// Where the credentials are kept: $KELSON_CREDENTIALS, else `$XDG_CONFIG_HOME/kelson/credentials.json`,
/// else `~/.config/kelson/credentials.json`; the file is the owner's only (0600).
pub(crate) fn credentials_path() -> Result<PathBuf, CliError> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(path) = var("KELSON_CREDENTIALS") {
        return Ok(path);
    }
    if let Some(xdg) = var("XDG_CONFIG_HOME").filter(|p| p.is_absolute()) {
        return Ok(xdg.join("kelson/credentials.json"));
    }
    match var("HOME").filter(|p| p.is_absolute()) {
        Some(home) => Ok(home.join(".config/kelson/credentials.json")),
        None => Err(CliError::usage(
            "cannot find a configuration folder for the credentials: set KELSON_CREDENTIALS to a file",
        )),
    }
}

/// The HTTP client for authorization servers: no redirects, the extra CA when given.
fn http_client(ca_cert: Option<&Path>) -> Result<reqwest::Client, CliError> {
    let mut builder = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(30));
    if let Some(file) = ca_cert {
        let certs =
            kelson_http::client::ca_certificates(file).map_err(kelson_client::Error::from)?;
        builder = builder.tls_certs_merge(certs);
    }
    builder
        .build()
        .map_err(|e| CliError::usage(format!("the HTTP client: {e}")))
}

fn auth_error(e: AuthError) -> CliError {
    CliError::Client(kelson_client::Error::Auth(e))
}

/// Reads a secret from a file, or from KELSON_CLIENT_SECRET; trailing whitespace is not part of it.
fn client_secret(file: Option<&Path>) -> Result<Option<String>, CliError> {
    let secret = match file {
        Some(path) => Some(std::fs::read_to_string(path).map_err(|e| {
            CliError::usage(format!("--client-secret-file {}: {e}", path.display()))
        })?),
        None => std::env::var("KELSON_CLIENT_SECRET").ok(),
    };
    Ok(secret
        .map(|s| s.trim_end().to_owned())
        .filter(|s| !s.is_empty()))
}

/// A private key, its algorithm given or found by trying the common ones.
fn private_key(path: &Path, algorithm: Option<&str>) -> Result<PrivateKey, CliError> {
    let pem = std::fs::read(path)
        .map_err(|e| CliError::usage(format!("--private-key {}: {e}", path.display())))?;
    let tried: Vec<&str> = match algorithm {
        Some(a) => vec![a],
        None => vec!["ES256", "RS256", "EdDSA", "ES384"],
    };
    let mut last = None;
    for algorithm in tried {
        match PrivateKey::from_pem(&pem, algorithm) {
            Ok(key) => return Ok(key),
            Err(e) => last = Some(e),
        }
    }
    Err(CliError::usage(format!(
        "--private-key {}: {}",
        path.display(),
        last.map(|e| e.to_string()).unwrap_or_default()
    )))
}

/// The authorizer of the client verbs and `kelson auth login`: the loopback listener, bound when the
/// browser is needed; or, when nobody can answer in the terminal, an error that says to log in.
struct CliAuthorizer {
    port: u16,
    interactive: bool,
    open: bool,
    timeout: Duration,
    url: String,
}

impl Authorizer for CliAuthorizer {
    fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}/callback", self.port)
    }

    fn authorize(&self, url: url::Url) -> BoxFuture<'_, Result<url::Url, AuthError>> {
        Box::pin(async move {
            if !self.interactive {
                // The scopes this authorization asks for (a step-up's included), as flags.
                let scopes: Vec<String> = url
                    .query_pairs()
                    .filter(|(k, _)| k == "scope")
                    .flat_map(|(_, v)| {
                        v.split_ascii_whitespace()
                            .filter(|s| *s != "offline_access")
                            .map(|s| format!(" --scope {s}"))
                            .collect::<Vec<_>>()
                    })
                    .collect();
                return Err(AuthError::Authorizer(format!(
                    "the server requires authorization, and nobody can follow a browser link \
                     here: run `kelson auth login --url {}{}` first",
                    self.url,
                    scopes.concat()
                )));
            }
            let listener = LoopbackAuthorizer::bind(self.port)
                .map_err(|e| {
                    AuthError::Authorizer(format!(
                        "cannot listen on 127.0.0.1:{} for the browser's redirect ({e}); choose \
                         another port with --redirect-port",
                        self.port
                    ))
                })?
                .timeout(self.timeout)
                .open_browser(self.open)
                .on_url(|url| {
                    let style = Style::for_stream(std::io::stderr().is_terminal());
                    // Built on the authorization server's endpoint: a parsed URL is escaped
                    // already, and cleaning it says so here rather than relying on that.
                    eprintln!(
                        "{}\n\n  {}\n",
                        style.bold("Open this URL in a browser to authorize:"),
                        clean_line(url.as_str())
                    );
                });
            listener.authorize(url).await
        })
    }
}

/// The OAuth settings for `url`: the stored client-credentials registration when the store has
/// one, else the authorization code grant through the terminal.
fn oauth_for(
    url: &str,
    store: Option<FileStore>,
    stored: Option<&Credentials>,
    interactive: bool,
    http: reqwest::Client,
) -> Result<OAuth, CliError> {
    let builder: OAuthBuilder = match stored {
        Some(c)
            if c.grant.as_deref() == Some("client_credentials") && c.client_secret.is_some() =>
        {
            OAuth::client_credentials(&c.client_id)
                .client_secret(c.client_secret.clone().unwrap_or_default())
        }
        _ => OAuth::authorization_code(CliAuthorizer {
            port: redirect_port(),
            interactive,
            open: false,
            timeout: Duration::from_secs(300),
            url: url.to_owned(),
        })
        .client_name("kelson"),
    };
    let builder = match store {
        Some(store) => builder.store(store),
        None => builder,
    };
    builder.http_client(http).build().map_err(auth_error)
}

/// OAuth for a client verb on `url`: the token kept for it, renewed as needed.
pub(crate) fn for_verb(
    url: &str,
    ca_cert: Option<&Path>,
    no_input: bool,
) -> Result<OAuth, CliError> {
    // Without a place for the credentials file (no HOME), tokens live as long as the command.
    let store = credentials_path().ok().map(FileStore::new);
    let stored = match (&store, canonical_resource(url)) {
        (Some(store), Ok(key)) => store.load(key.as_str()).map_err(auth_error)?,
        _ => None,
    };
    // Someone can follow the printed URL: stderr is a terminal, or KELSON_AUTH_INTERACTIVE=1 says
    // that a program reading stderr will (a test, a wrapper that opens the URL itself).
    let interactive = !no_input
        && (std::io::stderr().is_terminal()
            || std::env::var_os("KELSON_AUTH_INTERACTIVE").is_some_and(|v| v == "1"));
    oauth_for(
        url,
        store,
        stored.as_ref(),
        interactive,
        http_client(ca_cert)?,
    )
}

/// Runs `kelson auth ...`.
pub(crate) async fn run(action: AuthAction) -> Result<(), CliError> {
    match action {
        AuthAction::Login(args) => login(args).await,
        AuthAction::Logout(args) => {
            let store = FileStore::new(credentials_path()?);
            let key = canonical_resource(&args.url).map_err(auth_error)?;
            let had = store.load(key.as_str()).map_err(auth_error)?.is_some();
            store.remove(key.as_str()).map_err(auth_error)?;
            if had {
                println!("logged out of {key}");
            } else {
                println!("no credentials were kept for {key}");
            }
            Ok(())
        }
        AuthAction::Status(args) => status(args),
    }
}

async fn login(args: LoginArgs) -> Result<(), CliError> {
    let path = credentials_path()?;
    let http = http_client(args.ca_cert.as_deref())?;
    let secret = client_secret(args.client_secret_file.as_deref())?;
    let mut builder = if args.client_credentials {
        let id = args.client_id.clone().expect("clap requires it");
        let builder = OAuth::client_credentials(id);
        match (&args.private_key, &secret) {
            (Some(key), _) => builder.private_key(private_key(key, args.algorithm.as_deref())?),
            (None, Some(secret)) => builder.client_secret(secret.clone()),
            (None, None) => {
                return Err(CliError::usage(
                    "--client-credentials needs --client-secret-file (or KELSON_CLIENT_SECRET) or \
                     --private-key",
                ));
            }
        }
    } else {
        let mut builder = OAuth::authorization_code(CliAuthorizer {
            port: args.redirect_port,
            interactive: true,
            open: args.open,
            timeout: args.timeout,
            url: args.url.clone(),
        })
        .client_name("kelson");
        if let Some(id) = &args.client_id {
            builder = builder.client_id(id);
            if let Some(secret) = &secret {
                builder = builder.client_secret(secret.clone());
            }
        }
        builder
    };
    if let Some(url) = &args.client_metadata_url {
        builder = builder.client_metadata_url(url);
    }
    let oauth = builder
        .scopes(args.scopes.clone())
        .store(FileStore::new(&path))
        .http_client(http)
        .build()
        .map_err(auth_error)?;
    let mut credentials = oauth.login(&args.url).await.map_err(auth_error)?;
    let key = canonical_resource(&args.url).map_err(auth_error)?;
    if args.client_credentials && args.private_key.is_none() {
        // Kept (in the owner-only file, beside the tokens it obtains) so that the client verbs
        // can get a new token when this one expires.
        credentials.client_secret = secret;
        FileStore::new(&path)
            .save(key.as_str(), &credentials)
            .map_err(auth_error)?;
    }
    if args.json {
        println!("{}", describe_json(key.as_str(), &credentials));
    } else {
        println!("logged in to {key}");
        print_entry(key.as_str(), &credentials);
        println!("  (kept in {})", path.display());
    }
    Ok(())
}

fn status(args: StatusArgs) -> Result<(), CliError> {
    let store = FileStore::new(credentials_path()?);
    let keys = match &args.url {
        Some(url) => vec![canonical_resource(url).map_err(auth_error)?.to_string()],
        None => store.resources().map_err(auth_error)?,
    };
    let mut entries = Vec::new();
    for key in keys {
        if let Some(c) = store.load(&key).map_err(auth_error)? {
            entries.push((key, c));
        }
    }
    if args.json {
        let list: Vec<_> = entries.iter().map(|(k, c)| describe_json(k, c)).collect();
        println!("{}", serde_json::Value::Array(list));
        return Ok(());
    }
    if entries.is_empty() {
        match &args.url {
            Some(url) => println!("no credentials are kept for {url}"),
            None => println!("no credentials are kept ({})", store.path().display()),
        }
        return Ok(());
    }
    for (key, c) in &entries {
        println!("{key}");
        print_entry(key, c);
    }
    Ok(())
}

/// How long until `at` (seconds since the epoch), in words.
fn expiry(at: Option<u64>) -> String {
    let Some(at) = at else {
        return "no expiry given".to_owned();
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    if at <= now {
        return format!("expired {} ago", words(now - at));
    }
    format!("expires in {}", words(at - now))
}

fn words(seconds: u64) -> String {
    match seconds {
        s if s < 120 => format!("{s} s"),
        s if s < 7200 => format!("{} min", s / 60),
        s if s < 172_800 => format!("{} h", s / 3600),
        s => format!("{} days", s / 86_400),
    }
}

/// The issuer, the client id (from a registration) and the scopes came from the authorization
/// server, so they are cleaned for the terminal.
fn print_entry(_key: &str, c: &Credentials) {
    println!("  issuer        {}", clean_line(&c.issuer));
    println!("  client        {}", clean_line(&c.client_id));
    if let Some(grant) = &c.grant {
        println!("  grant         {}", clean_line(grant));
    }
    let scopes = if c.scopes.is_empty() {
        "(none asked)".to_owned()
    } else {
        clean_line(&c.scopes.join(" ")).into_owned()
    };
    println!("  scopes        {scopes}");
    let token = if c.access_token.is_some() {
        expiry(c.expires_at)
    } else {
        "none".to_owned()
    };
    println!("  access token  {token}");
    println!(
        "  refresh token {}",
        if c.refresh_token.is_some() {
            "yes"
        } else {
            "no"
        }
    );
}

/// What is kept for `key`, as JSON, without a token or secret.
fn describe_json(key: &str, c: &Credentials) -> serde_json::Value {
    json!({
        "resource": key,
        "issuer": c.issuer,
        "client_id": c.client_id,
        "grant": c.grant,
        "scopes": c.scopes,
        "has_access_token": c.access_token.is_some(),
        "expires_at": c.expires_at,
        "has_refresh_token": c.refresh_token.is_some(),
    })
}
