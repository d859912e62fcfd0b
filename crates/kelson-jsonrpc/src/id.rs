use std::fmt;
use std::sync::Arc;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A JSON-RPC request id: a string or an integer, kept exactly as the peer sent it.
///
/// The string `"1"` and the integer `1` are different ids. `null` is not an id in MCP 2026-07-28
/// (spec 2026-07-28 basic: "the ID MUST NOT be null"), and neither is a fractional number.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Id {
    /// An integer id. JSON integers outside the `i64` range are refused as invalid requests.
    Int(i64),
    /// A string id, shared cheaply because it is echoed on every message of a request.
    Str(Arc<str>),
}

impl Id {
    /// Reads an id from the raw JSON text of an `id` member.
    ///
    /// Returns `None` when the text is not a string or an integer that fits in `i64`.
    pub fn from_raw_json(text: &str) -> Option<Id> {
        let text = text.trim();
        if text.starts_with('"') {
            return serde_json::from_str::<String>(text).ok().map(Id::from);
        }
        // Only plain integer literals: `1.0`, `1e3` and `-0.5` are numbers, not integers.
        let digits = text.strip_prefix('-').unwrap_or(text);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        text.parse::<i64>().ok().map(Id::Int)
    }

    /// The id as a JSON value.
    pub fn to_value(&self) -> serde_json::Value {
        match self {
            Id::Int(n) => serde_json::Value::from(*n),
            Id::Str(s) => serde_json::Value::from(&**s),
        }
    }
}

impl fmt::Debug for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Formats the id as JSON: strings quoted, integers bare, so that `"1"` and `1` stay distinct in logs.
impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Int(n) => write!(f, "{n}"),
            Id::Str(s) => write!(f, "{:?}", &**s),
        }
    }
}

impl From<i64> for Id {
    fn from(n: i64) -> Self {
        Id::Int(n)
    }
}

impl From<&str> for Id {
    fn from(s: &str) -> Self {
        Id::Str(Arc::from(s))
    }
}

impl From<String> for Id {
    fn from(s: String) -> Self {
        Id::Str(Arc::from(s))
    }
}

impl Serialize for Id {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Id::Int(n) => serializer.serialize_i64(*n),
            Id::Str(s) => serializer.serialize_str(s),
        }
    }
}

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct IdVisitor;

        impl Visitor<'_> for IdVisitor {
            type Value = Id;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an integer request id")
            }

            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Id, E> {
                Ok(Id::Int(v))
            }

            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Id, E> {
                i64::try_from(v)
                    .map(Id::Int)
                    .map_err(|_| E::custom("integer request id out of range"))
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Id, E> {
                Ok(Id::from(v))
            }

            fn visit_string<E: de::Error>(self, v: String) -> Result<Id, E> {
                Ok(Id::from(v))
            }
        }

        deserializer.deserialize_any(IdVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_and_integer_ids_differ() {
        assert_ne!(Id::from("1"), Id::from(1));
        assert_eq!(Id::from_raw_json("\"1\""), Some(Id::from("1")));
        assert_eq!(Id::from_raw_json("1"), Some(Id::Int(1)));
        assert_eq!(Id::from_raw_json("-42"), Some(Id::Int(-42)));
    }

    #[test]
    fn non_ids_are_refused() {
        for text in [
            "null",
            "1.0",
            "1e3",
            "true",
            "{}",
            "[]",
            "-",
            "",
            "99999999999999999999",
        ] {
            assert_eq!(Id::from_raw_json(text), None, "{text}");
        }
    }

    #[test]
    fn serde_round_trip_keeps_the_kind() {
        for id in [Id::from("abc"), Id::from(7), Id::from("7"), Id::from(-1)] {
            let text = serde_json::to_string(&id).unwrap();
            assert_eq!(serde_json::from_str::<Id>(&text).unwrap(), id);
        }
        assert!(serde_json::from_str::<Id>("1.5").is_err());
        assert!(serde_json::from_str::<Id>("null").is_err());
    }

    #[test]
    fn display_quotes_strings() {
        assert_eq!(Id::from("1").to_string(), "\"1\"");
        assert_eq!(Id::from(1).to_string(), "1");
    }
}
