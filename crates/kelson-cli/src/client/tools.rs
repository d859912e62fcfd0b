//! `kelson tools`: the tools as a table fitted to the terminal (`--wide`, or output that is not a
//! terminal: every value whole), or one tool in full (`kelson tools NAME`): its description, each
//! argument with its type, description and constraints (nested objects indented), its output
//! schema, annotations, and whatever else the server declared (`execution`, `_meta`, icons).
//!
//! The detail is read from the tool as the server sent it, not from the typed `Tool`, which drops
//! the members it does not model (a 2025 server's `execution.taskSupport`). Every name, value and
//! text in it is the server's, so each is cleaned before it is printed; the labels are ours.

use std::collections::HashMap;
use std::fmt::Write as _;

use clap::Args;
use kelson_client::Client;
use kelson_jsonrpc::RawValue;
use serde_json::Value;

use super::connect::stderr_style;
use super::json::{self, RawResults};
use super::offers::{self, Feature};
use super::output::{clean_line, display_width, first_line};
use super::verbs::{Out, not_offered};
use super::{CliError, Common, args, suggest};

/// `kelson tools [NAME]`.
#[derive(Args, Debug)]
pub(crate) struct ToolsArgs {
    /// Show this tool in full: description, each argument with its type, description, required
    /// mark and constraints (nested objects indented), output schema, annotations and execution.
    /// With --json: the tool as the server sent it.
    #[arg(value_name = "NAME")]
    name: Option<String>,
    /// Keep every column of the list whole instead of cutting it to the terminal's width (output
    /// that is not a terminal is never cut).
    #[arg(long, short = 'w')]
    wide: bool,
    #[command(flatten)]
    pub(super) common: Common,
}

/// The column the values of the detail view start at, after the labels.
const LABEL: usize = 12;
/// How deep nested schemas are shown; deeper ones are named, not opened.
const MAX_DEPTH: usize = 8;
/// The most enum values listed for one argument.
const MAX_ENUM: usize = 20;

/// Runs `kelson tools`.
pub(super) async fn run(client: &Client, out: &Out, args: ToolsArgs) -> Result<(), CliError> {
    if !offers::offers(client, Feature::Tools).await {
        if let Some(name) = &args.name {
            return Err(CliError::usage(format!(
                "this server offers no tools, so none named \"{}\"",
                clean_line(name)
            )));
        }
        not_offered(out, "tools", "tools");
        return Ok(());
    }
    match &args.name {
        Some(name) => detail(client, out, name).await,
        None => list(client, out, args.wide).await,
    }
}

async fn list(client: &Client, out: &Out, wide: bool) -> Result<(), CliError> {
    let tools = out.keep(client.list_all_tools()).await?;
    if out.json {
        out.json_list("tools");
        return Ok(());
    }
    if tools.is_empty() {
        out.print(&format!("{}\n", out.style.dim("(no tools)")));
        return Ok(());
    }
    let titled = tools
        .iter()
        .any(|t| t.title.is_some() || t.annotations.as_ref().is_some_and(|a| a.title.is_some()));
    let rows: Vec<Vec<String>> = tools
        .iter()
        .map(|t| {
            let mut row = vec![t.name.clone()];
            if titled {
                let title = t
                    .title
                    .clone()
                    .or_else(|| t.annotations.as_ref().and_then(|a| a.title.clone()));
                row.push(title.unwrap_or_default());
            }
            row.push(args::summary(&t.input_schema));
            row.push(first_line(t.description.as_deref()));
            row
        })
        .collect();
    let headers: &[&str] = if titled {
        &["NAME", "TITLE", "ARGUMENTS (* required)", "DESCRIPTION"]
    } else {
        &["NAME", "ARGUMENTS (* required)", "DESCRIPTION"]
    };
    let style = if wide {
        out.style.clone().unbounded()
    } else {
        out.style.clone()
    };
    out.print(&style.table(headers, &rows));
    if let Some(width) = style.width()
        && natural_width(headers, &rows) > width
    {
        // Short enough for an 80-column terminal.
        let note = stderr_style().dim(&format!(
            "(cut to {width} columns: --wide keeps values whole; kelson tools NAME shows one tool)"
        ));
        eprintln!("{note}");
    }
    Ok(())
}

