//! The configuration file's documentation against the structs that parse it: every key
//! [`FileConfig`] accepts is in `docs/reference/config.md` and in `examples/kelson.toml`, and
//! neither names a key it does not accept.
//!
//! The keys are read from the structs themselves, not from a list kept by hand: [`Recorder`] is a
//! serde `Deserializer` that answers every `deserialize_struct` with each of the fields that
//! `#[derive(Deserialize)]` passes it, and walks into each field's value (a nested section, a map
//! of databases, a list of roots) the same way. A field added to a section is a key here at once.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::fmt;

use serde::Deserialize as _;
use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};

use super::resolve_with;
use crate::serve::file::{FileConfig, parse};

/// The documents, read when the tests run (not compiled in: the tests read what is on disk).
fn read(path: &str) -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Why the walk stopped; it never should.
#[derive(Debug)]
struct Stop(String);

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Stop {}

impl de::Error for Stop {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Stop(msg.to_string())
    }
}

/// What the walk found: every path a field or entry stands at, and the paths that are tables
/// (a struct, or a map of them).
#[derive(Default)]
struct Found {
    paths: BTreeSet<String>,
    tables: BTreeSet<String>,
}

/// A deserializer at one place of the file (`http`, `databases.NAME`, `roots[]`), which
/// records what the type deserialized there asks for.
struct Recorder<'a> {
    path: String,
    found: &'a RefCell<Found>,
}

impl<'a> Recorder<'a> {
    fn at(&self, segment: &str) -> Recorder<'a> {
        let path = if self.path.is_empty() {
            segment.to_owned()
        } else if segment.starts_with('[') {
            format!("{}{segment}", self.path)
        } else {
            format!("{}.{segment}", self.path)
        };
        self.found.borrow_mut().paths.insert(path.clone());
        Recorder {
            path,
            found: self.found,
        }
    }
}

impl Recorder<'_> {
    fn word(&self) -> &'static str {
        if self.path.ends_with("rate_limit") {
            "60/min"
        } else {
            "x"
        }
    }
}

impl<'de> de::Deserializer<'de> for Recorder<'_> {
    type Error = Stop;

    /// Durations (`Seconds`, `SecondsOrOff`) ask for anything; they take a string.
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        visitor.visit_str("1s")
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        visitor.visit_bool(false)
    }

    fn deserialize_u8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        visitor.visit_u64(1)
    }

    fn deserialize_u16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        visitor.visit_u64(1)
    }

    fn deserialize_u32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        visitor.visit_u64(1)
    }

    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        visitor.visit_u64(1)
    }

    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        visitor.visit_i64(1)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        visitor.visit_f64(1.0)
    }

    /// A word; a rate limit's has its own form.
    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        visitor.visit_str(self.word())
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        visitor.visit_str(self.word())
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        visitor.visit_some(self)
    }

    /// A list: one item, at `PATH[]`.
    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        visitor.visit_seq(OneItem(Some(self.at("[]"))))
    }

    /// A map (`[databases.NAME]`): one entry, at `PATH.NAME`.
    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        self.found.borrow_mut().tables.insert(self.path.clone());
        let value = self.at("NAME");
        visitor.visit_map(Entries {
            keys: vec!["NAME"],
            parent: None,
            values: vec![value],
        })
    }

    /// A section: each of its fields, at `PATH.FIELD`.
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Stop> {
        self.found.borrow_mut().tables.insert(self.path.clone());
        let values = fields.iter().map(|f| self.at(f)).collect();
        visitor.visit_map(Entries {
            keys: fields.to_vec(),
            parent: Some(self.path.clone()),
            values,
        })
    }

    /// A choice of words (`eras`, `legacy`, `log_format`): its first.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Stop> {
        let first = variants
            .first()
            .ok_or_else(|| Stop(format!("{}: an enum without variants", self.path)))?;
        visitor.visit_enum(IntoDeserializer::<Stop>::into_deserializer(*first))
    }

    serde::forward_to_deserialize_any! {
        i8 i16 i32 i128 u128 f32 char bytes byte_buf unit unit_struct newtype_struct tuple
        tuple_struct identifier ignored_any
    }
}

/// The one item of a list.
struct OneItem<'a>(Option<Recorder<'a>>);

impl<'de> SeqAccess<'de> for OneItem<'_> {
    type Error = Stop;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Stop> {
        self.0.take().map(|item| seed.deserialize(item)).transpose()
    }
}

/// The fields of a section, or the one entry of a map.
struct Entries<'a> {
    keys: Vec<&'static str>,
    parent: Option<String>,
    values: Vec<Recorder<'a>>,
}

