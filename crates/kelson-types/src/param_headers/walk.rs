//! The walk over a tool's `inputSchema`: `properties` chains lead to declarations, every other
//! subschema keyword leads to a refusal.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::{DeclarationError, KEYWORD, ParamHeader, declaration};

/// Follows `properties` chains, collecting declarations, and forbids annotations everywhere else.
pub(super) fn walk(
    schema: &Map<String, Value>,
    pointer: &mut String,
    path: &mut Vec<String>,
    found: &mut Vec<ParamHeader>,
    pointers: &mut Vec<String>,
) -> Result<(), DeclarationError> {
    if let Some(annotation) = schema.get(KEYWORD) {
        if path.is_empty() {
            return Err(DeclarationError::OnRoot);
        }
        let declared = declaration(annotation, schema, pointer, path)?;
        if let Some(i) = found
            .iter()
            .position(|d| d.name.eq_ignore_ascii_case(&declared.name))
        {
            return Err(DeclarationError::Duplicate {
                pointer: pointer.clone(),
                name: declared.name,
                earlier_pointer: pointers[i].clone(),
                earlier: found[i].name.clone(),
            });
        }
        found.push(declared);
        pointers.push(pointer.clone());
    }
    for (keyword, value) in schema {
        let len = pointer.len();
        push_segment(pointer, keyword);
        if keyword == "properties" {
            for (name, sub) in value.as_object().into_iter().flatten() {
                if let Some(sub) = sub.as_object() {
                    let inner = pointer.len();
                    push_segment(pointer, name);
                    path.push(name.clone());
                    walk(sub, pointer, path, found, pointers)?;
                    path.pop();
                    pointer.truncate(inner);
                }
            }
        } else {
            forbid_below(keyword, value, pointer, keyword)?;
        }
        pointer.truncate(len);
    }
    Ok(())
}

/// Fails on any annotation in `schema` or below it, which was reached through `origin`.
fn forbid(
    schema: &Map<String, Value>,
    pointer: &mut String,
    origin: &str,
) -> Result<(), DeclarationError> {
    if schema.contains_key(KEYWORD) {
        return Err(DeclarationError::NotStaticallyReachable {
            pointer: pointer.clone(),
            keyword: origin.to_owned(),
        });
    }
    for (keyword, value) in schema {
        let len = pointer.len();
        push_segment(pointer, keyword);
        forbid_below(keyword, value, pointer, origin)?;
        pointer.truncate(len);
    }
    Ok(())
}

/// Runs [`forbid`] on every subschema that `keyword` holds in `value`; `pointer` ends at `keyword`.
fn forbid_below(
    keyword: &str,
    value: &Value,
    pointer: &mut String,
    origin: &str,
) -> Result<(), DeclarationError> {
    for (step, sub) in subschemas(keyword, value) {
        let len = pointer.len();
        match step {
            Some(Step::Index(i)) => {
                let _ = write!(pointer, "/{i}");
            }
            Some(Step::Key(key)) => push_segment(pointer, key),
            None => {}
        }
        forbid(sub, pointer, origin)?;
        pointer.truncate(len);
    }
    Ok(())
}

/// How a subschema sits inside a keyword's value: at a list index or under a map key.
enum Step<'a> {
    Index(usize),
    Key(&'a str),
}

/// The subschemas that `keyword` holds in `value`; no step means the value is the subschema itself.
///
/// Only keywords whose values are schemas are followed (JSON Schema 2020-12 applicators, plus the
/// draft-07 spellings `definitions`, `dependencies` and `additionalItems`); values of `const`, `enum`,
/// `default`, `examples` and unknown keywords are data, so an `x-mcp-header` key inside them declares
/// nothing. Boolean schemas hold no keywords and are skipped.
fn subschemas<'a>(
    keyword: &str,
    value: &'a Value,
) -> Vec<(Option<Step<'a>>, &'a Map<String, Value>)> {
    let list = |items: &'a [Value]| {
        items
            .iter()
            .enumerate()
            .filter_map(|(i, sub)| Some((Some(Step::Index(i)), sub.as_object()?)))
            .collect()
    };
    match (keyword, value) {
        // `items` may also be a list in draft-07.
        ("items" | "additionalItems", Value::Array(items)) => list(items),
        (
            "additionalProperties"
            | "propertyNames"
            | "items"
            | "contains"
            | "not"
            | "if"
            | "then"
            | "else"
            | "unevaluatedItems"
            | "unevaluatedProperties"
            | "contentSchema"
            | "additionalItems",
            Value::Object(sub),
        ) => vec![(None, sub)],
        ("prefixItems" | "allOf" | "anyOf" | "oneOf", Value::Array(items)) => list(items),
        // Maps of name to subschema; `dependencies` values may also be string lists, which hold none.
        (
            "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas"
            | "dependencies",
            Value::Object(map),
        ) => map
            .iter()
            .filter_map(|(key, sub)| Some((Some(Step::Key(key)), sub.as_object()?)))
            .collect(),
        _ => Vec::new(),
    }
}

/// Appends one RFC 6901 reference token.
fn push_segment(pointer: &mut String, segment: &str) {
    pointer.push('/');
    for c in segment.chars() {
        match c {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            c => pointer.push(c),
        }
    }
}
