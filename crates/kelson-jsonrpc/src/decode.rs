use std::borrow::Cow;

use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use crate::{ErrorObject, Id};

/// One decoded JSON-RPC message, with its payload still raw.
#[derive(Debug)]
pub enum Message<'a> {
    /// A request: it has an id and expects exactly one response.
    Request(Request<'a>),
    /// A notification: it has no id and is never answered.
    Notification(Notification<'a>),
    /// A response to a request this side sent.
    Response(Response<'a>),
}

/// A request whose `params` have not been decoded yet.
#[derive(Debug)]
pub struct Request<'a> {
    /// The id, to be echoed on the response.
    pub id: Id,
    /// The method name.
    pub method: Cow<'a, str>,
    /// The raw `params` object, if present. It is always a JSON object.
    pub params: Option<&'a RawValue>,
}

/// A notification whose `params` have not been decoded yet.
#[derive(Debug)]
pub struct Notification<'a> {
    /// The method name.
    pub method: Cow<'a, str>,
    /// The raw `params` object, if present. It is always a JSON object.
    pub params: Option<&'a RawValue>,
}

/// A response: the raw `result` or the decoded `error`.
#[derive(Debug)]
pub struct Response<'a> {
    /// The id of the request it answers; absent only on errors for unreadable requests.
    pub id: Option<Id>,
    /// The raw `result` object, or the error.
    pub outcome: Result<&'a RawValue, ErrorObject>,
}

/// Why a message could not be decoded, with the id when it could be read.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodeError {
    /// The request id, echoed on the error response whenever it was readable.
    pub id: Option<Id>,
    /// -32700 for text that is not JSON, -32600 for JSON that is not a valid message.
    pub error: ErrorObject,
}

impl DecodeError {
    fn invalid(id: Option<Id>, detail: impl std::fmt::Display) -> Self {
        DecodeError {
            id,
            error: ErrorObject::invalid_request(detail),
        }
    }
}

/// Every member is kept raw so that any well-formed JSON object decodes, and the checks below can
/// tell a parse error (-32700) from a bad shape (-32600) and still read the id of a bad request.
#[derive(Deserialize)]
struct RawEnvelope<'a> {
    #[serde(borrow, default, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

/// Keeps an explicit `null` as `Some("null")`: `"id": null` must be refused, not read as "no id".
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// Decodes the envelope of one JSON-RPC message.
///
/// spec 2026-07-28 basic: there are no batches, so a JSON array is an invalid request; `params` must be
/// an object; an id is a string or an integer and never null.
pub fn decode(input: &[u8]) -> Result<Message<'_>, DecodeError> {
    // JSON text is UTF-8 (RFC 8259 section 8.1). serde_json does not check the bytes of members it
    // skips, so check the whole message once here.
    let input = match std::str::from_utf8(input) {
        Ok(text) => text,
        Err(err) => {
            return Err(DecodeError {
                id: None,
                error: ErrorObject::parse_error(format_args!("the message is not UTF-8: {err}")),
            });
        }
    };
    decode_str(input)
}

