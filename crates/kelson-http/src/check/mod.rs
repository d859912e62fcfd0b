//! The server half of header mirroring: headers checked against the body, -32020 on any disagreement.
//!
//! spec 2026-07-28 basic/transports/streamable-http (Server Validation): a server that processes the body
//! MUST answer 400 with JSON-RPC -32020 (HeaderMismatch) when a required standard header is missing, a
//! header value (after sentinel decoding for `Mcp-Name` and `Mcp-Param-*`) differs from the body, or a
//! header value holds invalid characters. Messages name the header; they quote the method and protocol
//! version, which are protocol identifiers, but never an `Mcp-Name` or `Mcp-Param-*` value, which may
//! be a URI or an argument a server would rather not see echoed into logs.

mod decimal;

use std::borrow::Cow;

use http::{HeaderMap, HeaderValue};
use kelson_jsonrpc::ErrorObject;
use serde_json::{Map, Number, Value};

use crate::codec::{decode_value, plain_value};
use crate::headers::{MCP_METHOD, MCP_NAME, MCP_PROTOCOL_VERSION, name_source};
use crate::mirror::number_text;
use decimal::{Decimal, parse_decimal};
use kelson_types::{ParamHeader, ParamKind};

/// Checks `MCP-Protocol-Version`, `Mcp-Method` and, where the method needs it, `Mcp-Name` against the
/// body.
///
/// - `MCP-Protocol-Version` must be present and equal `protocol_version_in_body`, the body's
///   `_meta["io.modelcontextprotocol/protocolVersion"]`. A mismatch is -32020 even when neither version is
///   supported: the conformance suite expects mismatch to win over -32022.
/// - `Mcp-Method` must be present and equal `method`; values are case-sensitive.
/// - For `tools/call`, `prompts/get` and `resources/read`, `Mcp-Name` must be present and, once
///   sentinel-decoded, equal `name_in_body` (`params.name` or `params.uri`). For other methods it is
///   ignored, since the spec gives it no meaning there.
///
/// Surrounding spaces and tabs are trimmed from every value. A header repeated with different values
/// is refused, because an intermediary may have read either one.
pub fn check_standard_headers(
    method: &str,
    protocol_version_in_body: &str,
    name_in_body: Option<&str>,
    headers: &HeaderMap,
) -> Result<(), ErrorObject> {
    const VERSION: &str = "MCP-Protocol-Version";
    match read_header(headers, &MCP_PROTOCOL_VERSION, VERSION, false)? {
        None => return Err(missing(VERSION)),
        Some(v) if v != protocol_version_in_body => {
            return Err(ErrorObject::header_mismatch(format!(
                "{VERSION} header {} does not match the body's protocol version {}",
                quote(&v),
                quote(protocol_version_in_body)
            )));
        }
        Some(_) => {}
    }

    const METHOD: &str = "Mcp-Method";
    match read_header(headers, &MCP_METHOD, METHOD, false)? {
        None => return Err(missing(METHOD)),
        Some(v) if v != method => {
            return Err(ErrorObject::header_mismatch(format!(
                "{METHOD} header {} does not match the body method {}",
                quote(&v),
                quote(method)
            )));
        }
        Some(_) => {}
    }

    const NAME: &str = "Mcp-Name";
    let Some(source) = name_source(method) else {
        return Ok(());
    };
    let Some(header) = read_header(headers, &MCP_NAME, NAME, true)? else {
        return Err(ErrorObject::header_mismatch(format!(
            "missing {NAME} header, which {method} requires"
        )));
    };
    match name_in_body {
        Some(body) if body == header => Ok(()),
        Some(_) => Err(ErrorObject::header_mismatch(format!(
            "{NAME} header does not match the body's params.{source}"
        ))),
        None => Err(ErrorObject::header_mismatch(format!(
            "{NAME} header is present but the body has no params.{source}"
        ))),
    }
}

