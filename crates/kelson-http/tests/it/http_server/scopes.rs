//! Scopes over real HTTP: a server with scoped tools, resources, a template and a prompt, behind a
//! test layer that turns an `X-Test-Scopes` header into a `Principal` (the real auth layer lives in
//! its own crate). Two callers see different lists from one server, a cursor of one is refused to
//! the other, and a call beyond a caller's scopes is a 403 with the exact `insufficient_scope`
//! challenge (the `InsufficientScope` reaching the layer in the response extensions), in both eras,
//! with the connection serving the next request normally.
//!
//! spec 2026-07-28 basic/authorization and server/utilities/caching.

use axum::extract::Request;
use axum::middleware::Next;
use http::StatusCode;
use kelson_http::server::{HttpConfig, McpService};
use kelson_server::{
    InsufficientScope, Principal, RequestContext, Scopes, Server, ServerConfig, TemplateVars,
    WithScopes,
};
use kelson_types::{
    CallToolResult, GetPromptResult, JsonObject, Prompt, PromptMessage, Resource, ResourceContents,
    ResourceTemplate, Role, TextResourceContents, Tool,
};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use super::harness::{Client, Post, Reply, SseStream, test_config};

/// Whom the test layer makes of a request: no header is anonymous (no auth), otherwise a subject
/// with the space-separated scopes of the header.
async fn principal_from_header(mut request: Request, next: Next) -> axum::response::Response {
    if let Some(scopes) = request.headers().get("x-test-scopes") {
        let scopes: Vec<String> = scopes
            .to_str()
            .unwrap()
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        let subject = request
            .headers()
            .get("x-test-subject")
            .map_or("tester", |v| v.to_str().unwrap())
            .to_owned();
        let principal = Principal::builder(subject).scopes(scopes).build();
        request.extensions_mut().insert(principal);
    }
    let mut response = next.run(request).await;
    // What an auth layer in front reads to complete the challenge.
    if let Some(refusal) = response.extensions().get::<InsufficientScope>() {
        let seen = refusal.scopes.join(" ");
        response
            .headers_mut()
            .insert("x-test-refusal", seen.parse().unwrap());
    }
    response
}

fn text_tool(text: &'static str) -> impl kelson_server::ToolHandler {
    move |_ctx: RequestContext, _args: JsonObject| async move { Ok(CallToolResult::text(text)) }
}

async fn read(
    _ctx: RequestContext,
    uri: String,
    _vars: TemplateVars,
) -> Result<Vec<ResourceContents>, kelson_server::HandlerError> {
    Ok(vec![TextResourceContents::new(uri, "contents").into()])
}

async fn prompt(
    _ctx: RequestContext,
    _args: std::collections::BTreeMap<String, String>,
) -> Result<GetPromptResult, kelson_server::HandlerError> {
    Ok(GetPromptResult::new(vec![PromptMessage::new(
        Role::User,
        kelson_types::ContentBlock::text("hello"),
    )]))
}

