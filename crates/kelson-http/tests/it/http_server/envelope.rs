//! The request envelope: `_meta`, the standard headers checked against the body, the protocol
//! version, and methods the server does not serve. The statuses and codes are those of spec
//! 2026-07-28 basic/index and basic/transports/streamable-http, as the official conformance
//! scenarios `server-stateless` and `http-header-validation` check them.

use http::StatusCode;
use kelson_http::encode_value;
use serde_json::json;

use super::fixture::{UNICODE_PROMPT, UNICODE_URI};
use super::harness::{Post, TestServer, VERSION, meta, raw_exchange, raw_request};

const PV: &str = "io.modelcontextprotocol/protocolVersion";
const CAPS: &str = "io.modelcontextprotocol/clientCapabilities";

fn list(id: i64) -> Post {
    Post::call(id, "tools/list", json!({}))
}

fn echo(id: i64) -> Post {
    Post::tool(id, "echo", json!({"text": "hi"}))
}

/// A `_meta` missing a required key (or missing altogether) is 400 / -32602 with the id echoed.
/// It wins over a header that disagrees with the body, as the conformance suite requires.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_meta_key_is_400_invalid_params_with_the_id() {
    let srv = TestServer::start().await;
    let mut no_version = meta();
    no_version.as_object_mut().unwrap().remove(PV);
    let mut no_caps = meta();
    no_caps.as_object_mut().unwrap().remove(CAPS);
    let cases = [
        (
            "no params",
            json!({"jsonrpc": "2.0", "id": 11, "method": "tools/list"}),
        ),
        (
            "no _meta",
            json!({"jsonrpc": "2.0", "id": 11, "method": "tools/list", "params": {}}),
        ),
        (
            "no protocolVersion",
            json!({"jsonrpc": "2.0", "id": 11, "method": "tools/list",
                   "params": {"_meta": no_version}}),
        ),
        (
            "no clientCapabilities",
            json!({"jsonrpc": "2.0", "id": 11, "method": "tools/list",
                   "params": {"_meta": no_caps}}),
        ),
    ];
    for (what, body) in cases {
        // Headers as a correct client would send them for a 2026-07-28 tools/list.
        let post = Post::rpc(body.clone())
            .header("MCP-Protocol-Version", VERSION)
            .header("Mcp-Method", "tools/list");
        let error = srv
            .send(&post)
            .await
            .error(StatusCode::BAD_REQUEST, -32602, Some(json!(11)));
        assert!(error["message"].is_string(), "{what}");

        // The same body with no standard headers at all: still -32602, not -32020.
        let bare = Post::bare(serde_json::to_vec(&body).unwrap());
        srv.send(&bare)
            .await
            .error(StatusCode::BAD_REQUEST, -32602, Some(json!(11)));
    }

    // String ids are echoed as strings.
    let post = Post::bare(r#"{"jsonrpc":"2.0","id":"req-7","method":"tools/list","params":{}}"#);
    srv.send(&post)
        .await
        .error(StatusCode::BAD_REQUEST, -32602, Some(json!("req-7")));
}

/// `clientInfo` is optional: a request without it is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_info_is_optional() {
    let srv = TestServer::start().await;
    let meta = json!({PV: VERSION, CAPS: {}});
    let reply = srv
        .send(&Post::call(3, "tools/list", json!({"_meta": meta})))
        .await;
    assert!(reply.result(json!(3))["tools"].is_array());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_protocol_version_header_is_required_and_must_match() {
    let srv = TestServer::start().await;

    // Missing: -32020 (the conformance suite expects it), not a fallback to an old revision.
    let error = srv
        .send(&list(1).without("MCP-Protocol-Version"))
        .await
        .error(StatusCode::BAD_REQUEST, -32020, Some(json!(1)));
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("MCP-Protocol-Version")
    );

    // Header 2026-07-28, body v999.0.0: a mismatch, which beats version support.
    let body = Post::call(
        2,
        "tools/list",
        json!({"_meta": {PV: "v999.0.0", CAPS: {}}}),
    )
    .header("MCP-Protocol-Version", VERSION);
    srv.send(&body)
        .await
        .error(StatusCode::BAD_REQUEST, -32020, Some(json!(2)));

    // The other way round.
    srv.send(&list(3).header("MCP-Protocol-Version", "2025-11-25"))
        .await
        .error(StatusCode::BAD_REQUEST, -32020, Some(json!(3)));
}

