//! RFC 6570 URI templates, levels 1 to 3: parsing, matching a concrete URI back to variables, and
//! expansion.
//!
//! spec 2026-07-28 server/resources: resource templates are RFC 6570 templates; the server finds the
//! template a `resources/read` URI belongs to by matching it.

use std::collections::BTreeMap;
use std::fmt;

/// The longest URI the matcher will look at; longer ones never match. This bounds backtracking.
const MAX_URI_LEN: usize = 8192;

/// The work one match may do, in bytes looked at: the text an expression could take, each way of
/// ending it that is tried, and the text bound; a URI that needs more is not matched. Where each
/// expression is followed by the end or by a literal its values cannot hold, a match costs a few
/// times the URI's length. Adjacent expressions, or expressions followed by characters their
/// values may hold, let a crafted URI make the matcher try exponentially many splits (the fuzz
/// target `uri_template` found a 120-byte URI that took seconds against seven expressions); this
/// bounds such a match to milliseconds, and leaves room for a legitimate URI of two adjacent
/// expressions up to a few thousand bytes long.
const MATCH_BUDGET: usize = 1 << 22;

/// A parsed URI template.
#[derive(Clone, PartialEq, Eq)]
pub struct UriTemplate {
    source: String,
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Literal(String),
    Expr(Operator, Vec<String>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Operator {
    Simple,
    Reserved,
    Fragment,
    Label,
    Path,
    PathParam,
    Query,
    QueryCont,
}

impl Operator {
    fn prefix(self) -> &'static str {
        match self {
            Operator::Simple | Operator::Reserved => "",
            Operator::Fragment => "#",
            Operator::Label => ".",
            Operator::Path => "/",
            Operator::PathParam => ";",
            Operator::Query => "?",
            Operator::QueryCont => "&",
        }
    }

    fn separator(self) -> char {
        match self {
            Operator::Simple | Operator::Reserved | Operator::Fragment => ',',
            Operator::Label => '.',
            Operator::Path => '/',
            Operator::PathParam => ';',
            Operator::Query | Operator::QueryCont => '&',
        }
    }

    fn named(self) -> bool {
        matches!(
            self,
            Operator::PathParam | Operator::Query | Operator::QueryCont
        )
    }

    /// Whether reserved characters (such as `/`) pass through expansion unencoded.
    fn allows_reserved(self) -> bool {
        matches!(self, Operator::Reserved | Operator::Fragment)
    }
}

/// Why a template could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid URI template {template:?}: {reason}")]
pub struct TemplateError {
    template: String,
    reason: &'static str,
}

impl UriTemplate {
    /// Parses a level 1-3 template. Level 4 modifiers (`:n` prefixes and `*` explode) are refused.
    pub fn parse(template: &str) -> Result<Self, TemplateError> {
        let err = |reason| TemplateError {
            template: template.to_owned(),
            reason,
        };
        let mut parts = Vec::new();
        let mut rest = template;
        while !rest.is_empty() {
            match rest.find('{') {
                Some(0) => {
                    let end = rest.find('}').ok_or_else(|| err("unclosed '{'"))?;
                    let body = &rest[1..end];
                    let (op, names) = match body.chars().next() {
                        Some('+') => (Operator::Reserved, &body[1..]),
                        Some('#') => (Operator::Fragment, &body[1..]),
                        Some('.') => (Operator::Label, &body[1..]),
                        Some('/') => (Operator::Path, &body[1..]),
                        Some(';') => (Operator::PathParam, &body[1..]),
                        Some('?') => (Operator::Query, &body[1..]),
                        Some('&') => (Operator::QueryCont, &body[1..]),
                        Some(c) if c == '=' || c == ',' || c == '!' || c == '@' || c == '|' => {
                            return Err(err("reserved operator"));
                        }
                        Some(_) => (Operator::Simple, body),
                        None => return Err(err("empty expression")),
                    };
                    let mut vars = Vec::new();
                    for name in names.split(',') {
                        if name.is_empty() {
                            return Err(err("empty variable name"));
                        }
                        if name.contains([':', '*']) {
                            return Err(err("level 4 modifiers are not supported"));
                        }
                        if !name
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '%')
                        {
                            return Err(err("invalid variable name"));
                        }
                        vars.push(name.to_owned());
                    }
                    parts.push(Part::Expr(op, vars));
                    rest = &rest[end + 1..];
                }
                Some(i) => {
                    parts.push(Part::Literal(rest[..i].to_owned()));
                    rest = &rest[i..];
                }
                None => {
                    if rest.contains('}') {
                        return Err(err("unmatched '}'"));
                    }
                    parts.push(Part::Literal(rest.to_owned()));
                    rest = "";
                }
            }
            if let Some(Part::Literal(lit)) = parts.last()
                && lit.contains('}')
            {
                return Err(err("unmatched '}'"));
            }
        }
        Ok(UriTemplate {
            source: template.to_owned(),
            parts,
        })
    }

