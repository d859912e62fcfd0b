//! The RFC 6570 URI-template matcher (kelson-server `registry/template.rs`, public as
//! `kelson_server::UriTemplate`): parse, match, and expand-then-match.
//!
//! Input: UTF-8 lines: the template, a URI to match, then values for the template's variables
//! in order.
//!
//! Properties:
//! - parsing and matching never panic and finish in bounded time (libFuzzer's timeout);
//! - a parsed template displays as its source;
//! - a match binds only the template's variables, and the variables it binds expand to a URI the
//!   template matches again (where it must match within the matcher's budget: see below);
//! - expand-then-match round-trips where RFC 6570 makes it defined (every variable has a
//!   non-empty value, no variable appears twice, no value holds a separator its expansion leaves
//!   as is (`.` in a label, `,` in a reserved expansion of several variables), no reserved expansion (`{+x}`, `{#x}`) of a value holding `%`, which RFC 6570
//!   passes through as `%XX` and a match decodes). Where the split between expressions is forced
//!   (each expression is followed by the end or by a literal whose first character its values
//!   cannot hold) the expansion matches as exactly the values given; elsewhere the matcher may
//!   have to try every split and gives up past its budget, so the expansion must match only when
//!   it is short (128 bytes) and the expressions few (three).

#![no_main]

use std::collections::{BTreeMap, BTreeSet};

use libfuzzer_sys::fuzz_target;
use kelson_server::UriTemplate;

/// The expressions of a template source, as (operator, names, whether their end is forced).
fn expressions(source: &str) -> Vec<(char, Vec<&str>, bool)> {
    let mut out = Vec::new();
    let mut rest = source;
    while let Some(start) = rest.find('{') {
        let end = start
            + rest[start..]
                .find('}')
                .expect("a parsed template closes its braces");
        let body = &rest[start + 1..end];
        let (op, names) = match body.chars().next() {
            Some(c @ ('+' | '#' | '.' | '/' | ';' | '?' | '&')) => (c, &body[1..]),
            _ => (' ', body),
        };
        rest = &rest[end + 1..];
        let forced = match rest.chars().next() {
            None => true,
            Some(c) => {
                let unreserved = c.is_ascii_alphanumeric() || "-._~".contains(c);
                let reserved = ":/?#[]@!$&'()*+,;=".contains(c);
                let can_hold = unreserved
                    || c == '%'
                    || c == '{'
                    || (matches!(op, '+' | '#') && reserved)
                    || (op == ' ' && c == ',')
                    || (op == '/' && c == ',')
                    || (op == ';' && ",=;".contains(c))
                    || (matches!(op, '?' | '&') && ",=&".contains(c))
                    || (op == '.' && c == '.');
                !can_hold
            }
        };
        out.push((op, names.split(',').collect(), forced));
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut lines = text.split('\n');
    let source = lines.next().unwrap_or_default();
    let uri = lines.next().unwrap_or_default();
    let values: Vec<&str> = lines.collect();

    let Ok(template) = UriTemplate::parse(source) else {
        return;
    };
    assert_eq!(template.as_str(), source);
    assert_eq!(template.to_string(), source);
    let variables: Vec<&str> = template.variables().collect();

    // Whether a URI of this template must match within the matcher's budget: always where the
    // split between expressions is forced; elsewhere (where the matcher may have to try every
    // split, and gives up past its budget) when the URI is short and the expressions few.
    let exprs = expressions(source);
    let forced = exprs.iter().all(|(_, _, forced)| *forced);
    let must_match = |uri: &str| forced || (uri.len() <= 128 && exprs.len() <= 3);

    if let Some(bound) = template.match_uri(uri) {
        for name in bound.keys() {
            assert!(
                variables.contains(&name.as_str()),
                "{name} is not a variable of {source}"
            );
        }
        let again = template.expand(&bound);
        // Reserved and fragment expansion (`{+x}`, `{#x}`) pass a value's `%XX` through as it is
        // (RFC 6570 3.2.3), so a value holding one (from `%25XX` in the URI) reads back as an
        // encoded byte: that round trip is not defined.
        let triplet = bound.values().any(|v| {
            v.as_bytes()
                .windows(3)
                .any(|w| w[0] == b'%' && w[1].is_ascii_hexdigit() && w[2].is_ascii_hexdigit())
        });
        assert!(
            triplet || !must_match(&again) || template.match_uri(&again).is_some(),
            "{source}: {uri:?} matched as {bound:?}, whose expansion {again:?} does not match"
        );
    }

    // Expand, then match.
    let distinct: BTreeSet<&str> = variables.iter().copied().collect();
    if distinct.len() != variables.len() || values.len() < variables.len() {
        return;
    }
    let vars: BTreeMap<String, String> = variables
        .iter()
        .zip(&values)
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect();
    if vars.values().any(String::is_empty) {
        return;
    }
    // A separator that expansion leaves unencoded inside a value (`.` in a label, `,` between
    // the values of a reserved expansion) makes the values of that expression unrecoverable.
    let raw_separator = exprs.iter().any(|(op, names, _)| match op {
        '.' => names.iter().any(|n| vars[*n].contains('.')),
        '+' | '#' if names.len() > 1 => names.iter().any(|n| vars[*n].contains(',')),
        _ => false,
    });
    if raw_separator {
        return;
    }
    let expanded = template.expand(&vars);
    if expanded.len() > 8192 {
        return;
    }
    let reserved_percent = exprs.iter().any(|(op, names, _)| {
        matches!(op, '+' | '#') && names.iter().any(|n| vars[*n].contains('%'))
    });
    if reserved_percent {
        // The `%XX` passed through come back decoded, or not at all when they decode to bytes
        // that are not UTF-8 (`%C1%A9`): RFC 6570 gives such values no inverse.
        return;
    }
    let Some(matched) = template.match_uri(&expanded) else {
        assert!(
            !must_match(&expanded),
            "{source}: the expansion {expanded:?} of {vars:?} does not match"
        );
        return;
    };
    // Where the split between expressions is a guess (adjacent expressions, a literal their
    // values may hold), the matcher's reading is one of several: it leniently takes raw
    // sub-delimiters (`,`) and reserved characters into values, which expansion would encode.
    if forced {
        assert_eq!(matched, vars, "{source}: expanded to {expanded:?}");
    }
});
