//! The JSON-RPC envelope decoder (kelson-jsonrpc) and the server's request path (kelson-server's
//! `Server::handle`: prepare, precheck, dispatch) on a built server with a few tools, a resource, a
//! template and a prompt.
//!
//! Properties:
//! - `decode` never panics; -32700 exactly when the bytes are not UTF-8 JSON; whatever it accepts
//!   a plain JSON reading agrees with (version, id, method, params an object, result an object);
//!   an id it echoes on an error is the id the message carries;
//! - decode then encode round-trips: a request, notification, result or error written back with
//!   the crate's writers decodes to the same message;
//! - the server answers every request exactly once and nothing else: one compact JSON-RPC
//!   response (no newline, as stdio framing needs) with the request's id, or the decoder's id for
//!   a refused message; never -32603 (no handler here fails, so an internal error is a bug).

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use kelson_jsonrpc::{ErrorObject, Id, Message, RawValue, code};
use kelson_server::transport::{Reply, RequestIo};
use kelson_server::{HandlerError, RequestContext, Server, ToolResult, Uri};
use kelson_types::{
    CallToolResult, ContentBlock, ElicitRequestFormParams, GetPromptResult, JsonObject, Prompt,
    PromptArgument, PromptMessage, Resource, ResourceTemplate, Role, Tool,
};
use serde_json::{Value, json};

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => unreachable!("a schema literal is an object"),
    }
}

async fn echo(args: JsonObject) -> ToolResult {
    Ok(CallToolResult::text(Value::Object(args).to_string()))
}

async fn ask(mut ctx: RequestContext, _args: JsonObject) -> ToolResult {
    let form: ElicitRequestFormParams = serde_json::from_value(json!({
        "mode": "form",
        "message": "Name?",
        "requestedSchema": {
            "type": "object",
            "properties": {"name": {"type": "string", "maxLength": 20}},
            "required": ["name"]
        }
    }))
    .map_err(HandlerError::failed)?;
    let answer = ctx.elicit("name", form)?;
    Ok(CallToolResult::text(
        serde_json::to_string(&answer).map_err(HandlerError::failed)?,
    ))
}

async fn readme() -> &'static str {
    "read me"
}

async fn item(uri: Uri) -> String {
    uri.0
}

async fn greet(
    _ctx: RequestContext,
    args: std::collections::BTreeMap<String, String>,
) -> Result<GetPromptResult, HandlerError> {
    let name = args.get("name").cloned().unwrap_or_default();
    Ok(GetPromptResult::new(vec![PromptMessage::new(
        Role::User,
        ContentBlock::text(format!("Hello, {name}")),
    )]))
}

fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        Server::builder("fuzz", "1.0.0")
            .state_key(vec![7u8; 32])
            .tool(
                Tool::new(
                    "echo",
                    object(json!({
                        "type": "object",
                        "properties": {
                            "text": {"type": "string", "maxLength": 100},
                            "n": {"type": "integer", "minimum": 0},
                            "region": {"type": "string", "x-mcp-header": "Region"}
                        },
                        "required": ["text"]
                    })),
                ),
                echo,
            )
            .tool(Tool::new("ask", object(json!({"type": "object"}))), ask)
            .resource(Resource::new("x://readme", "readme"), readme)
            .resource_template(ResourceTemplate::new("x://items/{id}{?q}", "item"), item)
            .prompt(
                Prompt::new("greet").with_argument(PromptArgument::new("name").required()),
                greet,
            )
            .build()
            .expect("the fuzz server builds")
    })
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
    })
}

/// The id as a plain JSON reading sees it: a string, or an integer that fits in `i64`.
fn reference_id(value: &Value) -> Option<Id> {
    match value {
        Value::String(s) => Some(Id::from(s.as_str())),
        // `Value` reads the integer `-0` as the float -0.0 (the decoder: the id 0). A float zero
        // here came from `-0`: the decoder refuses `0.0`, `-0.0` and `0e0` before this is asked.
        Value::Number(n) => n
            .as_i64()
            .map(Id::Int)
            .or_else(|| (n.as_f64() == Some(0.0)).then_some(Id::Int(0))),
        _ => None,
    }
}

