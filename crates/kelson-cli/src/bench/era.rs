//! Which era `kelson bench` measures, and what the handshake of a legacy server settled.
//!
//! `--era modern` sends the modern requests at once, as `kelson bench` always did. `--era legacy`
//! gives each HTTP connection (or the stdio process) the handshake of the 2025 era once,
//! `initialize` then `notifications/initialized`, and loads it without the `_meta` envelope.
//! `--era auto`, the default, probes the server once before the load with a modern
//! `server/discover` and reads the answer as clients do (spec 2026-07-28 basic/versioning, and the
//! backward compatibility sections of basic/transports/stdio and basic/transports/streamable-http);
//! a server that speaks both eras answers it, so it is measured as modern unless `--era legacy` is
//! given.

use http::StatusCode;
use kelson_jsonrpc::{Message, code};
use serde::Deserialize;

/// The id of the era probe, and that of `initialize`: far above the load's ids, which count from 1,
/// so that a late answer to either is never taken for a load request's, and within the integers a
/// JavaScript number holds exactly (up to 2^53 - 1), which servers on Node read ids as.
pub(crate) const PROBE_ID: u64 = (1 << 53) - 1;
pub(crate) const INITIALIZE_ID: u64 = (1 << 53) - 2;

/// What is measured: the revision, and for a legacy server the session of each connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Protocol {
    /// A handshake-era session: requests without `_meta`, results without `resultType`.
    pub(crate) legacy: bool,
    /// The revision: 2026-07-28, or the one `initialize` settled on.
    pub(crate) version: String,
}

impl Protocol {
    pub(crate) fn modern() -> Self {
        Protocol {
            legacy: false,
            version: kelson_types::LATEST_PROTOCOL_VERSION.to_owned(),
        }
    }

    /// `modern` or `legacy`, for the report.
    pub(crate) fn era(&self) -> &'static str {
        if self.legacy { "legacy" } else { "modern" }
    }
}

/// Why the legacy handshake failed, by who is to blame: the server answered with an error (exit
/// 2), or the exchange itself failed (exit 3).
#[derive(Debug)]
pub(crate) enum Failure {
    Protocol(String),
    Transport(String),
}

/// What the probe's answer says about the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Found {
    Modern,
    Legacy,
}

/// The parts of a JSON-RPC response the probe and the handshake read.
enum Answer {
    Result(Box<kelson_jsonrpc::RawValue>),
    Error { code: i64, message: String },
}

/// Reads `message` as the response to request `id`; `None` when it is something else.
fn response(message: &[u8], id: u64) -> Option<Answer> {
    let Ok(Message::Response(r)) = kelson_jsonrpc::decode(message) else {
        return None;
    };
    let expected = kelson_jsonrpc::Id::Int(i64::try_from(id).ok()?);
    if r.id.as_ref() != Some(&expected) {
        return None;
    }
    Some(match r.outcome {
        Ok(raw) => Answer::Result(raw.to_owned()),
        Err(e) => Answer::Error {
            code: e.code,
            message: e.message.to_string(),
        },
    })
}

/// Whether a `server/discover` result is a modern one: it lists the revisions the server speaks.
fn is_discover_result(raw: &kelson_jsonrpc::RawValue) -> bool {
    #[derive(Deserialize)]
    struct Discover {
        // Required, and a list: only its presence is read.
        #[serde(rename = "supportedVersions")]
        _supported_versions: Vec<serde::de::IgnoredAny>,
    }
    serde_json::from_str::<Discover>(raw.get()).is_ok()
}

/// The errors only a modern server sends (-32020, -32021, -32022): a modern server that found
/// fault with the probe.
fn is_modern_error(code: i64) -> bool {
    matches!(
        code,
        code::HEADER_MISMATCH
            | code::MISSING_REQUIRED_CLIENT_CAPABILITY
            | code::UNSUPPORTED_PROTOCOL_VERSION
    )
}

