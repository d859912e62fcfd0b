//! Every way out of a root we could think of, each answered exactly like a missing file: -32602
//! "Resource not found" with `data.uri` and nothing else, and no content.

use std::process::Command;
use std::time::Duration;

use kelson_fs::FsLimits;
use serde_json::{Value, json};

use crate::support::{Client, Fixture, SECRET, encode};

/// Reads `uri` and asserts the answer is the not-found error and carries nothing else.
async fn assert_not_found(client: &Client, uri: &str) {
    let response = tokio::time::timeout(
        Duration::from_secs(20),
        client.send("resources/read", json!({ "uri": uri })),
    )
    .await
    .unwrap_or_else(|_| panic!("reading {uri:?} hung"));
    assert!(
        response.get("result").is_none(),
        "{uri:?} returned {response}"
    );
    let error = &response["error"];
    assert_eq!(
        error,
        &json!({"code": -32602, "message": "Resource not found", "data": {"uri": uri}}),
        "{uri:?}"
    );
    let text = response.to_string();
    assert!(!text.contains(SECRET), "{uri:?} leaked the secret");
    assert!(!text.contains("root:"), "{uri:?} leaked /etc/passwd");
}

/// The error for a URI, with `data.uri` removed: it must not depend on what exists outside.
async fn error_without_uri(client: &Client, uri: &str) -> Value {
    let mut response = client.send("resources/read", json!({ "uri": uri })).await;
    response["error"]["data"]
        .as_object_mut()
        .unwrap()
        .remove("uri");
    response["error"].clone()
}