fn check_decoder(data: &[u8]) {
    let decoded = kelson_jsonrpc::decode(data);
    let is_json = std::str::from_utf8(data).is_ok()
        && serde_json::from_slice::<serde::de::IgnoredAny>(data).is_ok();
    let reference: Option<Value> = serde_json::from_slice(data).ok();
    let member = |name: &str| reference.as_ref().and_then(|v| v.get(name));

    match &decoded {
        Err(e) => {
            assert_eq!(
                e.error.code == code::PARSE_ERROR,
                !is_json,
                "-32700 exactly for what is not JSON: {e:?}"
            );
            if e.error.code != code::PARSE_ERROR {
                assert_eq!(e.error.code, code::INVALID_REQUEST, "{e:?}");
            }
            // `Value` refuses some JSON the decoder reads (a lone surrogate escape, `1e400`):
            // no reference to compare with then.
            if let (Some(id), Some(_)) = (&e.id, &reference) {
                assert_eq!(
                    member("id").and_then(reference_id).as_ref(),
                    Some(id),
                    "an echoed id is the message's own"
                );
            }
        }
        // A number beyond f64 (`1e400`) is valid JSON that `Value` cannot hold: no reference then.
        Ok(_) if reference.is_none() => {}
        Ok(message) => {
            let object = reference
                .as_ref()
                .and_then(Value::as_object)
                .expect("only a JSON object decodes");
            assert_eq!(object.get("jsonrpc"), Some(&json!("2.0")));
            match message {
                Message::Request(r) => {
                    assert_eq!(object.get("id").and_then(reference_id), Some(r.id.clone()));
                    assert_eq!(
                        object.get("method").and_then(Value::as_str),
                        Some(&*r.method)
                    );
                    assert!(!object.contains_key("result") && !object.contains_key("error"));
                    check_params(object, r.params);
                }
                Message::Notification(n) => {
                    assert!(!object.contains_key("id"));
                    assert_eq!(
                        object.get("method").and_then(Value::as_str),
                        Some(&*n.method)
                    );
                    check_params(object, n.params);
                }
                Message::Response(r) => {
                    assert!(!object.contains_key("method"));
                    if let Some(id) = &r.id {
                        assert_eq!(object.get("id").and_then(reference_id).as_ref(), Some(id));
                    }
                    match &r.outcome {
                        Ok(result) => {
                            assert!(object.get("result").is_some_and(Value::is_object));
                            assert!(!object.contains_key("error"));
                            let raw: Value = serde_json::from_str(result.get()).unwrap();
                            assert_eq!(Some(&raw), object.get("result"));
                        }
                        Err(_) => assert!(!object.contains_key("result")),
                    }
                }
            }
        }
    }

    // Decode, encode, decode: the same message.
    let Ok(message) = decoded else { return };
    let mut out = Vec::new();
    match &message {
        Message::Request(r) => {
            let params = r.params.unwrap_or_else(|| empty_object());
            kelson_jsonrpc::write_request(&mut out, &r.id, &r.method, params).expect("writes");
            let Ok(Message::Request(again)) = kelson_jsonrpc::decode(&out) else {
                panic!(
                    "a written request does not decode: {}",
                    String::from_utf8_lossy(&out)
                )
            };
            assert_eq!(again.id, r.id);
            assert_eq!(again.method, r.method);
            assert_eq!(again.params.map(RawValue::get), Some(params.get()));
        }
        Message::Notification(n) => {
            let params = n.params.unwrap_or_else(|| empty_object());
            kelson_jsonrpc::write_notification(&mut out, &n.method, params).expect("writes");
            let Ok(Message::Notification(again)) = kelson_jsonrpc::decode(&out) else {
                panic!("a written notification does not decode")
            };
            assert_eq!(again.method, n.method);
            assert_eq!(again.params.map(RawValue::get), Some(params.get()));
        }
        Message::Response(r) => {
            match (&r.id, &r.outcome) {
                (Some(id), Ok(result)) => kelson_jsonrpc::write_result_raw(&mut out, id, result),
                (None, Ok(_)) => unreachable!("a result response needs an id"),
                (id, Err(error)) => kelson_jsonrpc::write_error(&mut out, id.as_ref(), error),
            }
            let Ok(Message::Response(again)) = kelson_jsonrpc::decode(&out) else {
                panic!(
                    "a written response does not decode: {}",
                    String::from_utf8_lossy(&out)
                )
            };
            assert_eq!(again.id, r.id);
            match (&again.outcome, &r.outcome) {
                (Ok(a), Ok(b)) => assert_eq!(a.get(), b.get()),
                (Err(a), Err(b)) => assert_error_eq(a, b),
                _ => panic!("the outcome changed in a round trip"),
            }
        }
    }
    // Raw parts are copied as they came; everything the writers add is on one line.
    assert!(
        !out.contains(&b'\n') || data.contains(&b'\n'),
        "the writers added a line break"
    );
}

fn assert_error_eq(a: &ErrorObject, b: &ErrorObject) {
    assert_eq!(a.code, b.code);
    assert_eq!(a.message, b.message);
    assert_eq!(a.data, b.data);
}

fn empty_object() -> &'static RawValue {
    static EMPTY: OnceLock<Box<RawValue>> = OnceLock::new();
    EMPTY.get_or_init(|| RawValue::from_string("{}".to_owned()).unwrap())
}

fn check_params(object: &JsonObject, params: Option<&RawValue>) {
    match params {
        None => assert!(!object.contains_key("params")),
        Some(raw) => {
            let value: Value = serde_json::from_str(raw.get()).unwrap();
            assert!(value.is_object(), "params is always an object");
            assert_eq!(Some(&value), object.get("params"));
        }
    }
}

fn check_server(data: &[u8]) {
    let server = server();
    let reply = runtime().block_on(server.handle(data, RequestIo::plain(server)));
    let expected = kelson_jsonrpc::decode(data);
    match (expected, reply) {
        (Ok(Message::Notification(_) | Message::Response(_)), None) => {}
        (Ok(Message::Notification(_) | Message::Response(_)), Some(_)) => {
            panic!("a notification or response was answered")
        }
        (_, None) => panic!("a request or a refused message went unanswered"),
        (_, Some(Reply::Listen(_))) => {}
        (expected, Some(Reply::Message(m))) => {
            assert!(!m.body.contains(&b'\n'), "a reply is one line");
            let Ok(Message::Response(response)) = kelson_jsonrpc::decode(&m.body) else {
                panic!(
                    "the reply is not a response: {}",
                    String::from_utf8_lossy(&m.body)
                )
            };
            match expected {
                Ok(Message::Request(r)) => assert_eq!(response.id, Some(r.id)),
                Err(e) => {
                    assert_eq!(response.id, e.id);
                    assert_eq!(
                        response.outcome.as_ref().err().map(|e| e.code),
                        Some(e.error.code)
                    );
                }
                Ok(_) => unreachable!(),
            }
            if let Err(error) = &response.outcome {
                assert_ne!(
                    error.code,
                    code::INTERNAL_ERROR,
                    "an internal error: {}",
                    String::from_utf8_lossy(&m.body)
                );
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    check_decoder(data);
    check_server(data);
});
