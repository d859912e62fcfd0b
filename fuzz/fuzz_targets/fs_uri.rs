//! The filesystem URI resolver (kelson-fs `uri.rs` through the hidden `kelson_fs::__fuzz`, and the
//! whole read path through a built server): a `file://` URI never resolves outside its root.
//!
//! The fixture, made once per process in the temporary directory: a root holding files, a
//! subdirectory, a socket and symlinks that stay inside, lead out (to a sibling directory, to a
//! sibling whose name starts with the root's, to `/etc`), lead up, and loop; beside it, files
//! whose contents are marked secret.
//!
//! Input: a URI, taken as is when it starts with `file:`, else appended to the root's URI.
//!
//! Properties:
//! - the strict parser never panics; what it accepts is plain names (not empty, `.` or `..`; no
//!   `/`, `\` or NUL; at most 255 bytes) under 4096 bytes in all, and the canonical URI of that
//!   path parses back to the same names;
//! - `resources/read` never answers with anything from outside the root (no secret marker, no
//!   `/etc/passwd` line), its contents all carry URIs under the root, and a URI the parser refuses
//!   is never read.

#![no_main]

use std::os::unix::fs::symlink;
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use kelson_fs::{FsAdapter, FsLimits, RootConfig};
use kelson_jsonrpc::Message;
use kelson_server::Server;
use kelson_server::transport::{Reply, RequestIo};
use serde_json::json;

const SECRET: &str = "SECRET-OUTSIDE-THE-ROOT";

struct Fixture {
    root: PathBuf,
    root_uri: String,
    server: Server,
    runtime: tokio::runtime::Runtime,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let base = std::env::temp_dir().join(format!("mcp-fuzz-fs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let root = base.join("root");
        let write = |path: &Path, text: &str| {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write(&root.join("a.txt"), "inside a");
        write(&root.join("sp ace.txt"), "inside space");
        write(&root.join("sub/b.txt"), "inside b");
        write(&root.join("sub/deeper/c.json"), "{\"inside\": true}");
        write(&base.join("outside/secret.txt"), SECRET);
        write(&base.join("root2/secret.txt"), SECRET);
        write(&base.join("secret.txt"), SECRET);
        symlink("sub", root.join("link-in")).unwrap();
        symlink("sub/b.txt", root.join("link-file-in")).unwrap();
        symlink("../outside", root.join("link-out")).unwrap();
        symlink("../outside/secret.txt", root.join("link-secret")).unwrap();
        symlink("../root2", root.join("link-sibling")).unwrap();
        symlink("..", root.join("link-up")).unwrap();
        symlink("/etc", root.join("link-etc")).unwrap();
        symlink("self-loop", root.join("self-loop")).unwrap();
        symlink("../link-out/secret.txt", root.join("sub/link-out-again")).unwrap();
        // A path that leaves the root and comes back in through it.
        symlink("../../root/sub", root.join("sub/deeper/link-round")).unwrap();
        std::os::unix::net::UnixListener::bind(root.join("socket"))
            .map(drop)
            .unwrap();

        let adapter = FsAdapter::new(vec![RootConfig::new(&root)], FsLimits::default())
            .expect("the fixture root opens");
        let root_uri = adapter.roots()[0].uri().to_owned();
        let root = adapter.roots()[0].path().to_owned();
        let server = adapter
            .register(Server::builder("fs-fuzz", "1.0.0"))
            .build()
            .expect("the server builds");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        Fixture {
            root,
            root_uri,
            server,
            runtime,
        }
    })
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && name != "."
        && name != ".."
        && !name.contains(['/', '\\', '\0'])
}

fuzz_target!(|data: &[u8]| {
    let fx = fixture();
    let text = String::from_utf8_lossy(data);
    let uri = if text.starts_with("file:") {
        text.into_owned()
    } else {
        format!("{}{text}", fx.root_uri)
    };

    let parsed = kelson_fs::__fuzz::parse_relative(&fx.root_uri, &uri);
    if let Some((names, slash)) = &parsed {
        assert!(
            names.iter().all(|n| valid_name(n)),
            "{uri:?} gave the names {names:?}"
        );
        let mut path = fx.root.clone();
        for name in names {
            path.push(name);
        }
        assert!(path.as_os_str().len() < fx.root.as_os_str().len() + 4096);
        let below = path.strip_prefix(&fx.root).expect("under the root");
        assert!(
            below
                .components()
                .all(|c| matches!(c, Component::Normal(_)))
        );
        assert_eq!(below.components().count(), names.len(), "{names:?}");
        let canonical =
            kelson_fs::__fuzz::path_uri(&path, *slash).expect("a path of plain names has a URI");
        assert_eq!(
            kelson_fs::__fuzz::parse_relative(&fx.root_uri, &canonical).as_ref(),
            Some(&(names.clone(), *slash)),
            "{uri:?} -> {canonical:?}"
        );
    }

    let request = json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "resources/read",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}
            },
            "uri": uri
        }
    })
    .to_string();
    let reply = fx.runtime.block_on(
        fx.server
            .handle(request.as_bytes(), RequestIo::plain(&fx.server)),
    );
    let Some(Reply::Message(reply)) = reply else {
        panic!("resources/read was not answered with one message");
    };
    let body = String::from_utf8_lossy(&reply.body);
    assert!(
        !body.contains(SECRET),
        "{uri:?} read a file outside the root: {body}"
    );
    assert!(
        !body.contains("root:x:0:0"),
        "{uri:?} read /etc/passwd: {body}"
    );
    let Ok(Message::Response(response)) = kelson_jsonrpc::decode(&reply.body) else {
        panic!("not a response: {body}");
    };
    match response.outcome {
        Ok(result) => {
            assert!(
                parsed.is_some(),
                "{uri:?} was read though the parser refuses it"
            );
            let result: serde_json::Value = serde_json::from_str(result.get()).unwrap();
            for contents in result["contents"].as_array().expect("contents") {
                let read = contents["uri"].as_str().expect("a uri");
                assert!(
                    read.starts_with(&fx.root_uri),
                    "{uri:?} answered for {read:?}"
                );
            }
        }
        Err(error) => assert_eq!(error.code, -32602, "{uri:?}: {body}"),
    }
});
