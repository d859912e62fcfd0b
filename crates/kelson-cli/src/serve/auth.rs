//! `[auth]` and the `--auth-*` flags: `kelson serve` as an OAuth 2.1 resource server (kelson-auth's
//! layer in front of the HTTP endpoint; stdio is local and unaffected).
//!
//! The client secret for token introspection never comes from a flag, where `ps` would show it:
//! only from a file (`client_secret_file`, `--auth-client-secret-file`) or the environment
//! (`KELSON_AUTH_CLIENT_SECRET`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use serde::Deserialize;

use super::file::Seconds;
use super::settings::Env;

/// The environment variable that may hold the introspection client's secret.
pub(crate) const SECRET_VAR: &str = "KELSON_AUTH_CLIENT_SECRET";

/// The `--auth-*` flags.
#[derive(Args, Debug, Default)]
pub(crate) struct AuthArgs {
    /// Require OAuth bearer tokens issued by this authorization server (its issuer URL; its
    /// metadata and keys are discovered from it). Turns authorization on for HTTP.
    #[arg(long, value_name = "URL")]
    auth_issuer: Option<String>,

    /// The authorization server's metadata URL, when discovery from the issuer does not find it.
    #[arg(long, value_name = "URL")]
    auth_metadata_url: Option<String>,

    /// This server's public URL, e.g. https://mcp.example.com/mcp: the audience tokens must name.
    #[arg(long, value_name = "URL")]
    auth_resource: Option<String>,

    /// The JWKS URL, overriding the one in the authorization server's metadata.
    #[arg(long, value_name = "URL")]
    auth_jwks_url: Option<String>,

    /// A scope every request must carry (repeatable).
    #[arg(long = "auth-required-scope", value_name = "SCOPE")]
    auth_required_scopes: Vec<String>,

    /// A scope to advertise in the protected-resource metadata (repeatable) [default: the
    /// required scopes].
    #[arg(long = "auth-scope", value_name = "SCOPE")]
    auth_scopes: Vec<String>,

    /// Introspect tokens that are not JWTs (RFC 7662) as this client of the authorization
    /// server; its secret comes from --auth-client-secret-file or KELSON_AUTH_CLIENT_SECRET.
    #[arg(long, value_name = "ID")]
    auth_client_id: Option<String>,

    /// The introspection endpoint, overriding the one in the authorization server's metadata.
    #[arg(long, value_name = "URL")]
    auth_introspection_url: Option<String>,

    /// A file holding the introspection client's secret (trailing newline ignored).
    #[arg(long, value_name = "FILE")]
    auth_client_secret_file: Option<PathBuf>,

    /// Clock skew allowed on token expiry and not-before times [default: 60s].
    #[arg(long, value_name = "DURATION", value_parser = crate::flags::duration)]
    auth_leeway: Option<Duration>,

    /// A human-readable name of this server for the protected-resource metadata.
    #[arg(long, value_name = "NAME")]
    auth_resource_name: Option<String>,

    /// A page documenting this server for the protected-resource metadata.
    #[arg(long, value_name = "URL")]
    auth_resource_documentation: Option<String>,

    /// A token claim to pass on to tools (repeatable), e.g. email.
    #[arg(long = "auth-claim", value_name = "NAME")]
    auth_claims: Vec<String>,
}

/// `[auth]` of the configuration file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub(crate) struct AuthSection {
    pub issuer: Option<String>,
    pub metadata_url: Option<String>,
    pub resource: Option<String>,
    pub jwks_url: Option<String>,
    #[serde(default)]
    pub required_scopes: Vec<String>,
    #[serde(default)]
    pub scopes_supported: Vec<String>,
    pub resource_name: Option<String>,
    pub resource_documentation: Option<String>,
    pub introspection_url: Option<String>,
    pub client_id: Option<String>,
    pub client_secret_file: Option<PathBuf>,
    pub leeway: Option<Seconds>,
    #[serde(default)]
    pub claims: Vec<String>,
}

/// Authorization, resolved: the layer's configuration.
pub(crate) struct AuthSettings {
    pub config: kelson_auth::AuthConfig,
}

impl std::fmt::Debug for AuthSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.config.fmt(f)
    }
}