#[tokio::test]
async fn every_escape_is_not_found() {
    let fx = Fixture::new();
    let client = Client::new(&fx.adapter(FsLimits::default()));
    let r = |rel: &str| format!("{}{rel}", fx.uri);
    // The root's URI without the "file://" scheme, and without its trailing slash.
    let root_path = fx.uri.strip_prefix("file://").unwrap();
    let root_no_slash = fx.uri.trim_end_matches('/');
    let base = encode(&fx.dir.0);

    let mut uris: Vec<String> = vec![
        // `..` segments, plain, through a directory, and at the end.
        r("../sibling/secret.txt"),
        r("../secret.txt"),
        r(".."),
        r("../"),
        r("notes/../../sibling/secret.txt"),
        r("notes/../hello.txt"),
        r("./hello.txt"),
        r("notes/./a.md"),
        // Encoded dots, in every case and mix.
        r("%2e%2e/sibling/secret.txt"),
        r("%2E%2E/sibling/secret.txt"),
        r(".%2e/sibling/secret.txt"),
        r("%2e./sibling/secret.txt"),
        r("%2e/hello.txt"),
        r("notes/%2e%2e/%2e%2e/secret.txt"),
        // Encoded separators.
        r("..%2Fsibling%2Fsecret.txt"),
        r("..%2fsibling%2fsecret.txt"),
        r("%2Fetc%2Fpasswd"),
        r("%2fetc%2fpasswd"),
        r("notes%2Fa.md"),
        r("..%5Csibling%5Csecret.txt"),
        r("..%5csibling%5csecret.txt"),
        r("..\\sibling\\secret.txt"),
        r("notes\\a.md"),
        // Double encoding decodes once, to a name that does not exist.
        r("%252e%252e/sibling/secret.txt"),
        r("..%252Fsecret.txt"),
        // NUL bytes.
        r("hello.txt%00"),
        r("hello.txt%00.png"),
        r("%00"),
        r("notes%00/a.md"),
        // Absolute paths and double slashes.
        "file:///etc/passwd".to_owned(),
        format!("{base}/secret.txt"),
        format!("{base}/sibling/secret.txt"),
        r("/etc/passwd"),
        r("//etc/passwd"),
        format!("file:///{root_path}hello.txt"),
        format!("file:////etc/passwd"),
        r("notes//a.md"),
        format!("{root_no_slash}//hello.txt"),
        // A sibling whose name starts with the root's name.
        format!("{root_no_slash}-evil/secret.txt"),
        format!("{root_no_slash}%2D%65vil/secret.txt"),
        // Case tricks: the scheme, the host and the path are compared byte for byte.
        format!("FILE://{root_path}hello.txt"),
        format!("File://{root_path}hello.txt"),
        format!("fILE://{root_path}hello.txt"),
        format!("file://localhost{root_path}hello.txt"),
        format!("file://LOCALHOST{root_path}hello.txt"),
        format!("file://127.0.0.1{root_path}hello.txt"),
        format!("file:{root_path}hello.txt"),
        root_path.to_owned() + "hello.txt",
        format!("{}/hello.txt", root_no_slash.replace("/root", "/ROOT")),
        r("HELLO.TXT"),
        r("Notes/a.md"),
        // Symlinks that lead out of the root, directly, through a directory, or by prefix.
        r("link-passwd"),
        r("link-sibling"),
        r("link-sibling/"),
        r("link-sibling/secret.txt"),
        r("link-sibling-file"),
        r("link-evil"),
        r("link-base/secret.txt"),
        r("link-base/sibling/secret.txt"),
        r("link-base/root/hello.txt"),
        r("link-devnull"),
        r("loop"),
        r("loop/x"),
        // Unicode look-alikes and invalid UTF-8: no normalisation turns them into dots or slashes.
        r("%E2%80%A5/sibling/secret.txt"),
        r("%EF%BC%8E%EF%BC%8E/sibling/secret.txt"),
        r("..%EF%BC%8Fsibling%EF%BC%8Fsecret.txt"),
        r("%EF%BC%8E%EF%BC%8E%EF%BC%8Fsecret.txt"),
        r("..%E2%88%95secret.txt"),
        r("%C0%AE%C0%AE/sibling/secret.txt"),
        r("%C0%AF"),
        r("%FF"),
        r("hello.t\u{0445}t"),
        r("\u{2025}/secret.txt"),
        // Other malformed forms.
        r("hello.txt/"),
        r("hello.txt?x=1"),
        r("hello.txt#frag"),
        r("hello world"),
        r("%"),
        r("%2"),
        r("%zz"),
        r("missing.txt"),
        // Very long paths: a name over NAME_MAX, a path over PATH_MAX, deep nesting, and a URI
        // beyond what the runtime's template matcher looks at.
        r(&"a".repeat(256)),
        r(&format!("{}x", "abcdefg/".repeat(600))),
        r(&format!("{}x", "a/".repeat(3000))),
        r(&format!("{}x", "notes/".repeat(2000))),
        r(&"%41".repeat(5000)),
    ];

    // A FIFO (which would block a plain open) and, when permitted, a device node inside the root.
    let fifo = fx.root.join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status();
    assert!(
        made.is_ok_and(|s| s.success()),
        "mkfifo is needed for this test"
    );
    uris.push(r("fifo"));
    std::os::unix::net::UnixListener::bind(fx.root.join("socket")).unwrap();
    uris.push(r("socket"));
    let device = Command::new("mknod")
        .arg(fx.root.join("null"))
        .args(["c", "1", "3"])
        .stderr(std::process::Stdio::null())
        .status();
    if device.is_ok_and(|s| s.success()) {
        uris.push(r("null"));
    } else {
        eprintln!("mknod not permitted here: the device-node case runs only as root");
    }

    for uri in &uris {
        assert_not_found(&client, uri).await;
    }

    // The root and the allowed link still work with the same client (the checks are not simply
    // refusing everything).
    assert_eq!(client.read(&r("hello.txt")).await["text"], "Hello, world\n");
    assert_eq!(client.read(&r("link-inside")).await["text"], "# A\n");
}

#[tokio::test]
async fn refusals_do_not_reveal_what_exists_outside() {
    let fx = Fixture::new();
    let client = Client::new(&fx.adapter(FsLimits::default()));
    let r = |rel: &str| format!("{}{rel}", fx.uri);
    let missing = error_without_uri(&client, &r("missing.txt")).await;
    for uri in [
        r("../secret.txt"),
        r("../nothing-here.txt"),
        r("link-sibling/secret.txt"),
        r("link-sibling/nothing-here.txt"),
        r("link-base/secret.txt"),
        r("link-base/nothing-here.txt"),
    ] {
        assert_eq!(error_without_uri(&client, &uri).await, missing, "{uri}");
    }
}

#[tokio::test]
async fn a_symlink_swapped_in_after_listing_is_still_refused() {
    let fx = Fixture::new();
    let client = Client::new(&fx.adapter(FsLimits::default()));
    let r = |rel: &str| format!("{}{rel}", fx.uri);
    assert_eq!(client.read(&r("notes/a.md")).await["text"], "# A\n");
    // Replace the directory with a link to a place outside that has a file of the same name.
    std::fs::write(fx.dir.0.join("sibling/a.md"), SECRET).unwrap();
    std::fs::rename(fx.root.join("notes"), fx.root.join("notes-old")).unwrap();
    std::os::unix::fs::symlink("../sibling", fx.root.join("notes")).unwrap();
    assert_not_found(&client, &r("notes/a.md")).await;
    assert_not_found(&client, &r("notes/")).await;
}