/// Checks the `Mcp-Param-*` headers of a `tools/call` against its `arguments`.
///
/// For each declaration:
/// - a header that holds invalid characters or an undecodable sentinel is refused;
/// - a body value that is absent or `null` expects no header, and a header sent anyway is refused, since
///   an intermediary could route on a value the server never sees;
/// - a body value whose header is missing is refused;
/// - a header is compared with the body value after decoding: strings exactly, booleans only as `true`
///   or `false`, integers numerically (`42`, `42.0` and `4.2e1` are equal; `42.5` equals no integer).
///
/// A body value whose JSON type differs from the declared kind is not checked here: it fails the tool's
/// schema validation, which reports it with its path, and a second, header-shaped report of the same
/// mistake would only hide the real one. Undeclared `Mcp-Param-*` headers are ignored, as intermediaries
/// ignore them.
pub fn check_param_headers(
    decls: &[ParamHeader],
    arguments: Option<&Map<String, Value>>,
    headers: &HeaderMap,
) -> Result<(), ErrorObject> {
    for decl in decls {
        let display = decl.display_name();
        let header = read_header(headers, decl.header_name(), display, true)?;
        let body = arguments
            .and_then(|args| decl.lookup(args))
            .filter(|v| !v.is_null());
        let Some(body) = body else {
            if header.is_some() {
                return Err(ErrorObject::header_mismatch(format!(
                    "{display} header is present but the body has no value at arguments.{}",
                    decl.path().join(".")
                )));
            }
            continue;
        };
        let Some(expected) = comparable(decl.kind(), body) else {
            continue;
        };
        let Some(header) = header else {
            return Err(ErrorObject::header_mismatch(format!(
                "missing {display} header for the body value at arguments.{}",
                decl.path().join(".")
            )));
        };
        if !expected.matches(&header) {
            return Err(ErrorObject::header_mismatch(format!(
                "{display} header does not match the body value at arguments.{}",
                decl.path().join(".")
            )));
        }
    }
    Ok(())
}

/// A body value of the declared kind, ready to compare with a decoded header.
enum Expected<'a> {
    Text(&'a str),
    Flag(bool),
    Integer(Decimal),
}

impl Expected<'_> {
    fn matches(&self, header: &str) -> bool {
        match self {
            Expected::Text(body) => *body == header,
            Expected::Flag(body) => header == if *body { "true" } else { "false" },
            Expected::Integer(body) => parse_decimal(header).as_ref() == Some(body),
        }
    }
}

/// The body value as the declared kind, or `None` when its JSON type is another one.
fn comparable(kind: ParamKind, body: &Value) -> Option<Expected<'_>> {
    match (kind, body) {
        (ParamKind::String, Value::String(s)) => Some(Expected::Text(s)),
        (ParamKind::Boolean, Value::Bool(b)) => Some(Expected::Flag(*b)),
        (ParamKind::Integer, Value::Number(n)) if is_integer(n) => {
            parse_decimal(&number_text(n)).map(Expected::Integer)
        }
        _ => None,
    }
}

/// JSON Schema's notion of an integer: any number with a zero fractional part, `42.0` included.
fn is_integer(n: &Number) -> bool {
    n.is_i64()
        || n.is_u64()
        || n.as_f64()
            .is_some_and(|f| f.is_finite() && f.fract() == 0.0)
}

/// Reads every occurrence of a header. `None` when it is absent; an error when one occurrence is
/// malformed or two disagree.
fn read_header<'h>(
    headers: &'h HeaderMap,
    name: impl http::header::AsHeaderName,
    display: &str,
    sentinel: bool,
) -> Result<Option<Cow<'h, str>>, ErrorObject> {
    let read = |value: &'h HeaderValue| {
        let decoded = if sentinel {
            decode_value(value)
        } else {
            plain_value(value.as_bytes()).map(Cow::Borrowed)
        };
        decoded.map_err(|e| {
            ErrorObject::header_mismatch(format!("{display} header is malformed: {e}"))
        })
    };
    let mut values = headers.get_all(name).iter();
    let Some(first) = values.next() else {
        return Ok(None);
    };
    let first = read(first)?;
    for other in values {
        if read(other)? != first {
            return Err(ErrorObject::header_mismatch(format!(
                "{display} header is repeated with different values"
            )));
        }
    }
    Ok(Some(first))
}