/// The width of a table's lines with no cell cut (as [`super::output::Style::table`] lays it out).
fn natural_width(headers: &[&str], rows: &[Vec<String>]) -> usize {
    let mut widths: Vec<usize> = headers.iter().map(|h| display_width(h)).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(display_width(&clean_line(cell)));
        }
    }
    widths.iter().sum::<usize>() + 2 * widths.len().saturating_sub(1)
}

/// `kelson tools NAME`.
async fn detail(client: &Client, out: &Out, name: &str) -> Result<(), CliError> {
    let kept = RawResults::default();
    let tools = client.list_all_tools().on_result(kept.sink()).await?;
    let found = kept.take().iter().find_map(|page| tool_in(page, name));
    let Some(raw) = found else {
        return Err(CliError::usage(unknown(
            name,
            tools.iter().map(|t| t.name.as_str()),
        )));
    };
    if out.json {
        out.print(&format!("{}\n", json::pretty(raw.get())));
        return Ok(());
    }
    let tool: Value = serde_json::from_str(raw.get())
        .map_err(|e| CliError::Protocol(format!("the tool's definition does not parse: {e}")))?;
    let text = render(&tool, &|label| out.style.bold(label));
    out.print(&text);
    Ok(())
}

/// The tool named `name` in one `tools/list` page, as sent.
fn tool_in(page: &RawValue, name: &str) -> Option<Box<RawValue>> {
    #[derive(serde::Deserialize)]
    struct Named<'a> {
        #[serde(borrow)]
        name: std::borrow::Cow<'a, str>,
    }
    let members: HashMap<String, Box<RawValue>> = serde_json::from_str(page.get()).ok()?;
    let items: Vec<Box<RawValue>> = serde_json::from_str(members.get("tools")?.get()).ok()?;
    items.into_iter().find(|item| {
        serde_json::from_str::<Named<'_>>(item.get()).is_ok_and(|named| named.name == name)
    })
}

/// The error for a name the server does not list: the closest names it does.
fn unknown<'a>(name: &str, names: impl Iterator<Item = &'a str> + Clone) -> String {
    let count = names.clone().count();
    let mut message = format!("the server lists no tool named {:?}", clean_line(name));
    if let Some(question) = suggest::did_you_mean(&suggest::closest(name, names)) {
        let _ = write!(message, "; {question}");
    }
    let all = match count {
        0 => "none: it has no tools".to_owned(),
        1 => "its one tool".to_owned(),
        n => format!("all {n}"),
    };
    let _ = write!(message, " (kelson tools lists {all})");
    message
}

/// The detail view of one tool, as sent. `bold` styles our labels.
fn render(tool: &Value, bold: &dyn Fn(&str) -> String) -> String {
    let mut text = String::new();
    let mut section = |label: &str, lines: Vec<String>| {
        let mut lines = lines.into_iter();
        let first = lines.next().unwrap_or_default();
        // At least one space after a label, should the server's be long.
        let line = format!("{} {first}", bold(&format!("{label:<w$}", w = LABEL - 1)));
        let _ = writeln!(text, "{}", line.trim_end());
        for line in lines {
            let _ = writeln!(text, "{:LABEL$}{line}", "");
        }
    };
    let string = |key: &str| tool.get(key).and_then(Value::as_str);
    section(
        "tool",
        vec![clean_line(string("name").unwrap_or("")).into_owned()],
    );
    let title = string("title").or_else(|| {
        tool.get("annotations")
            .and_then(|a| a.get("title"))
            .and_then(Value::as_str)
    });
    if let Some(title) = title {
        section("title", vec![clean_line(title).into_owned()]);
    }
    if let Some(description) = string("description") {
        section("description", text_lines(description));
    }
    let input = tool.get("inputSchema").unwrap_or(&Value::Null);
    let (legend, lines) = schema_section(input, "(no arguments)");
    section("arguments", vec![legend]);
    flush(&mut section, lines);
    if let Some(output) = tool.get("outputSchema") {
        let (legend, lines) = schema_section(output, "");
        let legend = if legend.is_empty() {
            "(structuredContent)".to_owned()
        } else {
            format!("(structuredContent) {legend}")
        };
        section("output", vec![legend]);
        flush(&mut section, lines);
    }
    if let Some(annotations) = tool.get("annotations").and_then(Value::as_object) {
        let line = hints(annotations);
        if !line.is_empty() {
            section("annotations", vec![line]);
        }
    }
    let shown = [
        "name",
        "title",
        "description",
        "inputSchema",
        "outputSchema",
        "annotations",
    ];
    if let Some(members) = tool.as_object() {
        for (key, value) in members.iter().filter(|(k, _)| !shown.contains(&k.as_str())) {
            section(&clean_line(key), members_of(value));
        }
    }
    text
}

