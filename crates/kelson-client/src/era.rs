//! Era detection: is the server modern (2026-07-28, stateless) or legacy (2025, `initialize`)?
//!
//! spec 2026-07-28 [basic/versioning][spec] and the backward compatibility sections of the stdio
//! and Streamable HTTP transport pages: the client tries modern first.
//! - stdio: `server/discover`; a `DiscoverResult`, or a recognised modern error (-32020, -32021,
//!   -32022), means modern; any other error, or no answer in time, means legacy. The fallback never
//!   keys on one particular error code.
//! - HTTP: a 400 with a modern error means modern (fix the request, never fall back); a 404 with a
//!   -32601 body means a modern server lacking the method; a 400 without a modern error, or a 404 or
//!   405 without a -32601 body, means legacy.
//!
//! The decision is cached per connection (stdio) and per origin (HTTP). A caller may also force an
//! era ([`EraChoice`]): modern never falls back to `initialize`, and legacy sends `initialize` at
//! once, without a probe.
//!
//! [spec]: https://modelcontextprotocol.io/specification/2026-07-28/basic/versioning

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use http::StatusCode;
use kelson_http::client::HttpError;
use kelson_jsonrpc::{ErrorObject, RawValue, code};
use kelson_types::{
    CacheScope, DiscoverResult, Implementation, ResultMeta, ResultType, ServerCapabilities,
    method_names,
};
use serde::Deserialize;

use crate::Error;
use crate::transport::Reply;

/// The modern revisions this client speaks, preferred first.
pub const MODERN_VERSIONS: &[&str] = &[kelson_types::LATEST_PROTOCOL_VERSION];

/// The legacy revisions this client speaks, preferred first; it offers the first in `initialize`.
///
/// 2024-11-05 is accepted when a server answers with it: servers built on the first SDKs know no
/// other (the archived reference servers among them, such as `@modelcontextprotocol/server-postgres`),
/// and over stdio that revision differs from 2025-03-26 in nothing this client relies on. Its HTTP
/// transport (HTTP+SSE) is not spoken, so over HTTP such a server fails before `initialize`.
pub const LEGACY_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// Which protocol era the server speaks, and the revision in use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Era {
    /// 2026-07-28 or later: every request carries its own `_meta`.
    Modern {
        /// The revision named in every request.
        version: &'static str,
    },
    /// 2025-11-25 or earlier: one `initialize` handshake, then a session.
    Legacy {
        /// The revision the server chose at `initialize`.
        version: &'static str,
    },
}

impl Era {
    /// The revision in use.
    pub fn version(&self) -> &'static str {
        match self {
            Era::Modern { version } | Era::Legacy { version } => version,
        }
    }

    /// True for a legacy (handshake era) server.
    pub fn is_legacy(&self) -> bool {
        matches!(self, Era::Legacy { .. })
    }
}

/// Which era a connection speaks: detected from the server's answer to a probe (the default), or
/// forced with [`ClientBuilder::era`](crate::ClientBuilder::era).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EraChoice {
    /// Probe with a modern `server/discover`; run the `initialize` handshake when the answer is a
    /// handshake-era server's (spec 2026-07-28 basic/versioning).
    #[default]
    Auto,
    /// Only the modern protocol: the probe as in `Auto`, but an answer that says "handshake era" is
    /// [`Error::NotModern`], and `initialize` is never sent.
    Modern,
    /// Only the handshake era: `initialize` at once, without a probe, so that a dual-era server
    /// serves a legacy session.
    Legacy,
}

impl EraChoice {
    /// `auto`, `modern` or `legacy`.
    pub const fn as_str(self) -> &'static str {
        match self {
            EraChoice::Auto => "auto",
            EraChoice::Modern => "modern",
            EraChoice::Legacy => "legacy",
        }
    }
}

impl std::str::FromStr for EraChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(EraChoice::Auto),
            "modern" => Ok(EraChoice::Modern),
            "legacy" => Ok(EraChoice::Legacy),
            other => Err(format!(
                "unknown era {other:?}: expected auto, modern or legacy"
            )),
        }
    }
}

/// What one probe says.
#[derive(Debug)]
pub(crate) enum Verdict {
    /// Modern, with the discover result when the probe returned one.
    Modern {
        version: &'static str,
        discover: Option<Box<DiscoverResult>>,
    },
    /// Legacy: run `initialize`. The text says what the server answered, for the error of a
    /// connection forced to the modern era ([`Error::NotModern`]).
    Legacy(String),
    /// Neither: the probe failed in a way that decides nothing (connection refused, 401, 5xx, no
    /// common version).
    Fail(Error),
}

/// The first of our modern revisions that the server lists.
pub(crate) fn pick_version(supported: &[String]) -> Option<&'static str> {
    MODERN_VERSIONS
        .iter()
        .copied()
        .find(|ours| supported.iter().any(|s| s == ours))
}

