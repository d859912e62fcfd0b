//! Listing and reading: roots and top-level entries in `resources/list`, the template, text and
//! blob files, directory listings, symlinks that stay inside, and the size cap.

use base64::Engine as _;
use kelson_fs::{FsAdapter, FsError, FsLimits, RootConfig};
use serde_json::json;

use crate::support::{Client, Fixture, TempDir};

fn b64(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

#[tokio::test]
async fn lists_the_root_its_top_level_and_a_template() {
    let fx = Fixture::new();
    let adapter = fx.adapter(FsLimits::default());
    let client = Client::new(&adapter);
    let u = |rel: &str| format!("{}{rel}", fx.uri);

    let mut expected = vec![
        u(""),
        u("data.bin"),
        u("hello.txt"),
        u("image.png"),
        u("link-dir/"),
        u("link-inside"),
        u("my%20file%2B1.txt"),
        u("notes/"),
    ];
    expected.sort();
    assert_eq!(client.list().await, expected);

    let list = client.request("resources/list", json!({})).await;
    let by_uri = |uri: &str| {
        list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["uri"] == uri)
            .unwrap()
            .clone()
    };
    let root = by_uri(&fx.uri);
    assert_eq!(root["name"], "root");
    assert_eq!(root["mimeType"], "inode/directory");
    assert_eq!(by_uri(&u("hello.txt"))["mimeType"], "text/plain");
    assert_eq!(by_uri(&u("hello.txt"))["name"], "hello.txt");
    assert_eq!(by_uri(&u("notes/"))["mimeType"], "inode/directory");
    // The cache hints come from the runtime.
    assert!(list["ttlMs"].is_number() && list["cacheScope"].is_string());

    let templates = client.request("resources/templates/list", json!({})).await;
    assert_eq!(
        templates["resourceTemplates"][0]["uriTemplate"],
        format!("{}{{+path}}", fx.uri)
    );
    assert_eq!(adapter.roots()[0].uri(), fx.uri);
    assert_eq!(
        adapter.uri_of(&fx.root.join("notes")).as_deref(),
        Some(u("notes/").as_str())
    );
    assert_eq!(adapter.uri_of(&fx.dir.0.join("secret.txt")), None);
}

#[tokio::test]
async fn the_listed_count_is_bounded() {
    let fx = Fixture::new();
    let adapter = fx.adapter({
        let mut edited = FsLimits::default();
        edited.max_listed_entries = 2;
        edited
    });
    let client = Client::new(&adapter);
    let u = |rel: &str| format!("{}{rel}", fx.uri);
    assert_eq!(client.list().await, [u(""), u("data.bin"), u("hello.txt")]);

    let none = fx.adapter({
        let mut edited = FsLimits::default();
        edited.max_listed_entries = 0;
        edited
    });
    assert_eq!(Client::new(&none).list().await, [u("")]);
}

#[tokio::test]
async fn reads_text_and_binary_files() {
    let fx = Fixture::new();
    let client = Client::new(&fx.adapter(FsLimits::default()));
    let u = |rel: &str| format!("{}{rel}", fx.uri);

    let text = client.read(&u("hello.txt")).await;
    assert_eq!(text["uri"], u("hello.txt"));
    assert_eq!(text["mimeType"], "text/plain");
    assert_eq!(text["text"], "Hello, world\n");
    assert!(text.get("blob").is_none());

    let png = client.read(&u("image.png")).await;
    assert_eq!(png["mimeType"], "image/png");
    assert_eq!(png["blob"], b64(&[0x89, b'P', b'N', b'G', 0, 1, 2, 0xff]));
    assert!(png.get("text").is_none());

    let bin = client.read(&u("data.bin")).await;
    assert_eq!(bin["mimeType"], "application/octet-stream");
    assert_eq!(bin["blob"], b64(&[0, 1, 2]));

    let md = client.read(&u("notes/a.md")).await;
    assert_eq!(md["mimeType"], "text/markdown");
    assert_eq!(md["text"], "# A\n");

    // Encoded names, with a sub-delimiter sent either way.
    assert_eq!(client.read(&u("my%20file%2B1.txt")).await["text"], "spaced");
    assert_eq!(client.read(&u("my%20file+1.txt")).await["text"], "spaced");
    assert_eq!(client.read(&u("my%20file%2b1.txt")).await["text"], "spaced");

    // A symlink to another file inside the root is allowed, as are paths through a symlinked
    // directory that stays inside.
    let linked = client.read(&u("link-inside")).await;
    assert_eq!(linked["uri"], u("link-inside"));
    assert_eq!(linked["text"], "# A\n");
    assert_eq!(client.read(&u("link-dir/deep/b.txt")).await["text"], "b");
}

