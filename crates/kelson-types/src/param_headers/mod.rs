//! `x-mcp-header` declarations: which tool arguments are mirrored into `Mcp-Param-{Name}` headers.
//!
//! spec 2026-07-28 basic/transports/streamable-http (Schema Extension) and server/tools: a property schema
//! inside a tool's `inputSchema` may carry `"x-mcp-header": "{Name}"`. The tool definition is valid only if
//! every annotation is a non-empty RFC 9110 token, unique ignoring ASCII case, on a `string`, `integer` or
//! `boolean` property whose integers stay within ±(2^53−1), and reachable from the root only through
//! `properties`. An HTTP client MUST drop a tool that breaks any of these rules.

use serde_json::{Map, Number, Value};

mod walk;

/// The schema keyword that declares a mirrored parameter.
const KEYWORD: &str = "x-mcp-header";

/// The largest integer a JavaScript peer holds exactly: 2^53 − 1.
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// The JSON type of a mirrored parameter, which decides how it is written and compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParamKind {
    /// Sent as is; compared exactly, case included.
    String,
    /// Sent in decimal; compared numerically, so `42`, `42.0` and `4.2e1` are equal.
    Integer,
    /// Sent as `true` or `false`; compared exactly.
    Boolean,
}

/// One valid `x-mcp-header` declaration of a tool.
///
/// The fields are private so that a `ParamHeader` always holds a valid token and its header name is
/// built once, when the tool is read, rather than on every request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamHeader {
    name: String,
    path: Vec<String>,
    kind: ParamKind,
    header: String,
    /// `Mcp-Param-{Name}` as people write it, for error messages.
    display: String,
}

impl ParamHeader {
    /// The declared `{Name}` of `Mcp-Param-{Name}`, as written in the schema.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The property names leading from the root of the arguments to the value, outermost first.
    pub fn path(&self) -> &[String] {
        &self.path
    }

    /// The declared JSON type of the value.
    pub fn kind(&self) -> ParamKind {
        self.kind
    }

    /// The header to send or check: `mcp-param-{name}` in lowercase, always a valid header name.
    pub fn header_name(&self) -> &str {
        &self.header
    }

    /// The header name as people write it, for error messages: `Mcp-Param-{Name}`.
    pub fn display_name(&self) -> &str {
        &self.display
    }

    /// The argument at the declared path, if every step exists and is an object.
    pub fn lookup<'a>(&self, arguments: &'a Map<String, Value>) -> Option<&'a Value> {
        let (last, parents) = self.path.split_last()?;
        let mut object = arguments;
        for key in parents {
            object = object.get(key)?.as_object()?;
        }
        object.get(last)
    }
}

/// Why a tool's `inputSchema` holds an invalid `x-mcp-header` declaration.
///
/// Each location is a JSON pointer into the `inputSchema`, such as `/properties/region`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeclarationError {
    /// The annotation sits on the root schema, which is the arguments object and not a property.
    #[error("x-mcp-header on the root of the inputSchema; it must annotate a property")]
    OnRoot,
    /// The annotation is reached through a keyword other than `properties`.
    #[error(
        "x-mcp-header at {pointer} is reached through `{keyword}`; it must be reachable from the root only through `properties`"
    )]
    NotStaticallyReachable {
        /// Where the annotated schema is.
        pointer: String,
        /// The first keyword on the way that is not `properties`.
        keyword: String,
    },
    /// The annotation's value is not a JSON string.
    #[error("x-mcp-header at {pointer} is not a string")]
    NotAString {
        /// Where the annotated schema is.
        pointer: String,
    },
    /// The annotation's value is the empty string.
    #[error("x-mcp-header at {pointer} is empty")]
    Empty {
        /// Where the annotated schema is.
        pointer: String,
    },
    /// The annotation's value is not an RFC 9110 token.
    #[error(
        "x-mcp-header {name:?} at {pointer} is not an RFC 9110 token (only letters, digits and !#$%&'*+-.^_`|~ are allowed)"
    )]
    NotAToken {
        /// Where the annotated schema is.
        pointer: String,
        /// The declared value.
        name: String,
    },
    /// Two annotations name the same header, ignoring ASCII case.
    #[error(
        "x-mcp-header {name:?} at {pointer} repeats {earlier:?} at {earlier_pointer}; names must be unique ignoring case"
    )]
    Duplicate {
        /// Where the second annotation is.
        pointer: String,
        /// The second declared value.
        name: String,
        /// Where the first annotation is.
        earlier_pointer: String,
        /// The first declared value.
        earlier: String,
    },
    /// The annotated property's `type` is absent, a list, or not `string`, `integer` or `boolean`.
    #[error(
        "x-mcp-header at {pointer} annotates a property whose `type` is {found}; it must be exactly \"string\", \"integer\" or \"boolean\""
    )]
    UnsupportedType {
        /// Where the annotated schema is.
        pointer: String,
        /// The `type` found, as JSON, or `absent`.
        found: String,
    },
    /// The annotated integer property's schema pins its values outside ±(2^53−1).
    #[error(
        "x-mcp-header at {pointer} annotates an integer whose `{keyword}` lies outside the safe range ±(2^53−1)"
    )]
    UnsafeInteger {
        /// Where the annotated schema is.
        pointer: String,
        /// The schema keyword at fault: `const`, `default`, `enum`, `minimum`, ...
        keyword: &'static str,
    },
}