/// The stdio rule (spec 2026-07-28 basic/transports/stdio): a discover result or a modern error
/// means modern; any other answer means legacy. `None` for a message that does not answer the
/// probe.
pub(crate) fn classify_stdio(message: &[u8]) -> Option<Found> {
    Some(match response(message, PROBE_ID)? {
        Answer::Result(raw) if is_discover_result(&raw) => Found::Modern,
        Answer::Error { code, .. } if is_modern_error(code) => Found::Modern,
        _ => Found::Legacy,
    })
}

/// The HTTP rule (spec 2026-07-28 basic/transports/streamable-http), from the answer's status and
/// its JSON-RPC message (`None` when the body held none): a discover result, a modern error, or a
/// 404 with -32601 means modern; a 400, 404 or 405 without them, or another answer to the probe,
/// means legacy. A refusal in front of the protocol (401, 403, 421) and a server error say nothing
/// about the era: the server is then measured as modern, and the load shows what comes back, with
/// its hints.
pub(crate) fn classify_http(status: StatusCode, message: Option<&[u8]>) -> Found {
    let refusal = matches!(
        status,
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN | StatusCode::MISDIRECTED_REQUEST
    );
    if refusal || status.is_server_error() {
        return Found::Modern;
    }
    match message.and_then(|m| response(m, PROBE_ID)) {
        Some(Answer::Result(raw)) if is_discover_result(&raw) => Found::Modern,
        Some(Answer::Error { code, .. }) if is_modern_error(code) => Found::Modern,
        Some(Answer::Error { code, .. })
            if status == StatusCode::NOT_FOUND && code == code::METHOD_NOT_FOUND =>
        {
            Found::Modern
        }
        Some(_) => Found::Legacy,
        None if status.is_success()
            || matches!(
                status,
                StatusCode::BAD_REQUEST | StatusCode::NOT_FOUND | StatusCode::METHOD_NOT_ALLOWED
            ) =>
        {
            Found::Legacy
        }
        None => Found::Modern,
    }
}

/// The JSON-RPC error a message carries, in words, whatever id it names.
pub(crate) fn jsonrpc_error(message: &[u8]) -> Option<String> {
    // Read on its own rather than decoded as a response: servers answer a request they could not
    // read with `"id": null`, which the decoder refuses.
    #[derive(Deserialize)]
    struct Failed {
        error: kelson_jsonrpc::ErrorObject,
    }
    let failed: Failed = serde_json::from_slice(message).ok()?;
    Some(format!(
        "JSON-RPC error {}: {}",
        failed.error.code, failed.error.message
    ))
}