/// Header and body agree on a version the server does not speak: 400 / -32022 with
/// `{supported, requested}`, and `supported` agrees with `server/discover`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsupported_version_is_400_with_supported_and_requested() {
    let srv = TestServer::start().await;
    let post = Post::call(
        4,
        "tools/list",
        json!({"_meta": {PV: "v999.0.0", CAPS: {}}}),
    );
    let error = srv
        .send(&post)
        .await
        .error(StatusCode::BAD_REQUEST, -32022, Some(json!(4)));
    assert_eq!(error["data"]["requested"], "v999.0.0");
    let supported = error["data"]["supported"]
        .as_array()
        .expect("supported list");
    assert!(!supported.is_empty());

    let discover = srv
        .send(&Post::call(5, "server/discover", json!({})))
        .await
        .result(json!(5));
    let advertised = discover["supportedVersions"].as_array().unwrap();
    for version in supported {
        assert!(
            advertised.contains(version),
            "{version} not in {advertised:?}"
        );
    }
}

/// `Mcp-Method` must be present and equal the body's method; values are case-sensitive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_method_must_match_the_body() {
    let srv = TestServer::start().await;
    for post in [
        list(100).without("Mcp-Method"),
        list(100).header("Mcp-Method", "prompts/list"),
        list(100).header("Mcp-Method", "TOOLS/LIST"),
        list(100).header("Mcp-Method", "tools/list/"),
    ] {
        let error = srv
            .send(&post)
            .await
            .error(StatusCode::BAD_REQUEST, -32020, Some(json!(100)));
        assert!(
            error["message"].as_str().unwrap().contains("Mcp-Method"),
            "{error}"
        );
    }
}

/// Header names are case-insensitive: written byte for byte in lower and upper case on the wire.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn header_names_are_case_insensitive() {
    let srv = TestServer::start().await;
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": "echo", "arguments": {"text": "hi"}, "_meta": meta()}})
    .to_string();
    let cases: [&[&str]; 3] = [
        &[
            "mcp-protocol-version: 2026-07-28",
            "mcp-method: tools/call",
            "mcp-name: echo",
        ],
        &[
            "MCP-PROTOCOL-VERSION: 2026-07-28",
            "MCP-METHOD: tools/call",
            "MCP-NAME: echo",
        ],
        &[
            "Mcp-Protocol-Version: 2026-07-28",
            "mCp-MeThOd: tools/call",
            "mcP-nAME: echo",
        ],
    ];
    for lines in cases {
        let reply = raw_exchange(srv.addr, &raw_request(&srv.authority(), lines, &body)).await;
        assert_eq!(reply.tool_text(json!(7)), "hi", "{lines:?}");
    }
    // A value in the wrong case is still refused on the raw wire.
    let reply = raw_exchange(
        srv.addr,
        &raw_request(
            &srv.authority(),
            &[
                "MCP-PROTOCOL-VERSION: 2026-07-28",
                "MCP-METHOD: TOOLS/CALL",
                "MCP-NAME: echo",
            ],
            &body,
        ),
    )
    .await;
    reply.error(StatusCode::BAD_REQUEST, -32020, Some(json!(7)));
}

/// `Mcp-Name` must be present and equal `params.name`; surrounding spaces do not count. Checked
/// over HTTP/1.1, whose parser trims the value, and over raw bytes with tabs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_name_must_match_the_body() {
    let srv = TestServer::start().await;
    for post in [
        echo(1).without("Mcp-Name"),
        echo(1).header("Mcp-Name", "wrong_tool_name"),
        echo(1).header("Mcp-Name", "ECHO"),
        echo(1).header("Mcp-Name", ""),
    ] {
        let error = srv
            .send(&post)
            .await
            .error(StatusCode::BAD_REQUEST, -32020, Some(json!(1)));
        assert!(
            error["message"].as_str().unwrap().contains("Mcp-Name"),
            "{error}"
        );
    }

    assert_eq!(
        srv.send(&echo(2).header("Mcp-Name", "  echo  "))
            .await
            .tool_text(json!(2)),
        "hi"
    );
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                      "params": {"name": "echo", "arguments": {"text": "hi"}, "_meta": meta()}})
    .to_string();
    let reply = raw_exchange(
        srv.addr,
        &raw_request(
            &srv.authority(),
            &[
                "MCP-Protocol-Version: 2026-07-28",
                "Mcp-Method: tools/call",
                "Mcp-Name: \t  echo \t ",
            ],
            &body,
        ),
    )
    .await;
    assert_eq!(reply.tool_text(json!(3)), "hi");
}

