//! Our client against real handshake-era servers from npm, built on the TypeScript SDK v1:
//! `@modelcontextprotocol/server-everything` (stdio and Streamable HTTP) and
//! `@modelcontextprotocol/server-filesystem` (stdio only). The era is detected as legacy, and every
//! call goes through the same API as on a modern server: discover (built from `initialize`),
//! lists, calls with progress, reads, prompts, completion, the servers' own requests (elicitation,
//! roots) answered by the same handlers as MRTR input, resource-not-found, and listen through
//! `resources/subscribe`. Over HTTP, the server's requests outside any client request travel on the
//! session's one GET stream, which several listens share.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt as _;
use kelson_client::{Client, ClientBuilder, Era, EraChoice, Error, ListenEvent, Subscription};
use kelson_types::{
    CompleteArgument, CompletionReference, ElicitRequestFormParams, ElicitResult, ElicitValue,
    ListRootsResult, ResourceContents, Root, SubscriptionFilter,
};
use serde_json::json;

use super::{HttpPeer, Peers, free_port, http_peer};
use crate::harness::{Kind, text, within};

const LEGACY: Era = Era::Legacy {
    version: "2025-11-25",
};

/// What the client's handlers were asked by the server.
#[derive(Clone, Default)]
struct Asked {
    elicitations: Arc<Mutex<Vec<String>>>,
    roots: Arc<AtomicUsize>,
}

/// A builder whose handlers answer elicitation and roots requests and record them.
fn builder(asked: &Asked, root: &str) -> ClientBuilder {
    let elicitations = asked.elicitations.clone();
    let roots = asked.roots.clone();
    let root = root.to_owned();
    Client::builder()
        .probe_timeout(Duration::from_secs(5))
        .on_elicit_form(move |params: ElicitRequestFormParams| {
            elicitations.lock().unwrap().push(params.message);
            async {
                let content =
                    BTreeMap::from([("name".to_owned(), ElicitValue::String("interop".into()))]);
                Ok(ElicitResult::accept(content))
            }
        })
        .on_roots(move |()| {
            roots.fetch_add(1, Ordering::SeqCst);
            let root = root.clone();
            async move {
                Ok(ListRootsResult {
                    roots: vec![Root::new(root)],
                })
            }
        })
}

fn text_of(contents: &[ResourceContents]) -> &str {
    match contents {
        [ResourceContents::Text(t), ..] => &t.text,
        other => panic!("expected text contents, got {other:?}"),
    }
}

const EVERYTHING: &str = "node_modules/@modelcontextprotocol/server-everything/dist/index.js";

/// server-everything over Streamable HTTP on a free port, and a client connected to it.
async fn everything_over_http(builder: ClientBuilder) -> (Client, HttpPeer) {
    let port = free_port();
    let mut command = Peers::installed().node(EVERYTHING);
    command.arg("streamableHttp").env("PORT", port.to_string());
    let peer = http_peer(command, true, |line| {
        line.contains("listening on port")
            .then(|| format!("http://127.0.0.1:{port}/mcp"))
    })
    .await;
    let client = within(builder.connect_http(&peer.url)).await.unwrap();
    (client, peer)
}

