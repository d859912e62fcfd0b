//! What `kelson bench` sends: pre-encoded request bodies with a slot for the id, and the matching HTTP
//! headers, so generating a request costs a copy and an integer format. A modern request carries
//! its `_meta` envelope; a legacy one (a handshake-era session) carries none, since `initialize`
//! settled what it says.

use anyhow::{Context as _, bail};
use bytes::Bytes;
use kelson_types::{Method, method_names};
use serde_json::{Value, json};

/// One kind of request in the workload.
#[derive(Debug, Clone)]
pub(crate) struct Template {
    pub(crate) method: &'static str,
    /// `Mcp-Name`, already encoded for a header.
    pub(crate) name_header: Option<http::HeaderValue>,
    /// The `Mcp-Param-*` headers a `tools/call` mirrors from its arguments (the tool's
    /// `x-mcp-header` declarations, from the server's `tools/list`); set by [`Workload::mirror`].
    pub(crate) param_headers: Vec<(http::HeaderName, http::HeaderValue)>,
    /// The tool called and its arguments, for the mirroring.
    call: Option<(String, serde_json::Map<String, Value>)>,
    /// The body before the id.
    prefix: Vec<u8>,
    /// The body after the id.
    suffix: Vec<u8>,
    /// A label for reports.
    pub(crate) label: String,
}

impl Template {
    fn new(method: &'static str, params: Value, label: String) -> anyhow::Result<Self> {
        let name_header = kelson_http::name_header_value(method, &params);
        let call = matches!(Method::parse(method), Method::CallTool)
            .then(|| {
                let name = params.get("name")?.as_str()?.to_owned();
                let arguments = params.get("arguments")?.as_object()?.clone();
                Some((name, arguments))
            })
            .flatten();
        let params = serde_json::to_string(&params)?;
        // {"jsonrpc":"2.0","method":M,"params":P,"id":ID}
        let prefix = format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":{},\"params\":{params},\"id\":",
            serde_json::to_string(method)?
        )
        .into_bytes();
        Ok(Template {
            method,
            name_header,
            param_headers: Vec::new(),
            call,
            prefix,
            suffix: b"}".to_vec(),
            label,
        })
    }

    /// The request body for `id`.
    pub(crate) fn body(&self, id: u64) -> Bytes {
        let mut out = Vec::with_capacity(self.prefix.len() + 24);
        out.extend_from_slice(&self.prefix);
        out.extend_from_slice(id.to_string().as_bytes());
        out.extend_from_slice(&self.suffix);
        Bytes::from(out)
    }
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": kelson_types::LATEST_PROTOCOL_VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "kelson-bench", "version": env!("CARGO_PKG_VERSION")},
    })
}

/// `params` with the modern envelope added, unless the requests go to a legacy session.
fn with_meta(mut params: Value, legacy: bool) -> Value {
    if !legacy && let Some(map) = params.as_object_mut() {
        map.insert("_meta".to_owned(), meta());
    }
    params
}

/// The era-probe request: a modern `server/discover` (spec 2026-07-28 basic/versioning).
pub(crate) fn discover() -> anyhow::Result<Template> {
    Template::new(
        method_names::SERVER_DISCOVER,
        with_meta(json!({}), false),
        method_names::SERVER_DISCOVER.to_owned(),
    )
}

/// The legacy handshake's `initialize` request, offering the newest legacy revision.
pub(crate) fn initialize() -> anyhow::Result<Template> {
    Template::new(
        method_names::INITIALIZE,
        json!({
            "protocolVersion": kelson_client::LEGACY_VERSIONS[0],
            "capabilities": {},
            "clientInfo": {"name": "kelson-bench", "version": env!("CARGO_PKG_VERSION")},
        }),
        method_names::INITIALIZE.to_owned(),
    )
}

/// The notification that ends the legacy handshake.
pub(crate) const INITIALIZED: &[u8] = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// The weighted mix of templates, expanded into a deterministic rotation.
#[derive(Debug, Clone)]
pub(crate) struct Workload {
    pub(crate) templates: Vec<Template>,
    rotation: Vec<usize>,
}