/// Lines that follow a section's label line, indented from the left edge.
fn flush(section: &mut impl FnMut(&str, Vec<String>), lines: Vec<String>) {
    // Printed under the label, at the left: a nested schema needs the room.
    for line in lines {
        section("", vec![line]);
    }
}

/// A multi-line text from the server as lines, each cleaned to one line.
fn text_lines(text: &str) -> Vec<String> {
    let lines: Vec<String> = text.lines().map(|l| clean_line(l).into_owned()).collect();
    if lines.is_empty() {
        vec![String::new()]
    } else {
        lines
    }
}

/// A schema's legend (`(* required)`, or `empty` for a schema without properties) and its lines.
fn schema_section(schema: &Value, empty: &str) -> (String, Vec<String>) {
    let mut lines = Vec::new();
    let root = Schema { root: schema };
    let resolved = root.resolve(schema, &mut Vec::new());
    let properties = resolved.get("properties").and_then(Value::as_object);
    let has_properties = properties.is_some_and(|p| !p.is_empty());
    if has_properties {
        root.properties(resolved, 0, &[], &mut lines);
    } else if resolved.get("type").and_then(Value::as_str) != Some("object") {
        // An output schema need not be an object: its type and constraints.
        let facts = facts(resolved);
        let mut line = format!("  {}", root.label(schema));
        if !facts.is_empty() {
            let _ = write!(line, " ({})", facts.join("; "));
        }
        lines.push(line);
    }
    if resolved.get("additionalProperties") == Some(&Value::Bool(false)) && has_properties {
        lines.push("  (no others accepted)".to_owned());
    }
    for keyword in [
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
        "dependentRequired",
        "dependentSchemas",
    ] {
        if let Some(value) = resolved.get(keyword) {
            lines.push(format!("  {keyword}: {}", compact(value)));
        }
    }
    let required = properties.is_some_and(|_| !required_of(resolved).is_empty());
    let legend = if required {
        "(* required)".to_owned()
    } else if has_properties {
        String::new()
    } else {
        empty.to_owned()
    };
    (legend, lines)
}

/// The names a schema object requires.
fn required_of(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// A schema and the document its local `$ref`s point into.
struct Schema<'a> {
    root: &'a Value,
}

