//! What `mcp bench` sends: pre-encoded request bodies with a slot for the id, and the matching HTTP
//! headers, so generating a request costs a copy and an integer format.

use anyhow::{Context as _, bail};
use bytes::Bytes;
use serde_json::{Value, json};

/// One kind of request in the workload.
#[derive(Debug, Clone)]
pub(crate) struct Template {
    pub(crate) method: &'static str,
    /// `Mcp-Name`, already encoded for a header.
    pub(crate) name_header: Option<http::HeaderValue>,
    /// The body before the id.
    prefix: Vec<u8>,
    /// The body after the id.
    suffix: Vec<u8>,
    /// A label for reports.
    pub(crate) label: String,
}

impl Template {
    fn new(method: &'static str, params: Value, label: String) -> anyhow::Result<Self> {
        let name_header = mcp_http::name_header_value(method, &params);
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
        "io.modelcontextprotocol/protocolVersion": mcp_types::LATEST_PROTOCOL_VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "mcp-bench", "version": env!("CARGO_PKG_VERSION")},
    })
}

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
pub(crate) fn call(name: &str, arguments: &str) -> anyhow::Result<Template> {
    let arguments: Value = serde_json::from_str(arguments).context("--args is not JSON")?;
    if !arguments.is_object() {
        bail!("--args must be a JSON object");
    }
    Template::new(
        "tools/call",
        json!({"name": name, "arguments": arguments, "_meta": meta()}),
        format!("tools/call {name}"),
    )
}

/// `tools/list`.
pub(crate) fn list_tools() -> anyhow::Result<Template> {
    Template::new(
        "tools/list",
        json!({"_meta": meta()}),
        "tools/list".to_owned(),
    )
}

/// `resources/read` of `uri`.
pub(crate) fn read(uri: &str) -> anyhow::Result<Template> {
    Template::new(
        "resources/read",
        json!({"uri": uri, "_meta": meta()}),
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
            )?,
            "list" => list_tools()?,
            "read" => read(read_uri.context("--mix with `read` needs --read URI")?)?,
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
        let t = call("echo", r#"{"text":"hi"}"#).unwrap();
        let body = t.body(42);
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["id"], 42);
        assert_eq!(v["params"]["name"], "echo");
        assert_eq!(t.name_header.as_ref().unwrap(), "echo");
        assert!(list_tools().unwrap().name_header.is_none());
    }

    #[test]
    fn mixes_keep_their_proportions() {
        let w = mix("call=3,list=1", Some("echo"), "{}", None).unwrap();
        let picks: Vec<&str> = (0..8).map(|n| w.pick(n).method).collect();
        assert_eq!(picks.iter().filter(|m| **m == "tools/call").count(), 6);
        assert_eq!(picks[0], "tools/call");
        assert_eq!(picks[1], "tools/list");
        assert!(mix("call=1", None, "{}", None).is_err());
        assert!(mix("bogus", None, "{}", None).is_err());
    }
}
