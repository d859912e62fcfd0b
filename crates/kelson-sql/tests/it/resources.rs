//! Table schemas as resources: listed, readable through the template, and kept up to date after
//! writes, with `resources/list_changed` for listeners.

use std::time::Duration;

use futures_util::StreamExt as _;
use kelson_server::transport::{Reply, RequestIo};
use kelson_sql::{DatabaseConfig, PostgresConfig, SqlAdapter};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::support::{self, Client, PgFixture, SHOP, TempDir, meta, ok, sqlite_file};
use crate::writes::approved;

fn uris(list: &Value) -> Vec<String> {
    list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap().to_owned())
        .collect()
}

/// Opens a listen stream for resource list changes and returns it once acknowledged.
async fn listen(client: &Client) -> kelson_server::transport::ListenStream {
    let body = json!({"jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen",
        "params": {"notifications": {"resourcesListChanged": true,
                                     "resourceSubscriptions": ["sql://main/main/customers"]},
                   "_meta": meta(true)}});
    let reply = client
        .server
        .handle(
            body.to_string().as_bytes(),
            RequestIo::plain(&client.server),
        )
        .await
        .unwrap();
    let Reply::Listen(mut stream) = reply else {
        panic!("expected a listen stream")
    };
    let ack: Value = serde_json::from_slice(&stream.next().await.unwrap()).unwrap();
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    stream
}

/// The next notification method on the stream, within a generous bound.
async fn next_method(stream: &mut kelson_server::transport::ListenStream) -> String {
    let message = tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("a notification")
        .expect("the stream is open");
    let message: Value = serde_json::from_slice(&message).unwrap();
    message["method"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn sqlite_tables_are_resources() {
    let dir = TempDir::new();
    let path = dir.path("shop.db");
    sqlite_file(&path, SHOP);
    let adapter = SqlAdapter::sqlite(path.as_path(), {
        let mut edited = DatabaseConfig::default();
        edited.allow_write = true;
        edited
    })
    .unwrap();
    let client = Client::new(&adapter).await;

    let list = client.request("resources/list", json!({})).await;
    assert_eq!(
        uris(&list),
        [
            "sql://main/main/big_orders",
            "sql://main/main/customers",
            "sql://main/main/orders"
        ]
    );
    let first = &list["resources"][1];
    assert_eq!(first["mimeType"], "application/json");
    assert_eq!(first["name"], "main.main.customers");
    let templates = client.request("resources/templates/list", json!({})).await;
    assert_eq!(
        templates["resourceTemplates"][0]["uriTemplate"],
        "sql://main/{schema}/{table}"
    );

    let read = client
        .request("resources/read", json!({"uri": "sql://main/main/orders"}))
        .await;
    let contents = &read["contents"][0];
    assert_eq!(contents["mimeType"], "application/json");
    let schema: Value = serde_json::from_str(contents["text"].as_str().unwrap()).unwrap();
    assert_eq!(schema["name"], "orders");
    assert_eq!(schema["foreign_keys"][0]["references_table"], "customers");

    let missing = client
        .send(
            "resources/read",
            json!({"uri": "sql://main/main/nope", "_meta": meta(true)}),
            CancellationToken::new(),
        )
        .await;
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
    assert_eq!(missing["error"]["data"]["uri"], "sql://main/main/nope");

    // Writes refresh the resources: a new table appears, a dropped one goes, and listeners hear it.
    let mut stream = listen(&client).await;
    let created = approved(
        &client,
        json!({"sql": "CREATE TABLE \"odd name\" (id INTEGER PRIMARY KEY)"}),
    )
    .await;
    ok(&created);
    assert_eq!(
        next_method(&mut stream).await,
        "notifications/resources/list_changed"
    );
    let list = client.request("resources/list", json!({})).await;
    assert!(
        uris(&list).contains(&"sql://main/main/odd%20name".to_owned()),
        "{list}"
    );
    let read = client
        .request(
            "resources/read",
            json!({"uri": "sql://main/main/odd%20name"}),
        )
        .await;
    assert!(
        read["contents"][0]["text"]
            .as_str()
            .unwrap()
            .contains("\"odd name\"")
    );

    // A changed definition tells the table's subscribers.
    let altered = approved(
        &client,
        json!({"sql": "ALTER TABLE customers ADD COLUMN phone TEXT"}),
    )
    .await;
    ok(&altered);
    assert_eq!(
        next_method(&mut stream).await,
        "notifications/resources/updated"
    );

    let dropped = approved(&client, json!({"sql": "DROP VIEW big_orders"})).await;
    ok(&dropped);
    assert_eq!(
        next_method(&mut stream).await,
        "notifications/resources/list_changed"
    );
    let list = client.request("resources/list", json!({})).await;
    assert!(!uris(&list).contains(&"sql://main/main/big_orders".to_owned()));

    // A data-only write changes no resource and sends nothing: the next event is a later DDL's.
    let insert = approved(
        &client,
        json!({"sql": "INSERT INTO customers (name) VALUES ('x')"}),
    )
    .await;
    ok(&insert);
    let created = approved(&client, json!({"sql": "CREATE TABLE later (a)"})).await;
    ok(&created);
    assert_eq!(
        next_method(&mut stream).await,
        "notifications/resources/list_changed"
    );
}

#[tokio::test]
async fn postgres_tables_are_resources() {
    if !support::postgres() {
        return;
    }
    let fx = PgFixture::new(
        "CREATE TABLE items (id int PRIMARY KEY, label text NOT NULL);
         CREATE TABLE \"Mixed Case\" (x int);",
    )
    .await;
    let pg = {
        let mut edited = PostgresConfig::new(fx.reader_url());
        edited.write_url = Some(fx.writer_url());
        edited
    };
    let adapter = SqlAdapter::postgres(pg, {
        let mut edited = DatabaseConfig::default();
        edited.allow_write = true;
        edited
    })
    .await
    .unwrap();
    let client = Client::new(&adapter).await;
    let s = &fx.schema;
    let list = client.request("resources/list", json!({})).await;
    let all = uris(&list);
    assert!(all.contains(&format!("sql://main/{s}/items")), "{all:?}");
    assert!(
        all.contains(&format!("sql://main/{s}/Mixed%20Case")),
        "{all:?}"
    );
    let read = client
        .request(
            "resources/read",
            json!({"uri": format!("sql://main/{s}/Mixed%20Case")}),
        )
        .await;
    let schema: Value =
        serde_json::from_str(read["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(schema["columns"][0]["name"], "x");

    let created = approved(
        &client,
        json!({"sql": format!("CREATE TABLE {s}.fresh (a int)")}),
    )
    .await;
    ok(&created);
    // The writer owns the new table; the reader sees it once granted (as default privileges do).
    let list = client.request("resources/list", json!({})).await;
    assert!(
        uris(&list).contains(&format!("sql://main/{s}/fresh")),
        "tables the reader may select are listed: {list}"
    );
}