/// Decodes the envelope of one JSON-RPC message that is already known to be UTF-8 text.
pub fn decode_str(input: &str) -> Result<Message<'_>, DecodeError> {
    let env: RawEnvelope<'_> = match serde_json::from_str(input) {
        // serde's derived decoding of a struct takes an array too, member by member in field
        // order, which would read `["2.0", 1, "tools/list", {...}]` as a request: refuse any array.
        Ok(_) if input.trim_start().starts_with('[') => {
            return Err(DecodeError::invalid(None, NO_BATCHES));
        }
        Ok(env) => env,
        Err(err) => {
            // Valid JSON of the wrong shape (an array, a number, a duplicated member) is an invalid
            // request; anything else is a parse error.
            return Err(match serde_json::from_str::<IgnoredAny>(input) {
                Ok(_) => DecodeError::invalid(None, shape_detail(input, &err)),
                Err(parse) => DecodeError {
                    id: None,
                    error: ErrorObject::parse_error(parse),
                },
            });
        }
    };

    let id = match env.id {
        None => None,
        Some(raw) => match Id::from_raw_json(raw.get()) {
            Some(id) => Some(id),
            None => {
                // An integer too large for 64 bits is an integer all the same: say which rule it
                // breaks.
                let text = raw.get().trim();
                let integer = !text.is_empty()
                    && text
                        .strip_prefix('-')
                        .unwrap_or(text)
                        .bytes()
                        .all(|b| b.is_ascii_digit());
                return Err(DecodeError::invalid(
                    None,
                    if integer {
                        "\"id\" is an integer beyond the 64-bit range this server accepts"
                    } else {
                        "\"id\" must be a string or an integer"
                    },
                ));
            }
        },
    };

    match env.jsonrpc {
        Some(v) if v.get() == "\"2.0\"" => {}
        Some(_) => return Err(DecodeError::invalid(id, "\"jsonrpc\" must be \"2.0\"")),
        None => return Err(DecodeError::invalid(id, "missing \"jsonrpc\": \"2.0\"")),
    }

    if let Some(method) = env.method {
        if env.result.is_some() || env.error.is_some() {
            return Err(DecodeError::invalid(
                id,
                "a message cannot carry both \"method\" and \"result\" or \"error\"",
            ));
        }
        let Some(method) = read_str(method) else {
            return Err(DecodeError::invalid(id, "\"method\" must be a string"));
        };
        if let Some(params) = env.params
            && !params.get().starts_with('{')
        {
            return Err(DecodeError::invalid(id, "\"params\" must be an object"));
        }
        return Ok(match id {
            Some(id) => Message::Request(Request {
                id,
                method,
                params: env.params,
            }),
            None => Message::Notification(Notification {
                method,
                params: env.params,
            }),
        });
    }

    match (env.result, env.error) {
        (Some(result), None) => match id {
            Some(id) if result.get().starts_with('{') => Ok(Message::Response(Response {
                id: Some(id),
                outcome: Ok(result),
            })),
            Some(id) => Err(DecodeError::invalid(
                Some(id),
                "\"result\" must be an object",
            )),
            None => Err(DecodeError::invalid(
                None,
                "a result response needs an \"id\"",
            )),
        },
        (None, Some(error)) => match serde_json::from_str::<ErrorObject>(error.get()) {
            Ok(error) => Ok(Message::Response(Response {
                id,
                outcome: Err(error),
            })),
            Err(err) => Err(DecodeError::invalid(
                id,
                format_args!("bad \"error\": {err}"),
            )),
        },
        (Some(_), Some(_)) => Err(DecodeError::invalid(
            id,
            "a response cannot carry both \"result\" and \"error\"",
        )),
        (None, None) => Err(DecodeError::invalid(
            id,
            "not a request, notification or response",
        )),
    }
}

fn read_str(raw: &RawValue) -> Option<Cow<'_, str>> {
    if let Some(s) = plain_str(raw) {
        return Some(Cow::Borrowed(s));
    }
    if let Ok(s) = serde_json::from_str::<&str>(raw.get()) {
        return Some(Cow::Borrowed(s));
    }
    // Strings with escapes cannot be borrowed.
    serde_json::from_str::<String>(raw.get())
        .ok()
        .map(Cow::Owned)
}

/// The text of a JSON string without escapes, read without a second parse. The raw value was read
/// whole by serde_json, which refuses control characters in strings, so the text between its
/// quotes, when it has no backslash, is exactly the string. Anything else (not a string, or one
/// with escapes) is `None`.
pub fn plain_str(raw: &RawValue) -> Option<&str> {
    let text = raw.get();
    let inner = text.strip_prefix('"')?.strip_suffix('"')?;
    (!inner.contains('\\')).then_some(inner)
}

const NO_BATCHES: &str = "batches are not supported; send one message per request";