/// Names that are not plain ASCII travel as the base64 sentinel, which the server decodes before
/// comparing: a prompt name and a resource URI (tool names must be ASCII).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sentinel_encoded_name_is_decoded() {
    let srv = TestServer::start().await;
    let encoded = encode_value(UNICODE_PROMPT);
    assert!(encoded.starts_with("=?base64?"), "{encoded}");

    let prompt =
        Post::call(1, "prompts/get", json!({"name": UNICODE_PROMPT})).header("Mcp-Name", &encoded);
    let result = srv.send(&prompt).await.result(json!(1));
    assert_eq!(result["messages"][0]["content"]["text"], "Grüße!");

    let read = Post::call(2, "resources/read", json!({"uri": UNICODE_URI}))
        .header("Mcp-Name", &encode_value(UNICODE_URI));
    let result = srv.send(&read).await.result(json!(2));
    assert_eq!(result["contents"][0]["uri"], UNICODE_URI);
    assert_eq!(result["contents"][0]["text"], "Zürich");

    // The sentinel of the wrong name is a mismatch like any other.
    let wrong = Post::call(3, "prompts/get", json!({"name": UNICODE_PROMPT}))
        .header("Mcp-Name", &encode_value("grüße!"));
    srv.send(&wrong)
        .await
        .error(StatusCode::BAD_REQUEST, -32020, Some(json!(3)));
}

/// A sentinel that does not decode (bad padding, bad characters, not UTF-8), or raw non-ASCII
/// bytes in the header, is a -32020.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_name_header_is_a_header_mismatch() {
    let srv = TestServer::start().await;
    let prompt = || Post::call(9, "prompts/get", json!({"name": UNICODE_PROMPT}));
    let cases: [&[u8]; 5] = [
        b"=?base64?Z3LDvMOfZQ?=",     // missing padding
        b"=?base64?Z3L!!DvMOfZQ==?=", // not base64
        b"=?base64?/w==?=",           // decodes to a byte that is not UTF-8
        b"=?base64??=",               // empty payload is the empty string, not the name
        "grüße".as_bytes(),           // obs-text instead of the sentinel
    ];
    for value in cases {
        let reply = srv.send(&prompt().header_bytes("Mcp-Name", value)).await;
        reply.error(StatusCode::BAD_REQUEST, -32020, Some(json!(9)));
    }
}

/// Unknown methods, and the methods 2026-07-28 removed, sent with full valid `_meta` and headers:
/// 404 / -32601 with the id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_and_removed_methods_are_404() {
    let srv = TestServer::start().await;
    let cases = [
        ("unknown/method", json!({})),
        (
            "initialize",
            json!({"protocolVersion": VERSION, "capabilities": {},
                   "clientInfo": {"name": "c", "version": "1"}}),
        ),
        ("ping", json!({})),
        ("logging/setLevel", json!({"level": "debug"})),
        ("resources/subscribe", json!({"uri": UNICODE_URI})),
        ("resources/unsubscribe", json!({"uri": UNICODE_URI})),
        ("tasks/get", json!({"taskId": "t"})),
    ];
    for (i, (method, params)) in cases.into_iter().enumerate() {
        let id = json!(i);
        let error = srv
            .send(&Post::call(id.clone(), method, params))
            .await
            .error(StatusCode::NOT_FOUND, -32601, Some(id));
        assert!(error["message"].is_string(), "{method}");
    }
}

/// A legacy `initialize` (no modern `_meta`, no modern headers) learns which versions the server
/// speaks: 400 / -32022 with `requested` = its `params.protocolVersion`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_initialize_is_told_the_supported_versions_by_a_modern_only_server() {
    let srv = TestServer::start_with(
        super::fixture::modern_only_server,
        super::harness::test_config(),
    )
    .await;
    let initialize = json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"sampling": {}},
            "clientInfo": {"name": "legacy-client", "version": "0.9"}
        }
    });
    let reply = srv
        .send(&Post::bare(serde_json::to_vec(&initialize).unwrap()))
        .await;
    let error = reply.error(StatusCode::BAD_REQUEST, -32022, Some(json!(0)));
    assert_eq!(error["data"]["requested"], "2025-11-25");
    assert_eq!(error["data"]["supported"], json!(["2026-07-28"]));

    // The same with the legacy version header that 2025-06-18 clients send after initialize.
    let reply = srv
        .send(
            &Post::bare(serde_json::to_vec(&initialize).unwrap())
                .header("MCP-Protocol-Version", "2025-06-18"),
        )
        .await;
    reply.error(StatusCode::BAD_REQUEST, -32022, Some(json!(0)));
    assert!(reply.headers.get("mcp-session-id").is_none());
}
