//! Hostile `requestState`: forged, tampered, replayed, expired, another principal's.

use super::*;

// ---- requestState ----

/// The params of a retry of `tool` with a confirmation and `state`.
fn retry(id: &str, tool: &str, state: &str) -> Value {
    let answer = json!({"confirm": {"action": "accept", "content": {"ok": true}}});
    call(
        id,
        tool,
        json!({"arguments": {}, "inputResponses": answer, "requestState": state}),
    )
}

#[track_caller]
fn issued_state(response: &Value) -> String {
    assert_eq!(
        response["result"]["resultType"], "input_required",
        "{response}"
    );
    response["result"]["requestState"]
        .as_str()
        .unwrap()
        .to_owned()
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Base64url without padding, the encoding of a sealed state's two parts.
fn b64(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(char::from(B64[(n >> (18 - 6 * i) & 63) as usize]));
        }
    }
    out
}

fn b64_decode(text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let (mut n, mut bits) = (0u32, 0);
    for c in text.bytes() {
        let v = B64.iter().position(|&b| b == c).expect("base64url") as u32;
        (n, bits) = (n << 6 | v, bits + 6);
        if bits >= 8 {
            bits -= 8;
            out.push((n >> bits) as u8);
        }
    }
    out
}

/// Forged and tampered states derived from a genuine one.
fn forgeries(genuine: &str) -> Vec<(&'static str, String)> {
    let (body, tag) = genuine.split_once('.').expect("body.tag");
    let flip = |s: &str, at: usize| {
        let mut bytes = s.as_bytes().to_vec();
        bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
        String::from_utf8(bytes).unwrap()
    };
    // The genuine payload with its expiry moved to the end of time.
    let payload = b64_decode(body);
    let mut claims: Value = serde_json::from_slice(&payload).unwrap();
    claims["e"] = json!(u64::MAX);
    let forged_body = b64(&serde_json::to_vec(&claims).unwrap());
    vec![
        ("random base64", b64(&[7u8; 48])),
        (
            "random body.tag",
            format!("{}.{}", b64(&[1u8; 40]), b64(&[2u8; 32])),
        ),
        ("a later expiry", format!("{forged_body}.{tag}")),
        (
            "a made-up tag",
            format!("{forged_body}.{}", b64(&[3u8; 32])),
        ),
        (
            "a body byte flipped",
            format!("{}.{tag}", flip(body, body.len() / 2)),
        ),
        (
            "a tag byte flipped",
            format!("{body}.{}", flip(tag, tag.len() / 2)),
        ),
        (
            "the tag cut short",
            format!("{body}.{}", &tag[..tag.len() - 2]),
        ),
        ("no tag", body.to_owned()),
        ("empty", String::new()),
    ]
}

#[tokio::test]
async fn forged_and_tampered_request_state_is_refused_on_both_transports() {
    // spec 2026-07-28 basic/patterns/mrtr: requestState comes back attacker-controlled; one
    // that fails verification is rejected (-32602, in band on HTTP).
    const TOOL: &str = "test_input_required_result_tampered_state";
    let mut stdio = Fixture::start().await;
    let genuine = issued_state(
        &stdio
            .call("tools/call", json!({"name": TOOL, "arguments": {}}))
            .await,
    );
    let cases: Vec<Case> = forgeries(&genuine)
        .into_iter()
        .map(|(what, state)| {
            let message = retry(what, TOOL, &state);
            Case::json(what, &message, -32602, Some(json!(what)))
                .header("Mcp-Name", TOOL)
                .says("requestState")
                .status(200)
        })
        .collect();
    run_stdio_on(&mut stdio, &cases).await;
    // The genuine state still completes: nothing above used it up.
    stdio.send(&retry("genuine", TOOL, &genuine)).await;
    assert!(text(&stdio.response("genuine").await).starts_with("integrity-ok"));
    stdio.finish().await;

    // Over HTTP, against a state that server issued (each process has its own key).
    let server = HttpFixture::start().await;
    let mut conn = server.connect().await;
    let first = call("first", TOOL, json!({"arguments": {}}));
    let post =
        |m: &Value| Post::mcp("tools/call", Some(TOOL), m.to_string()).bytes(&server.authority());
    let genuine = issued_state(&conn.exchange(&post(&first)).await.json());
    // A state from the other process is a forgery here.
    let mut forged = forgeries(&genuine);
    forged.push((
        "another server's state",
        issued_state(&first_state_elsewhere(TOOL).await),
    ));
    for (what, state) in forged {
        let reply = conn.exchange(&post(&retry(what, TOOL, &state))).await;
        assert_eq!(reply.status, 200, "{what}: {reply:?}");
        let expect = Expect {
            code: -32602,
            id: Some(json!(what)),
            says: "requestState",
        };
        check_error(what, &reply.json(), &expect);
    }
    let done = conn
        .exchange(&post(&retry("genuine", TOOL, &genuine)))
        .await;
    assert!(text(&done.json()).starts_with("integrity-ok"));
}

/// The first answer of `tool` from a fixture process of its own.
async fn first_state_elsewhere(tool: &str) -> Value {
    let mut other = Fixture::start().await;
    let first = other
        .call("tools/call", json!({"name": tool, "arguments": {}}))
        .await;
    other.finish().await;
    first
}