impl<'de> MapAccess<'de> for Entries<'_> {
    type Error = Stop;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Stop> {
        if self.keys.is_empty() {
            return Ok(None);
        }
        let key = self.keys.remove(0);
        seed.deserialize(IntoDeserializer::<Stop>::into_deserializer(key))
            .map(Some)
            .map_err(|e| Stop(format!("{:?}.{key}: {e}", self.parent)))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Stop> {
        seed.deserialize(self.values.remove(0))
    }
}

/// The sections only `kelson gateway` reads; examples/gateway.toml shows them, and
/// examples/kelson.toml, which `kelson serve` runs, does not.
const GATEWAY_SECTIONS: &[&str] = &["upstream[]", "policy", "audit"];

fn is_gateway_key(key: &str) -> bool {
    GATEWAY_SECTIONS.iter().any(|s| {
        key.strip_prefix(s)
            .is_some_and(|rest| rest.starts_with('.'))
    })
}

/// Every key of the file, as `section.key` (`http.bind`, `databases.NAME.url`,
/// `roots[].path`): the paths that are neither a section nor inside a list of values.
fn struct_keys() -> BTreeSet<String> {
    let found = RefCell::new(Found::default());
    let recorder = Recorder {
        path: String::new(),
        found: &found,
    };
    FileConfig::deserialize(recorder).expect("the walk reaches every field");
    let found = found.into_inner();
    found
        .paths
        .iter()
        .filter(|p| !found.tables.contains(*p) && !p.ends_with("[]"))
        .filter(|p| !found.tables.contains(&format!("{p}[]")))
        .cloned()
        .collect()
}

