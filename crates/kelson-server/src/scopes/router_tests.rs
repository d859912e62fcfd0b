//! The router with scoped registrations, in process: lists filtered per caller with cursors bound
//! to the caller's view, private cache hints, and every call beyond a caller's scopes refused with
//! the insufficient-scope error naming what the operation needs.

use kelson_types::{
    CallToolResult, GetPromptResult, JsonObject, Prompt, PromptMessage, Resource, ResourceContents,
    ResourceTemplate, Role, TextResourceContents, Tool,
};
use serde_json::{Value, json};

use crate::transport::{Reply, RequestIo};
use crate::{
    INSUFFICIENT_SCOPE, Principal, RequestContext, Scopes, Server, ServerConfig, TemplateVars,
    WithScopes,
};

fn tool(ctx: RequestContext, _args: JsonObject) -> crate::BoxFuture<crate::ToolResult> {
    let name = ctx.method().to_owned();
    Box::pin(async move { Ok(CallToolResult::text(name)) })
}

fn reader(
    _ctx: RequestContext,
    uri: String,
    _vars: TemplateVars,
) -> crate::BoxFuture<Result<Vec<ResourceContents>, crate::HandlerError>> {
    Box::pin(async move { Ok(vec![TextResourceContents::new(uri, "text").into()]) })
}

fn prompt(
    _ctx: RequestContext,
    _args: std::collections::BTreeMap<String, String>,
) -> crate::BoxFuture<Result<GetPromptResult, crate::HandlerError>> {
    Box::pin(async move {
        Ok(GetPromptResult::new(vec![PromptMessage::new(
            Role::User,
            kelson_types::ContentBlock::text("hi"),
        )]))
    })
}

/// Tools `open`, `read` (db:read), `write` (db:write), `admin` (db:read and db:admin); a public
/// and a secret resource, a secret template, a public and a secret prompt; two tools per page.
fn server() -> Server {
    Server::builder("scoped", "1.0.0")
        .config(ServerConfig {
            page_size: 2,
            ..Default::default()
        })
        .tool(Tool::without_arguments("open"), tool)
        .tool(
            Tool::without_arguments("read").with_scopes(["db:read"]),
            tool,
        )
        .tool(
            Tool::without_arguments("write").with_scopes(["db:write"]),
            tool,
        )
        .tool(
            Tool::without_arguments("admin").with_scopes(["db:admin", "db:read"]),
            tool,
        )
        .resource_handler(Resource::new("mem://public", "public"), reader)
        .resource_handler(
            Resource::new("mem://secret", "secret").with_scopes(["files:read"]),
            reader,
        )
        .template_handler(
            ResourceTemplate::new("mem://vault/{key}", "vault").with_scopes(["vault"]),
            reader,
        )
        .prompt(Prompt::new("hello"), prompt)
        .prompt(
            Prompt::new("secret").with_scopes(["prompts:secret"]),
            prompt,
        )
        .completion(
            |_ctx: RequestContext, _params: kelson_types::CompleteRequestParams| async move {
                Ok(crate::Completions {
                    values: vec!["x".to_owned()],
                    total: None,
                    has_more: None,
                })
            },
        )
        .build()
        .expect("builds")
}

fn caller(scopes: &[&str]) -> Principal {
    Principal::builder("user")
        .scopes(scopes.iter().map(|s| (*s).to_owned()))
        .build()
}

async fn ask(server: &Server, who: &Principal, method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let io = RequestIo {
        principal: who.clone(),
        ..RequestIo::plain(server)
    };
    match server.handle(body.to_string().as_bytes(), io).await {
        Some(Reply::Message(m)) => serde_json::from_slice(&m.body).expect("JSON"),
        other => panic!("{method}: {other:?}"),
    }
}

fn names(result: &Value, list: &str, key: &str) -> Vec<String> {
    result["result"][list]
        .as_array()
        .unwrap_or_else(|| panic!("{result}"))
        .iter()
        .map(|t| t[key].as_str().unwrap().to_owned())
        .collect()
}

