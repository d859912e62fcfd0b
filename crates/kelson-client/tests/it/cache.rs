//! The TTL cache: hits, expiry, invalidation by listen notifications, no MRTR results, and
//! private entries kept per authorization context.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;
use kelson_client::{Client, ListenEvent};
use kelson_server::RequestContext;
use kelson_types::{
    CacheScope, CallToolResult, ElicitRequestFormParams, ElicitResult, ElicitValue, JsonObject,
    SubscriptionFilter, Tool,
};

use crate::both;
use crate::fixture::{Probes, caching_server};
use crate::harness::{Kind, connect, stdio, within};

const LONG: Duration = Duration::from_secs(3600);

async fn fresh_results_come_from_the_cache(kind: Kind) {
    let probes = Arc::new(Probes::default());
    let server = caching_server(probes.clone(), CacheScope::Public, LONG);
    let served = connect(kind, server, Client::builder().cache(true)).await;
    let client = &served.client;

    within(client.list_tools(None)).await.unwrap();
    within(client.list_tools(None)).await.unwrap();
    assert_eq!(served.wire.count("tools/list"), 1);
    within(client.list_all_tools()).await.unwrap();
    within(client.list_all_tools()).await.unwrap();
    assert_eq!(
        served.wire.count("tools/list"),
        3,
        "pages 2 and 3 fetched once"
    );

    let discovers = served.wire.count("server/discover");
    within(client.discover()).await.unwrap();
    within(client.discover()).await.unwrap();
    assert_eq!(served.wire.count("server/discover"), discovers + 1);

    within(client.read_resource("mem://a")).await.unwrap();
    within(client.read_resource("mem://a")).await.unwrap();
    assert_eq!(probes.count("read:mem://a"), 1);

    // `fresh` skips the cache.
    within(client.list_tools(None).fresh()).await.unwrap();
    assert_eq!(served.wire.count("tools/list"), 4);
}
both!(hits, fresh_results_come_from_the_cache);

/// An entry is not used once its TTL has run out: the server's TTL here is 50 ms, and the second
/// call comes well after it. (Entries within their TTL are the other tests' subject, with a TTL of
/// an hour. The clock is the real one: tokio's paused clock needs its `test-util` feature, which
/// would build tokio, and everything on it, a second time for the workspace's examples.)
#[tokio::test(flavor = "current_thread")]
async fn entries_expire_with_their_ttl() {
    let probes = Arc::new(Probes::default());
    let server = caching_server(probes, CacheScope::Public, Duration::from_millis(50));
    let served = stdio(server, Client::builder().cache(true)).await;
    within(served.client.list_tools(None)).await.unwrap();
    assert_eq!(served.wire.count("tools/list"), 1);
    tokio::time::sleep(Duration::from_millis(300)).await;
    within(served.client.list_tools(None)).await.unwrap();
    assert_eq!(served.wire.count("tools/list"), 2, "expired");
}

async fn a_change_notification_invalidates(kind: Kind) {
    let probes = Arc::new(Probes::default());
    let server = caching_server(probes, CacheScope::Public, LONG);
    let served = connect(kind, server.clone(), Client::builder().cache(true)).await;
    let client = &served.client;
    let mut sub = within(client.listen(SubscriptionFilter {
        tools_list_changed: Some(true),
        ..Default::default()
    }))
    .await
    .unwrap();
    let before = within(client.list_all_tools()).await.unwrap();
    within(client.list_all_tools()).await.unwrap();
    assert_eq!(served.wire.count("tools/list"), 3);

    server
        .add_tool_handler(
            Tool::without_arguments("aaa_new"),
            |_ctx: RequestContext, _args: JsonObject| async { Ok(CallToolResult::text("new")) },
        )
        .unwrap();
    assert_eq!(
        within(sub.next()).await.unwrap().unwrap(),
        ListenEvent::ToolsListChanged
    );
    let after = within(client.list_all_tools()).await.unwrap();
    assert_eq!(after.len(), before.len() + 1);
    assert!(served.wire.count("tools/list") > 3);
}
both!(invalidation, a_change_notification_invalidates);

async fn mrtr_results_are_never_cached(kind: Kind) {
    let probes = Arc::new(Probes::default());
    let server = caching_server(probes, CacheScope::Public, LONG);
    let builder =
        Client::builder()
            .cache(true)
            .on_elicit_form(|_f: ElicitRequestFormParams| async {
                Ok(ElicitResult::accept(BTreeMap::from([(
                    "pin".to_owned(),
                    ElicitValue::from("1"),
                )])))
            });
    let served = connect(kind, server, builder).await;
    within(served.client.read_resource("mem://secret"))
        .await
        .unwrap();
    within(served.client.read_resource("mem://secret"))
        .await
        .unwrap();
    assert_eq!(served.wire.count("resources/read"), 4, "two rounds, twice");
}
both!(no_mrtr_caching, mrtr_results_are_never_cached);

async fn private_entries_stay_in_their_context(kind: Kind) {
    let probes = Arc::new(Probes::default());
    let server = caching_server(probes, CacheScope::Private, LONG);
    let served = connect(
        kind,
        server,
        Client::builder().cache(true).auth_context("alice"),
    )
    .await;
    let client = &served.client;
    within(client.list_tools(None)).await.unwrap();
    within(client.list_tools(None)).await.unwrap();
    assert_eq!(served.wire.count("tools/list"), 1);
    client.set_auth_context("bob");
    within(client.list_tools(None)).await.unwrap();
    assert_eq!(
        served.wire.count("tools/list"),
        2,
        "bob does not see alice's entry"
    );
    client.set_auth_context("alice");
    within(client.list_tools(None)).await.unwrap();
    assert_eq!(
        served.wire.count("tools/list"),
        2,
        "alice's entry is still hers"
    );
}
both!(private_scope, private_entries_stay_in_their_context);