impl Workload {
    pub(crate) fn single(template: Template) -> Self {
        Workload {
            templates: vec![template],
            rotation: vec![0],
        }
    }

    /// The template for the `n`th request.
    /// Sets each `tools/call`'s `Mcp-Param-*` headers from the tools' input schemas (spec
    /// 2026-07-28: clients mirror `x-mcp-header` arguments into headers). A tool missing from
    /// `tools`, or whose declarations are invalid, gets none.
    pub(crate) fn mirror(&mut self, tools: &[Value]) {
        for template in &mut self.templates {
            let Some((name, arguments)) = &template.call else {
                continue;
            };
            let schema = tools
                .iter()
                .find(|t| t["name"].as_str() == Some(name.as_str()))
                .and_then(|t| t["inputSchema"].as_object());
            let Some(decls) = schema.and_then(|s| kelson_types::param_headers(s).ok()) else {
                continue;
            };
            template.param_headers = kelson_http::param_header_values(&decls, arguments);
        }
    }

    /// The tools the workload calls.
    pub(crate) fn called_tools(&self) -> impl Iterator<Item = &str> {
        self.templates
            .iter()
            .filter_map(|t| t.call.as_ref().map(|(name, _)| name.as_str()))
    }

    /// Whether any request is a `tools/call`.
    pub(crate) fn calls_tools(&self) -> bool {
        self.templates.iter().any(|t| t.call.is_some())
    }

    pub(crate) fn pick(&self, n: u64) -> &Template {
        let index = self.rotation[(n % self.rotation.len() as u64) as usize];
        &self.templates[index]
    }