/// Every tool name `who` sees, following cursors.
async fn all_tools(server: &Server, who: &Principal) -> Vec<String> {
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let params = match &cursor {
            None => json!({}),
            Some(c) => json!({"cursor": c}),
        };
        let page = ask(server, who, "tools/list", params).await;
        seen.extend(names(&page, "tools", "name"));
        match page["result"]["nextCursor"].as_str() {
            None => return seen,
            Some(c) => cursor = Some(c.to_owned()),
        }
    }
}

#[tokio::test]
async fn lists_show_each_caller_what_its_scopes_allow() {
    let server = server();
    assert_eq!(all_tools(&server, &caller(&[])).await, ["open"]);
    assert_eq!(
        all_tools(&server, &caller(&["db:read"])).await,
        ["open", "read"]
    );
    assert_eq!(
        all_tools(&server, &caller(&["db:read", "db:admin", "db:write"])).await,
        ["admin", "open", "read", "write"]
    );
    // Anonymous means no auth layer: everything.
    assert_eq!(
        all_tools(&server, &Principal::anonymous()).await,
        ["admin", "open", "read", "write"]
    );

    let reader = caller(&["files:read"]);
    let resources = ask(&server, &reader, "resources/list", json!({})).await;
    assert_eq!(
        names(&resources, "resources", "uri"),
        ["mem://public", "mem://secret"]
    );
    let resources = ask(&server, &caller(&[]), "resources/list", json!({})).await;
    assert_eq!(names(&resources, "resources", "uri"), ["mem://public"]);
    let templates = ask(&server, &reader, "resources/templates/list", json!({})).await;
    assert!(names(&templates, "resourceTemplates", "uriTemplate").is_empty());
    let templates = ask(
        &server,
        &caller(&["vault"]),
        "resources/templates/list",
        json!({}),
    )
    .await;
    assert_eq!(
        names(&templates, "resourceTemplates", "uriTemplate"),
        ["mem://vault/{key}"]
    );
    let prompts = ask(&server, &caller(&[]), "prompts/list", json!({})).await;
    assert_eq!(names(&prompts, "prompts", "name"), ["hello"]);
    let prompts = ask(
        &server,
        &caller(&["prompts:secret"]),
        "prompts/list",
        json!({}),
    )
    .await;
    assert_eq!(names(&prompts, "prompts", "name"), ["hello", "secret"]);
}

#[tokio::test]
async fn filtered_lists_are_private_and_cursors_belong_to_one_view() {
    let server = server();
    let all = caller(&["db:read", "db:admin", "db:write"]);
    let page = ask(&server, &all, "tools/list", json!({})).await;
    assert_eq!(page["result"]["cacheScope"], "private", "{page}");
    assert_eq!(names(&page, "tools", "name"), ["admin", "open"]);
    let cursor = page["result"]["nextCursor"].as_str().unwrap().to_owned();

    // Another view of the list refuses the cursor rather than serving a page of it.
    let other = ask(
        &server,
        &caller(&["db:read"]),
        "tools/list",
        json!({"cursor": cursor}),
    )
    .await;
    assert_eq!(other["error"]["code"], -32602, "{other}");
    // The same view (another caller with the same scopes) may use it.
    let same = caller(&["db:write", "db:admin", "db:read", "unrelated"]);
    let next = ask(&server, &same, "tools/list", json!({"cursor": cursor})).await;
    assert_eq!(names(&next, "tools", "name"), ["read", "write"]);

    // Anonymous callers (no auth layer) share one view: the whole list, public and cached, with
    // cursors that no authenticated view accepts, nor the other way round.
    let anonymous = ask(&server, &Principal::anonymous(), "tools/list", json!({})).await;
    assert_eq!(anonymous["result"]["cacheScope"], "public", "{anonymous}");
    let plain = anonymous["result"]["nextCursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let refused = ask(&server, &all, "tools/list", json!({"cursor": plain})).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let refused = ask(
        &server,
        &Principal::anonymous(),
        "tools/list",
        json!({"cursor": cursor}),
    )
    .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");

    // Reads of a scoped resource are private, of a public one as configured.
    let reader = caller(&["files:read"]);
    let secret = ask(
        &server,
        &reader,
        "resources/read",
        json!({"uri": "mem://secret"}),
    )
    .await;
    assert_eq!(secret["result"]["cacheScope"], "private", "{secret}");
    let public = ask(
        &server,
        &reader,
        "resources/read",
        json!({"uri": "mem://public"}),
    )
    .await;
    assert_eq!(public["result"]["cacheScope"], "public", "{public}");
}