fn is_modern_error(error: &ErrorObject) -> bool {
    matches!(
        error.code,
        code::HEADER_MISMATCH
            | code::MISSING_REQUIRED_CLIENT_CAPABILITY
            | code::UNSUPPORTED_PROTOCOL_VERSION
    )
}

/// The verdict of a `server/discover` result.
fn from_result(raw: &RawValue) -> Verdict {
    match serde_json::from_str::<DiscoverResult>(raw.get()) {
        Ok(discover) => match pick_version(&discover.supported_versions) {
            Some(version) => Verdict::Modern {
                version,
                discover: Some(Box::new(discover)),
            },
            None => Verdict::Fail(Error::UnsupportedVersion {
                supported: discover.supported_versions,
                ours: MODERN_VERSIONS.to_vec(),
            }),
        },
        // Something answered, but not with a DiscoverResult: not a modern server.
        Err(e) => Verdict::Legacy(format!(
            "its answer to server/discover is not a discover result ({e})"
        )),
    }
}

/// The verdict of a recognised modern error.
fn from_modern_error(error: ErrorObject) -> Verdict {
    if error.code != code::UNSUPPORTED_PROTOCOL_VERSION {
        // -32020 or -32021 on a discover: the server is modern, and the request was at fault.
        return Verdict::Fail(Error::protocol(method_names::SERVER_DISCOVER, error));
    }
    #[derive(Deserialize)]
    struct Data {
        #[serde(default)]
        supported: Vec<String>,
    }
    let supported = error
        .data()
        .and_then(|d| Data::deserialize(d).ok())
        .map(|d| d.supported)
        .unwrap_or_default();
    match pick_version(&supported) {
        // spec: retry with a version from `supported`; ours is the only one we could have sent,
        // so a -32022 naming it is contradictory, and the next request will show it.
        Some(version) => Verdict::Modern {
            version,
            discover: None,
        },
        None => Verdict::Fail(Error::UnsupportedVersion {
            supported,
            ours: MODERN_VERSIONS.to_vec(),
        }),
    }
}

/// Classifies the answer to the stdio probe; `None` means no answer within the probe timeout.
pub(crate) fn classify_stdio(answer: Option<Result<Reply, Error>>) -> Verdict {
    match answer {
        None => Verdict::Legacy("it did not answer server/discover in time".to_owned()),
        Some(Err(e)) => Verdict::Fail(e),
        Some(Ok(reply)) => match reply.outcome {
            Ok(raw) => from_result(&raw),
            Err(error) if is_modern_error(&error) => from_modern_error(error),
            Err(error) => Verdict::Legacy(format!(
                "it answered server/discover with JSON-RPC error {} ({})",
                error.code, error.message
            )),
        },
    }
}

/// Statuses that refuse a request before any method is looked at: 401, 403, and 421 (Misdirected
/// Request, which some servers answer for a `Host` they do not serve).
fn is_refusal(status: StatusCode) -> bool {
    matches!(
        status,
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN | StatusCode::MISDIRECTED_REQUEST
    )
}

/// Classifies the answer to the HTTP probe.
pub(crate) fn classify_http(answer: Result<Reply, Error>) -> Verdict {
    match answer {
        Ok(reply) => {
            let status = reply.status.unwrap_or(StatusCode::OK);
            match reply.outcome {
                Ok(raw) => from_result(&raw),
                Err(error) if is_modern_error(&error) => from_modern_error(error),
                // A modern server that lacks the method (server/discover is mandatory, but the
                // server is modern all the same).
                Err(error)
                    if status == StatusCode::NOT_FOUND && error.code == code::METHOD_NOT_FOUND =>
                {
                    Verdict::Modern {
                        version: MODERN_VERSIONS[0],
                        discover: None,
                    }
                }
                // A refusal in front of the protocol (authentication, the Host/Origin check of
                // spec 2026-07-28 basic/transports/streamable-http) says nothing about the era, and
                // a legacy `initialize` would only be refused again under a misleading name.
                Err(error) if is_refusal(status) => {
                    Verdict::Fail(HttpError::status(status, error.message.as_bytes()).into())
                }
                Err(error) => Verdict::Legacy(format!(
                    "it answered server/discover with HTTP {} and JSON-RPC error {} ({})",
                    status.as_u16(),
                    error.code,
                    error.message
                )),
            }
        }
        Err(Error::Http(
            e @ HttpError::Status {
                status:
                    StatusCode::BAD_REQUEST | StatusCode::NOT_FOUND | StatusCode::METHOD_NOT_ALLOWED,
                ..
            },
        )) => Verdict::Legacy(format!("it answered server/discover with {e}")),
        // A body that is not JSON-RPC on a 2xx: not a modern server.
        Err(Error::InvalidServerBehaviour(e)) => Verdict::Legacy(format!(
            "its answer to server/discover is not a modern one ({e})"
        )),
        Err(e) => Verdict::Fail(e),
    }
}