#[tokio::test]
async fn reads_directories_as_listings() {
    let fx = Fixture::new();
    std::fs::create_dir(fx.root.join("empty")).unwrap();
    std::os::unix::net::UnixListener::bind(fx.root.join("socket")).unwrap();
    let client = Client::new(&fx.adapter(FsLimits::default()));
    let u = |rel: &str| format!("{}{rel}", fx.uri);

    let root = client.read(&fx.uri).await;
    assert_eq!(root["uri"], fx.uri);
    assert_eq!(root["mimeType"], "inode/directory");
    // Only what can be read is listed: not the links that lead out, the loop or the socket.
    assert_eq!(
        root["text"],
        "data.bin\nempty/\nhello.txt\nimage.png\nlink-dir/\nlink-inside\nmy%20file%2B1.txt\nnotes/\n"
    );
    assert!(root.get("_meta").is_none());

    // With or without the trailing slash; the listing's URI always has it, so that its lines
    // resolve below it.
    for uri in [u("notes"), u("notes/")] {
        let notes = client.read(&uri).await;
        assert_eq!(notes["uri"], u("notes/"));
        assert_eq!(notes["text"], "a.md\ndeep/\n");
    }
    assert_eq!(client.read(&u("link-dir/")).await["text"], "a.md\ndeep/\n");
    assert_eq!(client.read(&u("empty/")).await["text"], "");
}

#[tokio::test]
async fn long_listings_are_cut_and_flagged() {
    let dir = TempDir::new();
    for i in 0..30 {
        std::fs::write(dir.0.join(format!("f{i:02}.txt")), "x").unwrap();
    }
    let adapter = FsAdapter::new(vec![RootConfig::new(&dir.0).with_name("many")], {
        let mut edited = FsLimits::default();
        edited.max_dir_entries = 5;
        edited
    })
    .unwrap();
    let client = Client::new(&adapter);
    let uri = adapter.roots()[0].uri().to_owned();
    let listing = client.read(&uri).await;
    assert_eq!(
        listing["text"],
        "f00.txt\nf01.txt\nf02.txt\nf03.txt\nf04.txt\n"
    );
    assert_eq!(listing["_meta"]["truncated"], true);
    assert_eq!(adapter.roots()[0].name(), "many");
}

#[tokio::test]
async fn files_over_the_cap_are_refused_not_truncated() {
    let fx = Fixture::new();
    std::fs::write(fx.root.join("big.txt"), "x".repeat(101)).unwrap();
    std::fs::write(fx.root.join("exact.txt"), "y".repeat(100)).unwrap();
    let client = Client::new(&fx.adapter({
        let mut edited = FsLimits::default();
        edited.max_file_bytes = 100;
        edited
    }));
    let u = |rel: &str| format!("{}{rel}", fx.uri);

    assert_eq!(client.read(&u("exact.txt")).await["text"], "y".repeat(100));
    let big = client
        .send("resources/read", json!({"uri": u("big.txt")}))
        .await;
    assert!(big.get("result").is_none(), "{big}");
    assert_eq!(big["error"]["code"], -32602);
    assert_eq!(big["error"]["message"], "Resource too large");
    assert_eq!(big["error"]["data"]["uri"], u("big.txt"));
    assert_eq!(big["error"]["data"]["size"], 101);
    assert_eq!(big["error"]["data"]["maxBytes"], 100);
    assert!(!big.to_string().contains("xxxx"));
}

#[tokio::test]
async fn bad_roots_are_refused_at_start() {
    let dir = TempDir::new();
    std::fs::write(dir.0.join("file"), "x").unwrap();
    let new = |paths: &[&str]| {
        FsAdapter::new(
            paths
                .iter()
                .map(|p| RootConfig::new(dir.0.join(p)))
                .collect(),
            FsLimits::default(),
        )
    };
    assert!(matches!(new(&["missing"]), Err(FsError::Root { .. })));
    assert!(matches!(new(&["file"]), Err(FsError::NotADirectory { .. })));
    std::fs::create_dir(dir.0.join("d")).unwrap();
    std::os::unix::fs::symlink("d", dir.0.join("alias")).unwrap();
    assert!(matches!(
        new(&["d", "alias"]),
        Err(FsError::DuplicateRoot { .. })
    ));
    // A root may contain another; the inner one is listed once, as a root.
    let nested = new(&["", "d"]).unwrap();
    let outer = nested.roots()[0].uri().to_owned();
    let inner = nested.roots()[1].uri().to_owned();
    assert_eq!(inner, format!("{outer}d/"));
    let client = Client::new(&nested);
    let mut expected = vec![
        outer.clone(),
        format!("{outer}alias/"),
        format!("{outer}file"),
        inner,
    ];
    expected.sort();
    assert_eq!(client.list().await, expected);
}

#[tokio::test]
async fn no_roots_register_nothing() {
    let adapter = FsAdapter::new(Vec::new(), FsLimits::default()).unwrap();
    let client = Client::new(&adapter);
    let discover = client.request("server/discover", json!({})).await;
    assert!(
        discover["capabilities"].get("resources").is_none(),
        "{discover}"
    );
    let _watcher = adapter
        .watch(&client.server)
        .expect("watching nothing is fine");
}