fn missing(display: &str) -> ErrorObject {
    ErrorObject::header_mismatch(format!("missing {display} header"))
}

/// Quotes a value for a message, cut short so that a hostile header cannot bloat the response.
fn quote(value: &str) -> String {
    const LIMIT: usize = 64;
    match value.char_indices().nth(LIMIT) {
        Some((cut, _)) => format!("{:?}...", &value[..cut]),
        None => format!("{value:?}"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use kelson_types::param_headers;

    fn map(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(
                http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_bytes(value.as_bytes()).unwrap(),
            );
        }
        headers
    }

    fn standard(method: &str, name: Option<&str>, pairs: &[(&str, &str)]) -> Result<(), String> {
        check_standard_headers(method, "2026-07-28", name, &map(pairs)).map_err(|e| {
            assert_eq!(e.code, -32020);
            e.message.into_owned()
        })
    }

    const VERSION: (&str, &str) = ("MCP-Protocol-Version", "2026-07-28");

    #[test]
    fn matching_standard_headers_pass() {
        assert_eq!(
            standard("tools/list", None, &[VERSION, ("Mcp-Method", "tools/list")]),
            Ok(())
        );
        let call = [
            VERSION,
            ("mcp-method", " tools/call\t"),
            ("MCP-NAME", "  get_weather "),
        ];
        assert_eq!(standard("tools/call", Some("get_weather"), &call), Ok(()));
        let read = [
            VERSION,
            ("Mcp-Method", "resources/read"),
            ("Mcp-Name", "=?base64?ZmlsZTovLy/DpA==?="),
        ];
        assert_eq!(standard("resources/read", Some("file:///ä"), &read), Ok(()));
        // Identical repeats are one value.
        let twice = [
            VERSION,
            VERSION,
            ("Mcp-Method", "tools/list"),
            ("Mcp-Method", "tools/list "),
        ];
        assert_eq!(standard("tools/list", None, &twice), Ok(()));
    }

    #[test]
    fn missing_standard_headers_fail() {
        assert_eq!(
            standard("tools/list", None, &[("Mcp-Method", "tools/list")]),
            Err("Header mismatch: missing MCP-Protocol-Version header".into())
        );
        assert_eq!(
            standard("tools/list", None, &[VERSION]),
            Err("Header mismatch: missing Mcp-Method header".into())
        );
        assert_eq!(
            standard(
                "prompts/get",
                Some("p"),
                &[VERSION, ("Mcp-Method", "prompts/get")]
            ),
            Err("Header mismatch: missing Mcp-Name header, which prompts/get requires".into())
        );
    }

    #[test]
    fn differing_standard_headers_fail() {
        let err = standard(
            "tools/list",
            None,
            &[
                ("MCP-Protocol-Version", "v999.0.0"),
                ("Mcp-Method", "tools/list"),
            ],
        );
        assert_eq!(
            err,
            Err("Header mismatch: MCP-Protocol-Version header \"v999.0.0\" does not match the body's protocol version \"2026-07-28\"".into())
        );
        let err = standard(
            "tools/call",
            Some("x"),
            &[VERSION, ("Mcp-Method", "TOOLS/CALL"), ("Mcp-Name", "x")],
        );
        assert_eq!(
            err,
            Err("Header mismatch: Mcp-Method header \"TOOLS/CALL\" does not match the body method \"tools/call\"".into())
        );
        let call = [
            VERSION,
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "Get_Weather"),
        ];
        assert_eq!(
            standard("tools/call", Some("get_weather"), &call),
            Err("Header mismatch: Mcp-Name header does not match the body's params.name".into())
        );
        assert_eq!(
            standard("tools/call", None, &call),
            Err(
                "Header mismatch: Mcp-Name header is present but the body has no params.name"
                    .into()
            )
        );
        let repeated = [
            VERSION,
            ("Mcp-Method", "tools/list"),
            ("Mcp-Method", "tools/call"),
        ];
        assert_eq!(
            standard("tools/list", None, &repeated),
            Err("Header mismatch: Mcp-Method header is repeated with different values".into())
        );
    }

    #[test]
    fn malformed_standard_headers_fail() {
        let bad_name = [
            VERSION,
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "=?base64?SGVsbG8?="),
        ];
        let err = standard("tools/call", Some("Hello"), &bad_name).unwrap_err();
        assert!(
            err.starts_with("Header mismatch: Mcp-Name header is malformed: "),
            "{err}"
        );
        let obs_text = [VERSION, ("Mcp-Method", "tools/list\u{e9}")];
        let err = standard("tools/list", None, &obs_text).unwrap_err();
        assert!(err.contains("Mcp-Method header is malformed"), "{err}");
    }

    #[test]
    fn mcp_name_is_ignored_where_it_means_nothing() {
        let extra = [
            VERSION,
            ("Mcp-Method", "tools/list"),
            ("Mcp-Name", "=?base64?broken?="),
        ];
        assert_eq!(standard("tools/list", None, &extra), Ok(()));
    }

    #[test]
    fn long_values_are_quoted_short() {
        let long = "v".repeat(500);
        let err = standard(
            "tools/list",
            None,
            &[
                ("MCP-Protocol-Version", &long),
                ("Mcp-Method", "tools/list"),
            ],
        );
        assert!(err.unwrap_err().len() < 200);
    }

    fn decls() -> Vec<ParamHeader> {
        let schema = json!({
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "limit": {"type": "integer", "x-mcp-header": "Limit"},
                "dry": {"type": "boolean", "x-mcp-header": "Dry"},
                "opts": {"properties": {"tag": {"type": "string", "x-mcp-header": "Tag"}}}
            }
        });
        param_headers(schema.as_object().unwrap()).unwrap()
    }

    fn params(arguments: Value, pairs: &[(&str, &str)]) -> Result<(), String> {
        check_param_headers(&decls(), arguments.as_object(), &map(pairs)).map_err(|e| {
            assert_eq!(e.code, -32020);
            e.message.into_owned()
        })
    }

    #[test]
    fn matching_param_headers_pass() {
        let args =
            json!({"region": "Hello, 世界", "limit": 42, "dry": true, "opts": {"tag": "v1"}});
        let pairs = [
            ("Mcp-Param-Region", "=?base64?SGVsbG8sIOS4lueVjA==?="),
            ("mcp-param-limit", "42"),
            ("MCP-PARAM-DRY", " true "),
            ("Mcp-Param-Tag", "v1"),
            ("Mcp-Param-Unknown", "=?base64?ignored?="),
        ];
        assert_eq!(params(args, &pairs), Ok(()));
        assert_eq!(params(json!({}), &[]), Ok(()));
        assert_eq!(
            params(json!({"region": null, "opts": {"tag": null}}), &[]),
            Ok(())
        );
        assert_eq!(
            check_param_headers(&decls(), None, &HeaderMap::new()),
            Ok(())
        );
    }

    #[test]
    fn integers_compare_numerically() {
        for header in ["42", "42.0", "4.2e1", "420E-1", "+42", "042", "42.000e0"] {
            assert_eq!(
                params(json!({"limit": 42}), &[("Mcp-Param-Limit", header)]),
                Ok(()),
                "{header}"
            );
            assert_eq!(
                params(json!({"limit": 42.0}), &[("Mcp-Param-Limit", header)]),
                Ok(()),
                "{header}"
            );
        }
        for header in [
            "42.5",
            "43",
            "-42",
            "0x2A",
            "42.",
            ".42e2",
            "",
            "4 2",
            "forty-two",
            "1e999999999999999999999",
        ] {
            assert!(
                params(json!({"limit": 42}), &[("Mcp-Param-Limit", header)]).is_err(),
                "{header}"
            );
        }
        for header in ["0", "-0", "0.0", "0e999999999999999999999", "00"] {
            assert_eq!(
                params(json!({"limit": 0}), &[("Mcp-Param-Limit", header)]),
                Ok(()),
                "{header}"
            );
        }
        // Exact beyond f64 precision: 2^53 + 1 is not 2^53.
        let big = json!({"limit": 9_007_199_254_740_993_u64});
        assert_eq!(
            params(big.clone(), &[("Mcp-Param-Limit", "9007199254740993")]),
            Ok(())
        );
        assert!(params(big, &[("Mcp-Param-Limit", "9007199254740992")]).is_err());
        assert_eq!(
            params(json!({"limit": -7}), &[("Mcp-Param-Limit", "-7e0")]),
            Ok(())
        );
        assert_eq!(
            params(json!({"limit": 1e21}), &[("Mcp-Param-Limit", "1e21")]),
            Ok(())
        );
    }

    #[test]
    fn booleans_and_strings_compare_exactly() {
        assert!(params(json!({"dry": true}), &[("Mcp-Param-Dry", "True")]).is_err());
        assert!(params(json!({"dry": true}), &[("Mcp-Param-Dry", "1")]).is_err());
        assert_eq!(
            params(
                json!({"dry": false}),
                &[("Mcp-Param-Dry", "=?base64?ZmFsc2U=?=")]
            ),
            Ok(())
        );
        assert!(
            params(
                json!({"region": "us-west1"}),
                &[("Mcp-Param-Region", "US-WEST1")]
            )
            .is_err()
        );
        assert_eq!(
            params(json!({"region": "us-west1"}), &[("Mcp-Param-Region", "us-east1")]),
            Err("Header mismatch: Mcp-Param-Region header does not match the body value at arguments.region".into())
        );
    }

    #[test]
    fn a_body_value_needs_its_header() {
        assert_eq!(
            params(json!({"opts": {"tag": "v1"}}), &[]),
            Err("Header mismatch: missing Mcp-Param-Tag header for the body value at arguments.opts.tag".into())
        );
        // An empty string is still a value, sent as an empty header.
        assert!(params(json!({"region": ""}), &[]).is_err());
        assert_eq!(
            params(json!({"region": ""}), &[("Mcp-Param-Region", "")]),
            Ok(())
        );
    }

    #[test]
    fn a_header_needs_its_body_value() {
        assert_eq!(
            params(json!({"region": null}), &[("Mcp-Param-Region", "us-west1")]),
            Err("Header mismatch: Mcp-Param-Region header is present but the body has no value at arguments.region".into())
        );
        assert!(params(json!({}), &[("Mcp-Param-Limit", "1")]).is_err());
    }

    #[test]
    fn malformed_param_headers_fail() {
        let err = params(
            json!({"region": "Hello"}),
            &[("Mcp-Param-Region", "=?base64?SGVsbG8?=")],
        )
        .unwrap_err();
        assert!(
            err.starts_with("Header mismatch: Mcp-Param-Region header is malformed: "),
            "{err}"
        );
        // Invalid characters are refused even where the body has no value.
        let err = params(json!({}), &[("Mcp-Param-Region", "caf\u{e9}")]).unwrap_err();
        assert!(
            err.contains("Mcp-Param-Region header is malformed"),
            "{err}"
        );
        let repeated = [("Mcp-Param-Region", "a"), ("Mcp-Param-Region", "b")];
        assert!(
            params(json!({"region": "a"}), &repeated)
                .unwrap_err()
                .contains("repeated")
        );
    }

    #[test]
    fn mistyped_body_values_are_left_to_schema_validation() {
        assert_eq!(params(json!({"limit": "42"}), &[]), Ok(()));
        assert_eq!(
            params(json!({"limit": 4.5}), &[("Mcp-Param-Limit", "4.5")]),
            Ok(())
        );
        assert_eq!(params(json!({"dry": "true"}), &[]), Ok(()));
        assert_eq!(
            params(json!({"region": 7}), &[("Mcp-Param-Region", "7")]),
            Ok(())
        );
        // The header itself must still be well formed.
        assert!(
            params(
                json!({"region": 7}),
                &[("Mcp-Param-Region", "=?base64?!?=")]
            )
            .is_err()
        );
    }
}
