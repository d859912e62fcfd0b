//! The header value codec (kelson-http `codec.rs`: plain values and the base64 sentinel) and the
//! server's `Mcp-Name` / `Mcp-Param-*` comparison against the body (`check/`).
//!
//! Input: bytes, read three ways: as a header value received (raw bytes), as a value to send
//! (the bytes as text), and as the arguments of a `tools/call` whose tool declares headers.
//!
//! Properties:
//! - any text encodes to a valid header value that decodes back to the same text;
//! - decoding received bytes never panics; what it accepts re-encodes to a value that decodes to
//!   the same text, and a value that is not a sentinel decodes to itself, trimmed;
//! - the client's mirrored headers for any arguments pass the server's check (both sides agree),
//!   and so does the `Mcp-Name` header for any name;
//! - an arbitrary received `Mcp-Param-*` value passes the check only if it equals the body value:
//!   a string exactly, a boolean as `true`/`false`, an integer numerically (checked here against
//!   plain integer text).

#![no_main]

use std::sync::OnceLock;

use http::{HeaderMap, HeaderName, HeaderValue};
use libfuzzer_sys::fuzz_target;
use kelson_http::{
    ParamHeader, check_param_headers, check_standard_headers, decode_value, encode_header_value,
    encode_value, name_header_value, param_header_values, param_headers,
};
use serde_json::{Value, json};

fn decls() -> &'static [ParamHeader] {
    static DECLS: OnceLock<Vec<ParamHeader>> = OnceLock::new();
    DECLS.get_or_init(|| {
        let schema = json!({
            "type": "object",
            "properties": {
                "s": {"type": "string", "x-mcp-header": "S"},
                "i": {"type": "integer", "x-mcp-header": "I"},
                "b": {"type": "boolean", "x-mcp-header": "B"},
                "nested": {"type": "object", "properties": {
                    "t": {"type": "string", "x-mcp-header": "T"}
                }}
            }
        });
        param_headers(schema.as_object().unwrap()).expect("valid declarations")
    })
}

/// The declaration of the argument at `path`.
fn decl(path: &str) -> &'static ParamHeader {
    decls().iter().find(|d| d.path() == [path]).unwrap()
}

fn headers(pairs: impl IntoIterator<Item = (HeaderName, HeaderValue)>) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.append(name, value);
    }
    map
}

fn header(decl: &ParamHeader, value: HeaderValue) -> HeaderMap {
    headers([(
        HeaderName::from_bytes(decl.header_name().as_bytes()).unwrap(),
        value,
    )])
}