    /// The template text.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The names of the template's variables, in order.
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().flat_map(|p| match p {
            Part::Expr(_, vars) => vars.iter().map(String::as_str).collect::<Vec<_>>(),
            Part::Literal(_) => Vec::new(),
        })
    }

    /// Matches a concrete URI, returning the percent-decoded value of every variable it binds.
    ///
    /// Variables that the URI leaves out (an optional query parameter, say) are absent from the map.
    pub fn match_uri(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        if uri.len() > MAX_URI_LEN {
            return None;
        }
        let mut vars = BTreeMap::new();
        let mut budget = MATCH_BUDGET;
        if match_parts(&self.parts, uri, &mut vars, &mut budget) {
            Some(vars)
        } else {
            None
        }
    }

    /// Expands the template with the given variables; undefined variables expand to nothing.
    pub fn expand(&self, vars: &BTreeMap<String, String>) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Literal(lit) => out.push_str(lit),
                Part::Expr(op, names) => {
                    let mut first = true;
                    for name in names {
                        let Some(value) = vars.get(name) else {
                            continue;
                        };
                        out.push_str(if first { op.prefix() } else { "" });
                        if !first {
                            out.push(op.separator());
                        }
                        first = false;
                        if op.named() {
                            out.push_str(name);
                            if value.is_empty() && *op == Operator::PathParam {
                                continue;
                            }
                            out.push('=');
                        }
                        encode_into(&mut out, value, op.allows_reserved());
                    }
                }
            }
        }
        out
    }
}

impl fmt::Debug for UriTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "UriTemplate({:?})", self.source)
    }
}

impl fmt::Display for UriTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

fn is_unreserved(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~')
}

fn is_reserved(c: char) -> bool {
    matches!(
        c,
        ':' | '/'
            | '?'
            | '#'
            | '['
            | ']'
            | '@'
            | '!'
            | '$'
            | '&'
            | '\''
            | '('
            | ')'
            | '*'
            | '+'
            | ','
            | ';'
            | '='
    )
}

fn encode_into(out: &mut String, value: &str, allow_reserved: bool) {
    let bytes = value.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i] as char;
        let pct_triplet = allow_reserved
            && c == '%'
            && bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
            && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit);
        if bytes[i].is_ascii() && (is_unreserved(c) || (allow_reserved && is_reserved(c)))
            || pct_triplet
        {
            out.push(c);
        } else {
            out.push_str(&format!("%{:02X}", bytes[i]));
        }
        i += 1;
    }
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Whether `c` can appear inside the value of an expression with this operator.
fn value_char(op: Operator, c: char) -> bool {
    // The separator joins the values of several variables; `bind` splits on it.
    if c == '%' || is_unreserved(c) || c == op.separator() {
        return true;
    }
    match op {
        // Reserved expansion passes reserved characters through, but a fragment ends at nothing.
        Operator::Reserved | Operator::Fragment => is_reserved(c),
        // Simple values may carry the comma that separates several variables.
        Operator::Simple => c == ',',
        Operator::Label => false,
        Operator::Path => c == ',',
        Operator::PathParam => c == ',' || c == '=',
        Operator::Query | Operator::QueryCont => c == ',' || c == '=' || c == '&',
    }
}

/// Takes `cost` from the budget; `false`, with the budget spent, when it does not hold that much.
fn spend(budget: &mut usize, cost: usize) -> bool {
    match budget.checked_sub(cost) {
        Some(left) => {
            *budget = left;
            true
        }
        None => {
            *budget = 0;
            false
        }
    }
}