/// Lays the flags over `[auth]`; `None` when no issuer is given (no authorization).
pub(crate) fn resolve(
    args: &AuthArgs,
    file: &AuthSection,
    env: Env<'_>,
    in_file: &dyn Fn(&Path) -> PathBuf,
) -> Result<Option<AuthSettings>, String> {
    let pick = |flag: &Option<String>,
                key: &Option<String>,
                flag_name: &'static str,
                key_name: &'static str| {
        match (flag, key) {
            (Some(v), _) => Some((v.clone(), flag_name)),
            (None, Some(v)) => Some((v.clone(), key_name)),
            (None, None) => None,
        }
    };
    let Some((issuer, issuer_key)) = pick(
        &args.auth_issuer,
        &file.issuer,
        "--auth-issuer",
        "auth.issuer",
    ) else {
        let given = args.auth_resource.is_some()
            || args.auth_client_id.is_some()
            || file.resource.is_some()
            || file.client_id.is_some()
            || file.jwks_url.is_some();
        if given {
            return Err(
                "auth.issuer: authorization needs the issuer of its tokens (--auth-issuer or auth.issuer)"
                    .to_owned(),
            );
        }
        return Ok(None);
    };
    check_url(&issuer, issuer_key)?;
    let (resource, resource_key) = pick(
        &args.auth_resource,
        &file.resource,
        "--auth-resource",
        "auth.resource",
    )
    .ok_or_else(|| {
        "auth.resource: authorization needs this server's public URL, the audience of its tokens \
         (--auth-resource or auth.resource), e.g. https://mcp.example.com/mcp"
            .to_owned()
    })?;
    check_url(&resource, resource_key)?;
    if resource.contains('#') {
        return Err(format!("{resource_key}: a resource URL has no fragment"));
    }

    let mut config = kelson_auth::AuthConfig::new(issuer, resource);
    if let Some((url, key)) = pick(
        &args.auth_metadata_url,
        &file.metadata_url,
        "--auth-metadata-url",
        "auth.metadata_url",
    ) {
        check_url(&url, key)?;
        config.metadata_url = Some(url);
    }
    if let Some((url, key)) = pick(
        &args.auth_jwks_url,
        &file.jwks_url,
        "--auth-jwks-url",
        "auth.jwks_url",
    ) {
        check_url(&url, key)?;
        config.jwks_url = Some(url);
    }
    config.required_scopes = list(
        &file.required_scopes,
        &args.auth_required_scopes,
        "auth.required_scopes",
        "--auth-required-scope",
    )?;
    config.scopes_supported = list(
        &file.scopes_supported,
        &args.auth_scopes,
        "auth.scopes_supported",
        "--auth-scope",
    )?;
    config.claims = list(
        &file.claims,
        &args.auth_claims,
        "auth.claims",
        "--auth-claim",
    )?;
    config.resource_name = args
        .auth_resource_name
        .clone()
        .or_else(|| file.resource_name.clone());
    if let Some((url, key)) = pick(
        &args.auth_resource_documentation,
        &file.resource_documentation,
        "--auth-resource-documentation",
        "auth.resource_documentation",
    ) {
        check_url(&url, key)?;
        config.resource_documentation = Some(url);
    }
    if let Some(leeway) = args.auth_leeway.or(file.leeway.map(|s| s.0)) {
        config.leeway = leeway;
    }

    let client = pick(
        &args.auth_client_id,
        &file.client_id,
        "--auth-client-id",
        "auth.client_id",
    );
    let url = pick(
        &args.auth_introspection_url,
        &file.introspection_url,
        "--auth-introspection-url",
        "auth.introspection_url",
    );
    match client {
        None => {
            if let Some((_, key)) = url {
                return Err(format!(
                    "{key}: introspection needs a client id (--auth-client-id or auth.client_id)"
                ));
            }
        }
        Some((client_id, client_key)) => {
            let secret = match (&args.auth_client_secret_file, &file.client_secret_file) {
                (Some(path), _) => read_secret(path, "--auth-client-secret-file")?,
                (None, Some(path)) => read_secret(&in_file(path), "auth.client_secret_file")?,
                (None, None) => match env(SECRET_VAR) {
                    Some(v) => v
                        .into_string()
                        .map_err(|_| format!("{SECRET_VAR} is not UTF-8"))?,
                    None => {
                        return Err(format!(
                            "{client_key}: introspection needs the client's secret, from auth.client_secret_file, \
                             --auth-client-secret-file or {SECRET_VAR}"
                        ));
                    }
                },
            };
            let mut introspection = kelson_auth::Introspection::new(client_id, secret);
            if let Some((url, key)) = url {
                check_url(&url, key)?;
                introspection.url = Some(url);
            }
            config.introspection = Some(introspection);
        }
    }
    Ok(Some(AuthSettings { config }))
}

/// The file's list, then the flags', each entry checked as an OAuth scope token or claim name.
fn list(file: &[String], flags: &[String], key: &str, flag: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for (i, s) in file.iter().enumerate() {
        check_token(s).map_err(|e| format!("{key}[{i}]: {e}"))?;
        out.push(s.clone());
    }
    for s in flags {
        check_token(s).map_err(|e| format!("{flag}: {e}"))?;
        out.push(s.clone());
    }
    Ok(out)
}

/// RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ).
fn check_token(s: &str) -> Result<(), String> {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b == 0x21 || (0x23..=0x7e).contains(&b) && b != b'\\')
    {
        Ok(())
    } else {
        Err(format!(
            "{s:?} is not a valid scope or claim name (printable ASCII, no spaces, quotes or backslashes)"
        ))
    }
}

fn check_url(value: &str, key: &str) -> Result<(), String> {
    if value.starts_with("https://") || value.starts_with("http://") {
        Ok(())
    } else {
        Err(format!("{key}: {value:?} is not an http(s) URL"))
    }
}

fn read_secret(path: &Path, key: &str) -> Result<String, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{key}: cannot read {}: {e}", path.display()))?;
    let secret = text.trim_end_matches(['\r', '\n']).to_owned();
    if secret.is_empty() {
        return Err(format!("{key}: {} is empty", path.display()));
    }
    Ok(secret)
}