#[tokio::test]
async fn an_unscoped_server_keeps_its_public_cached_lists() {
    let server = Server::builder("plain", "1")
        .config(ServerConfig {
            page_size: 1,
            ..Default::default()
        })
        .tool(Tool::without_arguments("a"), tool)
        .tool(Tool::without_arguments("b"), tool)
        .build()
        .unwrap();
    let first = ask(&server, &caller(&[]), "tools/list", json!({})).await;
    assert_eq!(first["result"]["cacheScope"], "public");
    let cursor = first["result"]["nextCursor"].as_str().unwrap().to_owned();
    // Cursors are not bound to anyone: the list is the same for all.
    let second = ask(
        &server,
        &Principal::anonymous(),
        "tools/list",
        json!({"cursor": cursor}),
    )
    .await;
    assert_eq!(names(&second, "tools", "name"), ["b"]);
}

fn refused(reply: &Value, scopes: &[&str]) {
    assert_eq!(reply["error"]["code"], INSUFFICIENT_SCOPE, "{reply}");
    assert_eq!(
        reply["error"]["data"]["error"], "insufficient_scope",
        "{reply}"
    );
    assert_eq!(reply["error"]["data"]["scopes"], json!(scopes), "{reply}");
    assert_eq!(reply["id"], 1);
}

#[tokio::test]
async fn calls_beyond_the_callers_scopes_are_refused_naming_every_scope_needed() {
    let server = server();
    let reader = caller(&["db:read"]);
    refused(
        &ask(&server, &reader, "tools/call", json!({"name": "write"})).await,
        &["db:write"],
    );
    // Every scope the operation needs, including those the caller has.
    let admin = ask(&server, &reader, "tools/call", json!({"name": "admin"})).await;
    refused(&admin, &["db:admin", "db:read"]);
    assert_eq!(
        admin["error"]["message"],
        "the tool admin needs the scopes db:admin db:read"
    );
    refused(
        &ask(
            &server,
            &reader,
            "resources/read",
            json!({"uri": "mem://secret"}),
        )
        .await,
        &["files:read"],
    );
    refused(
        &ask(
            &server,
            &reader,
            "resources/read",
            json!({"uri": "mem://vault/k"}),
        )
        .await,
        &["vault"],
    );
    refused(
        &ask(&server, &reader, "prompts/get", json!({"name": "secret"})).await,
        &["prompts:secret"],
    );
    refused(
        &ask(
            &server,
            &reader,
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "secret"}, "argument": {"name": "a", "value": ""}}),
        )
        .await,
        &["prompts:secret"],
    );
    refused(
        &ask(
            &server,
            &reader,
            "completion/complete",
            json!({"ref": {"type": "ref/resource", "uri": "mem://vault/{key}"}, "argument": {"name": "key", "value": ""}}),
        )
        .await,
        &["vault"],
    );

    // Within scope, and anonymous, the same calls run.
    let ok = ask(&server, &reader, "tools/call", json!({"name": "read"})).await;
    assert_eq!(ok["result"]["content"][0]["text"], "tools/call", "{ok}");
    for who in [Principal::anonymous(), caller(&["db:write"])] {
        let ok = ask(&server, &who, "tools/call", json!({"name": "write"})).await;
        assert!(ok["result"].is_object(), "{ok}");
    }
    let ok = ask(
        &server,
        &caller(&["vault"]),
        "resources/read",
        json!({"uri": "mem://vault/k"}),
    )
    .await;
    assert_eq!(ok["result"]["cacheScope"], "private", "{ok}");
    let vault = json!({"uri": "mem://vault/k"});
    let ok = ask(&server, &Principal::anonymous(), "resources/read", vault).await;
    assert_eq!(ok["result"]["cacheScope"], "public", "{ok}");
    // An unknown tool is still unknown, whoever asks.
    let unknown = ask(&server, &reader, "tools/call", json!({"name": "nope"})).await;
    assert_eq!(unknown["error"]["code"], -32602);
}