/// Tools `admin` (db:admin db:read), `open`, `read` (db:read), `write` (db:write), `slow`
/// (db:write; sends progress first), `pick` (checks `db:<table>:read` by argument); a secret
/// resource, a vault template and a secret prompt; two items per page.
fn scoped_server() -> Server {
    Server::builder("scoped-http", "1.0.0")
        .config({
            let mut edited = ServerConfig::default();
            edited.page_size = 2;
            edited
        })
        .tool_handler(
            Tool::without_arguments("admin").with_scopes(["db:read", "db:admin"]),
            text_tool("admin"),
        )
        .tool_handler(Tool::without_arguments("open"), text_tool("open"))
        .tool_handler(
            Tool::without_arguments("read").with_scopes(["db:read"]),
            text_tool("read"),
        )
        .tool_handler(
            Tool::without_arguments("write").with_scopes(["db:write"]),
            text_tool("write"),
        )
        .tool_handler(
            Tool::without_arguments("slow").with_scopes(["db:write"]),
            |ctx: RequestContext, _args: JsonObject| async move {
                ctx.progress(1.0, Some(2.0), None);
                Ok(CallToolResult::text("slow done"))
            },
        )
        .tool_handler(
            Tool::new(
                "pick",
                json!({"type": "object", "properties": {"table": {"type": "string"}}})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
            |ctx: RequestContext, args: JsonObject| async move {
                let table = args["table"].as_str().unwrap_or_default().to_owned();
                let scope = format!("db:{table}:read");
                ctx.require_scopes(&format!("pick on {table}"), &Scopes::all([scope]))?;
                ctx.progress(1.0, None, None);
                Ok(CallToolResult::text(table))
            },
        )
        .resource_handler(
            Resource::new("mem://secret", "secret").with_scopes(["files:read"]),
            read,
        )
        .template_handler(
            ResourceTemplate::new("mem://vault/{key}", "vault").with_scopes(["vault"]),
            read,
        )
        .prompt(
            Prompt::new("secret").with_scopes(["prompts:secret"]),
            prompt,
        )
        .completion(
            |_ctx: RequestContext, _params: kelson_types::CompleteRequestParams| async move {
                Ok(kelson_server::Completions {
                    values: vec!["k".to_owned()],
                    total: None,
                    has_more: None,
                })
            },
        )
        .build()
        .expect("the scoped server builds")
}

/// The scoped server behind the test layer, on loopback; stopped when dropped.
struct Scoped {
    addr: std::net::SocketAddr,
    server: Server,
    _stop: oneshot::Sender<()>,
}

async fn start(config: HttpConfig) -> Scoped {
    let server = scoped_server();
    let service = McpService::new(server.clone(), config);
    let app = axum::Router::new()
        .route_service("/mcp", service)
        .layer(axum::middleware::from_fn(principal_from_header));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = stopped.await;
            })
            .await
    });
    Scoped {
        addr,
        server,
        _stop: stop,
    }
}

fn as_caller(post: Post, scopes: Option<&str>) -> Post {
    match scopes {
        Some(scopes) => post.header("x-test-scopes", scopes),
        None => post,
    }
}

fn names(result: &Value, list: &str, key: &str) -> Vec<String> {
    result[list]
        .as_array()
        .unwrap_or_else(|| panic!("no {list} in {result}"))
        .iter()
        .map(|item| item[key].as_str().unwrap().to_owned())
        .collect()
}

/// Asserts the 403 refusal of request `id` for want of `scopes` (all of them, space-separated).
#[track_caller]
fn forbidden(reply: &Reply, id: Value, scopes: &str, description: &str) {
    let error = reply.error(
        StatusCode::FORBIDDEN,
        kelson_server::INSUFFICIENT_SCOPE,
        Some(id),
    );
    assert_eq!(error["message"], description);
    assert_eq!(
        reply.headers["www-authenticate"],
        format!(
            "Bearer error=\"insufficient_scope\", scope=\"{scopes}\", error_description=\"{description}\""
        )
        .as_str()
    );
    assert_eq!(reply.headers["x-test-refusal"], scopes, "the extension");
}