fn shape_detail(input: &str, err: &serde_json::Error) -> String {
    let first = input
        .bytes()
        .find(|b| !b.is_ascii_whitespace())
        .unwrap_or(b' ');
    match first {
        b'[' => NO_BATCHES.to_owned(),
        b'{' => err.to_string(),
        _ => "a message must be a JSON object".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code;

    fn err(input: &str) -> DecodeError {
        decode(input.as_bytes()).expect_err(input)
    }

    #[test]
    fn request_notification_response() {
        let Message::Request(r) =
            decode(br#"{"jsonrpc":"2.0","id":1,"method":"a/b","params":{"x":1}}"#).unwrap()
        else {
            panic!()
        };
        assert_eq!(
            (r.id, &*r.method, r.params.unwrap().get()),
            (Id::Int(1), "a/b", r#"{"x":1}"#)
        );

        let Message::Notification(n) =
            decode(br#"{"jsonrpc":"2.0","method":"notifications/cancelled"}"#).unwrap()
        else {
            panic!()
        };
        assert_eq!(n.method, "notifications/cancelled");
        assert!(n.params.is_none());

        let Message::Response(r) =
            decode(br#"{"jsonrpc":"2.0","id":"a","result":{"resultType":"complete"}}"#).unwrap()
        else {
            panic!()
        };
        assert_eq!(r.id, Some(Id::from("a")));
        assert!(r.outcome.is_ok());

        let Message::Response(r) =
            decode(br#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"x"}}"#).unwrap()
        else {
            panic!()
        };
        assert_eq!(r.id, None);
        assert_eq!(r.outcome.unwrap_err().code, code::PARSE_ERROR);
    }

    /// Found by the fuzz target `jsonrpc`: `-0` is an integer in JSON's grammar (no fraction, no
    /// exponent) and is the id 0, while serde_json's `Value` reads it as the float -0.0; `-0.0`
    /// and `1.0` are not integers and are refused.
    #[test]
    fn minus_zero_is_the_integer_id_zero_and_fractions_are_refused() {
        let Message::Request(r) =
            decode(br#"{"jsonrpc":"2.0","id":-0,"method":"tools/list"}"#).unwrap()
        else {
            panic!()
        };
        assert_eq!(r.id, Id::Int(0));
        for id in ["-0.0", "1.0", "0e0"] {
            let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"}}"#);
            assert_eq!(err(&text).error.code, code::INVALID_REQUEST, "{id}");
        }
    }

    #[test]
    fn plain_strings_are_read_in_place_and_others_are_not() {
        let raw = |text: &str| serde_json::from_str::<Box<RawValue>>(text).unwrap();
        assert_eq!(plain_str(&raw(r#""tools/call""#)), Some("tools/call"));
        assert_eq!(plain_str(&raw(r#""""#)), Some(""));
        assert_eq!(plain_str(&raw(r#""é ☃""#)), Some("é ☃"));
        for text in [r#""a\/b""#, r#""\"""#, "1", "null", "{}", "[\"a\"]"] {
            assert_eq!(plain_str(&raw(text)), None, "{text}");
        }
    }

    #[test]
    fn escaped_method_names_decode() {
        let Message::Request(r) =
            decode(br#"{"jsonrpc":"2.0","id":1,"method":"tools\/list"}"#).unwrap()
        else {
            panic!()
        };
        assert_eq!(r.method, "tools/list");
    }

    #[test]
    fn parse_errors_have_no_id() {
        for input in [
            "{",
            "",
            "nope",
            "{\"jsonrpc\":\"2.0\",\"id\":1,",
            "\u{feff}x",
        ] {
            let e = err(input);
            assert_eq!(e.error.code, code::PARSE_ERROR, "{input}");
            assert_eq!(e.id, None);
        }
        let e = decode(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}").unwrap_err();
        assert_eq!(e.error.code, code::PARSE_ERROR);
    }

    #[test]
    fn shapes_are_invalid_requests() {
        for input in [
            "[]",
            r#"[{"jsonrpc":"2.0","id":1,"method":"x"}]"#,
            "42",
            "\"x\"",
            "null",
            r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"x"}"#,
        ] {
            let e = err(input);
            assert_eq!(e.error.code, code::INVALID_REQUEST, "{input}");
            assert_eq!(e.id, None, "{input}");
        }
    }

    #[test]
    fn an_array_is_never_a_message_even_one_shaped_like_the_envelope() {
        // serde's derived decoding of a struct takes an array member by member: these would
        // otherwise be a request, a response and a notification.
        for input in [
            r#"["2.0", 5, "tools/call", {"name": "x"}]"#,
            r#"["2.0", 5, null, null, {"ok": true}]"#,
            r#"  ["2.0"]"#,
        ] {
            let e = err(input);
            assert_eq!(e.error.code, code::INVALID_REQUEST, "{input}");
            assert!(e.error.message.contains("batches"), "{}", e.error.message);
        }
    }

    #[test]
    fn an_integer_id_beyond_64_bits_is_named_as_such() {
        let e = err(r#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"x"}"#);
        assert_eq!(e.error.code, code::INVALID_REQUEST);
        assert!(
            e.error.message.contains("beyond the 64-bit range"),
            "{}",
            e.error.message
        );
        let e = err(r#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#);
        assert!(
            e.error.message.contains("string or an integer"),
            "{}",
            e.error.message
        );
    }

    #[test]
    fn invalid_requests_echo_a_readable_id() {
        for input in [
            r#"{"jsonrpc":"1.0","id":"q","method":"x"}"#,
            r#"{"id":"q","method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":"q","method":5}"#,
            r#"{"jsonrpc":"2.0","id":"q","method":"x","params":[1]}"#,
            r#"{"jsonrpc":"2.0","id":"q","method":"x","params":null}"#,
            r#"{"jsonrpc":"2.0","id":"q","method":"x","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":"q"}"#,
            r#"{"jsonrpc":"2.0","id":"q","result":{},"error":{"code":1,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":"q","result":[]}"#,
        ] {
            let e = err(input);
            assert_eq!(e.error.code, code::INVALID_REQUEST, "{input}");
            assert_eq!(e.id, Some(Id::from("q")), "{input}");
        }
    }
}