/// A server with `confirm` (asks for a confirmation) and `once` (acts at most once per issued
/// state, as an approval must, by recording the state's nonce), whose states live `ttl`.
fn mrtr_server(ttl: Duration) -> Server {
    async fn confirm(mut ctx: RequestContext, _args: JsonObject) -> ToolResult {
        let form = RequestedSchema::new().required_property("ok", BooleanSchema::new());
        ctx.elicit("confirm", ElicitRequestFormParams::new("Sure?", form))?;
        Ok(CallToolResult::text("confirmed"))
    }
    async fn once(mut ctx: RequestContext, _args: JsonObject) -> ToolResult {
        let form = RequestedSchema::new().required_property("ok", BooleanSchema::new());
        ctx.elicit("confirm", ElicitRequestFormParams::new("Sure?", form))?;
        let Some(nonce) = ctx.state_nonce().map(str::to_owned) else {
            return Ok(CallToolResult::error("an unsolicited confirmation"));
        };
        let used = ctx.server().state::<std::sync::Mutex<Vec<String>>>();
        let used = used.expect("the ledger");
        let mut used = used.lock().unwrap();
        if used.contains(&nonce) {
            return Ok(CallToolResult::error("this confirmation was already used"));
        }
        used.push(nonce);
        Ok(CallToolResult::text("done once"))
    }
    let mut config = ServerConfig::default();
    config.state_ttl = ttl;
    Server::builder("hostile-mrtr", "1.0.0")
        .config(config)
        .state(std::sync::Mutex::new(Vec::<String>::new()))
        .tool(
            Tool::new("confirm", object(json!({"type": "object"}))),
            confirm,
        )
        .tool(Tool::new("once", object(json!({"type": "object"}))), once)
        .build()
        .expect("the server builds")
}

#[tokio::test]
async fn a_replayed_request_state_is_refused_where_single_use_applies() {
    // spec 2026-07-28 basic/patterns/mrtr: a state is not single-use by itself; a server that
    // needs one-time use enforces it. The runtime does not (a replay of the fixture's
    // `test_input_required_result_request_state` completes again: mrtr.rs), and gives handlers a
    // nonce per issued state to enforce it with; kelson-sql's write approval is the production case
    // (kelson-sql tests/it/writes.rs). Here a handler does, with that nonce.
    let server = mrtr_server(Duration::from_secs(600));
    let mut pipe = Pipe::serve(&server, Principal::anonymous());
    let state = issued_state(
        &pipe
            .call(&call("1", "once", json!({"arguments": {}})))
            .await,
    );
    assert_eq!(
        text(&pipe.call(&retry("2", "once", &state)).await),
        "done once"
    );
    for id in ["3", "4"] {
        let replay = pipe.call(&retry(id, "once", &state)).await;
        assert_eq!(replay["result"]["isError"], true, "{replay}");
        assert!(replay.to_string().contains("already used"), "{replay}");
    }
    // A fresh round is a fresh state.
    let again = issued_state(
        &pipe
            .call(&call("5", "once", json!({"arguments": {}})))
            .await,
    );
    assert_ne!(again, state);
    assert_eq!(
        text(&pipe.call(&retry("6", "once", &again)).await),
        "done once"
    );
}

#[tokio::test]
async fn an_expired_request_state_is_a_tool_error_asking_to_call_again() {
    // spec 2026-07-28 server/tools: an expired state handle is reported as a tool error the
    // model can act on. The fixture's states live 10 minutes; this server's, 2 seconds (long
    // enough for a round on a busy machine).
    let server = mrtr_server(Duration::from_secs(2));
    let mut pipe = Pipe::serve(&server, Principal::anonymous());
    let state = issued_state(
        &pipe
            .call(&call("1", "confirm", json!({"arguments": {}})))
            .await,
    );
    tokio::time::sleep(Duration::from_millis(2200)).await;
    let late = pipe.call(&retry("2", "confirm", &state)).await;
    assert_eq!(late["result"]["isError"], true, "{late}");
    assert!(late.to_string().contains("expired"), "{late}");
    // Calling again starts a new round that completes in time.
    let state = issued_state(
        &pipe
            .call(&call("3", "confirm", json!({"arguments": {}})))
            .await,
    );
    assert_eq!(
        text(&pipe.call(&retry("4", "confirm", &state)).await),
        "confirmed"
    );
}

#[tokio::test]
async fn a_request_state_issued_to_another_principal_is_refused() {
    // spec 2026-07-28 basic/patterns/mrtr: the state SHOULD be bound to the authenticated
    // principal. Two connections to one server, as alice and as bob (stdio takes its principal
    // from its configuration, as HTTP takes it from the auth layer).
    let server = mrtr_server(Duration::from_secs(600));
    let mut alice = Pipe::serve(&server, Principal::builder("alice").build());
    let mut bob = Pipe::serve(&server, Principal::builder("bob").build());
    let mut nobody = Pipe::serve(&server, Principal::anonymous());
    let state = issued_state(
        &alice
            .call(&call("1", "confirm", json!({"arguments": {}})))
            .await,
    );
    for (who, pipe) in [("bob", &mut bob), ("anonymous", &mut nobody)] {
        let stolen = pipe.call(&retry(who, "confirm", &state)).await;
        let expect = Expect {
            code: -32602,
            id: Some(json!(who)),
            says: "different request",
        };
        check_error(who, &stolen, &expect);
        // The connection serves its own rounds as before.
        let own = issued_state(
            &pipe
                .call(&call("own", "confirm", json!({"arguments": {}})))
                .await,
        );
        assert_eq!(
            text(&pipe.call(&retry("mine", "confirm", &own)).await),
            "confirmed"
        );
    }
    assert_eq!(
        text(&alice.call(&retry("2", "confirm", &state)).await),
        "confirmed"
    );
}