impl<'a> Schema<'a> {
    /// `schema`, or what its local `$ref` (`#/...`) points to; `seen` holds the references being
    /// followed, so that a cycle stops. A reference that cannot be followed is left as it is.
    fn resolve(&self, schema: &'a Value, seen: &mut Vec<&'a str>) -> &'a Value {
        let Some(target) = schema.get("$ref").and_then(Value::as_str) else {
            return schema;
        };
        let Some(pointer) = target.strip_prefix('#') else {
            return schema;
        };
        if seen.contains(&target) || seen.len() > MAX_DEPTH {
            return schema;
        }
        match self.root.pointer(pointer) {
            Some(found) => {
                seen.push(target);
                self.resolve(found, seen)
            }
            None => schema,
        }
    }

    /// The lines of an object's properties at `depth`, each with its nested properties.
    fn properties(
        &self,
        object: &'a Value,
        depth: usize,
        seen: &[&'a str],
        lines: &mut Vec<String>,
    ) {
        let Some(properties) = object.get("properties").and_then(Value::as_object) else {
            return;
        };
        let required = required_of(object);
        let indent = "  ".repeat(depth + 1);
        for (name, property) in properties {
            let mark = if required.contains(&name.as_str()) {
                "*"
            } else {
                ""
            };
            let mut followed = seen.to_vec();
            let resolved = self.resolve(property, &mut followed);
            let mut line = format!(
                "{indent}{}{mark}: {}",
                clean_line(name),
                self.label(property)
            );
            let mut facts = facts(resolved);
            if let Some(target) = property.get("$ref").and_then(Value::as_str) {
                facts.insert(0, format!("from {}", clean_line(target)));
            }
            if !facts.is_empty() {
                let _ = write!(line, " ({})", facts.join("; "));
            }
            lines.push(line);
            let about = [resolved.get("title"), resolved.get("description")];
            for text in about.into_iter().flatten().filter_map(Value::as_str) {
                for text_line in text_lines(text) {
                    lines.push(format!("{indent}    {text_line}"));
                }
            }
            // Nested objects, and the objects an array holds, indented under their name.
            let items = resolved
                .get("items")
                .map(|i| self.resolve(i, &mut followed));
            let nested = match items {
                Some(items) if resolved.get("properties").is_none() => items,
                _ => resolved,
            };
            if nested
                .get("properties")
                .and_then(Value::as_object)
                .is_some()
            {
                if depth + 1 >= MAX_DEPTH || followed.len() > MAX_DEPTH {
                    lines.push(format!("{indent}  …"));
                } else {
                    self.properties(nested, depth + 1, &followed, lines);
                }
            }
        }
    }

    /// A schema's type for a person: `string`, `integer|null`, `array of string`, the
    /// alternatives of `anyOf`/`oneOf`, `enum`, `const` or `any`; a local `$ref` as what it points
    /// to.
    fn label(&self, schema: &'a Value) -> String {
        self.label_at(schema, &mut Vec::new())
    }

    fn label_at(&self, schema: &'a Value, seen: &mut Vec<&'a str>) -> String {
        let schema = self.resolve(schema, seen);
        if seen.len() > MAX_DEPTH {
            return "…".to_owned();
        }
        let alternatives = schema
            .get("anyOf")
            .or_else(|| schema.get("oneOf"))
            .and_then(Value::as_array);
        let label = match schema.get("type") {
            Some(Value::String(t)) => t.clone(),
            Some(Value::Array(list)) => list
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("|"),
            _ => match alternatives {
                Some(alternatives) if !alternatives.is_empty() => alternatives
                    .iter()
                    .map(|a| self.label_at(a, &mut seen.clone()))
                    .collect::<Vec<_>>()
                    .join(" | "),
                _ if schema.get("enum").is_some() => "enum".to_owned(),
                _ if schema.get("const").is_some() => "const".to_owned(),
                _ if schema.get("$ref").is_some() => "any".to_owned(),
                _ => "any".to_owned(),
            },
        };
        let label = clean_line(&label).into_owned();
        match schema.get("items") {
            Some(items) if label == "array" || label.starts_with("array|") => {
                format!("{label} of {}", self.label_at(items, &mut seen.clone()))
            }
            _ => label,
        }
    }
}

