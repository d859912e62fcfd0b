//! Where tokens and client registrations are kept between requests and between runs.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::AuthError;

/// What a client keeps for one protected resource: who issued its credentials, the client
/// registration it used there, and its tokens. The values are secrets: [`Debug`] shows none.
#[derive(Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[non_exhaustive]
pub struct Credentials {
    /// The authorization server's issuer identifier; the rest is valid with that server only.
    pub issuer: String,
    /// The client id used there (pre-registered, a metadata document URL, or registered
    /// dynamically).
    pub client_id: String,
    /// The grant that issued the token: `authorization_code` or `client_credentials`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant: Option<String>,
    /// The client secret a dynamic registration returned, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// The token endpoint authentication method that goes with them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_method: Option<String>,
    /// The access token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_token: Option<String>,
    /// The refresh token, when one was issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires (seconds since the Unix epoch), when the server said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The scopes asked for (or granted, when the server said).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("grant", &self.grant)
            .field("has_client_secret", &self.client_secret.is_some())
            .field("has_access_token", &self.access_token.is_some())
            .field("has_refresh_token", &self.refresh_token.is_some())
            .field("expires_at", &self.expires_at)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

impl Credentials {
    /// Whether the access token has expired, or expires within `margin` seconds, at `now`.
    pub fn expired(&self, now: u64, margin: u64) -> bool {
        self.expires_at
            .is_some_and(|at| at <= now.saturating_add(margin))
    }
}

/// Keeps [`Credentials`] per protected resource (its canonical URI).
pub trait TokenStore: Send + Sync + 'static {
    /// The credentials kept for `resource`.
    fn load(&self, resource: &str) -> Result<Option<Credentials>, AuthError>;
    /// Keeps `credentials` for `resource`, replacing what was there.
    fn save(&self, resource: &str, credentials: &Credentials) -> Result<(), AuthError>;
    /// Forgets what is kept for `resource`.
    fn remove(&self, resource: &str) -> Result<(), AuthError>;
}

/// Credentials in this process's memory only (the default).
#[derive(Debug, Default)]
pub struct MemoryStore {
    entries: Mutex<HashMap<String, Credentials>>,
}

impl TokenStore for MemoryStore {
    fn load(&self, resource: &str) -> Result<Option<Credentials>, AuthError> {
        Ok(self
            .entries
            .lock()
            .expect("store lock")
            .get(resource)
            .cloned())
    }

    fn save(&self, resource: &str, credentials: &Credentials) -> Result<(), AuthError> {
        self.entries
            .lock()
            .expect("store lock")
            .insert(resource.to_owned(), credentials.clone());
        Ok(())
    }

    fn remove(&self, resource: &str) -> Result<(), AuthError> {
        self.entries.lock().expect("store lock").remove(resource);
        Ok(())
    }
}

/// Credentials in one JSON file, readable and writable by its owner only (0600 on Unix), a map
/// from resource to [`Credentials`]. Writes go to a temporary file renamed over the old one, so
/// a crash never leaves half a file; concurrent writers in several processes may lose one
/// another's update, never corrupt the file.
#[derive(Debug)]
pub struct FileStore {
    path: PathBuf,
    lock: Mutex<()>,
}

impl FileStore {
    /// A store in `path` (created, with its folder, on the first save).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        FileStore {
            path: path.into(),
            lock: Mutex::new(()),
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every resource with credentials in the file.
    pub fn resources(&self) -> Result<Vec<String>, AuthError> {
        let _guard = self.lock.lock().expect("store lock");
        Ok(self.read()?.into_keys().collect())
    }

    fn read(&self) -> Result<std::collections::BTreeMap<String, Credentials>, AuthError> {
        match std::fs::read(&self.path) {
            Ok(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => Ok(Default::default()),
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                AuthError::store(&self.path, format!("is not a credentials file: {e}"))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Default::default()),
            Err(e) => Err(AuthError::store(&self.path, e.to_string())),
        }
    }

    fn write(
        &self,
        entries: &std::collections::BTreeMap<String, Credentials>,
    ) -> Result<(), AuthError> {
        let fail = |e: std::io::Error| AuthError::store(&self.path, e.to_string());
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(fail)?;
        }
        let temporary = self
            .path
            .with_extension(format!("tmp{}", std::process::id()));
        let json = serde_json::to_vec_pretty(entries).expect("credentials serialize");
        write_private(&temporary, &json).map_err(fail)?;
        std::fs::rename(&temporary, &self.path).map_err(|e| {
            let _ = std::fs::remove_file(&temporary);
            fail(e)
        })
    }
}

/// Writes `bytes` to a new file that only its owner may read or write.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    #[cfg(unix)]
    {
        // A file that existed keeps its mode through `open`: make sure.
        use std::os::unix::fs::PermissionsExt as _;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    file.write_all(bytes)?;
    file.sync_all()
}

impl TokenStore for FileStore {
    fn load(&self, resource: &str) -> Result<Option<Credentials>, AuthError> {
        let _guard = self.lock.lock().expect("store lock");
        Ok(self.read()?.remove(resource))
    }

    fn save(&self, resource: &str, credentials: &Credentials) -> Result<(), AuthError> {
        let _guard = self.lock.lock().expect("store lock");
        let mut entries = self.read()?;
        entries.insert(resource.to_owned(), credentials.clone());
        self.write(&entries)
    }

    fn remove(&self, resource: &str) -> Result<(), AuthError> {
        let _guard = self.lock.lock().expect("store lock");
        let mut entries = self.read()?;
        if entries.remove(resource).is_some() {
            self.write(&entries)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Credentials {
        Credentials {
            issuer: "https://as.example".into(),
            client_id: "cli".into(),
            access_token: Some("secret-access".into()),
            refresh_token: Some("secret-refresh".into()),
            expires_at: Some(100),
            scopes: vec!["a".into()],
            ..Credentials::default()
        }
    }

    #[test]
    fn debug_shows_no_secret() {
        let shown = format!("{:?}", sample());
        assert!(
            !shown.contains("secret-access") && !shown.contains("secret-refresh"),
            "{shown}"
        );
        assert!(shown.contains("has_access_token: true"));
    }

    #[test]
    fn expiry_with_a_margin() {
        let c = sample();
        assert!(!c.expired(50, 10));
        assert!(c.expired(95, 10));
        assert!(!Credentials::default().expired(u64::MAX, 10));
    }

    #[test]
    fn a_file_store_keeps_entries_per_resource_owner_only() {
        let dir = std::env::temp_dir().join(format!("mcp-client-store-{}", std::process::id()));
        let store = FileStore::new(dir.join("sub/credentials.json"));
        assert_eq!(store.load("https://a/mcp").unwrap(), None);
        store.save("https://a/mcp", &sample()).unwrap();
        let mut other = sample();
        other.client_id = "other".into();
        store.save("https://b/mcp", &other).unwrap();
        assert_eq!(store.load("https://a/mcp").unwrap(), Some(sample()));
        assert_eq!(
            store.resources().unwrap(),
            ["https://a/mcp", "https://b/mcp"]
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(store.path())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        store.remove("https://a/mcp").unwrap();
        assert_eq!(store.load("https://a/mcp").unwrap(), None);
        assert_eq!(
            store.load("https://b/mcp").unwrap().unwrap().client_id,
            "other"
        );
        std::fs::write(store.path(), "{not json").unwrap();
        let err = store.load("https://b/mcp").unwrap_err().to_string();
        assert!(
            err.contains("credentials.json") && err.contains("not a credentials file"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