async fn everything(kind: Kind) {
    let peers = Peers::installed();
    let asked = Asked::default();
    let root = "file:///tmp/mcp-rs-interop-root";
    let builder = builder(&asked, root);
    let (client, _peer) = match kind {
        Kind::Stdio => {
            let mut command = peers.node(EVERYTHING);
            command.arg("stdio");
            (within(builder.connect_stdio(command)).await.unwrap(), None)
        }
        Kind::Http => {
            let (client, peer) = everything_over_http(builder).await;
            (client, Some(peer))
        }
    };

    // The era, and discover built from the initialize result.
    assert_eq!(client.era(), LEGACY);
    assert_eq!(client.session_id().is_some(), kind == Kind::Http);
    let discover = within(client.discover()).await.unwrap();
    assert_eq!(discover.supported_versions, ["2025-11-25"]);
    let info = discover.meta.as_ref().and_then(|m| m.server_info.as_ref());
    assert_eq!(
        info.map(|i| i.name.as_str()),
        Some("mcp-servers/everything")
    );
    assert!(discover.instructions.is_some());
    let resources_cap = discover.capabilities.resources.as_ref().unwrap();
    assert_eq!(resources_cap.subscribe, Some(true));

    // Lists and calls. The elicitation and roots tools exist because our handlers declared those
    // capabilities in initialize.
    let tools: Vec<String> = within(client.list_all_tools())
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    for name in [
        "get-sum",
        "trigger-long-running-operation",
        "trigger-elicitation-request",
        "get-roots-list",
        "toggle-subscriber-updates",
    ] {
        assert!(
            tools.iter().any(|t| t == name),
            "{name} missing from {tools:?}"
        );
    }
    let sum = within(client.call_tool("get-sum", json!({"a": 2, "b": 3})))
        .await
        .unwrap();
    assert!(text(&sum).contains('5'), "{sum:?}");

    // Progress, with the legacy progressToken.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let progress = seen.clone();
    let long = within(
        client
            .call_tool(
                "trigger-long-running-operation",
                json!({"duration": 0.3, "steps": 3}),
            )
            .on_progress(move |p| progress.lock().unwrap().push((p.progress, p.total))),
    )
    .await
    .unwrap();
    assert!(text(&long).contains("Steps: 3"), "{long:?}");
    assert_eq!(
        *seen.lock().unwrap(),
        [(1.0, Some(3.0)), (2.0, Some(3.0)), (3.0, Some(3.0))]
    );

    // The server's own requests go to the same handlers as MRTR input.
    let elicited = within(client.call_tool("trigger-elicitation-request", json!({})))
        .await
        .unwrap();
    assert!(text(&elicited).contains("User provided"), "{elicited:?}");
    assert_eq!(
        *asked.elicitations.lock().unwrap(),
        ["Please provide inputs for the following fields:"]
    );
    // Resources: static, templated, and not found.
    let resources = within(client.list_all_resources()).await.unwrap();
    let first = resources.first().expect("static resources").uri.clone();
    let read = within(client.read_resource(first.clone())).await.unwrap();
    assert!(!text_of(&read.contents).is_empty());
    let templates = within(client.list_all_resource_templates()).await.unwrap();
    assert!(
        templates
            .iter()
            .any(|t| t.uri_template == "demo://resource/dynamic/text/{resourceId}"),
        "{templates:?}"
    );
    let dynamic = within(client.read_resource("demo://resource/dynamic/text/1"))
        .await
        .unwrap();
    assert!(text_of(&dynamic.contents).starts_with("Resource 1:"));
    let missing = within(client.read_resource("demo://resource/static/document/missing.md"))
        .await
        .unwrap_err();
    assert!(missing.is_resource_not_found(), "{missing:?}");

    // Prompts and completion.
    let prompts = within(client.list_all_prompts()).await.unwrap();
    assert!(
        prompts.iter().any(|p| p.name == "simple-prompt"),
        "{prompts:?}"
    );
    let prompt = within(client.get_prompt("simple-prompt", BTreeMap::new()))
        .await
        .unwrap();
    assert_eq!(
        prompt.messages[0].content.as_text(),
        Some("This is a simple prompt without arguments.")
    );
    let completed = within(client.complete(
        CompletionReference::prompt("completable-prompt"),
        CompleteArgument::new("department", "E"),
        None,
    ))
    .await
    .unwrap();
    assert_eq!(completed.completion.values, ["Engineering"]);

    // A server request outside any client request, with no listen open: roots/list, which the
    // server sends on its own shortly after the handshake and again from the tool if it has no
    // answer yet. On HTTP it travels on the session's GET stream, which the client opened right
    // after `notifications/initialized` (SDK v1 servers drop such requests when none is open).
    let roots = within(client.call_tool("get-roots-list", json!({})))
        .await
        .unwrap();
    let listed: String = roots.content.iter().filter_map(|c| c.as_text()).collect();
    assert!(listed.contains(root), "{roots:?}");
    assert!(asked.roots.load(Ordering::SeqCst) >= 1);

    // listen: resources/subscribe for the URI, and on HTTP the session's GET stream.
    let filter = SubscriptionFilter {
        resource_subscriptions: Some(vec![first.clone()]),
        ..SubscriptionFilter::default()
    };
    let mut subscription = within(client.listen(filter)).await.unwrap();
    assert_eq!(
        subscription.acknowledged().resource_uris(),
        std::slice::from_ref(&first)
    );

    within(client.call_tool("toggle-subscriber-updates", json!({})))
        .await
        .unwrap();
    // Other untagged notifications are filtered out, so the first item is the update.
    let event = within(subscription.next())
        .await
        .expect("the listen stream ended")
        .expect("the listen stream failed");
    assert_eq!(event, ListenEvent::ResourceUpdated { uri: first.clone() });
    drop(subscription);
    within(client.call_tool("toggle-subscriber-updates", json!({})))
        .await
        .unwrap();

    // Still the legacy revision after all of it.
    assert_eq!(client.era(), LEGACY);
    within(client.close()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_over_stdio() {
    if Peers::get().is_none() {
        return;
    }
    everything(Kind::Stdio).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_over_http() {
    if Peers::get().is_none() {
        return;
    }
    everything(Kind::Http).await;
}

/// The next `n` events of a listen, as a set of updated URIs.
/// Forced eras: modern fails at once, saying what the server answered to the probe, and never
/// sends `initialize`; legacy skips the probe and gets the same session detection gets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_forced_to_an_era() {
    if Peers::get().is_none() {
        return;
    }
    let peers = Peers::installed();
    let stdio = || {
        let mut command = peers.node(EVERYTHING);
        command.arg("stdio");
        command
    };
    let e = within(
        Client::builder()
            .era(EraChoice::Modern)
            .connect_stdio(stdio()),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&e, Error::NotModern { answer } if answer.contains("server/discover with JSON-RPC error")),
        "{e:?}"
    );
    let client = within(
        Client::builder()
            .era(EraChoice::Legacy)
            .connect_stdio(stdio()),
    )
    .await
    .unwrap();
    assert_eq!(client.era(), LEGACY);
    let sum = within(client.call_tool("get-sum", json!({"a": 2, "b": 3})))
        .await
        .unwrap();
    assert!(text(&sum).contains('5'), "{sum:?}");
    within(client.close()).await.unwrap();

    let port = free_port();
    let mut command = peers.node(EVERYTHING);
    command.arg("streamableHttp").env("PORT", port.to_string());
    let peer = http_peer(command, true, |line| {
        line.contains("listening on port")
            .then(|| format!("http://127.0.0.1:{port}/mcp"))
    })
    .await;
    let e = within(
        Client::builder()
            .era(EraChoice::Modern)
            .connect_http(&peer.url),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&e, Error::NotModern { answer } if answer.contains("server/discover with HTTP 400")),
        "{e:?}"
    );
    let client = within(
        Client::builder()
            .era(EraChoice::Legacy)
            .connect_http(&peer.url),
    )
    .await
    .unwrap();
    assert_eq!(client.era(), LEGACY);
    assert!(client.session_id().is_some());
    let sum = within(client.call_tool("get-sum", json!({"a": 2, "b": 3})))
        .await
        .unwrap();
    assert!(text(&sum).contains('5'), "{sum:?}");
    within(client.close()).await.unwrap();
}