const ALL: &str = "db:read db:write db:admin";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_callers_see_different_lists_and_never_each_others_pages() {
    let srv = start(test_config()).await;
    let mut client = Client::h1(srv.addr).await;
    let list = |id: i64, cursor: Option<&str>, scopes: Option<&str>| {
        let params = match cursor {
            None => json!({}),
            Some(c) => json!({"cursor": c}),
        };
        as_caller(Post::call(id, "tools/list", params), scopes)
    };

    // A sees everything, two per page.
    let reply = client.send(&list(1, None, Some(ALL))).await;
    assert!(
        reply.headers.get("cache-control").is_none(),
        "{:?}",
        reply.headers
    );
    let a1 = reply.result(json!(1));
    assert_eq!(names(&a1, "tools", "name"), ["admin", "open"]);
    assert_eq!(a1["cacheScope"], "private");
    let a_cursor = a1["nextCursor"].as_str().unwrap().to_owned();

    // B, on the same connection right after, sees its own list only.
    let b1 = client
        .send(&list(2, None, Some("db:read")))
        .await
        .result(json!(2));
    assert_eq!(names(&b1, "tools", "name"), ["open", "pick"]);
    assert_eq!(b1["cacheScope"], "private");
    let b_cursor = b1["nextCursor"].as_str().unwrap().to_owned();
    let b2 = client
        .send(&list(3, Some(&b_cursor), Some("db:read")))
        .await
        .result(json!(3));
    assert_eq!(names(&b2, "tools", "name"), ["read"]);
    assert!(b2.get("nextCursor").is_none(), "{b2}");

    // A's cursor is not B's: an invalid cursor, not A's second page.
    let error = client
        .send(&list(4, Some(&a_cursor), Some("db:read")))
        .await
        .error(StatusCode::OK, -32602, Some(json!(4)));
    assert_eq!(error["message"], "Invalid params: Invalid cursor");
    // Nor is it valid for a caller without scopes, nor anonymous (no auth layer: everything).
    client
        .send(&list(5, Some(&a_cursor), Some("")))
        .await
        .error(StatusCode::OK, -32602, Some(json!(5)));
    let c1 = client.send(&list(6, None, Some(""))).await.result(json!(6));
    assert_eq!(names(&c1, "tools", "name"), ["open", "pick"]);

    // A's own cursor still gives A's second and third pages.
    let a2 = client
        .send(&list(7, Some(&a_cursor), Some(ALL)))
        .await
        .result(json!(7));
    assert_eq!(names(&a2, "tools", "name"), ["pick", "read"]);
    let a3 = client
        .send(&list(8, a2["nextCursor"].as_str(), Some(ALL)))
        .await
        .result(json!(8));
    assert_eq!(names(&a3, "tools", "name"), ["slow", "write"]);

    let mut anonymous = Vec::new();
    let mut cursor: Option<String> = None;
    for id in 10.. {
        let page = client
            .send(&list(id, cursor.as_deref(), None))
            .await
            .result(json!(id));
        anonymous.extend(names(&page, "tools", "name"));
        cursor = page["nextCursor"].as_str().map(str::to_owned);
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(
        anonymous,
        ["admin", "open", "pick", "read", "slow", "write"]
    );
    // Anonymous callers (no auth layer) share one public view, which no other view's cursor
    // reaches.
    let c1 = client.send(&list(30, None, None)).await.result(json!(30));
    assert_eq!(c1["cacheScope"], "public");
    client.send(&list(31, Some(&a_cursor), None)).await.error(
        StatusCode::OK,
        -32602,
        Some(json!(31)),
    );

    // The other lists are filtered the same way.
    let resources = |id: i64, method: &str, scopes: &str| {
        as_caller(Post::call(id, method, json!({})), Some(scopes))
    };
    let none = client
        .send(&resources(20, "resources/list", "db:read"))
        .await
        .result(json!(20));
    assert!(names(&none, "resources", "uri").is_empty());
    let some = client
        .send(&resources(21, "resources/list", "files:read"))
        .await
        .result(json!(21));
    assert_eq!(names(&some, "resources", "uri"), ["mem://secret"]);
    let templates = client
        .send(&resources(22, "resources/templates/list", "vault"))
        .await
        .result(json!(22));
    assert_eq!(
        names(&templates, "resourceTemplates", "uriTemplate"),
        ["mem://vault/{key}"]
    );
    let prompts = client
        .send(&resources(23, "prompts/list", "vault"))
        .await
        .result(json!(23));
    assert!(names(&prompts, "prompts", "name").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_beyond_scope_is_403_with_the_challenge_and_the_next_is_served() {
    let srv = start(test_config()).await;
    let mut client = Client::h1(srv.addr).await;
    let reader = Some("db:read");

    let reply = client
        .send(&as_caller(Post::tool(1, "write", json!({})), reader))
        .await;
    forbidden(
        &reply,
        json!(1),
        "db:write",
        "the tool write needs the scope db:write",
    );
    // The same connection serves the next request normally.
    let text = client
        .send(&as_caller(Post::tool(2, "read", json!({})), reader))
        .await
        .tool_text(json!(2));
    assert_eq!(text, "read");

    // Every scope the operation needs, in one challenge (step-up), including those held.
    let reply = client
        .send(&as_caller(Post::tool(3, "admin", json!({})), reader))
        .await;
    forbidden(
        &reply,
        json!(3),
        "db:admin db:read",
        "the tool admin needs the scopes db:admin db:read",
    );

    let read = |id: i64, uri: &str| {
        as_caller(
            Post::call(id, "resources/read", json!({"uri": uri})).header("Mcp-Name", uri),
            reader,
        )
    };
    forbidden(
        &client.send(&read(4, "mem://secret")).await,
        json!(4),
        "files:read",
        "the resource mem://secret needs the scope files:read",
    );
    forbidden(
        &client.send(&read(5, "mem://vault/k")).await,
        json!(5),
        "vault",
        "the resource mem://vault/k needs the scope vault",
    );
    let get = as_caller(
        Post::call(6, "prompts/get", json!({"name": "secret"})).header("Mcp-Name", "secret"),
        reader,
    );
    forbidden(
        &client.send(&get).await,
        json!(6),
        "prompts:secret",
        "the prompt secret needs the scope prompts:secret",
    );
    let complete = as_caller(
        Post::call(
            7,
            "completion/complete",
            json!({"ref": {"type": "ref/resource", "uri": "mem://vault/{key}"},
                   "argument": {"name": "key", "value": ""}}),
        ),
        reader,
    );
    forbidden(
        &client.send(&complete).await,
        json!(7),
        "vault",
        "completing the resource mem://vault/{key} needs the scope vault",
    );

    // With the scope the same requests succeed, the resource read private.
    let vault = client
        .send(&as_caller(
            Post::call(8, "resources/read", json!({"uri": "mem://vault/k"}))
                .header("Mcp-Name", "mem://vault/k"),
            Some("vault"),
        ))
        .await
        .result(json!(8));
    assert_eq!(vault["cacheScope"], "private");
    assert_eq!(vault["contents"][0]["text"], "contents");
    let anonymous = client.send(&Post::tool(9, "write", json!({}))).await;
    assert_eq!(anonymous.tool_text(json!(9)), "write");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_would_stream_is_refused_before_the_stream_starts() {
    let srv = start(test_config()).await;
    let mut client = Client::h1(srv.addr).await;
    let progress = json!({"progressToken": "p"});

    // Refused by the router: the handler, which would send progress first, never runs.
    let post = as_caller(
        Post::tool_with_meta(1, "slow", json!({}), progress.clone()),
        Some("db:read"),
    );
    let reply = client.send(&post).await;
    forbidden(
        &reply,
        json!(1),
        "db:write",
        "the tool slow needs the scope db:write",
    );

    // Refused by the handler, by argument, before its first notification.
    let post = as_caller(
        Post::tool_with_meta(2, "pick", json!({"table": "users"}), progress.clone()),
        Some("db:orders:read"),
    );
    let reply = client.send(&post).await;
    forbidden(
        &reply,
        json!(2),
        "db:users:read",
        "pick on users needs the scope db:users:read",
    );

    // Allowed, the same request streams.
    let post = as_caller(
        Post::tool_with_meta(3, "pick", json!({"table": "orders"}), progress),
        Some("db:orders:read"),
    );
    let mut stream = SseStream::new(client.open(&post).await);
    assert_eq!(
        stream.next().await.unwrap()["method"],
        "notifications/progress"
    );
    let last = stream.next().await.unwrap();
    assert_eq!(super::harness::tool_text(&last["result"]), "orders");
}

const LEGACY: &str = "2025-11-25";

fn legacy(body: Value, session: Option<&str>, scopes: Option<&str>) -> Post {
    let mut post = Post::bare(serde_json::to_vec(&body).unwrap());
    if let Some(id) = session {
        post = post
            .header("Mcp-Session-Id", id)
            .header("MCP-Protocol-Version", LEGACY);
    }
    as_caller(post, scopes)
}

async fn open_session(client: &mut Client, scopes: Option<&str>) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {},
        "clientInfo": {"name": "old-host", "version": "1"}}});
    let reply = client.send_any(&legacy(init, None, scopes)).await;
    assert_eq!(reply.status, StatusCode::OK);
    let session = reply.headers["mcp-session-id"].to_str().unwrap().to_owned();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let accepted = client.send_any(&legacy(note, Some(&session), scopes)).await;
    assert_eq!(accepted.status, StatusCode::ACCEPTED);
    session
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_handshake_era_filters_and_refuses_the_same_way() {
    let srv = start(test_config()).await;
    let mut client = Client::h1(srv.addr).await;
    let rpc = |id: i64, method: &str, params: Value| json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let a = open_session(&mut client, Some(ALL)).await;
    let b = open_session(&mut client, Some("db:read")).await;

    let list = |id, session: &str, scopes, cursor: Option<&str>| {
        let params = cursor.map_or(json!({}), |c| json!({"cursor": c}));
        legacy(rpc(id, "tools/list", params), Some(session), scopes)
    };
    let a1 = client.send_any(&list(1, &a, Some(ALL), None)).await.json();
    assert_eq!(names(&a1["result"], "tools", "name"), ["admin", "open"]);
    assert_eq!(a1["result"]["cacheScope"], "private", "{a1}");
    let a_cursor = a1["result"]["nextCursor"].as_str().unwrap().to_owned();
    let b1 = client
        .send_any(&list(2, &b, Some("db:read"), None))
        .await
        .json();
    assert_eq!(names(&b1["result"], "tools", "name"), ["open", "pick"]);
    let refused = client
        .send_any(&list(3, &b, Some("db:read"), Some(&a_cursor)))
        .await
        .json();
    assert_eq!(refused["error"]["code"], -32602, "{refused}");

    let call = legacy(
        rpc(4, "tools/call", json!({"name": "write", "arguments": {}})),
        Some(&b),
        Some("db:read"),
    );
    let reply = client.send_any(&call).await;
    forbidden(
        &reply,
        json!(4),
        "db:write",
        "the tool write needs the scope db:write",
    );
    // A handler's refusal by argument, and the session serving the next request.
    let call = legacy(
        rpc(
            5,
            "tools/call",
            json!({"name": "pick", "arguments": {"table": "users"}}),
        ),
        Some(&b),
        Some("db:read"),
    );
    forbidden(
        &client.send_any(&call).await,
        json!(5),
        "db:users:read",
        "pick on users needs the scope db:users:read",
    );
    let call = legacy(
        rpc(6, "tools/call", json!({"name": "read", "arguments": {}})),
        Some(&b),
        Some("db:read"),
    );
    let ok = client.send_any(&call).await;
    assert_eq!(ok.status, StatusCode::OK);
    assert_eq!(ok.json()["result"]["content"][0]["text"], "read");
    let get = legacy(
        rpc(7, "prompts/get", json!({"name": "secret"})),
        Some(&b),
        Some("db:read"),
    );
    forbidden(
        &client.send_any(&get).await,
        json!(7),
        "prompts:secret",
        "the prompt secret needs the scope prompts:secret",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handshake_era_session_serves_only_the_caller_that_opened_it() {
    let srv = start(test_config()).await;
    let mut client = Client::h1(srv.addr).await;
    let alice = |post: Post| post.header("x-test-subject", "alice");
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {},
        "clientInfo": {"name": "old-host", "version": "1"}}});
    let reply = client.send_any(&alice(legacy(init, None, Some(ALL)))).await;
    assert_eq!(reply.status, StatusCode::OK);
    let session = reply.headers["mcp-session-id"].to_str().unwrap().to_owned();
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});

    // Another token's holder who learnt the id, and an anonymous caller, are told it does not
    // exist: a request, a notification, and the GET stream.
    for who in [Some("bob"), None] {
        let as_who = |post: Post| match who {
            Some(name) => post.header("x-test-subject", name),
            None => post,
        };
        let scopes = who.map(|_| ALL);
        let reply = client
            .send_any(&as_who(legacy(list.clone(), Some(&session), scopes)))
            .await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{who:?}");
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let reply = client
            .send_any(&as_who(legacy(note, Some(&session), scopes)))
            .await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{who:?}");
        let get = Post::bare("")
            .method(http::Method::GET)
            .without("content-type")
            .header("Accept", "text/event-stream")
            .header("Mcp-Session-Id", &session)
            .header("MCP-Protocol-Version", LEGACY);
        let get = as_who(as_caller(get, scopes));
        let reply = client.send_any(&get).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{who:?}");
    }
    // The one who opened it goes on using it.
    let reply = client
        .send_any(&alice(legacy(list, Some(&session), Some(ALL))))
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert!(reply.json()["result"]["tools"].is_array());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updates_of_a_scoped_resource_are_refused_to_callers_who_may_not_read_it() {
    let srv = start(test_config()).await;
    let mut client = Client::h1(srv.addr).await;
    let description = "the resource mem://secret needs the scope files:read";
    // 2026-07-28: a listen stream asking for the resource's updates.
    let listen = Post::call(
        1,
        "subscriptions/listen",
        json!({"notifications": {"resourceSubscriptions": ["mem://secret"]}}),
    );
    let reply = client.send_any(&as_caller(listen, Some("db:read"))).await;
    forbidden(&reply, json!(1), "files:read", description);

    // The handshake era: resources/subscribe, refused to one session and granted to another.
    let subscribe = |id: i64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "resources/subscribe",
            "params": {"uri": "mem://secret"}})
    };
    let reader = open_session(&mut client, Some("db:read")).await;
    let reply = client
        .send_any(&legacy(subscribe(2), Some(&reader), Some("db:read")))
        .await;
    forbidden(&reply, json!(2), "files:read", description);
    let allowed = open_session(&mut client, Some("files:read")).await;
    let reply = client
        .send_any(&legacy(subscribe(3), Some(&allowed), Some("files:read")))
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.json()["result"], json!({}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handshake_era_session_hears_only_of_the_resources_below_its_subscription_it_may_read() {
    let srv = start(test_config()).await;
    let mut client = Client::h1(srv.addr).await;
    // Two sessions subscribe to mem://vault, which needs no scope; the resources below it are the
    // vault template's, which need `vault`.
    let mut streams = Vec::new();
    for (id, scopes) in [(1, "db:read"), (2, "vault")] {
        let session = open_session(&mut client, Some(scopes)).await;
        let get = as_caller(
            Post::bare("")
                .method(http::Method::GET)
                .without("content-type")
                .header("Accept", "text/event-stream")
                .header("Mcp-Session-Id", &session)
                .header("MCP-Protocol-Version", LEGACY),
            Some(scopes),
        );
        let mut listener = Client::h1(srv.addr).await;
        let stream = SseStream::new(listener.open_any(&get).await);
        let subscribe = json!({"jsonrpc": "2.0", "id": id, "method": "resources/subscribe",
            "params": {"uri": "mem://vault"}});
        let reply = client
            .send_any(&legacy(subscribe, Some(&session), Some(scopes)))
            .await;
        assert_eq!(reply.json()["result"], json!({}), "{scopes}");
        streams.push((listener, stream));
    }
    srv.server.notify_resource_updated("mem://vault/k1");
    srv.server.notify_resource_updated("mem://vault");
    let mut heard = Vec::new();
    for (_, stream) in &mut streams {
        let mut uris = Vec::new();
        loop {
            let event = tokio::time::timeout(std::time::Duration::from_secs(5), stream.next())
                .await
                .expect("an update in time")
                .expect("the stream stays open");
            assert_eq!(
                event["method"], "notifications/resources/updated",
                "{event}"
            );
            let uri = event["params"]["uri"].as_str().unwrap().to_owned();
            let last = uri == "mem://vault";
            uris.push(uri);
            if last {
                break;
            }
        }
        heard.push(uris);
    }
    assert_eq!(heard[0], ["mem://vault"], "without the vault scope");
    assert_eq!(heard[1], ["mem://vault/k1", "mem://vault"], "with it");
}
