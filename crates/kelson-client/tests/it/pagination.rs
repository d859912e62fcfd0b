//! The bounds of a `list_all_*` walk, against a scripted server that pages forever: every page
//! full and a new `nextCursor` each time. The walk ends with `Error::ListTooLong` at the bound,
//! having asked for no page beyond it.

use kelson_client::{Client, ClientBuilder, Error, ErrorKind, ListLimit};
use serde_json::{Value, json};

use crate::harness::within;
use crate::http_only::{Log, Scripted, scripted_logged};

/// The result of page `n` of a list that never ends: `per_page` items under `member`, and the
/// cursor of page `n + 1`.
fn endless_page(member: &str, n: u64, per_page: u64) -> Value {
    let items: Vec<Value> = (0..per_page)
        .map(|i| match member {
            "tools" => json!({"name": format!("tool-{n}-{i}"), "inputSchema": {"type": "object"}}),
            _ => json!({"uri": format!("file:///{n}/{i}"), "name": format!("r{n}-{i}")}),
        })
        .collect();
    json!({
        "resultType": "complete",
        member: items,
        "nextCursor": format!("page-{}", n + 1),
        "ttlMs": 0,
        "cacheScope": "public"
    })
}

/// The page number a request asks for: 0 without a cursor, `n` for `page-n`.
fn page_number(body: &Value) -> u64 {
    body["params"]["cursor"]
        .as_str()
        .and_then(|c| c.strip_prefix("page-"))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// A server whose tools and resources never end, `per_page` a page.
async fn endless(per_page: u64) -> (String, tokio::sync::oneshot::Sender<()>, Log) {
    scripted_logged(move |body| {
        let member = match body["method"].as_str()? {
            "tools/list" => "tools",
            "resources/list" => "resources",
            _ => return None,
        };
        Scripted::result(endless_page(member, page_number(body), per_page))
    })
    .await
}

/// How many requests of `method` the server received.
fn asked(log: &Log, method: &str) -> usize {
    log.lock()
        .unwrap()
        .iter()
        .filter(|(_, body)| body["method"] == method)
        .count()
}

async fn client(url: &str, builder: ClientBuilder) -> Client {
    within(builder.connect_http(url)).await.unwrap()
}

/// The fields of a `ListTooLong`, or a panic naming what came instead.
fn too_long(e: Error) -> (String, ListLimit, usize, usize, usize) {
    assert_eq!(e.kind(), ErrorKind::Protocol, "{e}");
    match e {
        Error::ListTooLong {
            method,
            limit,
            pages,
            items,
            bytes,
        } => (method, limit, pages, items, bytes),
        other => panic!("not ListTooLong: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_bound_stops_a_list_that_never_ends() {
    let (url, _stop, log) = endless(3).await;
    let client = client(&url, Client::builder().max_list_pages(7)).await;
    let e = within(client.list_all_tools()).await.unwrap_err();
    let message = e.to_string();
    let (method, limit, pages, items, _) = too_long(e);
    assert_eq!(method, "tools/list");
    assert_eq!(limit, ListLimit::Pages(7));
    assert_eq!((pages, items), (7, 21));
    assert_eq!(asked(&log, "tools/list"), 7, "no page beyond the bound");
    assert!(
        message.contains("did not end within the bound of 7 pages")
            && message.contains("new nextCursor"),
        "{message}"
    );

    // Resources are bounded alike.
    let e = within(client.list_all_resources()).await.unwrap_err();
    let (method, limit, pages, _, _) = too_long(e);
    assert_eq!(method, "resources/list");
    assert_eq!((limit, pages), (ListLimit::Pages(7), 7));
    assert_eq!(asked(&log, "resources/list"), 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_item_bound_stops_the_walk_on_the_page_that_passes_it() {
    let (url, _stop, log) = endless(10).await;
    let client = client(&url, Client::builder().max_list_items(25)).await;
    let e = within(client.list_all_tools()).await.unwrap_err();
    let (_, limit, pages, items, _) = too_long(e);
    assert_eq!(limit, ListLimit::Items(25));
    assert_eq!((pages, items), (3, 30));
    assert_eq!(asked(&log, "tools/list"), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_byte_bound_stops_the_walk_on_the_page_that_passes_it() {
    let (url, _stop, log) = endless(10).await;
    // A page of ten tools is about 750 bytes: the bound is passed on the fourth or fifth.
    let bound = 3_000;
    let client = client(&url, Client::builder().max_list_bytes(bound)).await;
    let e = within(client.list_all_tools()).await.unwrap_err();
    let (_, limit, pages, items, bytes) = too_long(e);
    assert_eq!(limit, ListLimit::Bytes(bound));
    assert_eq!(asked(&log, "tools/list"), pages);
    assert_eq!(items, pages * 10);
    // Over the bound, by less than the last page (each page is the same size but for its cursor).
    let page = endless_page("tools", 1, 10).to_string().len();
    assert!(bytes > bound && bytes <= bound + page + 8, "{bytes} bytes");
    assert!((3..=6).contains(&pages), "{pages} pages");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_bounds_stop_a_server_that_pages_forever() {
    // A thousand tools a page: the 100,000 items of the default bound are passed on page 101.
    let (url, _stop, log) = endless(1_000).await;
    let client = client(&url, Client::builder()).await;
    let e = within(client.list_all_tools()).await.unwrap_err();
    let (_, limit, pages, items, bytes) = too_long(e);
    assert_eq!(limit, ListLimit::Items(100_000));
    assert_eq!((pages, items), (101, 101_000));
    assert!(bytes < 64 * 1024 * 1024, "{bytes}");
    assert_eq!(asked(&log, "tools/list"), 101);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_within_the_bounds_is_returned_and_cached_pages_count_their_bytes() {
    // Three pages, then the end; each page cached for a minute.
    let pages: Vec<Value> = (0..3)
        .map(|n| {
            let mut page = endless_page("tools", n, 2);
            page["ttlMs"] = json!(60_000);
            if n == 2 {
                page.as_object_mut().unwrap().remove("nextCursor");
            }
            page
        })
        .collect();
    let sizes: usize = pages.iter().map(|p| p.to_string().len()).sum();
    let served = pages.clone();
    let (url, _stop, log) = scripted_logged(move |body| {
        (body["method"] == "tools/list")
            .then(|| Scripted::Result(served[page_number(body) as usize].clone()))
    })
    .await;

    // Exactly at the bounds: the whole list.
    let exact = Client::builder()
        .max_list_pages(3)
        .max_list_items(6)
        .max_list_bytes(sizes);
    let tools = within(client(&url, exact).await.list_all_tools())
        .await
        .unwrap();
    assert_eq!(tools.len(), 6);

    // A byte short: refused on the last page, fetched or from the cache alike.
    let cached = client(
        &url,
        Client::builder().cache(true).max_list_bytes(sizes - 1),
    )
    .await;
    let before = asked(&log, "tools/list");
    let e = within(cached.list_all_tools()).await.unwrap_err();
    assert_eq!(too_long(e).4, sizes);
    assert_eq!(asked(&log, "tools/list"), before + 3);
    let e = within(cached.list_all_tools()).await.unwrap_err();
    let (_, limit, pages, _, bytes) = too_long(e);
    assert_eq!(
        (limit, pages, bytes),
        (ListLimit::Bytes(sizes - 1), 3, sizes)
    );
    assert_eq!(
        asked(&log, "tools/list"),
        before + 3,
        "the second walk was answered from the cache"
    );
}