async fn updated(subscription: &mut Subscription, n: usize) -> BTreeSet<String> {
    let mut uris = BTreeSet::new();
    for _ in 0..n {
        match within(subscription.next()).await {
            Some(Ok(ListenEvent::ResourceUpdated { uri })) => uris.insert(uri),
            other => panic!("expected a resource update, got {other:?}"),
        };
    }
    uris
}

/// Two legacy listens at once over HTTP. The TypeScript SDK v1 allows one GET stream per session
/// (a second gets 409), so both read the session's one stream, each getting what it asked for;
/// a URI both asked for stays subscribed on the server until the last of them is dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_legacy_listens_share_the_get_stream_over_http() {
    if Peers::get().is_none() {
        return;
    }
    let asked = Asked::default();
    let root = "file:///tmp/mcp-rs-interop-root";
    let (client, _peer) = everything_over_http(builder(&asked, root)).await;
    assert_eq!(client.era(), LEGACY);
    let resources = within(client.list_all_resources()).await.unwrap();
    let [a, b, ..] = &resources[..] else {
        panic!("expected two resources, got {resources:?}");
    };
    let (a, b) = (a.uri.clone(), b.uri.clone());
    let listen = |uris: &[&String]| {
        client.listen(SubscriptionFilter {
            resource_subscriptions: Some(uris.iter().map(|u| (*u).clone()).collect()),
            ..SubscriptionFilter::default()
        })
    };
    let mut one = within(listen(&[&a])).await.unwrap();
    let mut two = within(listen(&[&a, &b])).await.unwrap();
    assert_eq!(two.acknowledged().resource_uris(), [a.clone(), b.clone()]);

    // The server sends an update for each subscribed URI at once, then every 5 s until toggled off.
    within(client.call_tool("toggle-subscriber-updates", json!({})))
        .await
        .unwrap();
    assert_eq!(updated(&mut one, 1).await, BTreeSet::from([a.clone()]));
    assert_eq!(
        updated(&mut two, 2).await,
        BTreeSet::from([a.clone(), b.clone()])
    );

    // Dropping one listen leaves the other, and its subscription to `a`, in place.
    drop(one);
    within(client.call_tool("toggle-subscriber-updates", json!({})))
        .await
        .unwrap();
    within(client.call_tool("toggle-subscriber-updates", json!({})))
        .await
        .unwrap();
    assert_eq!(
        updated(&mut two, 2).await,
        BTreeSet::from([a.clone(), b.clone()])
    );
    within(client.call_tool("toggle-subscriber-updates", json!({})))
        .await
        .unwrap();

    // A third listen while the second is open: still the same stream, no 409.
    let mut three = within(listen(&[&b])).await.unwrap();
    within(client.call_tool("toggle-subscriber-updates", json!({})))
        .await
        .unwrap();
    assert_eq!(updated(&mut three, 1).await, BTreeSet::from([b.clone()]));
    within(client.call_tool("toggle-subscriber-updates", json!({})))
        .await
        .unwrap();

    // Closing ends the session's stream: the open listens end with an error.
    within(client.close()).await.unwrap();
    for subscription in [&mut two, &mut three] {
        let end = within(async {
            loop {
                match subscription.next().await {
                    Some(Ok(_)) => continue, // updates sent before the close
                    other => return other,
                }
            }
        })
        .await;
        assert!(
            matches!(end, Some(Err(Error::Disconnected { .. }))),
            "{end:?}"
        );
        assert!(within(subscription.next()).await.is_none());
    }
}

