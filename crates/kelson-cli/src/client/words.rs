//! Splitting `--stdio "CMD ARGS"` into a program and its arguments, by the POSIX shell's quoting
//! rules (no expansion of any kind: no variables, globs or substitutions).

use std::fmt;

/// Why a command line could not be split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SplitError {
    /// A `'` or `"` was never closed.
    UnterminatedQuote(char),
    /// The line ends with a lone backslash.
    TrailingBackslash,
    /// Nothing but whitespace.
    Empty,
}

impl fmt::Display for SplitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SplitError::UnterminatedQuote(q) => write!(f, "unterminated {q} quote"),
            SplitError::TrailingBackslash => f.write_str("a lone backslash at the end"),
            SplitError::Empty => f.write_str("the command is empty"),
        }
    }
}

impl std::error::Error for SplitError {}

/// Splits `line` into words the way `sh` does before expansion:
///
/// - unquoted whitespace separates words;
/// - `'...'` keeps everything literally;
/// - `"..."` keeps everything, except that a backslash escapes `"`, `\`, `$` and `` ` `` (and
///   joins lines before a newline); before any other character it stays a backslash;
/// - an unquoted backslash makes the next character literal (and joins lines before a newline);
/// - quoted parts join the word around them (`a"b c"d` is `ab cd`), and `""` is an empty word.
pub(crate) fn split(line: &str) -> Result<Vec<String>, SplitError> {
    let mut words = Vec::new();
    let mut word = String::new();
    // Whether a word has started: `""` starts an empty one.
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' | '\r' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(SplitError::UnterminatedQuote('\'')),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            Some('\n') => {}
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err(SplitError::UnterminatedQuote('"')),
                        },
                        Some(c) => word.push(c),
                        None => return Err(SplitError::UnterminatedQuote('"')),
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(c) => {
                    in_word = true;
                    word.push(c);
                }
                None => return Err(SplitError::TrailingBackslash),
            },
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    if words.is_empty() {
        return Err(SplitError::Empty);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(line: &str) -> Vec<String> {
        split(line).unwrap_or_else(|e| panic!("{line:?}: {e}"))
    }

    #[test]
    fn plain_words() {
        assert_eq!(ok("server --stdio"), ["server", "--stdio"]);
        assert_eq!(ok("  a \t b\n c  "), ["a", "b", "c"]);
    }

    #[test]
    fn single_quotes_are_literal() {
        assert_eq!(
            ok(r#"echo 'a b' 'c\d' '$x "y"'"#),
            ["echo", "a b", r"c\d", r#"$x "y""#]
        );
    }

    #[test]
    fn double_quotes_escape_four_characters() {
        assert_eq!(
            ok(r#"echo "a \"b\" \\ \$ \` \n""#),
            ["echo", r#"a "b" \ $ ` \n"#]
        );
        assert_eq!(ok("echo \"a\\\nb\""), ["echo", "ab"]);
    }

    #[test]
    fn backslash_outside_quotes() {
        assert_eq!(ok(r"a\ b c\\d \'"), ["a b", r"c\d", "'"]);
        assert_eq!(ok("a\\\nb"), ["ab"]);
    }

    #[test]
    fn quoted_parts_join_and_empty_words_survive() {
        assert_eq!(ok(r#"a"b c"d 'e'"f""#), ["ab cd", "ef"]);
        assert_eq!(ok(r#"cmd "" ''"#), ["cmd", "", ""]);
    }

    #[test]
    fn errors() {
        assert_eq!(split("a 'b"), Err(SplitError::UnterminatedQuote('\'')));
        assert_eq!(split("a \"b"), Err(SplitError::UnterminatedQuote('"')));
        assert_eq!(split("a \"b\\"), Err(SplitError::UnterminatedQuote('"')));
        assert_eq!(split("a\\"), Err(SplitError::TrailingBackslash));
        assert_eq!(split("   "), Err(SplitError::Empty));
        assert_eq!(split(""), Err(SplitError::Empty));
    }
}