/// The example file with every setting it shows commented out (`# key = value`, `# [section]`)
/// made live, as a reader who uncomments them all would have it.
pub(super) fn every_setting_uncommented(example: &str) -> String {
    example
        .lines()
        .map(|line| match line.strip_prefix("# ") {
            Some(rest) if is_setting(rest) => rest,
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `key = value`, `[section]` or `[[list]]`, where `key` is a bare lowercase TOML key.
fn is_setting(text: &str) -> bool {
    if text.starts_with('[') {
        return text.trim_end().ends_with(']') && !text.contains(' ');
    }
    text.split_once(" = ").is_some_and(|(key, _)| {
        !key.is_empty()
            && key
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    })
}

/// The keys a TOML document sets, in [`struct_keys`]'s form.
fn document_keys(table: &toml::Table, path: &str, out: &mut BTreeSet<String>) {
    for (key, value) in table {
        // A header or an environment variable is a key whatever its value's form (a secret may be
        // a table: `{ env = "VAR" }`).
        if path.ends_with(".headers") || path.ends_with(".env") {
            out.insert(format!("{path}.NAME"));
            continue;
        }
        let here = match path {
            "databases" => format!("{path}.NAME"),
            "" => key.clone(),
            _ => format!("{path}.{key}"),
        };
        match value {
            toml::Value::Table(inner) => document_keys(inner, &here, out),
            toml::Value::Array(items)
                if items.iter().all(toml::Value::is_table) && !items.is_empty() =>
            {
                for item in items {
                    if let toml::Value::Table(inner) = item {
                        document_keys(inner, &format!("{here}[]"), out);
                    }
                }
            }
            _ => {
                out.insert(here);
            }
        }
    }
}

/// The keys `docs/reference/config.md` documents: the first backquoted word of each table row,
/// under the section its `## [section]` heading names.
fn reference_keys(text: &str) -> BTreeSet<String> {
    let mut section: Option<String> = None;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        if let Some(heading) = line.strip_prefix("## ") {
            section = heading
                .split('`')
                .nth(1)
                .filter(|s| s.starts_with('['))
                .map(|s| {
                    let name = s.trim_matches(['[', ']']);
                    if s.starts_with("[[") {
                        format!("{name}[]")
                    } else {
                        name.to_owned()
                    }
                });
            continue;
        }
        let (Some(section), Some(row)) = (&section, line.strip_prefix("| `")) else {
            continue;
        };
        let key = row.split('`').next().unwrap_or_default();
        out.insert(format!("{section}.{key}"));
    }
    out
}

fn differences(want: &BTreeSet<String>, have: &BTreeSet<String>) -> (Vec<String>, Vec<String>) {
    (
        want.difference(have).cloned().collect(),
        have.difference(want).cloned().collect(),
    )
}

#[test]
fn docs_the_walk_finds_the_keys_of_every_section() {
    let keys = struct_keys();
    for key in [
        "server.name",
        "server.handler_timeout",
        "http.bind",
        "http.allowed_hosts",
        "http.max_sessions_per_client",
        "sample.read_scope",
        "limits.connection_wait",
        "databases.NAME.url",
        "databases.NAME.ssl_root_cert",
        "roots[].path",
        "files.max_file_bytes",
        "observability.otlp_endpoint",
        "auth.issuer",
        "auth.claims",
    ] {
        assert!(keys.contains(key), "{key} is not among {keys:#?}");
    }
    // Sections and lists of tables are not keys; lists of values are.
    for not_a_key in ["server", "databases", "databases.NAME", "roots", "roots[]"] {
        assert!(!keys.contains(not_a_key), "{not_a_key} in {keys:#?}");
    }
    assert!(keys.len() > 80, "{} keys", keys.len());
}

#[test]
fn docs_the_example_file_sets_or_shows_every_key() {
    let example = read("examples/kelson.toml");
    let uncommented = every_setting_uncommented(&example);
    let table: toml::Table = toml::from_str(&uncommented)
        .unwrap_or_else(|e| panic!("examples/kelson.toml, every setting uncommented: {e}"));
    let mut keys = BTreeSet::new();
    document_keys(&table, "", &mut keys);
    let serve_keys: BTreeSet<String> = struct_keys()
        .into_iter()
        .filter(|k| !is_gateway_key(k))
        .collect();
    let (missing, unknown) = differences(&serve_keys, &keys);
    assert!(
        missing.is_empty(),
        "examples/kelson.toml neither sets nor shows (as `# key = value`) these keys: {missing:?}"
    );
    assert!(
        unknown.is_empty(),
        "examples/kelson.toml names keys kelson serve does not have: {unknown:?}"
    );
}

#[test]
fn docs_the_gateway_example_sets_or_shows_every_gateway_key() {
    let example = read("examples/gateway.toml");
    parse(&example).unwrap_or_else(|e| panic!("examples/gateway.toml as shipped: {e}"));
    let uncommented = every_setting_uncommented(&example);
    let table: toml::Table = toml::from_str(&uncommented)
        .unwrap_or_else(|e| panic!("examples/gateway.toml, every setting uncommented: {e}"));
    let mut keys = BTreeSet::new();
    document_keys(&table, "", &mut keys);
    let gateway_keys: BTreeSet<String> = struct_keys()
        .into_iter()
        .filter(|k| is_gateway_key(k))
        .collect();
    let shown: BTreeSet<String> = keys.iter().filter(|k| is_gateway_key(k)).cloned().collect();
    let (missing, unknown) = differences(&gateway_keys, &shown);
    assert!(
        missing.is_empty(),
        "examples/gateway.toml neither sets nor shows these keys: {missing:?}"
    );
    assert!(
        unknown.is_empty(),
        "examples/gateway.toml names keys kelson gateway does not have: {unknown:?}"
    );
    // Every other key it sets is one kelson serve's file has too.
    let all = struct_keys();
    let foreign: Vec<&String> = keys.iter().filter(|k| !all.contains(*k)).collect();
    assert!(foreign.is_empty(), "unknown keys: {foreign:?}");
}

#[test]
fn docs_the_example_file_is_valid_as_shipped_and_with_every_setting_uncommented() {
    let example = read("examples/kelson.toml");
    resolve_with(&[], Some(&example)).unwrap_or_else(|e| panic!("as shipped: {e}"));
    let uncommented = every_setting_uncommented(&example);
    parse(&uncommented).unwrap_or_else(|e| panic!("uncommented: {e}"));
    // Resolving reads the introspection client's secret file, which only the reader has: the
    // introspection client is left out.
    let resolvable: Vec<&str> = uncommented
        .lines()
        .filter(|l| {
            !["client_secret_file", "client_id", "introspection_url"]
                .iter()
                .any(|key| l.starts_with(key))
        })
        .collect();
    let s = resolve_with(&[], Some(&resolvable.join("\n")))
        .unwrap_or_else(|e| panic!("every setting uncommented: {e}"));
    assert!(s.databases.len() >= 3, "{:?}", s.databases);
    assert!(s.server.state_key.is_some() && s.roots.len() >= 2);
}

#[test]
fn docs_the_configuration_reference_names_every_key() {
    let keys = reference_keys(&read("docs/reference/config.md"));
    let (missing, unknown) = differences(&struct_keys(), &keys);
    assert!(
        missing.is_empty(),
        "docs/reference/config.md has no row for these keys: {missing:?}"
    );
    assert!(
        unknown.is_empty(),
        "docs/reference/config.md documents keys kelson serve does not have: {unknown:?}"
    );
}

#[test]
fn docs_uncommenting_takes_settings_not_prose() {
    let text = "# Make one with: head -c 32 /dev/urandom > state.key\n# key = \"v\"\n# [auth]\n\
                # [[roots]]\n# The metadata URL, when discovery = nothing\n#   indented = 1\n";
    assert_eq!(
        every_setting_uncommented(text),
        "# Make one with: head -c 32 /dev/urandom > state.key\nkey = \"v\"\n[auth]\n[[roots]]\n\
         # The metadata URL, when discovery = nothing\n#   indented = 1"
    );
}