/// A directory of its own under the system temporary directory, removed on drop.
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("kelson-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir.canonicalize().unwrap())
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_filesystem_over_stdio() {
    if Peers::get().is_none() {
        return;
    }
    let peers = Peers::installed();
    let tmp = TempDir::new("interop-fs");
    // Started with one allowed directory; our roots handler names another, which replaces it once
    // the server has asked for our roots.
    let started = tmp.0.join("started");
    let rooted = tmp.0.join("rooted");
    std::fs::create_dir_all(&started).unwrap();
    std::fs::create_dir_all(&rooted).unwrap();
    std::fs::write(rooted.join("hello.txt"), "hello from the filesystem\n").unwrap();
    let asked = Asked::default();
    let root_uri = format!("file://{}", rooted.display());
    let mut command =
        peers.node("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    command.arg(&started);
    let client = within(builder(&asked, &root_uri).connect_stdio(command))
        .await
        .unwrap();

    assert_eq!(client.era(), LEGACY);
    let discover = within(client.discover()).await.unwrap();
    assert_eq!(discover.supported_versions, ["2025-11-25"]);
    assert!(discover.capabilities.tools.is_some());
    assert!(
        discover
            .meta
            .as_ref()
            .and_then(|m| m.server_info.as_ref())
            .is_some_and(|i| !i.name.is_empty())
    );

    let tools: Vec<String> = within(client.list_all_tools())
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    for name in [
        "read_text_file",
        "write_file",
        "list_directory",
        "list_allowed_directories",
    ] {
        assert!(
            tools.iter().any(|t| t == name),
            "{name} missing from {tools:?}"
        );
    }

    // The server asks for our roots after initialize; once answered, they are its allowed
    // directories.
    let rooted_path = rooted.display().to_string();
    within(async {
        loop {
            let allowed = client
                .call_tool("list_allowed_directories", json!({}))
                .await
                .unwrap();
            if text(&allowed).contains(&rooted_path) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(asked.roots.load(Ordering::SeqCst) >= 1);

    let file = rooted.join("hello.txt").display().to_string();
    let read = within(client.call_tool("read_text_file", json!({"path": &file})))
        .await
        .unwrap();
    assert_eq!(text(&read), "hello from the filesystem\n");
    let written = rooted.join("written.txt").display().to_string();
    within(client.call_tool(
        "write_file",
        json!({"path": written, "content": "from kelson"}),
    ))
    .await
    .unwrap();
    assert_eq!(std::fs::read_to_string(&written).unwrap(), "from kelson");
    let listing = within(client.call_tool("list_directory", json!({"path": rooted_path})))
        .await
        .unwrap();
    assert!(text(&listing).contains("written.txt"), "{listing:?}");

    // A tool error is a result, not a protocol error.
    let outside = within(client.call_tool("read_text_file", json!({"path": "/etc/hostname"})))
        .await
        .unwrap();
    assert_eq!(outside.is_error, Some(true), "{outside:?}");

    // listen: the SDK declares tools.listChanged, so that is acknowledged; resource subscriptions are
    // not offered (no resources capability), and asking only for those is a clear error.
    let filter = SubscriptionFilter {
        tools_list_changed: Some(true),
        resource_subscriptions: Some(vec![format!("file://{file}")]),
        ..SubscriptionFilter::default()
    };
    let subscription = within(client.listen(filter)).await.unwrap();
    assert_eq!(subscription.acknowledged().tools_list_changed, Some(true));
    assert!(subscription.acknowledged().resource_uris().is_empty());
    drop(subscription);
    let filter = SubscriptionFilter {
        resource_subscriptions: Some(vec![format!("file://{file}")]),
        ..SubscriptionFilter::default()
    };
    let err = within(client.listen(filter)).await.unwrap_err();
    assert!(matches!(err, Error::Unsupported(_)), "{err:?}");

    let status = within(client.close()).await.unwrap();
    assert!(status.is_some());
}
