//! Changes reaching listeners: `resources/updated` for subscribed files and directories, and
//! `resources/list_changed` when a root's top level changes.

use std::time::Duration;

use kelson_fs::FsLimits;
use kelson_server::transport::ListenStream;
use serde_json::{Value, json};

use crate::support::{Client, Fixture, next_message};

fn limits() -> FsLimits {
    {
        let mut edited = FsLimits::default();
        edited.debounce = Duration::from_millis(20);
        edited
    }
}

/// Reads `resources/updated` notifications until one for `expected` arrives. Every message on the
/// stream must carry the subscription id and be an update for a URI under `subscribed` (a file
/// event may be reported more than once when its events straddle two bursts).
async fn wait_for_updated(stream: &mut ListenStream, subscribed: &str, expected: &str) {
    loop {
        let message = next_message(stream).await;
        assert_eq!(
            message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "listen-1",
            "{message}"
        );
        assert_eq!(
            message["method"], "notifications/resources/updated",
            "{message}"
        );
        let uri = message["params"]["uri"].as_str().unwrap();
        assert!(
            uri.starts_with(subscribed),
            "{uri} is not under {subscribed}"
        );
        if uri == expected {
            return;
        }
    }
}

#[tokio::test]
async fn a_changed_file_reaches_its_subscriber() {
    let fx = Fixture::new();
    let adapter = fx.adapter(limits());
    let client = Client::new(&adapter);
    let _watcher = adapter.watch(&client.server).expect("the watcher starts");
    let hello = format!("{}hello.txt", fx.uri);

    let mut stream = client
        .listen(json!({"resourceSubscriptions": [hello]}))
        .await;
    // A change to a file nobody subscribed to comes first, in the same burst; it must not arrive.
    std::fs::write(fx.root.join("data.bin"), [9, 9]).unwrap();
    std::fs::write(fx.root.join("hello.txt"), "changed").unwrap();
    wait_for_updated(&mut stream, &hello, &hello).await;
    assert_eq!(client.read(&hello).await["text"], "changed");

    // Later changes are heard too.
    std::fs::write(fx.root.join("hello.txt"), "again").unwrap();
    wait_for_updated(&mut stream, &hello, &hello).await;
}

#[tokio::test]
async fn a_directory_subscription_hears_about_files_under_it() {
    let fx = Fixture::new();
    let adapter = fx.adapter(limits());
    let client = Client::new(&adapter);
    let _watcher = adapter.watch(&client.server).expect("the watcher starts");
    let notes = format!("{}notes/", fx.uri);

    let mut stream = client
        .listen(json!({"resourceSubscriptions": [notes]}))
        .await;
    std::fs::write(fx.root.join("hello.txt"), "not under notes").unwrap();
    std::fs::write(fx.root.join("notes/deep/b.txt"), "bb").unwrap();
    wait_for_updated(&mut stream, &notes, &format!("{notes}deep/b.txt")).await;

    // A new file in a new directory: the watch follows the tree as it grows.
    std::fs::create_dir(fx.root.join("notes/fresh")).unwrap();
    wait_for_updated(&mut stream, &notes, &format!("{notes}fresh/")).await;
    std::fs::write(fx.root.join("notes/fresh/c.txt"), "c").unwrap();
    wait_for_updated(&mut stream, &notes, &format!("{notes}fresh/c.txt")).await;
}

/// Reads messages until `notifications/resources/list_changed`.
async fn next_list_changed(stream: &mut ListenStream) {
    let message: Value = next_message(stream).await;
    assert_eq!(
        message["method"], "notifications/resources/list_changed",
        "{message}"
    );
}

#[tokio::test]
async fn top_level_changes_update_the_list() {
    let fx = Fixture::new();
    let adapter = fx.adapter(limits());
    let client = Client::new(&adapter);
    let _watcher = adapter.watch(&client.server).expect("the watcher starts");
    let fresh = format!("{}fresh.md", fx.uri);

    let mut stream = client.listen(json!({"resourcesListChanged": true})).await;
    std::fs::write(fx.root.join("fresh.md"), "new").unwrap();
    next_list_changed(&mut stream).await;
    assert!(client.list().await.contains(&fresh));
    assert_eq!(client.read(&fresh).await["text"], "new");

    std::fs::remove_file(fx.root.join("fresh.md")).unwrap();
    next_list_changed(&mut stream).await;
    assert!(!client.list().await.contains(&fresh));

    // A change below the top level changes nothing in the list: the next list change is the one
    // caused by the top-level file that follows it.
    std::fs::write(fx.root.join("notes/deep/quiet.txt"), "q").unwrap();
    std::fs::write(fx.root.join("later.txt"), "l").unwrap();
    next_list_changed(&mut stream).await;
    let list = client.list().await;
    assert!(list.contains(&format!("{}later.txt", fx.uri)));
    assert!(!list.iter().any(|u| u.contains("quiet")));
}

/// More files change in one burst than the watcher keeps: it cannot say which, so everyone who
/// follows anything under the root is told to look again, a file's subscriber included.
#[tokio::test]
async fn a_burst_too_large_to_track_still_reaches_every_subscriber() {
    let fx = Fixture::new();
    // One burst: nothing is flushed before the writer below is done.
    let adapter = fx.adapter({
        let mut edited = FsLimits::default();
        edited.debounce = Duration::from_secs(2);
        edited
    });
    let client = Client::new(&adapter);
    let _watcher = adapter.watch(&client.server).expect("the watcher starts");
    let hello = format!("{}hello.txt", fx.uri);
    let mut stream = client
        .listen(json!({"resourceSubscriptions": [hello], "resourcesListChanged": true}))
        .await;

    std::fs::create_dir(fx.root.join("many")).unwrap();
    for i in 0..11_000 {
        std::fs::write(fx.root.join(format!("many/{i}")), "").unwrap();
    }
    std::fs::write(fx.root.join("hello.txt"), "changed in the crowd").unwrap();

    let mut heard = Vec::new();
    while !heard
        .iter()
        .any(|m: &Value| m["params"]["uri"] == hello.as_str())
    {
        heard.push(next_message(&mut stream).await);
    }
    assert!(
        heard
            .iter()
            .any(|m| m["method"] == "notifications/resources/list_changed"),
        "{heard:?}"
    );
    assert_eq!(client.read(&hello).await["text"], "changed in the crowd");
}
