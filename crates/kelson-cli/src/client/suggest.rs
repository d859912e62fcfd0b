//! "Did you mean ...?": the registered names closest to one that is not registered, by edit
//! distance, for `kelson call` and `kelson bench --call` with a tool the server does not list.

/// At most this many names are suggested.
const MOST: usize = 3;

/// The names among `known` closest to `wanted`: those at the smallest edit distance, when it is
/// small for the length of the name (a third of it, at least 1), in the order `known` gives
/// them, at most three. A name that differs only in case is always the closest.
pub(crate) fn closest<'a>(wanted: &str, known: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let wanted_lower = wanted.to_lowercase();
    let allowed = (wanted.chars().count() / 3).max(1);
    let mut best = usize::MAX;
    let mut found = Vec::new();
    for name in known {
        if name == wanted {
            continue;
        }
        let distance = if name.to_lowercase() == wanted_lower {
            0
        } else {
            distance(&wanted_lower, &name.to_lowercase())
        };
        if distance > allowed || distance > best {
            continue;
        }
        if distance < best {
            best = distance;
            found.clear();
        }
        if !found.contains(&name) {
            found.push(name);
        }
    }
    found.truncate(MOST);
    found
}

/// `did you mean "a"?`, `did you mean "a" or "b"?`, `did you mean "a", "b" or "c"?`; `None` for
/// no names.
pub(crate) fn did_you_mean(names: &[&str]) -> Option<String> {
    let quoted: Vec<String> = names
        .iter()
        .map(|n| format!("{:?}", super::output::clean_line(n)))
        .collect();
    let (last, rest) = quoted.split_last()?;
    Some(if rest.is_empty() {
        format!("did you mean {last}?")
    } else {
        format!("did you mean {} or {last}?", rest.join(", "))
    })
}

/// The edit distance between `a` and `b`, by characters: insertions, deletions, substitutions
/// and swaps of two neighbours (the usual typo), each costing one (the optimal string alignment
/// distance). Three rows of the table, so memory is linear in `b`.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for i in 0..a.len() {
        current[0] = i + 1;
        for j in 0..b.len() {
            let mut best = (previous[j] + usize::from(a[i] != b[j]))
                .min(previous[j + 1] + 1)
                .min(current[j] + 1);
            if i > 0 && j > 0 && a[i] == b[j - 1] && a[i - 1] == b[j] {
                best = best.min(before[j - 1] + 1);
            }
            current[j + 1] = best;
        }
        std::mem::swap(&mut before, &mut previous);
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_count_edits() {
        assert_eq!(distance("", ""), 0);
        assert_eq!(distance("abc", ""), 3);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("echo", "ehco"), 1, "two neighbours swapped");
        assert_eq!(distance("ca", "abc"), 3);
        assert_eq!(distance("naïve", "naive"), 1, "by characters, not bytes");
    }

    #[test]
    fn the_closest_names_are_suggested() {
        let tools = [
            "test_simple_text",
            "test_image",
            "echo",
            "add",
            "query",
            "Query_all",
        ];
        assert_eq!(closest("test_simple_txt", tools), ["test_simple_text"]);
        assert_eq!(closest("ech", tools), ["echo"]);
        assert_eq!(closest("ehco", tools), ["echo"]);
        // Several at the same distance, in the server's order.
        assert_eq!(closest("ad", ["add", "and", "ab"]), ["add", "and", "ab"]);
        // Case alone is the closest of all.
        assert_eq!(closest("QUERY", tools), ["query"]);
        // Nothing near: nothing suggested.
        assert!(closest("deploy_production", tools).is_empty());
        assert!(closest("x", Vec::<&str>::new()).is_empty());
        // At most three.
        assert_eq!(closest("a", ["b", "c", "d", "e"]).len(), 3);
        // Short names allow one edit only.
        assert!(closest("ab", ["xyz", "abcd"]).is_empty());
    }

    #[test]
    fn suggestions_read_as_a_question() {
        assert_eq!(did_you_mean(&[]), None);
        assert_eq!(
            did_you_mean(&["echo"]).as_deref(),
            Some("did you mean \"echo\"?")
        );
        assert_eq!(
            did_you_mean(&["a", "b", "c"]).as_deref(),
            Some("did you mean \"a\", \"b\" or \"c\"?")
        );
    }
}