/// Reads every `x-mcp-header` declaration of a tool's `inputSchema`.
///
/// The walk starts at the root and follows `properties` chains, so nested objects are fine. An annotation
/// found under any other subschema keyword (`items`, `prefixItems`, `additionalProperties`,
/// `patternProperties`, `oneOf`, `anyOf`, `allOf`, `not`, `if`, `then`, `else`, `$defs`,
/// `dependentSchemas`, ...) is an error, because only a `properties` chain gives the value one fixed place
/// in the arguments. The declaration must also carry its own `type`: a `$ref` is not followed.
///
/// Declarations come back in schema order. A schema without any annotation yields an empty list.
pub fn param_headers(
    input_schema: &Map<String, Value>,
) -> Result<Vec<ParamHeader>, DeclarationError> {
    let mut found = Vec::new();
    let mut pointers = Vec::new();
    walk::walk(
        input_schema,
        &mut String::new(),
        &mut Vec::new(),
        &mut found,
        &mut pointers,
    )?;
    Ok(found)
}

/// Checks one annotation found on a `properties` chain.
fn declaration(
    annotation: &Value,
    schema: &Map<String, Value>,
    pointer: &str,
    path: &[String],
) -> Result<ParamHeader, DeclarationError> {
    let at = || pointer.to_owned();
    let name = annotation
        .as_str()
        .ok_or_else(|| DeclarationError::NotAString { pointer: at() })?;
    if name.is_empty() {
        return Err(DeclarationError::Empty { pointer: at() });
    }
    // RFC 9110 §5.1 and §5.6.2: a field name is `1*tchar`, which also rules out controls and CR/LF.
    if !name.bytes().all(is_tchar) {
        return Err(DeclarationError::NotAToken {
            pointer: at(),
            name: name.to_owned(),
        });
    }
    let kind = match schema.get("type") {
        Some(Value::String(t)) if t == "string" => ParamKind::String,
        Some(Value::String(t)) if t == "integer" => ParamKind::Integer,
        Some(Value::String(t)) if t == "boolean" => ParamKind::Boolean,
        other => {
            return Err(DeclarationError::UnsupportedType {
                pointer: at(),
                found: other.map_or_else(|| "absent".to_owned(), Value::to_string),
            });
        }
    };
    if kind == ParamKind::Integer {
        check_integer_range(schema, pointer)?;
    }
    // A token is a valid header name; HTTP header names are case-insensitive and sent lowercase.
    let header = format!("mcp-param-{}", name.to_ascii_lowercase());
    Ok(ParamHeader {
        name: name.to_owned(),
        path: path.to_vec(),
        kind,
        header,
        display: format!("Mcp-Param-{name}"),
    })
}

/// Rejects an integer schema that itself names values outside ±(2^53−1).
///
/// spec 2026-07-28 Schema Extension: "Integer values MUST be within the safe range for JavaScript". The
/// rule is about values, and a schema without bounds (the common case, e.g. a Rust `i64`) says nothing
/// about them, so it cannot be what makes a tool invalid: dropping such tools would break real servers.
/// What the declaration can get wrong is to name an unsafe value itself, so we reject a `const`,
/// `default` or `enum` member beyond the range, and bounds that leave no safe integer at all
/// (`minimum` above the range, `maximum` below it, and their exclusive forms). A bound merely wider
/// than the range, such as `maximum: 2^63−1`, says no more than an absent bound and is accepted.
fn check_integer_range(schema: &Map<String, Value>, pointer: &str) -> Result<(), DeclarationError> {
    let unsafe_value = |v: &Value| v.as_f64().is_some_and(|f| f.abs() > MAX_SAFE_INTEGER);
    let number = |key: &str| {
        schema
            .get(key)
            .and_then(Value::as_number)
            .and_then(Number::as_f64)
    };
    let fail = |keyword| {
        Err(DeclarationError::UnsafeInteger {
            pointer: pointer.to_owned(),
            keyword,
        })
    };
    // Rounding to f64 is monotonic and both ±(2^53−1) and ±2^53 are exact, so these comparisons
    // against the bound are exact even for i64 and u64 values.
    if schema.get("const").is_some_and(unsafe_value) {
        return fail("const");
    }
    if schema.get("default").is_some_and(unsafe_value) {
        return fail("default");
    }
    if let Some(Value::Array(members)) = schema.get("enum")
        && members.iter().any(unsafe_value)
    {
        return fail("enum");
    }
    if number("minimum").is_some_and(|m| m > MAX_SAFE_INTEGER) {
        return fail("minimum");
    }
    if number("exclusiveMinimum").is_some_and(|m| m >= MAX_SAFE_INTEGER) {
        return fail("exclusiveMinimum");
    }
    if number("maximum").is_some_and(|m| m < -MAX_SAFE_INTEGER) {
        return fail("maximum");
    }
    if number("exclusiveMaximum").is_some_and(|m| m <= -MAX_SAFE_INTEGER) {
        return fail("exclusiveMaximum");
    }
    Ok(())
}

/// RFC 9110 §5.6.2 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests;
