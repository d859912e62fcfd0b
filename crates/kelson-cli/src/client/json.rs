//! `--json`: results as the server sent them, and errors (the server's JSON-RPC errors, and
//! every other failure of a command that printed nothing), on stdout.
//!
//! The typed results of `kelson-client` drop members they do not know (a later revision's, a vendor's)
//! and would add a `resultType` a legacy server never sent, so `--json` prints the text of the
//! result as received (`Request::on_result`), only re-indented: members, their order and numbers
//! stay as the server wrote them.

use std::sync::{Arc, Mutex};

use kelson_client::ErrorKind;
use kelson_jsonrpc::{ErrorObject, RawValue};

use super::{CliError, EXIT_INTERRUPTED, EXIT_PROTOCOL, EXIT_TRANSPORT};

/// The complete results of one request (one per page for a list), as received.
#[derive(Clone, Default)]
pub(crate) struct RawResults(Arc<Mutex<Vec<Box<RawValue>>>>);

impl RawResults {
    /// The callback for [`kelson_client::Request::on_result`] that keeps each result.
    pub(crate) fn sink(&self) -> impl Fn(&RawValue) + Send + Sync + 'static {
        let kept = self.0.clone();
        move |raw| kept.lock().expect("results lock").push(raw.to_owned())
    }

    /// The results kept so far.
    pub(crate) fn take(&self) -> Vec<Box<RawValue>> {
        std::mem::take(&mut *self.0.lock().expect("results lock"))
    }
}

/// The text `--json` prints for one result: the last one kept (there is one per request), or
/// `None` when none was.
pub(crate) fn single(results: &RawResults) -> Option<String> {
    results.take().pop().map(|raw| pretty(raw.get()))
}

/// The text `--json` prints for a paginated list: the page itself when there is one, else one
/// object holding every page's items, under the list's member (`tools`, `prompts`, ...), each item
/// as sent.
pub(crate) fn list(results: &RawResults, member: &str) -> String {
    let mut pages = results.take();
    if pages.len() == 1 {
        return pretty(pages.remove(0).get());
    }
    let mut items: Vec<String> = Vec::new();
    for page in &pages {
        let members: std::collections::HashMap<String, Box<RawValue>> =
            serde_json::from_str(page.get()).unwrap_or_default();
        let page_items: Vec<Box<RawValue>> = members
            .get(member)
            .and_then(|list| serde_json::from_str(list.get()).ok())
            .unwrap_or_default();
        items.extend(page_items.iter().map(|item| item.get().to_owned()));
    }
    let member = serde_json::to_string(member).unwrap_or_default();
    pretty(&format!("{{{member}:[{}]}}", items.join(",")))
}

/// The text `--json` prints for a JSON-RPC error: the response's `error` member, under `error`,
/// so a script tells it from a result.
pub(crate) fn error(error: &ErrorObject) -> String {
    let value = serde_json::json!({ "error": error });
    serde_json::to_string_pretty(&value).unwrap_or_else(|_| value.to_string())
}

/// The text `--json` prints on stdout for a command that failed: a JSON-RPC error as
/// [`error`] prints it, whatever was printed before (as it always was); any other failure, only
/// when nothing was (`printed` false), as `{"error": {"kind": ..., "message": ..., "hint":
/// ...}}`. It has no `code`, which only the server's errors have, so a script tells the two
/// apart. `kind` follows the exit status: `protocol` (2), `transport` or `timeout` (3),
/// `usage` (4), `interrupted` (130); `hint` is there when the message on stderr has one. A tool
/// that reported an error has its result printed instead.
pub(crate) fn failure(failed: &CliError, printed: bool) -> Option<String> {
    let (inner, hint) = match failed {
        CliError::Explained { error, hint, .. } => (&**error, hint.as_deref()),
        other => (other, None),
    };
    if let CliError::Client(e) = inner
        && let Some(object) = e.error_object()
    {
        return Some(error(object));
    }
    if printed || matches!(inner, CliError::ToolError) {
        return None;
    }
    let timeout = matches!(inner, CliError::Client(e) if e.kind() == ErrorKind::Timeout);
    let kind = match failed.exit_code() {
        EXIT_PROTOCOL => "protocol",
        EXIT_TRANSPORT if timeout => "timeout",
        EXIT_TRANSPORT => "transport",
        EXIT_INTERRUPTED => "interrupted",
        _ => "usage",
    };
    let mut object = serde_json::Map::new();
    object.insert("kind".into(), kind.into());
    object.insert("message".into(), inner.to_string().into());
    if let Some(hint) = hint {
        object.insert("hint".into(), hint.into());
    }
    let value = serde_json::json!({ "error": object });
    Some(serde_json::to_string_pretty(&value).unwrap_or_else(|_| value.to_string()))
}

