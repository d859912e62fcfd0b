//! `--json`: results as the server sent them, and JSON-RPC errors, on stdout.
//!
//! The typed results of `mcp-client` drop members they do not know (a later revision's, a vendor's)
//! and would add a `resultType` a legacy server never sent, so `--json` prints the text of the
//! result as received (`Request::on_result`), only re-indented: members, their order and numbers
//! stay as the server wrote them.

use std::sync::{Arc, Mutex};

use mcp_jsonrpc::{ErrorObject, RawValue};

/// The complete results of one request (one per page for a list), as received.
#[derive(Clone, Default)]
pub(crate) struct RawResults(Arc<Mutex<Vec<Box<RawValue>>>>);

impl RawResults {
    /// The callback for [`mcp_client::Request::on_result`] that keeps each result.
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
    fn errors_are_wrapped() {
        let e = ErrorObject::new(-32602, "Unknown tool").with_data(json!({"name": "x"}));
        assert_eq!(
            serde_json::from_str::<Value>(&error(&e)).unwrap(),
            json!({"error": {"code": -32602, "message": "Unknown tool", "data": {"name": "x"}}})
        );
    }
}
