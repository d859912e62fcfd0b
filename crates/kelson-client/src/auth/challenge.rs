//! `WWW-Authenticate` challenges (RFC 9110 §11.6.1), as resource servers send them on 401 and 403
//! (RFC 6750 §3, RFC 9728 §5.1): `Bearer resource_metadata="…", scope="…", error="…"`.

use std::collections::BTreeMap;

/// One challenge of a `WWW-Authenticate` header: its scheme and its parameters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Challenge {
    /// The scheme, as sent (`Bearer`, `DPoP`, ...); compare it case-insensitively.
    pub scheme: String,
    /// The parameters, names lowercased (they are case-insensitive), values unquoted.
    pub params: BTreeMap<String, String>,
}

impl Challenge {
    /// A parameter's value.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params.get(name).map(String::as_str)
    }

    /// Whether this is a `Bearer` challenge.
    pub fn is_bearer(&self) -> bool {
        self.scheme.eq_ignore_ascii_case("bearer")
    }

    /// The URL of the protected resource metadata (RFC 9728 §5.1).
    pub fn resource_metadata(&self) -> Option<&str> {
        self.param("resource_metadata")
    }

    /// The scopes the challenge names, space-separated in `scope`.
    pub fn scopes(&self) -> Vec<String> {
        self.param("scope")
            .map(|s| s.split_ascii_whitespace().map(str::to_owned).collect())
            .unwrap_or_default()
    }

    /// The `error` code (`invalid_token`, `insufficient_scope`, ...).
    pub fn error(&self) -> Option<&str> {
        self.param("error")
    }
}

/// The challenges of every `WWW-Authenticate` value; an unreadable part ends its value's list
/// rather than failing the rest.
pub fn parse_all<'a>(values: impl IntoIterator<Item = &'a str>) -> Vec<Challenge> {
    values.into_iter().flat_map(parse).collect()
}

/// The `Bearer` challenge among the values, if there is one.
pub fn bearer<'a>(values: impl IntoIterator<Item = &'a str>) -> Option<Challenge> {
    parse_all(values).into_iter().find(Challenge::is_bearer)
}

/// The challenges of one header value. The grammar (RFC 9110 §11.6.1):
/// `challenge = auth-scheme [ 1*SP ( token68 / #auth-param ) ]`, challenges separated by commas,
/// `auth-param = token BWS "=" BWS ( token / quoted-string )`.
pub fn parse(value: &str) -> Vec<Challenge> {
    let mut out = Vec::new();
    let mut rest = value;
    loop {
        rest = skip(rest, |c| c == ',' || c == ' ' || c == '\t');
        let (scheme, after) = token(rest);
        if scheme.is_empty() {
            return out;
        }
        let mut challenge = Challenge {
            scheme: scheme.to_owned(),
            params: BTreeMap::new(),
        };
        rest = after;
        let mut first = true;
        loop {
            // A comma ends a parameter; what follows it is a parameter or the next challenge.
            let trimmed = skip(rest, |c| c == ' ' || c == '\t');
            let crossed_comma = trimmed.starts_with(',');
            let start = skip(trimmed, |c| c == ',' || c == ' ' || c == '\t');
            let (name, after_name) = token(start);
            let after_eq = skip(after_name, |c| c == ' ' || c == '\t');
            let is_param = !name.is_empty()
                && after_eq.starts_with('=')
                && !after_eq[1..].starts_with(['=', ',', ' ', '\t'])
                && after_eq.len() > 1;
            if !is_param {
                if first && !crossed_comma && !name.is_empty() {
                    // token68 right after the scheme (`Basic dXNlcjpwYXNz`, `Negotiate abc==`):
                    // not a parameter, skipped with its padding.
                    rest = skip(after_name, |c| c == '=');
                    first = false;
                    continue;
                }
                rest = start;
                break;
            }
            first = false;
            let value_start = skip(&after_eq[1..], |c| c == ' ' || c == '\t');
            let (value, after_value) = if let Some(quoted) = value_start.strip_prefix('"') {
                match quoted_string(quoted) {
                    Some(parsed) => parsed,
                    None => {
                        out.push(challenge);
                        return out;
                    }
                }
            } else {
                let (v, after) = token(value_start);
                (v.to_owned(), after)
            };
            challenge.params.insert(name.to_ascii_lowercase(), value);
            rest = after_value;
        }
        out.push(challenge);
    }
}

fn skip(s: &str, what: impl Fn(char) -> bool) -> &str {
    s.trim_start_matches(what)
}

/// A `token` (RFC 9110 §5.6.2) at the start of `s`, and what follows it.
fn token(s: &str) -> (&str, &str) {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~/".contains(c)))
        .unwrap_or(s.len());
    s.split_at(end)
}

/// The contents of a quoted string whose opening quote is already consumed, unescaped, and what
/// follows the closing quote; `None` when it never closes.
fn quoted_string(s: &str) -> Option<(String, &str)> {
    let mut value = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((value, &s[i + 1..])),
            '\\' => value.push(chars.next()?.1),
            c => value.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bearer_challenge_with_quoted_and_bare_parameters() {
        let c = parse(
            r#"Bearer resource_metadata="https://rs.example/.well-known/oauth-protected-resource/mcp", scope="files:read files:write", error=insufficient_scope"#,
        );
        assert_eq!(c.len(), 1);
        assert!(c[0].is_bearer());
        assert_eq!(
            c[0].resource_metadata(),
            Some("https://rs.example/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(c[0].scopes(), ["files:read", "files:write"]);
        assert_eq!(c[0].error(), Some("insufficient_scope"));
    }

    #[test]
    fn several_challenges_in_one_value_and_escapes_in_quotes() {
        let c = parse(
            r#"Basic realm="a \"b\", c", DPoP algs="ES256", Bearer Error_Description="x, y", scope="s""#,
        );
        let schemes: Vec<_> = c.iter().map(|c| c.scheme.as_str()).collect();
        assert_eq!(schemes, ["Basic", "DPoP", "Bearer"]);
        assert_eq!(c[0].param("realm"), Some(r#"a "b", c"#));
        assert_eq!(c[2].param("error_description"), Some("x, y"));
        assert_eq!(c[2].scopes(), ["s"]);
    }

    #[test]
    fn bare_schemes_token68_and_broken_values() {
        assert_eq!(parse("Bearer")[0].params.len(), 0);
        let c = parse("Basic dXNlcjpwYXNz, Bearer scope=a");
        assert_eq!(c.len(), 2, "{c:?}");
        assert_eq!(c[1].scopes(), ["a"]);
        // An unterminated quote keeps what was read.
        let c = parse(r#"Bearer scope="a", error="unterminated"#);
        assert_eq!(c[0].scopes(), ["a"]);
        assert!(parse("").is_empty());
        assert!(
            bearer(["Basic realm=x", r#"Bearer resource_metadata="u""#])
                .is_some_and(|b| b.resource_metadata() == Some("u"))
        );
    }
}
