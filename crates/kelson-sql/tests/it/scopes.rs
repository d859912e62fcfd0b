//! Per-database scopes: the read tools and a database's table resources need its read scopes,
//! `execute` its write scopes. A caller sees the tools some database of its scopes allows, and a
//! call on a database beyond its scopes is refused as insufficient scope (over HTTP, a 403 naming
//! them) before anything runs; anonymous callers (no auth layer) are not restricted.

use kelson_server::transport::{Reply, RequestIo};
use kelson_server::{INSUFFICIENT_SCOPE, Principal, Scopes, Server};
use kelson_sql::{Database, DatabaseConfig, SqlAdapter};
use serde_json::{Value, json};

use crate::support::{SHOP, TempDir, meta, sqlite_file};

/// `sales` (writable; `sales:read`, `sales:write`) and `hr` (read-only; `hr:read`).
async fn server(dir: &TempDir) -> Server {
    let (sales, hr) = (dir.path("sales.db"), dir.path("hr.db"));
    sqlite_file(&sales, SHOP);
    sqlite_file(
        &hr,
        "CREATE TABLE staff (id INTEGER PRIMARY KEY, name TEXT);",
    );
    let adapter = SqlAdapter::new([
        Database::sqlite("sales", sales, {
            let mut edited = DatabaseConfig::default();
            edited.allow_write = true;
            edited.read_scopes = Scopes::all(["sales:read"]);
            edited.write_scopes = Scopes::all(["sales:write"]);
            edited
        })
        .unwrap(),
        Database::sqlite("hr", hr, {
            let mut edited = DatabaseConfig::default();
            edited.read_scopes = Scopes::all(["hr:read"]);
            edited
        })
        .unwrap(),
    ])
    .unwrap();
    adapter
        .register(Server::builder("scoped-sql", "1"))
        .await
        .unwrap()
        .build()
        .unwrap()
}

fn caller(scopes: &[&str]) -> Principal {
    Principal::builder("agent")
        .scopes(scopes.iter().map(|s| (*s).to_owned()))
        .build()
}

async fn ask(server: &Server, who: &Principal, method: &str, mut params: Value) -> Value {
    params["_meta"] = meta(true);
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

fn listed(reply: &Value, list: &str, key: &str) -> Vec<String> {
    let mut names: Vec<String> = reply["result"][list]
        .as_array()
        .unwrap_or_else(|| panic!("{reply}"))
        .iter()
        .map(|t| t[key].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

#[track_caller]
fn refused(reply: &Value, scope: &str, message: &str) {
    assert_eq!(reply["error"]["code"], INSUFFICIENT_SCOPE, "{reply}");
    assert_eq!(reply["error"]["data"]["scopes"], json!([scope]), "{reply}");
    assert_eq!(reply["error"]["message"], message, "{reply}");
}

#[tokio::test]
async fn each_caller_sees_and_uses_the_databases_of_its_scopes() {
    let dir = TempDir::new();
    let server = server(&dir).await;
    let read_tools = ["describe_table", "list_tables", "query"];

    let sales_reader = caller(&["sales:read"]);
    let tools = ask(&server, &sales_reader, "tools/list", json!({})).await;
    assert_eq!(listed(&tools, "tools", "name"), read_tools);
    let query = |database: &str| json!({"name": "query", "arguments": {"database": database, "sql": "SELECT 1 AS one"}});
    let ok = ask(&server, &sales_reader, "tools/call", query("sales")).await;
    assert_eq!(
        ok["result"]["structuredContent"]["rows"],
        json!([[1]]),
        "{ok}"
    );
    refused(
        &ask(&server, &sales_reader, "tools/call", query("hr")).await,
        "hr:read",
        "query on database hr needs the scope hr:read",
    );
    let tables = json!({"name": "list_tables", "arguments": {"database": "hr"}});
    refused(
        &ask(&server, &sales_reader, "tools/call", tables).await,
        "hr:read",
        "list_tables on database hr needs the scope hr:read",
    );

    // Table resources and templates follow their database's read scopes.
    let resources = ask(&server, &sales_reader, "resources/list", json!({})).await;
    let uris = listed(&resources, "resources", "uri");
    assert!(
        uris.iter().all(|u| u.starts_with("sql://sales/")),
        "{uris:?}"
    );
    assert!(!uris.is_empty());
    assert_eq!(resources["result"]["cacheScope"], "private");
    let templates = ask(
        &server,
        &sales_reader,
        "resources/templates/list",
        json!({}),
    )
    .await;
    assert_eq!(
        listed(&templates, "resourceTemplates", "name"),
        ["sales-tables"]
    );
    let hr_table = json!({"uri": "sql://hr/main/staff"});
    refused(
        &ask(&server, &sales_reader, "resources/read", hr_table.clone()).await,
        "hr:read",
        "the resource sql://hr/main/staff needs the scope hr:read",
    );
    let read = ask(&server, &caller(&["hr:read"]), "resources/read", hr_table).await;
    assert_eq!(read["result"]["cacheScope"], "private", "{read}");

    // The write scope alone shows `execute` and lets it ask for approval, nothing else.
    let writer = caller(&["sales:write"]);
    let tools = ask(&server, &writer, "tools/list", json!({})).await;
    assert_eq!(listed(&tools, "tools", "name"), ["execute"]);
    let insert = json!({"name": "execute", "arguments": {
        "database": "sales", "sql": "DELETE FROM orders"}});
    let asked = ask(&server, &writer, "tools/call", insert.clone()).await;
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    // A reader cannot even be asked to approve a write.
    refused(
        &ask(&server, &sales_reader, "tools/call", insert).await,
        "sales:write",
        "the tool execute needs the scope sales:write",
    );

    // No scopes: nothing listed, and a refusal naming the first database's read scope.
    let nobody = caller(&[]);
    let tools = ask(&server, &nobody, "tools/list", json!({})).await;
    assert!(listed(&tools, "tools", "name").is_empty());
    refused(
        &ask(&server, &nobody, "tools/call", query("hr")).await,
        "sales:read",
        "the tool query needs the scope sales:read",
    );

    // Anonymous: no auth layer in front, nothing restricted.
    let anonymous = Principal::anonymous();
    let tools = ask(&server, &anonymous, "tools/list", json!({})).await;
    assert_eq!(
        listed(&tools, "tools", "name"),
        ["describe_table", "execute", "list_tables", "query"]
    );
    let ok = ask(&server, &anonymous, "tools/call", query("hr")).await;
    assert!(ok["result"]["structuredContent"].is_object(), "{ok}");
}
