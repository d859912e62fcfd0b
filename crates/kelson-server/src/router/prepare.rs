//! The first step: one message decoded, its envelope and `_meta` checked, its method parsed
//! ([`Server::prepare`]).

use std::borrow::Cow;

use kelson_jsonrpc::{ErrorObject, Message, RawValue};
use kelson_types::{Method, RequestMeta};
use serde::Deserialize;

use super::reply::error_reply;
use super::request::{CallFields, Incoming, IncomingNotification, Prepared};
use crate::Server;
use crate::observe::{RequestEra, RequestProbe};

#[derive(Deserialize)]
struct MetaProbe<'a> {
    /// Decoded in this pass, not captured and decoded again.
    #[serde(rename = "_meta", default, deserialize_with = "meta_field")]
    meta: Option<Box<RequestMeta>>,
    /// Only read for a legacy `initialize`, whose params carry the version at the top level.
    #[serde(borrow, rename = "protocolVersion", default)]
    protocol_version: Option<&'a RawValue>,
    #[serde(borrow, default)]
    name: Option<&'a RawValue>,
    #[serde(borrow, default)]
    uri: Option<&'a RawValue>,
    #[serde(borrow, rename = "taskId", default)]
    task_id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "raw_field")]
    arguments: Option<&'a RawValue>,
    #[serde(
        borrow,
        rename = "inputResponses",
        default,
        deserialize_with = "raw_field"
    )]
    input_responses: Option<&'a RawValue>,
    #[serde(
        borrow,
        rename = "requestState",
        default,
        deserialize_with = "raw_field"
    )]
    request_state: Option<&'a RawValue>,
}

/// serde_json's message without its trailing " at line L column C".
fn without_position(message: &str) -> &str {
    let Some(at) = message.rfind(" at line ") else {
        return message;
    };
    let rest = &message[at + " at line ".len()..];
    let positional = rest.split_once(" column ").is_some_and(|(line, column)| {
        !line.is_empty()
            && !column.is_empty()
            && line
                .bytes()
                .chain(column.bytes())
                .all(|b| b.is_ascii_digit())
    });
    if positional { &message[..at] } else { message }
}

/// A present field as it arrived, `null` included (an `Option<&RawValue>` would read `null` as
/// absent).
fn raw_field<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// `_meta`, decoded where it stands; `null` reads as absent. An error names `_meta` and keeps
/// serde's message without a second position (the outer decoder appends the position).
fn meta_field<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Box<RequestMeta>>, D::Error> {
    Option::<Box<RequestMeta>>::deserialize(d).map_err(|e| {
        let message = e.to_string();
        serde::de::Error::custom(format_args!("_meta: {}", without_position(&message)))
    })
}

/// Reads a JSON string, borrowing it when it has no escapes.
fn raw_str(raw: &RawValue) -> Option<Cow<'_, str>> {
    // The usual name, without escapes, is its raw text between the quotes: no second parse.
    if let Some(s) = kelson_jsonrpc::plain_str(raw) {
        return Some(Cow::Borrowed(s));
    }
    if let Ok(s) = serde_json::from_str::<&str>(raw.get()) {
        return Some(Cow::Borrowed(s));
    }
    serde_json::from_str::<String>(raw.get())
        .ok()
        .map(Cow::Owned)
}

/// `params.name` (`tools/call`, `prompts/get`), `params.uri` (`resources/read`) or `params.taskId`
/// (the tasks extension's methods).
fn call_name<'a>(method: &Method<'_>, probe: &MetaProbe<'a>) -> Option<Cow<'a, str>> {
    match method {
        Method::CallTool | Method::GetPrompt => probe.name.and_then(raw_str),
        Method::ReadResource => probe.uri.and_then(raw_str),
        Method::GetTask | Method::UpdateTask | Method::CancelTask => {
            probe.task_id.and_then(raw_str)
        }
        _ => None,
    }
}

/// The MRTR fields of the three methods that take them.
fn call_fields<'a>(method: &Method<'_>, probe: &MetaProbe<'a>) -> CallFields<'a> {
    if method.allows_input_required() {
        CallFields {
            arguments: probe.arguments.map(Cow::Borrowed),
            input_responses: probe.input_responses.map(Cow::Borrowed),
            request_state: probe.request_state.map(Cow::Borrowed),
        }
    } else {
        CallFields::default()
    }
}