/// What a schema says about its values besides their type: enum values, bounds, lengths,
/// pattern, format, default, an example, the header it is mirrored into, deprecation. Each
/// cleaned.
fn facts(schema: &Value) -> Vec<String> {
    let mut facts = Vec::new();
    let get = |key: &str| schema.get(key);
    if let Some(values) = get("enum").and_then(Value::as_array) {
        let mut shown: Vec<String> = values.iter().take(MAX_ENUM).map(compact).collect();
        if values.len() > MAX_ENUM {
            shown.push(format!("and {} more", values.len() - MAX_ENUM));
        }
        facts.push(format!("one of {}", shown.join(", ")));
    }
    if let Some(value) = get("const") {
        facts.push(format!("always {}", compact(value)));
    }
    let number = |key: &str| get(key).filter(|v| v.is_number()).map(whole);
    match (number("minimum"), number("maximum")) {
        (Some(low), Some(high)) => facts.push(format!("{low} to {high}")),
        (Some(low), None) => facts.push(format!("at least {low}")),
        (None, Some(high)) => facts.push(format!("at most {high}")),
        (None, None) => {}
    }
    if let Some(low) = number("exclusiveMinimum") {
        facts.push(format!("more than {low}"));
    }
    if let Some(high) = number("exclusiveMaximum") {
        facts.push(format!("less than {high}"));
    }
    if let Some(step) = number("multipleOf") {
        facts.push(format!("a multiple of {step}"));
    }
    for (min, max, unit) in [
        ("minLength", "maxLength", "character"),
        ("minItems", "maxItems", "item"),
    ] {
        let count = |key: &str| get(key).and_then(Value::as_u64);
        let units = |n: u64| {
            if n == 1 {
                unit.to_owned()
            } else {
                format!("{unit}s")
            }
        };
        match (count(min), count(max)) {
            (Some(low), Some(high)) => facts.push(format!("{low} to {high} {}", units(high))),
            (Some(low), None) => facts.push(format!("at least {low} {}", units(low))),
            (None, Some(high)) => facts.push(format!("at most {high} {}", units(high))),
            (None, None) => {}
        }
    }
    if get("uniqueItems") == Some(&Value::Bool(true)) {
        facts.push("unique items".to_owned());
    }
    if let Some(pattern) = get("pattern").and_then(Value::as_str) {
        facts.push(format!("pattern {}", compact(&Value::from(pattern))));
    }
    if let Some(format) = get("format").and_then(Value::as_str) {
        facts.push(format!("format {}", clean_line(format)));
    }
    if let Some(value) = get("default") {
        facts.push(format!("default {}", compact(value)));
    }
    if let Some(example) = get("examples")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        facts.push(format!("e.g. {}", compact(example)));
    }
    if let Some(header) = get("x-mcp-header").and_then(Value::as_str) {
        facts.push(format!(
            "sent as the header Mcp-Param-{}",
            clean_line(header)
        ));
    }
    if get("deprecated") == Some(&Value::Bool(true)) {
        facts.push("deprecated".to_owned());
    }
    if get("additionalProperties") == Some(&Value::Bool(false))
        && get("properties").is_some_and(|p| p.as_object().is_some_and(|p| !p.is_empty()))
    {
        facts.push("no other members".to_owned());
    }
    facts
}

/// The behaviour hints, in words (`read-only: yes`), then any member this client does not know.
fn hints(annotations: &serde_json::Map<String, Value>) -> String {
    let known = [
        ("readOnlyHint", "read-only"),
        ("destructiveHint", "destructive"),
        ("idempotentHint", "idempotent"),
        ("openWorldHint", "open world"),
    ];
    let mut parts = Vec::new();
    for (key, words) in known {
        match annotations.get(key) {
            Some(Value::Bool(true)) => parts.push(format!("{words}: yes")),
            Some(Value::Bool(false)) => parts.push(format!("{words}: no")),
            Some(other) => parts.push(format!("{words}: {}", compact(other))),
            None => {}
        }
    }
    for (key, value) in annotations {
        if key != "title" && !known.iter().any(|(k, _)| k == key) {
            parts.push(format!("{}: {}", clean_line(key), compact(value)));
        }
    }
    parts.join(", ")
}

/// A member shown as it is: an object one line per member (`key: value`), anything else as JSON.
fn members_of(value: &Value) -> Vec<String> {
    match value.as_object() {
        Some(members) if !members.is_empty() => members
            .iter()
            .map(|(k, v)| format!("{}: {}", clean_line(k), plain(v)))
            .collect(),
        _ => vec![plain(value)],
    }
}

/// A string as it is (cleaned), anything else as compact JSON.
fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => clean_line(s).into_owned(),
        other => compact(other),
    }
}

