//! Globs over tool names: `*` matches any run of characters (none included), `?` one character,
//! anything else itself. `db_*` matches every tool of the `db` upstream under the default prefix.

use std::fmt;

use serde::{Deserialize, Deserializer};

/// One pattern.
#[derive(Clone, PartialEq, Eq)]
pub struct Glob(String);

impl Glob {
    /// The pattern as written.
    pub fn new(pattern: impl Into<String>) -> Self {
        Glob(pattern.into())
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `name` matches the whole pattern.
    pub fn matches(&self, name: &str) -> bool {
        matches(self.0.as_bytes(), name.as_bytes())
    }
}

impl fmt::Debug for Glob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

impl<'de> Deserialize<'de> for Glob {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        if text.is_empty() {
            return Err(serde::de::Error::custom("an empty pattern matches nothing"));
        }
        Ok(Glob(text))
    }
}

/// Whether any of `globs` matches `name`.
pub fn any(globs: &[Glob], name: &str) -> bool {
    globs.iter().any(|g| g.matches(name))
}

/// The classic linear matcher: on a mismatch after a `*`, the star takes one more character and
/// matching resumes there, so no pattern costs more than its length times the name's.
fn matches(pattern: &[u8], name: &[u8]) -> bool {
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, n));
                p += 1;
            }
            Some(&c) if c == b'?' || c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    p = sp + 1;
                    n = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_whole_names() {
        let g = |p: &str, n: &str| Glob::new(p).matches(n);
        assert!(g("db_*", "db_query"));
        assert!(g("db_*", "db_"));
        assert!(!g("db_*", "xdb_query"));
        assert!(g("*_delete*", "files_delete_all"));
        assert!(!g("*_delete*", "files_read"));
        assert!(g("echo", "echo"));
        assert!(!g("echo", "echo_text"));
        assert!(g("echo?", "echo1"));
        assert!(!g("echo?", "echo"));
        assert!(g("*", ""));
        assert!(g("a*b*c", "aXXbYYc"));
        assert!(!g("a*b*c", "aXXbYY"));
    }
}