/// Reads the answer to `initialize`: the revision the server settled on, which must be one of the
/// handshake era's that this client offers.
pub(crate) fn initialized(message: &[u8]) -> Result<String, Failure> {
    #[derive(Deserialize)]
    struct Initialize {
        #[serde(rename = "protocolVersion")]
        protocol_version: String,
    }
    match response(message, INITIALIZE_ID) {
        None => Err(Failure::Protocol(format!(
            "initialize: the answer is not its JSON-RPC response: {}",
            String::from_utf8_lossy(&message[..message.len().min(300)])
        ))),
        Some(Answer::Error { code, message }) => Err(Failure::Protocol(format!(
            "initialize: JSON-RPC error {code}: {message}"
        ))),
        Some(Answer::Result(raw)) => {
            let init: Initialize = serde_json::from_str(raw.get()).map_err(|e| {
                Failure::Protocol(format!("initialize: the result is malformed: {e}"))
            })?;
            if kelson_client::LEGACY_VERSIONS.contains(&init.protocol_version.as_str()) {
                Ok(init.protocol_version)
            } else {
                Err(Failure::Protocol(format!(
                    "initialize: the server chose revision {:?}; kelson bench speaks {}",
                    init.protocol_version,
                    kelson_client::LEGACY_VERSIONS.join(", ")
                )))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(outcome: &str, id: u64) -> Vec<u8> {
        format!(r#"{{"jsonrpc":"2.0","id":{id},{outcome}}}"#).into_bytes()
    }

    fn error(code: i64) -> Vec<u8> {
        answer(
            &format!(r#""error":{{"code":{code},"message":"m"}}"#),
            PROBE_ID,
        )
    }

    #[test]
    fn the_stdio_probe_follows_the_client_rule() {
        let discover = answer(
            r#""result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{}}"#,
            PROBE_ID,
        );
        assert_eq!(classify_stdio(&discover), Some(Found::Modern));
        for code in [-32020, -32021, -32022] {
            assert_eq!(classify_stdio(&error(code)), Some(Found::Modern));
        }
        // Any other error, whatever its code, means legacy; so does a result of another shape.
        for code in [-32601, -32602, -32600, -32000] {
            assert_eq!(classify_stdio(&error(code)), Some(Found::Legacy));
        }
        assert_eq!(
            classify_stdio(&answer(r#""result":{}"#, PROBE_ID)),
            Some(Found::Legacy)
        );
        // Notifications and answers to other requests do not answer the probe.
        assert_eq!(
            classify_stdio(br#"{"jsonrpc":"2.0","method":"notifications/message"}"#),
            None
        );
        assert_eq!(classify_stdio(&answer(r#""result":{}"#, 3)), None);
        assert_eq!(classify_stdio(b"starting up..."), None);
    }

    #[test]
    fn the_http_probe_follows_the_client_rule() {
        let discover = answer(r#""result":{"supportedVersions":["2026-07-28"]}"#, PROBE_ID);
        assert_eq!(
            classify_http(StatusCode::OK, Some(&discover)),
            Found::Modern
        );
        assert_eq!(
            classify_http(StatusCode::BAD_REQUEST, Some(&error(-32022))),
            Found::Modern
        );
        assert_eq!(
            classify_http(StatusCode::NOT_FOUND, Some(&error(-32601))),
            Found::Modern
        );
        // A legacy server's "no session" error, and bare 400/404/405.
        assert_eq!(
            classify_http(StatusCode::BAD_REQUEST, Some(&error(-32000))),
            Found::Legacy
        );
        for status in [400, 404, 405] {
            let status = StatusCode::from_u16(status).unwrap();
            assert_eq!(classify_http(status, None), Found::Legacy);
        }
        // Refusals and server errors decide nothing: measured as modern, the load says more.
        for status in [401, 403, 421, 500, 503] {
            let status = StatusCode::from_u16(status).unwrap();
            assert_eq!(classify_http(status, Some(&error(-32600))), Found::Modern);
            assert_eq!(classify_http(status, None), Found::Modern);
        }
    }

    #[test]
    fn initialize_answers_are_read() {
        let ok = answer(
            r#""result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"x","version":"1"}}"#,
            INITIALIZE_ID,
        );
        assert_eq!(initialized(&ok).unwrap(), "2025-06-18");
        // The first SDKs' servers (the archived reference servers) answer 2024-11-05.
        let first_sdk = answer(
            r#""result":{"protocolVersion":"2024-11-05","capabilities":{},"serverInfo":{"name":"x","version":"1"}}"#,
            INITIALIZE_ID,
        );
        assert_eq!(initialized(&first_sdk).unwrap(), "2024-11-05");
        let modern = answer(
            r#""result":{"protocolVersion":"2026-07-28"}"#,
            INITIALIZE_ID,
        );
        assert!(
            matches!(initialized(&modern), Err(Failure::Protocol(m)) if m.contains("2026-07-28"))
        );
        let refused = answer(
            r#""error":{"code":-32022,"message":"Unsupported protocol version"}"#,
            INITIALIZE_ID,
        );
        assert!(matches!(initialized(&refused), Err(Failure::Protocol(m)) if m.contains("-32022")));
        assert!(matches!(initialized(b"<html>"), Err(Failure::Protocol(_))));
        assert_eq!(
            jsonrpc_error(
                br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request"}}"#
            )
            .as_deref(),
            Some("JSON-RPC error -32000: Bad Request")
        );
        assert_eq!(jsonrpc_error(&ok), None);
    }
}