/// Re-indents valid JSON text the way `serde_json::to_string_pretty` lays it out (two spaces,
/// `"key": value`, empty containers as `{}` and `[]`), keeping every token as written: unlike a
/// round trip through `serde_json::Value`, member order and number spelling are the server's.
pub(crate) fn pretty(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 2);
    let mut depth = 0usize;
    let mut chars = text.chars().peekable();
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        for _ in 0..depth {
            out.push_str("  ");
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                out.push(c);
                let mut escaped = false;
                for c in chars.by_ref() {
                    out.push(c);
                    match c {
                        _ if escaped => escaped = false,
                        '\\' => escaped = true,
                        '"' => break,
                        _ => {}
                    }
                }
            }
            '{' | '[' => {
                while chars.peek().is_some_and(|c| c.is_ascii_whitespace()) {
                    chars.next();
                }
                out.push(c);
                let close = if c == '{' { '}' } else { ']' };
                if chars.peek() == Some(&close) {
                    chars.next();
                    out.push(close);
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(c);
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            c if c.is_ascii_whitespace() => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    #[test]
    fn pretty_matches_serde_json_and_keeps_the_text() {
        for value in [
            json!({"a": [1, 2, {"b": null}], "c": {}, "d": [], "e": "x, y: {z} \" \\ ]"}),
            json!([]),
            json!({}),
            json!("plain"),
            json!([[[]], [{}], {"k": [true, false, 1.5e3]}]),
        ] {
            let compact = value.to_string();
            assert_eq!(
                pretty(&compact),
                serde_json::to_string_pretty(&value).unwrap()
            );
            // Whitespace the server wrote is replaced, never added to.
            let spaced = serde_json::to_string_pretty(&value).unwrap();
            assert_eq!(pretty(&spaced), pretty(&compact));
        }
        // The server's member order and number spelling survive (a Value would sort and reformat).
        assert_eq!(
            pretty(r#"{"zeta":1.50,"alpha":{ }}"#),
            "{\n  \"zeta\": 1.50,\n  \"alpha\": {}\n}"
        );
    }

    #[test]
    fn one_page_is_printed_whole_and_several_are_merged() {
        let results = RawResults::default();
        let sink = results.sink();
        sink(&raw(
            r#"{"tools":[{"name":"b","x":1}],"nextCursor":"2","ttlMs":5}"#,
        ));
        let one = results.clone();
        assert_eq!(
            serde_json::from_str::<Value>(&list(&one, "tools")).unwrap(),
            json!({"tools": [{"name": "b", "x": 1}], "nextCursor": "2", "ttlMs": 5})
        );
        sink(&raw(r#"{"tools":[{"name":"b","x":1}],"nextCursor":"2"}"#));
        sink(&raw(r#"{"tools":[{"name":"a","y":{"z":[]}}]}"#));
        let merged = list(&results, "tools");
        assert!(merged.find("\"b\"").unwrap() < merged.find("\"a\"").unwrap());
        assert_eq!(
            serde_json::from_str::<Value>(&merged).unwrap(),
            json!({"tools": [{"name": "b", "x": 1}, {"name": "a", "y": {"z": []}}]})
        );
        assert!(results.take().is_empty());
        assert_eq!(single(&results), None);
    }

    #[test]
    fn failures_say_their_kind_and_json_rpc_errors_stay_the_servers() {
        let parse = |failed: &CliError, printed| -> Option<Value> {
            failure(failed, printed).map(|text| serde_json::from_str(&text).unwrap())
        };
        let refused = CliError::Explained {
            error: Box::new(CliError::Client(kelson_client::Error::Unsupported(
                "listen",
            ))),
            hint: Some("try this".into()),
            stderr: Some("the server's last words".into()),
        };
        assert_eq!(
            parse(&refused, false),
            Some(json!({"error": {"kind": "protocol",
                "message": "not supported by this server: listen", "hint": "try this"}}))
        );
        assert_eq!(
            parse(&refused, true),
            None,
            "after a result, stdout is left alone"
        );
        let timeout = CliError::Client(kelson_client::Error::Timeout {
            method: "tools/call".into(),
            after: std::time::Duration::from_secs(1),
            hard: false,
        });
        assert_eq!(parse(&timeout, false).unwrap()["error"]["kind"], "timeout");
        let usage = CliError::usage("--arg x: expected KEY=VALUE");
        assert_eq!(
            parse(&usage, false),
            Some(json!({"error": {"kind": "usage", "message": "--arg x: expected KEY=VALUE"}}))
        );
        assert_eq!(parse(&CliError::ToolError, false), None);
        let jsonrpc = CliError::Explained {
            error: Box::new(CliError::Client(kelson_client::Error::Protocol {
                method: "tools/call".into(),
                error: ErrorObject::new(-32602, "Unknown tool"),
            })),
            hint: Some("did you mean x?".into()),
            stderr: None,
        };
        assert_eq!(
            parse(&jsonrpc, true),
            Some(json!({"error": {"code": -32602, "message": "Unknown tool"}}))
        );
    }

    #[test]
    fn errors_are_wrapped() {
        let e = ErrorObject::new(-32602, "Unknown tool").with_data(json!({"name": "x"}));
        assert_eq!(
            serde_json::from_str::<Value>(&error(&e)).unwrap(),
            json!({"error": {"code": -32602, "message": "Unknown tool", "data": {"name": "x"}}})
        );
    }
}
