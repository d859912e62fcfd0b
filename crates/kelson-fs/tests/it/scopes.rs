//! A scope per root: the root, its template and its listed entries need the root's scopes, and a
//! root nested in another is served under its own scopes and those of the root around it.

use kelson_fs::{FsAdapter, FsLimits, RootConfig};
use kelson_server::transport::{Reply, RequestIo};
use kelson_server::{INSUFFICIENT_SCOPE, Principal, Server};
use serde_json::{Value, json};

use crate::support::{Fixture, encode, meta};

fn caller(scopes: &[&str]) -> Principal {
    Principal::builder("agent")
        .scopes(scopes.iter().map(|s| (*s).to_owned()))
        .build()
}

async fn ask(server: &Server, who: &Principal, method: &str, mut params: Value) -> Value {
    params["_meta"] = meta();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let io = RequestIo {
        principal: who.clone(),
        ..RequestIo::plain(server)
    };
    match server.handle(body.to_string().as_bytes(), io).await {
        Some(Reply::Message(m)) => serde_json::from_slice(&m.body).unwrap(),
        other => panic!("{method}: {other:?}"),
    }
}

fn uris(reply: &Value) -> Vec<String> {
    reply["result"]["resources"]
        .as_array()
        .unwrap_or_else(|| panic!("{reply}"))
        .iter()
        .map(|r| r["uri"].as_str().unwrap().to_owned())
        .collect()
}

#[track_caller]
fn refused(reply: &Value, scope: &str) {
    assert_eq!(reply["error"]["code"], INSUFFICIENT_SCOPE, "{reply}");
    assert_eq!(reply["error"]["data"]["scopes"], json!([scope]), "{reply}");
}

#[tokio::test]
async fn each_root_needs_its_scope() {
    let fx = Fixture::new();
    let notes = fx.root.join("notes");
    let notes_uri = format!("{}/", encode(&notes));
    // `notes` is a root of its own inside the main root, with a scope of its own.
    let adapter = FsAdapter::new(
        vec![
            RootConfig::new(&fx.root).with_scopes(["files:read"]),
            RootConfig::new(&notes).with_scopes(["notes:read"]),
        ],
        FsLimits::default(),
    )
    .unwrap();
    let server = adapter
        .register(Server::builder("scoped-fs", "1"))
        .build()
        .unwrap();

    let files = caller(&["files:read"]);
    let listed = uris(&ask(&server, &files, "resources/list", json!({})).await);
    assert!(listed.contains(&fx.uri), "{listed:?}");
    assert!(!listed.contains(&notes_uri), "{listed:?}");
    let hello = format!("{}hello.txt", fx.uri);
    let read = ask(&server, &files, "resources/read", json!({"uri": hello})).await;
    assert_eq!(read["result"]["contents"][0]["text"], "Hello, world\n");
    assert_eq!(read["result"]["cacheScope"], "private");

    // A file of the nested root needs its scope, whichever template would match it.
    let a = format!("{notes_uri}a.md");
    refused(
        &ask(&server, &files, "resources/read", json!({"uri": a})).await,
        "notes:read",
    );
    // And the root around it: a file under both needs both.
    let only_notes = caller(&["notes:read"]);
    refused(
        &ask(&server, &only_notes, "resources/read", json!({"uri": a})).await,
        "files:read",
    );
    refused(
        &ask(
            &server,
            &only_notes,
            "resources/read",
            json!({"uri": hello}),
        )
        .await,
        "files:read",
    );
    let both = caller(&["notes:read", "files:read"]);
    let read = ask(&server, &both, "resources/read", json!({"uri": a})).await;
    assert_eq!(read["result"]["contents"][0]["text"], "# A\n", "{read}");

    let nobody = caller(&[]);
    assert!(uris(&ask(&server, &nobody, "resources/list", json!({})).await).is_empty());
    let templates = ask(&server, &nobody, "resources/templates/list", json!({})).await;
    assert_eq!(templates["result"]["resourceTemplates"], json!([]));
    let anonymous = ask(
        &server,
        &Principal::anonymous(),
        "resources/read",
        json!({"uri": a}),
    )
    .await;
    assert_eq!(anonymous["result"]["contents"][0]["text"], "# A\n");
}
