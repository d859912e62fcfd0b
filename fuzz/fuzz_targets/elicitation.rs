//! Elicitation forms on the server: the requested schema's types (kelson-types `elicitation/`) and
//! the path an answer takes to a handler (kelson-server: `tools/call` params, MRTR's
//! `inputResponses`, `RequestContext::elicit`).
//!
//! There is no server-side check of an accepted form's content against the requested schema to
//! fuzz: a handler receives whatever typed values the client sent (see RELIABILITY.md, Fuzzing).
//! What exists, and what this target checks, is the decoding of answers and schemas.
//!
//! Input: a JSON text, used as the `inputResponses` of a call whose tool asks for a form (key
//! `form`), and as a requested schema.
//!
//! Properties:
//! - never a panic, never -32603;
//! - `InputResponses` and `RequestedSchema` round-trip: decode, encode, decode gives the same;
//! - the server agrees with a direct decoding of the same `inputResponses`: malformed answers are
//!   -32602, an answer under another key leaves the tool asking (`input_required`), and an
//!   elicitation answer under `form` reaches the handler exactly as decoded (an answer of another
//!   kind under `form` is -32602).

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use kelson_jsonrpc::{Message, code};
use kelson_server::transport::{Reply, RequestIo};
use kelson_server::{HandlerError, RequestContext, Server, ToolResult};
use kelson_types::{
    CallToolResult, ContentBlock, ElicitRequestFormParams, ElicitResult, InputResponse,
    InputResponses, JsonObject, RequestedSchema, Tool,
};
use serde_json::{Value, json};

fn form() -> ElicitRequestFormParams {
    serde_json::from_value(json!({
        "mode": "form",
        "message": "Tell us about yourself",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": 20},
                "email": {"type": "string", "format": "email"},
                "age": {"type": "integer", "minimum": 0, "maximum": 150},
                "score": {"type": "number", "default": 9.5},
                "subscribe": {"type": "boolean"},
                "plan": {"type": "string", "enum": ["free", "pro"]},
                "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "maxItems": 2}
            },
            "required": ["name", "email"]
        }
    }))
    .expect("the form is valid")
}

async fn ask(mut ctx: RequestContext, _args: JsonObject) -> ToolResult {
    let answer = ctx.elicit("form", form())?;
    Ok(CallToolResult::text(
        serde_json::to_string(&answer).map_err(HandlerError::failed)?,
    ))
}

struct Fixture {
    server: Server,
    runtime: tokio::runtime::Runtime,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| Fixture {
        server: Server::builder("elicit-fuzz", "1.0.0")
            .tool(
                Tool::new(
                    "ask",
                    serde_json::Map::from_iter([("type".into(), json!("object"))]),
                ),
                ask,
            )
            .build()
            .expect("the server builds"),
        runtime: tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap(),
    })
}

fn round_trips<T>(text: &[u8])
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    if let Ok(first) = serde_json::from_slice::<T>(text) {
        let encoded = serde_json::to_vec(&first).expect("encodes");
        let again: T = serde_json::from_slice(&encoded).unwrap_or_else(|e| {
            panic!(
                "{} does not decode again: {e}",
                String::from_utf8_lossy(&encoded)
            )
        });
        assert_eq!(first, again, "{}", String::from_utf8_lossy(&encoded));
        assert_eq!(
            serde_json::to_vec(&again).unwrap(),
            encoded,
            "encoding is stable"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    round_trips::<InputResponses>(data);
    round_trips::<RequestedSchema>(data);
    round_trips::<ElicitRequestFormParams>(data);
    round_trips::<ElicitResult>(data);

    let Ok(Value::Object(_)) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let request = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{"elicitation":{{"form":{{}}}}}}}},"name":"ask","arguments":{{}},"inputResponses":{text}}}}}"#
    );
    let fx = fixture();
    let reply = fx.runtime.block_on(
        fx.server
            .handle(request.as_bytes(), RequestIo::plain(&fx.server)),
    );
    let Some(Reply::Message(reply)) = reply else {
        panic!("the call was not answered with one message");
    };
    let body = String::from_utf8_lossy(&reply.body);
    let Ok(Message::Response(response)) = kelson_jsonrpc::decode(&reply.body) else {
        panic!("not a response: {body}");
    };
    let outcome = response
        .outcome
        .map(|raw| serde_json::from_str::<Value>(raw.get()).unwrap());
    if let Err(error) = &outcome {
        assert_ne!(error.code, code::INTERNAL_ERROR, "{body}");
    }
    let direct = serde_json::from_slice::<InputResponses>(data);
    match direct {
        Err(_) => assert_eq!(
            outcome.as_ref().err().map(|e| e.code),
            Some(code::INVALID_PARAMS),
            "inputResponses that do not decode were accepted: {body}"
        ),
        Ok(map) => match map.get("form") {
            None => {
                let result = outcome.expect("answers to other keys are no error");
                assert_eq!(result["resultType"], "input_required", "{body}");
            }
            Some(InputResponse::Elicit(answer)) => {
                let result = outcome.unwrap_or_else(|e| panic!("{answer:?} was refused: {e:?}"));
                assert_eq!(result["resultType"], "complete", "{body}");
                let Some(ContentBlock::Text(seen)) =
                    serde_json::from_value::<Vec<ContentBlock>>(result["content"].clone())
                        .ok()
                        .and_then(|c| c.into_iter().next())
                else {
                    panic!("no text in {body}");
                };
                let seen: ElicitResult = serde_json::from_str(&seen.text).unwrap();
                assert_eq!(
                    &seen, answer,
                    "the handler saw another answer than was sent"
                );
            }
            Some(_) => assert_eq!(
                outcome.as_ref().err().map(|e| e.code),
                Some(code::INVALID_PARAMS),
                "an answer of another kind was taken as the form's: {body}"
            ),
        },
    }
});
