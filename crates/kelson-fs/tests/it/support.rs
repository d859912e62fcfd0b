//! Helpers: scratch directories, a fixture tree with traps around the root, and a client driving a
//! server in process with JSON-RPC bytes.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_util::StreamExt as _;
use kelson_fs::{FsAdapter, FsLimits, RootConfig};
use kelson_server::Server;
use kelson_server::transport::{ListenStream, Reply, RequestIo};
use serde_json::{Value, json};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// What a file outside the root holds; no response may ever contain it.
pub const SECRET: &str = "TOP SECRET outside the root";

/// A scratch directory, removed when dropped. Its path is canonical.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new() -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "mcp-fs-it-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create a temp dir");
        TempDir(std::fs::canonicalize(&dir).expect("canonical temp dir"))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The percent-encoding the adapter uses, for building expected URIs.
pub fn encode(path: &Path) -> String {
    let mut out = String::from("file://");
    for c in path.components().skip(1) {
        out.push('/');
        for &b in c.as_os_str().as_encoded_bytes() {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                out.push(char::from(b));
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out
}

/// A root with ordinary files, plus traps: files outside it, and symlinks inside it that point out.
///
/// ```text
/// base/
///   root/                     <- the root
///     hello.txt               "Hello, world\n"
///     image.png               bytes 0x89 P N G 0 1 2 0xff
///     data.bin                bytes 0 1 2
///     my file+1.txt           "spaced"
///     notes/a.md              "# A\n"
///     notes/deep/b.txt        "b"
///     link-inside -> notes/a.md            (allowed: stays inside)
///     link-dir -> notes                    (allowed: stays inside)
///     link-passwd -> /etc/passwd
///     link-sibling -> ../sibling
///     link-sibling-file -> ../sibling/secret.txt
///     link-evil -> ../root-evil/secret.txt (a sibling whose name starts like the root's)
///     link-base -> ..
///     link-devnull -> /dev/null
///     loop -> loop
///   sibling/secret.txt        SECRET
///   root-evil/secret.txt      SECRET
///   secret.txt                SECRET
/// ```
pub struct Fixture {
    pub dir: TempDir,
    pub root: PathBuf,
    /// The root's URI, ending in '/'.
    pub uri: String,
}

impl Fixture {
    pub fn new() -> Fixture {
        let dir = TempDir::new();
        let base = dir.0.clone();
        let root = base.join("root");
        let w = |p: &Path, data: &[u8]| {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, data).unwrap();
        };
        w(&root.join("hello.txt"), b"Hello, world\n");
        w(
            &root.join("image.png"),
            &[0x89, b'P', b'N', b'G', 0, 1, 2, 0xff],
        );
        w(&root.join("data.bin"), &[0, 1, 2]);
        w(&root.join("my file+1.txt"), b"spaced");
        w(&root.join("notes/a.md"), b"# A\n");
        w(&root.join("notes/deep/b.txt"), b"b");
        w(&base.join("sibling/secret.txt"), SECRET.as_bytes());
        w(&base.join("root-evil/secret.txt"), SECRET.as_bytes());
        w(&base.join("secret.txt"), SECRET.as_bytes());
        let link = |target: &str, name: &str| {
            std::os::unix::fs::symlink(target, root.join(name)).unwrap();
        };
        link("notes/a.md", "link-inside");
        link("notes", "link-dir");
        link("/etc/passwd", "link-passwd");
        link("../sibling", "link-sibling");
        link("../sibling/secret.txt", "link-sibling-file");
        link("../root-evil/secret.txt", "link-evil");
        link("..", "link-base");
        link("/dev/null", "link-devnull");
        link("loop", "loop");
        let uri = format!("{}/", encode(&root));
        Fixture { dir, root, uri }
    }

    pub fn adapter(&self, limits: FsLimits) -> FsAdapter {
        FsAdapter::new(vec![RootConfig::new(&self.root)], limits).expect("the root resolves")
    }
}

/// The `_meta` every request carries.
pub fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

/// A client talking to a server in process.
pub struct Client {
    pub server: Server,
    next_id: AtomicU64,
}

impl Client {
    pub fn new(adapter: &FsAdapter) -> Client {
        let server = adapter
            .register(Server::builder("mcp-fs-test", "0.0.0"))
            .build()
            .expect("the server builds");
        Client {
            server,
            next_id: AtomicU64::new(1),
        }
    }

    /// Sends one request (with `_meta` added) and returns the whole response.
    pub async fn send(&self, method: &str, mut params: Value) -> Value {
        params["_meta"] = meta();
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let reply = self
            .server
            .handle(body.to_string().as_bytes(), RequestIo::plain(&self.server))
            .await
            .expect("a request gets a reply");
        match reply {
            Reply::Message(m) => serde_json::from_slice(&m.body).expect("the reply is JSON"),
            Reply::Listen(_) => panic!("unexpected listen stream"),
        }
    }

    /// Sends a request and returns its `result`, failing on an error response.
    pub async fn request(&self, method: &str, params: Value) -> Value {
        let response = self.send(method, params).await;
        match response.get("result") {
            Some(r) => r.clone(),
            None => panic!("{method} failed: {response}"),
        }
    }

    /// Reads a resource and returns its single contents entry.
    pub async fn read(&self, uri: &str) -> Value {
        let result = self.request("resources/read", json!({"uri": uri})).await;
        let contents = result["contents"].as_array().expect("contents");
        assert_eq!(contents.len(), 1, "{result}");
        contents[0].clone()
    }

    /// The URIs `resources/list` returns.
    pub async fn list(&self) -> Vec<String> {
        let list = self.request("resources/list", json!({})).await;
        list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["uri"].as_str().unwrap().to_owned())
            .collect()
    }

    /// Opens a listen stream and returns it once acknowledged.
    pub async fn listen(&self, notifications: Value) -> ListenStream {
        let body = json!({"jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen",
            "params": {"notifications": notifications, "_meta": meta()}});
        let reply = self
            .server
            .handle(body.to_string().as_bytes(), RequestIo::plain(&self.server))
            .await
            .expect("a reply");
        let Reply::Listen(mut stream) = reply else {
            panic!("expected a listen stream")
        };
        let ack = next_message(&mut stream).await;
        assert_eq!(
            ack["method"], "notifications/subscriptions/acknowledged",
            "{ack}"
        );
        stream
    }
}

/// The next message on a listen stream, within a generous bound.
pub async fn next_message(stream: &mut ListenStream) -> Value {
    let message = tokio::time::timeout(Duration::from_secs(20), stream.next())
        .await
        .expect("a message within 20 s")
        .expect("the stream is open");
    serde_json::from_slice(&message).expect("a JSON message")
}