impl Server {
    /// Decodes one message and checks its envelope and `_meta`.
    pub fn prepare<'a>(&self, bytes: &'a [u8]) -> Incoming<'a> {
        self.prepare_observed(bytes, &mut RequestProbe::disabled())
    }

    /// [`prepare`](Self::prepare), recording the request's id and method in `probe` as soon as
    /// they are read, so that a request refused here is reported with them.
    pub fn prepare_observed<'a>(
        &self,
        bytes: &'a [u8],
        observed: &mut RequestProbe,
    ) -> Incoming<'a> {
        let request = match kelson_jsonrpc::decode(bytes) {
            Err(e) => {
                if let Some(id) = &e.id {
                    observed.set_id(id);
                }
                return Incoming::Rejected(error_reply(e.id.as_ref(), &e.error, true));
            }
            Ok(Message::Notification(n)) => {
                return Incoming::Notification(IncomingNotification {
                    method: Method::from_name(n.method),
                    params: n.params,
                });
            }
            Ok(Message::Response(r)) => return Incoming::Response(r),
            Ok(Message::Request(r)) => r,
        };
        // The method is parsed here, once; everything after matches on it.
        let method = Method::from_name(request.method);
        observed.set_request(&request.id, &method);
        let reject = |e: ErrorObject| Incoming::Rejected(error_reply(Some(&request.id), &e, true));

        let mut probe = match request.params {
            None => MetaProbe {
                meta: None,
                protocol_version: None,
                name: None,
                uri: None,
                task_id: None,
                arguments: None,
                input_responses: None,
                request_state: None,
            },
            Some(raw) => match serde_json::from_str::<MetaProbe<'_>>(raw.get()) {
                Ok(p) => p,
                Err(e) => return reject(ErrorObject::invalid_params(e)),
            },
        };
        let meta = probe.meta.take();
        let modern = meta.as_ref().is_some_and(|m| m.protocol_version.is_some());

        // A request without the modern envelope comes from a handshake-era client: a dual-era
        // server serves it on a legacy session (spec 2026-07-28 basic/versioning).
        if !modern && self.serves_legacy() {
            // Its session, which names the version, is the transport's to find.
            observed.set_era(RequestEra::Legacy { version: None });
            let name = call_name(&method, &probe);
            let call = call_fields(&method, &probe);
            return Incoming::Legacy(Prepared {
                id: request.id,
                method,
                params: request.params.map(Cow::Borrowed),
                meta: meta.unwrap_or_default(),
                name,
                call,
                legacy: true,
            });
        }

        // spec 2026-07-28 basic/versioning: a modern-only server SHOULD name the versions it
        // speaks in its error to a legacy `initialize`, so an old client learns why rather than
        // getting a bare -32602. The spec leaves the code open; -32022 with `supported` is ours.
        if matches!(method, Method::Initialize) && !modern {
            let requested = probe
                .protocol_version
                .and_then(|raw| serde_json::from_str::<String>(raw.get()).ok())
                .unwrap_or_default();
            return reject(ErrorObject::unsupported_protocol_version(
                self.supported_versions(),
                &requested,
            ));
        }

        // spec 2026-07-28 basic/index: params._meta with protocolVersion and clientCapabilities is
        // required on every request; clientInfo is not.
        let Some(meta) = meta else {
            let what = if request.params.is_none() {
                "missing params (every request needs params._meta)"
            } else {
                "missing params._meta"
            };
            return reject(ErrorObject::invalid_params(what));
        };
        let missing: Vec<&str> = [
            (
                meta.protocol_version.is_none(),
                kelson_types::meta_keys::PROTOCOL_VERSION,
            ),
            (
                meta.client_capabilities.is_none(),
                kelson_types::meta_keys::CLIENT_CAPABILITIES,
            ),
        ]
        .into_iter()
        .filter_map(|(absent, key)| absent.then_some(key))
        .collect();
        if !missing.is_empty() {
            return reject(ErrorObject::invalid_params(format_args!(
                "_meta is missing {}",
                missing.join(" and ")
            )));
        }

        let name = call_name(&method, &probe);
        let call = call_fields(&method, &probe);
        Incoming::Request(Prepared {
            id: request.id,
            method,
            params: request.params.map(Cow::Borrowed),
            meta,
            name,
            call,
            legacy: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The MRTR fields `prepare` captured from a `tools/call` with these params.
    fn refuse_nulls(params: &str) -> Result<(), ErrorObject> {
        let server = Server::builder("t", "1").build().expect("builds");
        let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
        let params = format!("{{{meta},{}", &params[1..]);
        let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params}}}"#);
        match server.prepare(body.as_bytes()) {
            Incoming::Request(p) => p.call.refuse_nulls(),
            _ => panic!("not a request: {body}"),
        }
    }

    #[test]
    fn null_mrtr_fields_are_invalid_params() {
        for body in [
            r#"{"name":"t","inputResponses":null}"#,
            r#"{"name":"t","requestState": null }"#,
        ] {
            let e = refuse_nulls(body).expect_err(body);
            assert_eq!(e.code, -32602, "{body}");
            assert!(e.message.contains("must not be null"), "{}", e.message);
        }
    }

    #[test]
    fn absent_fields_and_nulls_elsewhere_pass() {
        for body in [
            r#"{"name":"t"}"#,
            r#"{"name":"t","arguments":{"x":null}}"#,
            r#"{"name":"t","inputResponses":{"k":{"action":"decline"}},"requestState":"s"}"#,
        ] {
            refuse_nulls(body).expect(body);
        }
        assert!(CallFields::default().refuse_nulls().is_ok(), "no params");
    }

    #[test]
    fn positions_are_stripped_only_when_they_are_positions() {
        assert_eq!(
            without_position("invalid type: map, expected a string at line 1 column 42"),
            "invalid type: map, expected a string"
        );
        assert_eq!(without_position("no position here"), "no position here");
        assert_eq!(
            without_position("a value at line seven column 3"),
            "a value at line seven column 3"
        );
    }
}