#[tokio::test]
async fn handlers_refuse_by_argument_with_the_same_error() {
    let server = Server::builder("by-arg", "1")
        .tool_handler(
            Tool::without_arguments("pick"),
            |ctx: RequestContext, _args: JsonObject| async move {
                ctx.require_scopes("pick on \"b\"", &Scopes::all(["b:read"]))?;
                Ok(CallToolResult::text("picked"))
            },
        )
        .build()
        .unwrap();
    let reply = ask(
        &server,
        &caller(&["a:read"]),
        "tools/call",
        json!({"name": "pick"}),
    )
    .await;
    refused(&reply, &["b:read"]);
    let reply = ask(
        &server,
        &caller(&["b:read"]),
        "tools/call",
        json!({"name": "pick"}),
    )
    .await;
    assert_eq!(reply["result"]["content"][0]["text"], "picked");
}

#[test]
fn registration_refuses_scopes_a_challenge_cannot_name() {
    let err = Server::builder("bad", "1")
        .tool(
            Tool::without_arguments("t").with_scopes(["has space"]),
            tool,
        )
        .build()
        .expect_err("refused");
    assert!(
        err.to_string().contains("invalid scope \"has space\""),
        "{err}"
    );
    let err = Server::builder("bad", "1")
        .prompt(Prompt::new("p").with_scopes(["q\"uote"]), prompt)
        .build()
        .expect_err("refused");
    assert!(err.to_string().contains("prompt \"p\""), "{err}");
}

#[tokio::test]
async fn updates_below_a_subscribed_uri_reach_only_listeners_who_may_read_them() {
    use futures_util::StreamExt as _;
    let server = server();
    // mem://vault needs no scope; the resources below it are the vault template's (`vault`).
    let mut streams = Vec::new();
    for scopes in [&["db:read"][..], &["vault"]] {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {
        "notifications": {"resourceSubscriptions": ["mem://vault"]},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
        }}});
        let io = RequestIo {
            principal: caller(scopes),
            ..RequestIo::plain(&server)
        };
        let mut stream = match server.handle(body.to_string().as_bytes(), io).await {
            Some(Reply::Listen(stream)) => stream,
            other => panic!("{scopes:?}: {other:?}"),
        };
        let ack: Value = serde_json::from_slice(&stream.next().await.unwrap()).unwrap();
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
        streams.push(stream);
    }
    server.notify_resource_updated("mem://vault/k1");
    server.notify_resources_changed_under("mem://vault/k2");
    server.notify_resource_updated("mem://vault");
    let mut heard = Vec::new();
    for stream in &mut streams {
        let mut uris = Vec::new();
        loop {
            let next = tokio::time::timeout(std::time::Duration::from_secs(5), stream.next())
                .await
                .expect("an update in time")
                .expect("the stream stays open");
            let event: Value = serde_json::from_slice(&next).unwrap();
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
    assert_eq!(
        heard[1],
        ["mem://vault/k1", "mem://vault/k2", "mem://vault"],
        "with it"
    );
}
