//! The tools the server lists, read once before the load: for the headers a modern call mirrors
//! (`x-mcp-header`), and to refuse at once a `--call` of a tool the server does not have, which
//! would otherwise fail for the whole run and be reported as a throughput.

use bytes::Bytes;
use kelson_jsonrpc::code;
use kelson_types::method_names;
use serde_json::{Value, json};

use super::workload::Workload;

/// The most pages read: enough for any real server, and a bound on one that pages forever.
pub(crate) const MAX_PAGES: u64 = 100;

/// The id of the `n`th page's request: below the probe's and `initialize`'s, far above the
/// load's, which count from 1.
pub(crate) fn page_id(n: u64) -> u64 {
    super::era::INITIALIZE_ID - 1 - n
}

/// The `tools/list` request for the page after `cursor` (the first without one), with the
/// modern envelope unless it goes to a legacy session.
pub(crate) fn request(n: u64, cursor: Option<&str>, legacy: bool) -> Bytes {
    let mut params = serde_json::Map::new();
    if let Some(cursor) = cursor {
        params.insert("cursor".into(), cursor.into());
    }
    if !legacy {
        params.insert(
            "_meta".into(),
            json!({
                "io.modelcontextprotocol/protocolVersion": kelson_types::LATEST_PROTOCOL_VERSION,
                "io.modelcontextprotocol/clientCapabilities": {},
            }),
        );
    }
    let body = json!({"jsonrpc": "2.0", "id": page_id(n), "method": method_names::TOOLS_LIST, "params": params});
    Bytes::from(body.to_string())
}

/// Why the tools could not be listed.
#[derive(Debug)]
pub(crate) enum Unlisted {
    /// The server has no tools to list: it answered `tools/list` with -32601.
    NoTools(String),
    /// Anything else (a refusal, an answer that is not one): the load will show it.
    Other(String),
}

impl std::fmt::Display for Unlisted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unlisted::NoTools(text) | Unlisted::Other(text) => f.write_str(text),
        }
    }
}

/// What the server listed.
#[derive(Debug, Default)]
pub(crate) struct Listed {
    pub(crate) tools: Vec<Value>,
    /// False when the pages were not all read ([`MAX_PAGES`]).
    pub(crate) complete: bool,
}

impl Listed {
    /// Adds the page in `message` (a JSON-RPC response); the cursor of the next page, if any.
    pub(crate) fn add(&mut self, message: &[u8]) -> Result<Option<String>, Unlisted> {
        let message: Value = serde_json::from_slice(message)
            .map_err(|e| Unlisted::Other(format!("tools/list: the answer is not JSON: {e}")))?;
        if let Some(error) = message.get("error") {
            let text = format!(
                "tools/list: JSON-RPC error {}: {}",
                error["code"],
                error["message"].as_str().unwrap_or_default()
            );
            return Err(if error["code"] == code::METHOD_NOT_FOUND {
                Unlisted::NoTools(text)
            } else {
                Unlisted::Other(text)
            });
        }
        let result = &message["result"];
        self.tools
            .extend(result["tools"].as_array().cloned().unwrap_or_default());
        Ok(result["nextCursor"].as_str().map(str::to_owned))
    }

    /// Whether the server lists a tool named `name`.
    fn has(&self, name: &str) -> bool {
        self.tools.iter().any(|t| t["name"].as_str() == Some(name))
    }
}

/// Refuses a workload that calls a tool the server does not have: one it does not list when the
/// whole list was read, or any when it has no tools at all. The message names the closest tools
/// it does list.
pub(crate) fn check(workload: &Workload, listed: Result<&Listed, &Unlisted>) -> Result<(), String> {
    for name in workload.called_tools() {
        let listed = match listed {
            Ok(listed) if listed.complete && !listed.has(name) => listed,
            Err(Unlisted::NoTools(answer)) => {
                return Err(format!(
                    "--call {name:?}: the server offers no tools ({answer})"
                ));
            }
            _ => continue,
        };
        let names = listed.tools.iter().filter_map(|t| t["name"].as_str());
        let near =
            crate::client::suggest::did_you_mean(&crate::client::suggest::closest(name, names))
                .map(|s| format!("; {s}"))
                .unwrap_or_default();
        let name = crate::client::clean_line(name);
        return Err(format!(
            "--call {name:?}: the server lists no tool named {name:?}{near} (kelson tools lists \
             them); nothing was measured"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(name: &str) -> Workload {
        Workload::single(super::super::workload::call(name, "{}", false).unwrap())
    }

    #[test]
    fn a_tool_the_server_lacks_is_refused_with_the_closest_names() {
        let mut listed = Listed::default();
        let next = listed
            .add(br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"echo"},{"name":"add"}],"nextCursor":"2"}}"#)
            .unwrap();
        assert_eq!(next.as_deref(), Some("2"));
        let next = listed
            .add(br#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"test_simple_text"}]}}"#)
            .unwrap();
        assert_eq!(next, None);
        listed.complete = true;
        assert_eq!(check(&workload("echo"), Ok(&listed)), Ok(()));
        assert_eq!(check(&workload("test_simple_text"), Ok(&listed)), Ok(()));
        let e = check(&workload("ehco"), Ok(&listed)).unwrap_err();
        assert!(
            e.contains("no tool named \"ehco\"; did you mean \"echo\"?"),
            "{e}"
        );
        // A list not read to its end refuses nothing.
        listed.complete = false;
        assert_eq!(check(&workload("ehco"), Ok(&listed)), Ok(()));
    }

    #[test]
    fn a_server_without_tools_refuses_every_call_and_other_failures_none() {
        let mut listed = Listed::default();
        let no_tools = listed
            .add(
                br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}"#,
            )
            .unwrap_err();
        let e = check(&workload("echo"), Err(&no_tools)).unwrap_err();
        assert!(e.contains("offers no tools") && e.contains("-32601"), "{e}");
        let other = listed.add(b"not json").unwrap_err();
        assert!(matches!(other, Unlisted::Other(_)));
        assert_eq!(check(&workload("echo"), Err(&other)), Ok(()));
        // A workload that calls nothing is not checked.
        let list = Workload::single(super::super::workload::list_tools(false).unwrap());
        assert_eq!(check(&list, Err(&no_tools)), Ok(()));
    }
}