/// A number as people write it: `3600.0` as `3600`; anything else as [`compact`].
fn whole(value: &Value) -> String {
    match value.as_f64() {
        Some(n) if value.is_f64() && n.fract() == 0.0 && n.abs() < 1e15 => format!("{n:.0}"),
        _ => compact(value),
    }
}

/// Compact JSON on one line, cleaned: JSON escapes the C0 controls in strings, not DEL, the C1
/// controls or the bidi ones.
fn compact(value: &Value) -> String {
    clean_line(&value.to_string()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plain_render(tool: &Value) -> String {
        render(tool, &|label| label.to_owned())
    }

    #[test]
    fn an_unknown_name_is_answered_with_the_closest() {
        let names = ["query", "execute"];
        assert_eq!(
            unknown("qery", names.into_iter()),
            "the server lists no tool named \"qery\"; did you mean \"query\"? (kelson tools lists all \
             2)"
        );
        assert_eq!(
            unknown("nothing\x1b[2J", names.into_iter()),
            "the server lists no tool named \"nothing␛[2J\" (kelson tools lists all 2)"
        );
        assert_eq!(
            unknown("x", [].into_iter()),
            "the server lists no tool named \"x\" (kelson tools lists none: it has no tools)"
        );
    }

    #[test]
    fn the_detail_shows_arguments_with_types_constraints_and_nesting() {
        let tool = json!({
            "name": "report",
            "title": "Report",
            "description": "Builds a report.\nSecond line.",
            "inputSchema": {
                "type": "object",
                "$defs": {"address": {"type": "object", "properties": {
                    "street": {"type": "string"}, "city": {"type": "string"}},
                    "required": ["city"]}},
                "properties": {
                    "seconds": {"type": "number", "minimum": 0, "maximum": 3600,
                                "description": "How long"},
                    "colour": {"type": "string", "enum": ["red", "blue"], "default": "blue"},
                    "address": {"$ref": "#/$defs/address"},
                    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
                    "rows": {"type": "array", "items": {"type": "object",
                             "properties": {"id": {"type": "integer"}}}}
                },
                "required": ["seconds"],
                "additionalProperties": false
            },
            "outputSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
            "annotations": {"readOnlyHint": true, "openWorldHint": false},
            "execution": {"taskSupport": "optional"},
            "_meta": {"example.com/scopes": ["db:read"]}
        });
        let text = plain_render(&tool);
        let expected = "\
tool        report
title       Report
description Builds a report.
            Second line.
arguments   (* required)
              seconds*: number (0 to 3600)
                  How long
              colour: string (one of \"red\", \"blue\"; default \"blue\")
              address: object (from #/$defs/address)
                street: string
                city*: string
              tags: array of string (at most 3 items)
              rows: array of object
                id: integer
              (no others accepted)
output      (structuredContent)
              ok: boolean
annotations read-only: yes, open world: no
execution   taskSupport: optional
_meta       example.com/scopes: [\"db:read\"]
";
        assert_eq!(text, expected, "{text}");
    }

    #[test]
    fn everything_from_the_server_is_cleaned() {
        let evil = "x\x1b[2J\u{202e}\u{9b}\r";
        let tool = json!({
            "name": evil,
            "description": format!("one {evil}\ntwo"),
            "inputSchema": {"type": "object", "properties": {
                evil: {"type": evil, "description": evil, "enum": [evil], "format": evil}
            }, "required": [evil], evil: evil},
            "annotations": {evil: evil},
            evil: {evil: evil}
        });
        let text = plain_render(&tool);
        for c in text.chars() {
            assert!(
                c == '\n' || !(c.is_control() || ('\u{202a}'..='\u{202e}').contains(&c)),
                "{c:?} in {text:?}"
            );
        }
        assert!(text.contains("x␛[2J<U+202E><U+009B>␍*: x␛[2J"), "{text}");
    }

    #[test]
    fn a_tool_without_arguments_says_so() {
        let text = plain_render(&json!({"name": "ping", "inputSchema": {"type": "object"}}));
        assert_eq!(text, "tool        ping\narguments   (no arguments)\n");
    }
}