fn match_parts(
    parts: &[Part],
    uri: &str,
    vars: &mut BTreeMap<String, String>,
    budget: &mut usize,
) -> bool {
    let Some((first, rest)) = parts.split_first() else {
        return uri.is_empty();
    };
    match first {
        Part::Literal(lit) => uri
            .strip_prefix(lit.as_str())
            .is_some_and(|tail| match_parts(rest, tail, vars, budget)),
        Part::Expr(op, names) => {
            // The expression may expand to nothing when every variable is undefined.
            let prefix = op.prefix();
            let mut candidates: Vec<usize> = Vec::new();
            if let Some(body) = uri.strip_prefix(prefix) {
                let offset = uri.len() - body.len();
                let span = body
                    .char_indices()
                    .find(|&(_, c)| !value_char(*op, c))
                    .map_or(body.len(), |(i, _)| i);
                if !spend(budget, span + 1) {
                    return false;
                }
                // Longest first, so a greedy reading wins when several fit.
                for end in (0..=span).rev() {
                    if body.is_char_boundary(end) {
                        candidates.push(offset + end);
                    }
                }
            }
            for end in candidates {
                // What must come next (a literal, or the end) is checked before anything is
                // decoded: most ends fail here.
                let text = &uri[prefix.len()..end];
                let next = match rest.first() {
                    Some(Part::Literal(lit)) if !uri[end..].starts_with(lit.as_str()) => None,
                    None if end != uri.len() => None,
                    _ => Some(text.len()),
                };
                if !spend(budget, 1 + next.unwrap_or(0)) {
                    return false;
                }
                if next.is_none() {
                    continue;
                }
                let Some(bound) = bind(*op, names, text) else {
                    continue;
                };
                // Undone on failure by what was bound here only: copying every binding made so
                // far at each candidate end made a long template quadratic (found by fuzzing).
                let mut undo: Vec<(String, Option<String>)> = Vec::with_capacity(bound.len());
                for (name, value) in bound {
                    let before = vars.insert(name.clone(), value);
                    undo.push((name, before));
                }
                if match_parts(rest, &uri[end..], vars, budget) {
                    return true;
                }
                for (name, before) in undo.into_iter().rev() {
                    match before {
                        Some(value) => vars.insert(name, value),
                        None => vars.remove(&name),
                    };
                }
            }
            // An expression of named or prefixed variables may be absent entirely.
            if !prefix.is_empty() && match_parts(rest, uri, vars, budget) {
                return true;
            }
            false
        }
    }
}