/// The era decisions of HTTP origins in this process.
fn origins() -> &'static Mutex<HashMap<String, Era>> {
    static ORIGINS: OnceLock<Mutex<HashMap<String, Era>>> = OnceLock::new();
    ORIGINS.get_or_init(Default::default)
}

pub(crate) fn cached_era(origin: &str) -> Option<Era> {
    origins().lock().expect("era cache").get(origin).copied()
}

pub(crate) fn remember_era(origin: &str, era: Option<Era>) {
    let mut map = origins().lock().expect("era cache");
    match era {
        Some(era) => map.insert(origin.to_owned(), era),
        None => map.remove(origin),
    };
}

/// The parameters of a legacy `initialize`.
pub(crate) fn initialize_params(
    info: &Implementation,
    capabilities: &kelson_types::ClientCapabilities,
) -> serde_json::Map<String, serde_json::Value> {
    let mut params = serde_json::Map::new();
    params.insert("protocolVersion".into(), LEGACY_VERSIONS[0].into());
    params.insert(
        "capabilities".into(),
        serde_json::to_value(capabilities).expect("capabilities serialize"),
    );
    params.insert(
        "clientInfo".into(),
        serde_json::to_value(info).expect("an implementation serializes"),
    );
    params
}

/// Reads a legacy `InitializeResult` into the revision it chose and a `DiscoverResult` with the same
/// information, so that `discover` works on both eras.
pub(crate) fn from_initialize(raw: &RawValue) -> Result<(&'static str, DiscoverResult), Error> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct InitializeResult {
        protocol_version: String,
        #[serde(default)]
        capabilities: ServerCapabilities,
        server_info: Option<Implementation>,
        instructions: Option<String>,
    }
    let init: InitializeResult = serde_json::from_str(raw.get())
        .map_err(|e| Error::malformed(method_names::INITIALIZE, e))?;
    let Some(version) = LEGACY_VERSIONS
        .iter()
        .copied()
        .find(|v| *v == init.protocol_version)
    else {
        return Err(Error::UnsupportedVersion {
            supported: vec![init.protocol_version],
            ours: LEGACY_VERSIONS.to_vec(),
        });
    };
    let discover = DiscoverResult {
        result_type: ResultType::Complete,
        supported_versions: vec![version.to_owned()],
        capabilities: init.capabilities,
        instructions: init.instructions,
        // A legacy result has no cache hints: ttlMs absent means 0.
        ttl_ms: None,
        cache_scope: None::<CacheScope>,
        meta: init.server_info.map(ResultMeta::server_info),
    };
    Ok((version, discover))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reply(status: u16, body: serde_json::Value) -> Reply {
        let outcome = match body.get("error") {
            Some(e) => Err(serde_json::from_value(e.clone()).unwrap()),
            None => Ok(serde_json::value::to_raw_value(&body["result"]).unwrap()),
        };
        Reply {
            outcome,
            status: Some(StatusCode::from_u16(status).unwrap()),
        }
    }

    fn error(code: i64) -> serde_json::Value {
        json!({"error": {"code": code, "message": "m", "data": {"supported": ["2026-07-28"], "requested": "x"}}})
    }

    fn discover() -> serde_json::Value {
        json!({"result": {"resultType": "complete", "supportedVersions": ["2025-11-25", "2026-07-28"],
                          "capabilities": {"tools": {}}, "ttlMs": 0, "cacheScope": "public"}})
    }

    fn is_modern(v: &Verdict) -> bool {
        matches!(
            v,
            Verdict::Modern {
                version: "2026-07-28",
                ..
            }
        )
    }

    #[test]
    fn stdio_probe() {
        assert!(is_modern(&classify_stdio(Some(Ok(reply(200, discover()))))));
        assert!(is_modern(&classify_stdio(Some(Ok(reply(
            200,
            error(-32022)
        ))))));
        // Any other error, whatever its code, and silence mean legacy.
        for code in [-32601, -32602, -32600, -32000, -32603] {
            assert!(matches!(
                classify_stdio(Some(Ok(reply(200, error(code))))),
                Verdict::Legacy(_)
            ));
        }
        assert!(matches!(classify_stdio(None), Verdict::Legacy(_)));
        // A result that is not a DiscoverResult is not a modern answer.
        assert!(matches!(
            classify_stdio(Some(Ok(reply(200, json!({"result": {}}))))),
            Verdict::Legacy(_)
        ));
        // A transport failure decides nothing.
        assert!(matches!(
            classify_stdio(Some(Err(Error::disconnected("eof")))),
            Verdict::Fail(_)
        ));
    }

    #[test]
    fn no_common_version_is_an_error_not_a_fallback() {
        let v = classify_stdio(Some(Ok(reply(
            400,
            json!({"error": {"code": -32022, "message": "m", "data": {"supported": ["2027-01-01"], "requested": "2026-07-28"}}}),
        ))));
        assert!(matches!(v, Verdict::Fail(Error::UnsupportedVersion { .. })));
    }

    #[test]
    fn http_probe() {
        assert!(is_modern(&classify_http(Ok(reply(200, discover())))));
        for code in [-32020, -32021] {
            // Modern, but the request was at fault: surfaced, never a fallback.
            assert!(matches!(
                classify_http(Ok(reply(400, error(code)))),
                Verdict::Fail(Error::Protocol { .. })
            ));
        }
        assert!(is_modern(&classify_http(Ok(reply(400, error(-32022))))));
        assert!(is_modern(&classify_http(Ok(reply(404, error(-32601))))));
        // 400 with a non-modern error (a legacy "no session" -32000, or -32602) is legacy.
        assert!(matches!(
            classify_http(Ok(reply(400, error(-32000)))),
            Verdict::Legacy(_)
        ));
        assert!(matches!(
            classify_http(Ok(reply(400, error(-32602)))),
            Verdict::Legacy(_)
        ));
        assert!(matches!(
            classify_http(Ok(reply(405, error(-32000)))),
            Verdict::Legacy(_)
        ));
        // A JSON-RPC error on a refusal status is the refusal: an HTTP error, not a fallback.
        for status in [401, 403, 421] {
            let v = classify_http(Ok(reply(status, error(-32600))));
            assert!(
                matches!(&v, Verdict::Fail(Error::Http(HttpError::Status { status: s, body }))
                    if s.as_u16() == status && body == "m"),
                "{v:?}"
            );
        }
        for status in [400, 404, 405] {
            let e = HttpError::status(StatusCode::from_u16(status).unwrap(), b"");
            assert!(matches!(classify_http(Err(e.into())), Verdict::Legacy(_)));
        }
        for status in [401, 500, 502] {
            let e = HttpError::status(StatusCode::from_u16(status).unwrap(), b"");
            assert!(matches!(classify_http(Err(e.into())), Verdict::Fail(_)));
        }
    }

    #[test]
    fn decisions_are_kept_per_origin() {
        let origin = "http://era-cache.test:1";
        assert_eq!(cached_era(origin), None);
        remember_era(
            origin,
            Some(Era::Legacy {
                version: "2025-11-25",
            }),
        );
        assert_eq!(
            cached_era(origin),
            Some(Era::Legacy {
                version: "2025-11-25"
            })
        );
        assert_eq!(cached_era("http://era-cache.test:2"), None);
        remember_era(origin, None);
        assert_eq!(cached_era(origin), None);
    }

    #[test]
    fn initialize_results_become_discover_results() {
        let raw = serde_json::value::to_raw_value(&json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {"listChanged": true}, "resources": {"subscribe": true}},
            "serverInfo": {"name": "legacy", "version": "1.0"},
            "instructions": "be nice"
        }))
        .unwrap();
        let (version, discover) = from_initialize(&raw).unwrap();
        assert_eq!(version, "2025-06-18");
        assert_eq!(discover.supported_versions, ["2025-06-18"]);
        assert_eq!(discover.instructions.as_deref(), Some("be nice"));
        assert_eq!(
            discover.meta.unwrap().server_info.unwrap().name,
            "legacy".to_owned()
        );
        assert_eq!(discover.ttl_ms, None);
        // The first SDKs' servers know only 2024-11-05: accepted.
        let raw = serde_json::value::to_raw_value(&json!({
            "protocolVersion": "2024-11-05", "capabilities": {}, "serverInfo": {"name": "old", "version": "0"}
        }))
        .unwrap();
        let (version, _) = from_initialize(&raw).unwrap();
        assert_eq!(version, "2024-11-05");
        // Anything older, or unknown, is not.
        for unknown in ["2024-10-07", "2025-01-01", "1.0"] {
            let raw = serde_json::value::to_raw_value(&json!({
                "protocolVersion": unknown, "capabilities": {}, "serverInfo": {"name": "old", "version": "0"}
            }))
            .unwrap();
            assert!(matches!(
                from_initialize(&raw),
                Err(Error::UnsupportedVersion { .. })
            ));
        }
        // What is offered stays the newest.
        let params = initialize_params(
            &Implementation::new("c", "1"),
            &kelson_types::ClientCapabilities::default(),
        );
        assert_eq!(params["protocolVersion"], "2025-11-25");
    }
}