fuzz_target!(|data: &[u8]| {
    // Sending: any text round-trips.
    let text = String::from_utf8_lossy(data);
    let encoded = encode_value(&text);
    assert!(
        encoded.bytes().all(|b| b == b' ' || b.is_ascii_graphic()),
        "{encoded:?} is not visible ASCII"
    );
    let value = encode_header_value(&text);
    assert_eq!(value.as_bytes(), encoded.as_bytes());
    assert_eq!(
        decode_value(&value).expect("an encoded value decodes"),
        text
    );

    // Receiving: strict, and stable.
    if let Ok(decoded) = decode_value(data) {
        let again = encode_value(&decoded);
        assert_eq!(decode_value(again.as_bytes()).unwrap(), decoded);
        let ows = |b: &u8| *b == b' ' || *b == b'\t';
        let trimmed = data.iter().position(|b| !ows(b)).map_or(&b""[..], |start| {
            let end = data.iter().rposition(|b| !ows(b)).unwrap();
            &data[start..=end]
        });
        let sentinel = trimmed.starts_with(b"=?base64?") && trimmed.ends_with(b"?=");
        if !sentinel {
            assert_eq!(decoded.as_bytes(), trimmed, "a plain value is itself");
        }
    }

    // Both sides agree on the client's own headers.
    let arguments = match serde_json::from_slice::<Value>(data) {
        Ok(Value::Object(map)) => map,
        _ => {
            let number = data
                .iter()
                .fold(0i64, |n, b| n.wrapping_mul(31).wrapping_add(i64::from(*b)));
            let mut map = serde_json::Map::new();
            map.insert("s".into(), Value::String(text.to_string()));
            map.insert("i".into(), json!(number));
            map.insert("b".into(), json!(data.len() % 2 == 0));
            map.insert("nested".into(), json!({"t": text}));
            map
        }
    };
    let mirrored = headers(param_header_values(decls(), &arguments));
    // A body value of another kind than declared is left to schema validation: only values of
    // the declared kinds must agree.
    let kinds_match = decls().iter().all(|d| match d.lookup(&arguments) {
        None | Some(Value::Null) => true,
        Some(v) => match d.kind() {
            kelson_http::ParamKind::String => v.is_string(),
            kelson_http::ParamKind::Boolean => v.is_boolean(),
            kelson_http::ParamKind::Integer => v.is_number(),
        },
    });
    let checked = check_param_headers(decls(), Some(&arguments), &mirrored);
    if kinds_match {
        assert!(
            checked.is_ok(),
            "the client's own headers were refused: {checked:?}"
        );
    }
    if let Some(name) = name_header_value("tools/call", &json!({"name": text})) {
        let map = headers([
            (
                HeaderName::from_static("mcp-protocol-version"),
                HeaderValue::from_static("2026-07-28"),
            ),
            (
                HeaderName::from_static("mcp-method"),
                HeaderValue::from_static("tools/call"),
            ),
            (HeaderName::from_static("mcp-name"), name),
        ]);
        let checked = check_standard_headers("tools/call", "2026-07-28", Some(&text), &map);
        assert!(
            checked.is_ok(),
            "the client's own Mcp-Name was refused: {checked:?}"
        );
    }

    // An arbitrary received value is accepted only when it equals the body.
    let Ok(received) = HeaderValue::from_bytes(data) else {
        return;
    };
    let decoded = decode_value(&received).ok();
    for body in ["fuzz", text.as_ref()] {
        let args = json!({"s": body});
        let ok = check_param_headers(
            decls(),
            args.as_object(),
            &header(decl("s"), received.clone()),
        )
        .is_ok();
        assert_eq!(
            ok,
            decoded.as_deref() == Some(body),
            "string comparison of {received:?}"
        );
    }
    for body in [true, false] {
        let args = json!({"b": body});
        let ok = check_param_headers(
            decls(),
            args.as_object(),
            &header(decl("b"), received.clone()),
        )
        .is_ok();
        let want = decoded.as_deref() == Some(if body { "true" } else { "false" });
        assert_eq!(ok, want, "boolean comparison of {received:?}");
    }
    let plain_integer = decoded.as_deref().and_then(|d| {
        let digits = d.strip_prefix(['-', '+']).unwrap_or(d);
        (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
            .then(|| d.parse::<i128>().ok())?
    });
    for body in [
        0i64,
        42,
        -7,
        i64::MAX,
        i64::MIN,
        plain_integer
            .and_then(|n| i64::try_from(n).ok())
            .unwrap_or(1),
    ] {
        let args = json!({"i": body});
        let ok = check_param_headers(
            decls(),
            args.as_object(),
            &header(decl("i"), received.clone()),
        )
        .is_ok();
        if let Some(n) = plain_integer {
            assert_eq!(
                ok,
                n == i128::from(body),
                "integer comparison of {received:?} with {body}"
            );
        } else if ok {
            // Accepted in another spelling (`42.0`, `4.2e1`): it must at least be a number, and a
            // value that a float reads must read as the body.
            let text = decoded.as_deref().unwrap();
            let float: f64 = text
                .trim_start_matches('+')
                .parse()
                .expect("an accepted integer is a number");
            if body.unsigned_abs() < (1 << 53) {
                assert_eq!(float, body as f64, "{text:?} accepted for {body}");
            }
        }
    }
});