    pub(crate) fn describe(&self) -> String {
        self.templates
            .iter()
            .map(|t| t.label.clone())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// `tools/call` of `name` with `arguments`.
pub(crate) fn call(name: &str, arguments: &str, legacy: bool) -> anyhow::Result<Template> {
    let arguments: Value = serde_json::from_str(arguments).context("--args is not JSON")?;
    if !arguments.is_object() {
        bail!("--args must be a JSON object");
    }
    Template::new(
        method_names::TOOLS_CALL,
        with_meta(json!({"name": name, "arguments": arguments}), legacy),
        format!("tools/call {name}"),
    )
}

/// `tools/list`.
pub(crate) fn list_tools(legacy: bool) -> anyhow::Result<Template> {
    Template::new(
        method_names::TOOLS_LIST,
        with_meta(json!({}), legacy),
        method_names::TOOLS_LIST.to_owned(),
    )
}

/// `resources/read` of `uri`.
pub(crate) fn read(uri: &str, legacy: bool) -> anyhow::Result<Template> {
    Template::new(
        method_names::RESOURCES_READ,
        with_meta(json!({"uri": uri}), legacy),
        format!("resources/read {uri}"),
    )
}

/// A mix such as `call=3,list=1,read=1`, with `call` and `read` taking the `--call`/`--args` and
/// `--read` settings.
pub(crate) fn mix(
    spec: &str,
    call_name: Option<&str>,
    call_args: &str,
    read_uri: Option<&str>,
    legacy: bool,
) -> anyhow::Result<Workload> {
    let mut templates = Vec::new();
    let mut rotation = Vec::new();
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (kind, weight) = part.split_once('=').unwrap_or((part, "1"));
        let weight: usize = weight
            .trim()
            .parse()
            .with_context(|| format!("--mix: bad weight in {part:?}"))?;
        if weight == 0 || weight > 1000 {
            bail!("--mix: weights are 1 to 1000, got {weight} in {part:?}");
        }
        let template = match kind.trim() {
            "call" => call(
                call_name.context("--mix with `call` needs --call NAME")?,
                call_args,
                legacy,
            )?,
            "list" => list_tools(legacy)?,
            "read" => read(
                read_uri.context("--mix with `read` needs --read URI")?,
                legacy,
            )?,
            other => bail!("--mix: unknown kind {other:?} (use call, list, read)"),
        };
        let index = templates.len();
        templates.push(template);
        rotation.extend(std::iter::repeat_n(index, weight));
    }
    if templates.is_empty() {
        bail!("--mix is empty");
    }
    // Interleave so that a short run still sees the proportions.
    let mut interleaved = Vec::with_capacity(rotation.len());
    let mut counts: Vec<usize> = (0..templates.len())
        .map(|i| rotation.iter().filter(|&&r| r == i).count())
        .collect();
    while counts.iter().any(|&c| c > 0) {
        for (i, c) in counts.iter_mut().enumerate() {
            if *c > 0 {
                interleaved.push(i);
                *c -= 1;
            }
        }
    }
    Ok(Workload {
        templates,
        rotation: interleaved,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_valid_requests_with_the_id() {
        let t = call("echo", r#"{"text":"hi"}"#, false).unwrap();
        let body = t.body(42);
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["id"], 42);
        assert_eq!(v["params"]["name"], "echo");
        assert_eq!(
            v["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
            kelson_types::LATEST_PROTOCOL_VERSION
        );
        assert_eq!(t.name_header.as_ref().unwrap(), "echo");
        assert!(list_tools(false).unwrap().name_header.is_none());
    }

    #[test]
    fn legacy_bodies_have_no_envelope() {
        let v: Value =
            serde_json::from_slice(&call("echo", r#"{"text":"hi"}"#, true).unwrap().body(7))
                .unwrap();
        assert_eq!(
            v["params"],
            json!({"name": "echo", "arguments": {"text": "hi"}})
        );
        let v: Value = serde_json::from_slice(&list_tools(true).unwrap().body(8)).unwrap();
        assert_eq!(v["params"], json!({}));
        let v: Value = serde_json::from_slice(&initialize().unwrap().body(0)).unwrap();
        assert_eq!(v["method"], "initialize");
        assert_eq!(v["params"]["protocolVersion"], "2025-11-25");
        assert!(v["params"].get("_meta").is_none());
        let v: Value = serde_json::from_slice(INITIALIZED).unwrap();
        assert!(v.get("id").is_none());
    }

    #[test]
    fn mixes_keep_their_proportions() {
        let w = mix("call=3,list=1", Some("echo"), "{}", None, false).unwrap();
        let picks: Vec<&str> = (0..8).map(|n| w.pick(n).method).collect();
        assert_eq!(picks.iter().filter(|m| **m == "tools/call").count(), 6);
        assert_eq!(picks[0], "tools/call");
        assert_eq!(picks[1], "tools/list");
        assert!(mix("call=1", None, "{}", None, false).is_err());
        assert!(mix("bogus", None, "{}", None, false).is_err());
    }

    #[test]
    fn calls_mirror_their_tools_declared_arguments_into_headers() {
        let tools = [
            json!({"name": "query", "inputSchema": {"type": "object", "properties": {
                "database": {"type": "string", "x-mcp-header": "Database"},
                "sql": {"type": "string"},
            }}}),
            json!({"name": "other", "inputSchema": {"type": "object"}}),
        ];
        let mut workload = mix(
            "call=1,list=1",
            Some("query"),
            r#"{"database": "acme", "sql": "SELECT 1"}"#,
            None,
            false,
        )
        .unwrap();
        assert!(workload.calls_tools());
        workload.mirror(&tools);
        let first = workload.pick(0);
        assert_eq!(first.method, "tools/call");
        let headers: Vec<(String, String)> = first
            .param_headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap().to_owned()))
            .collect();
        assert_eq!(
            headers,
            [("mcp-param-database".to_owned(), "acme".to_owned())]
        );
        assert!(workload.pick(1).param_headers.is_empty());

        // A tool the server does not list gets no headers; a list-only workload calls nothing.
        let mut unknown = Workload::single(call("missing", "{}", false).unwrap());
        unknown.mirror(&tools);
        assert!(unknown.pick(0).param_headers.is_empty());
        assert!(!Workload::single(list_tools(false).unwrap()).calls_tools());
    }
}