/// Splits an expression's matched text into its variables.
fn bind(op: Operator, names: &[String], text: &str) -> Option<Vec<(String, String)>> {
    if op.named() {
        let mut out = Vec::new();
        if text.is_empty() {
            return None;
        }
        for pair in text.split(op.separator()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            if !names.iter().any(|n| n == name) {
                return None;
            }
            out.push((name.to_owned(), percent_decode(value)?));
        }
        return Some(out);
    }
    let values: Vec<&str> = if names.len() == 1 {
        vec![text]
    } else {
        text.split(op.separator()).collect()
    };
    if values.len() > names.len() || values.iter().any(|v| v.is_empty()) {
        return None;
    }
    if names.len() == 1 && op != Operator::Reserved && op != Operator::Fragment {
        // A single simple value cannot contain the separator it would have been split on.
        if text.contains(op.separator()) && op != Operator::Simple {
            return None;
        }
    }
    names
        .iter()
        .zip(values)
        .map(|(n, v)| Some((n.clone(), percent_decode(v)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(t: &str, uri: &str) -> Option<Vec<(String, String)>> {
        UriTemplate::parse(t)
            .unwrap()
            .match_uri(uri)
            .map(|v| v.into_iter().collect())
    }

    fn pairs(p: &[(&str, &str)]) -> Option<Vec<(String, String)>> {
        Some(
            p.iter()
                .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
                .collect(),
        )
    }

    #[test]
    fn level_one() {
        assert_eq!(
            m("test://template/{id}/data", "test://template/42/data"),
            pairs(&[("id", "42")])
        );
        assert_eq!(
            m("test://template/{id}/data", "test://template//data"),
            None
        );
        assert_eq!(
            m("test://template/{id}/data", "test://template/a/b/data"),
            None
        );
        assert_eq!(
            m("test://template/{id}/data", "test://template/42/datax"),
            None
        );
        assert_eq!(
            m("db://{table}", "db://my%20table"),
            pairs(&[("table", "my table")])
        );
    }

    #[test]
    fn level_two() {
        assert_eq!(
            m("file:///{+path}", "file:///a/b/c.txt"),
            pairs(&[("path", "a/b/c.txt")])
        );
        assert_eq!(
            m("x://h{#frag}", "x://h#sec/1"),
            pairs(&[("frag", "sec/1")])
        );
        assert_eq!(m("x://h{#frag}", "x://h"), pairs(&[]));
    }

    #[test]
    fn level_three() {
        assert_eq!(
            m("map://{x,y}", "map://1024,768"),
            pairs(&[("x", "1024"), ("y", "768")])
        );
        assert_eq!(
            m("x://api{/a,b}", "x://api/one/two"),
            pairs(&[("a", "one"), ("b", "two")])
        );
        assert_eq!(
            m("x://s{?q,lang}", "x://s?q=cat&lang=en"),
            pairs(&[("lang", "en"), ("q", "cat")])
        );
        assert_eq!(m("x://s{?q,lang}", "x://s?q=cat"), pairs(&[("q", "cat")]));
        assert_eq!(m("x://s{?q,lang}", "x://s"), pairs(&[]));
        assert_eq!(m("x://s{?q}", "x://s?other=1"), None);
        assert_eq!(
            m("x://s?fixed=1{&q}", "x://s?fixed=1&q=a%2Fb"),
            pairs(&[("q", "a/b")])
        );
        assert_eq!(m("x://f{.ext}", "x://f.json"), pairs(&[("ext", "json")]));
        assert_eq!(m("x://p{;v}", "x://p;v=3"), pairs(&[("v", "3")]));
    }

    #[test]
    fn expansion_round_trips() {
        let t = UriTemplate::parse("x://{a}/items{/b}{?q,r}").unwrap();
        let vars: BTreeMap<String, String> = [("a", "one two"), ("b", "β"), ("q", "x&y")]
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let uri = t.expand(&vars);
        assert_eq!(uri, "x://one%20two/items/%CE%B2?q=x%26y");
        assert_eq!(t.match_uri(&uri), Some(vars));
    }

    #[test]
    fn bad_templates_are_refused() {
        for t in [
            "x://{",
            "x://}",
            "x://{}",
            "x://{a:3}",
            "x://{a*}",
            "x://{=a}",
            "x://{a b}",
        ] {
            assert!(UriTemplate::parse(t).is_err(), "{t}");
        }
    }

    /// Found by the fuzz target `uri_template`: a URI that cannot match, against a template of
    /// adjacent expressions, made the matcher try every way of splitting it (seconds for 120
    /// bytes, exponential in the number of expressions). It is refused within the budget now.
    #[test]
    fn crafted_uris_cannot_make_the_matcher_search_without_end() {
        let t = UriTemplate::parse("x://api{/a,b}{1ext}{+v}{#fra,b}{1ext}{+v}{#frag}").unwrap();
        let uri = format!(
            "x://api/oneotwf.ile*&/{}/t=d*x,e{{\0\0\0\0#*://sq",
            "W".repeat(110)
        );
        assert_eq!(t.match_uri(&uri), None);
        // The worst case within the length bound: reserved expressions whose separator is any
        // character, against a URI of that character that cannot match.
        let t = UriTemplate::parse("x://{+a}/{+b}/{+c}/{+d}!").unwrap();
        assert_eq!(
            t.match_uri(&format!("x://{}", "/".repeat(MAX_URI_LEN - 4))),
            None
        );
        // A long template: each candidate end used to copy every binding made so far, which
        // made the budget's steps costly (a ten-minute fuzz run found it took seconds).
        let t = UriTemplate::parse(
            "x://api{/a,b}{.ext}{+v,b}{.ext}{+v}{Rextb}{.ext}{+v,b}{.ext}{+v}{Rbst%2fv,b}\
             {.xev.wt}{+v}{R.ext,b}{;v,b}{.ext}{+v}{%2Ft}-{+v,b}{.ext}{+v}{R.ra}{#.rrag}",
        )
        .unwrap();
        assert_eq!(t.match_uri("x://api/onone/two.json;v=.ra}{#.rag}"), None);
        // Templates whose matches need backtracking still match.
        assert_eq!(
            m("x://{+a}/{+b}/{+c}", "x://p/q/r/s/t"),
            pairs(&[("a", "p/q/r"), ("b", "s"), ("c", "t")])
        );
        assert_eq!(
            m("x://{a}-{b}", "x://one-two-three"),
            pairs(&[("a", "one-two"), ("b", "three")])
        );
    }

    #[test]
    fn long_uris_never_match() {
        let t = UriTemplate::parse("x://{+a}").unwrap();
        assert!(
            t.match_uri(&format!("x://{}", "a".repeat(MAX_URI_LEN)))
                .is_none()
        );
    }
}
