//! Private serde helpers shared by every module: constant strings, open string enums, open objects
//! with an `extra` map, integer-preserving numbers, and borrowed map keys.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Visitor};
use serde::{Deserializer, Serializer};

/// Visits a string and accepts only one value; the constant-string types below use it.
pub(crate) struct ConstStrVisitor(pub(crate) &'static str);

impl Visitor<'_> for ConstStrVisitor {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the string {:?}", self.0)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        if v == self.0 {
            Ok(())
        } else {
            Err(E::invalid_value(de::Unexpected::Str(v), &self))
        }
    }
}

/// Declares a zero-sized type that serializes as one fixed string and refuses any other on input.
///
/// The schema has many `const` members (`"jsonrpc": "2.0"`, `"type": "string"`, `"mode": "url"`); a
/// zero-sized field keeps them on the wire without letting a caller put a wrong value in them.
macro_rules! string_const {
    ($(#[$attr:meta])* $name:ident = $value:literal) => {
        $(#[$attr])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        pub struct $name;

        impl $name {
            /// The only value this type stands for.
            pub const VALUE: &'static str = $value;
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str($value)
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                deserializer
                    .deserialize_str($crate::wire::ConstStrVisitor($value))
                    .map(|()| $name)
            }
        }
    };
}
pub(crate) use string_const;

/// Declares a string enum whose set of values is open: known values get a variant, anything else is
/// kept in `Other` so that it survives a round trip (spec 2026-07-28 basic/index: extensions may add values).
macro_rules! open_string_enum {
    (
        $(#[$attr:meta])*
        pub enum $name:ident {
            $( $(#[$vattr:meta])* $variant:ident = $value:literal, )*
        }
    ) => {
        $(#[$attr])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vattr])* $variant, )*
            /// A value this crate does not know, kept verbatim.
            Other(String),
        }

        impl $name {
            /// The wire string of this value.
            pub fn as_str(&self) -> &str {
                match self {
                    $( $name::$variant => $value, )*
                    $name::Other(other) => other,
                }
            }
        }

        impl From<&str> for $name {
            fn from(value: &str) -> Self {
                match value {
                    $( $value => $name::$variant, )*
                    other => $name::Other(other.to_owned()),
                }
            }
        }

        impl From<String> for $name {
            fn from(value: String) -> Self {
                match value.as_str() {
                    $( $value => $name::$variant, )*
                    _ => $name::Other(value),
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                $crate::wire::deserialize_key(deserializer).map(|text| match text {
                    ::std::borrow::Cow::Borrowed(text) => $name::from(text),
                    ::std::borrow::Cow::Owned(text) => $name::from(text),
                })
            }
        }
    };
}
pub(crate) use open_string_enum;

/// Declares an object whose known members are all optional and whose unknown members are collected
/// in `extra`, with a hand-written map visitor for `Deserialize` (no `#[serde(flatten)]`, which buffers
/// the whole object first) and a map-based `Serialize` that writes known members before `extra`.
///
/// Used for the `_meta` objects and the capability objects, which are open by specification
/// (spec 2026-07-28 basic/index: "implementations MUST NOT make assumptions about values at reserved
/// keys they do not understand") and are decoded on every request.
macro_rules! open_object {
    (
        $(#[$attr:meta])*
        pub struct $name:ident {
            $( $(#[$fattr:meta])* pub $field:ident : Option<$ty:ty> = $key:expr, )*
        }
    ) => {
        $(#[$attr])*
        #[derive(Clone, Debug, Default, PartialEq)]
        pub struct $name {
            $( $(#[$fattr])* pub $field: Option<$ty>, )*
            /// Every member this crate does not model, kept verbatim so that a round trip loses nothing.
            pub extra: $crate::JsonObject,
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use ::serde::ser::SerializeMap;
                let known = 0 $( + usize::from(self.$field.is_some()) )*;
                let mut map = serializer.serialize_map(Some(known + self.extra.len()))?;
                $(
                    if let Some(value) = &self.$field {
                        map.serialize_entry($key, value)?;
                    }
                )*
                for (key, value) in &self.extra {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct ObjectVisitor;

                impl<'de> ::serde::de::Visitor<'de> for ObjectVisitor {
                    type Value = $name;

                    fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                        f.write_str(concat!("a ", stringify!($name), " object"))
                    }

                    fn visit_map<A: ::serde::de::MapAccess<'de>>(self, mut map: A) -> Result<$name, A::Error> {
                        $( let mut $field: Option<$ty> = None; )*
                        let mut extra = $crate::JsonObject::new();
                        while let Some(key) = map.next_key_seed($crate::wire::KeySeed)? {
                            $(
                                if key == $key {
                                    if $field.is_some() {
                                        return Err(::serde::de::Error::duplicate_field($key));
                                    }
                                    $field = map.next_value::<Option<$ty>>()?;
                                    continue;
                                }
                            )*
                            let value = map.next_value::<::serde_json::Value>()?;
                            extra.insert(key.into_owned(), value);
                        }
                        Ok($name { $( $field, )* extra })
                    }
                }

                deserializer.deserialize_map(ObjectVisitor)
            }
        }
    };
}
pub(crate) use open_object;

/// Reads a map key or a string, borrowing it from the input when the deserializer allows.
pub(crate) struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserialize_key(deserializer)
    }
}

/// Reads a string, borrowing it from the input when possible, so that comparing a key allocates nothing.
pub(crate) fn deserialize_key<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Cow<'de, str>, D::Error> {
    struct KeyVisitor;

    impl<'de> Visitor<'de> for KeyVisitor {
        type Value = Cow<'de, str>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a string")
        }

        fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
            Ok(Cow::Borrowed(v))
        }

        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Cow::Owned(v.to_owned()))
        }

        fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
            Ok(Cow::Owned(v))
        }
    }

    deserializer.deserialize_str(KeyVisitor)
}

/// The largest integer an `f64` holds exactly (2^53).
const MAX_EXACT_INTEGER: f64 = 9_007_199_254_740_992.0;

/// Serializes an `f64` that holds a whole number as a JSON integer, so that `50` stays `50` rather than
/// becoming `50.0`; every other value is written as a float.
pub(crate) fn serialize_number<S: Serializer>(
    value: &f64,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let v = *value;
    if v.is_finite() && v.fract() == 0.0 && v.abs() <= MAX_EXACT_INTEGER {
        // The range check above makes the cast exact.
        serializer.serialize_i64(v as i64)
    } else {
        serializer.serialize_f64(v)
    }
}

/// [`serialize_number`] for an optional member; use with `skip_serializing_if = "Option::is_none"`.
pub(crate) fn serialize_opt_number<S: Serializer>(
    value: &Option<f64>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) => serialize_number(v, serializer),
        None => serializer.serialize_none(),
    }
}

/// Moves a buffered JSON value into a concrete type, reporting failures in the caller's error type.
pub(crate) fn from_value<T: serde::de::DeserializeOwned, E: de::Error>(
    value: serde_json::Value,
) -> Result<T, E> {
    T::deserialize(value).map_err(E::custom)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize)]
    struct N(#[serde(serialize_with = "serialize_number")] f64);

    #[test]
    fn whole_numbers_stay_integers() {
        assert_eq!(serde_json::to_string(&N(50.0)).unwrap(), "50");
        assert_eq!(serde_json::to_string(&N(-3.0)).unwrap(), "-3");
        assert_eq!(serde_json::to_string(&N(0.7)).unwrap(), "0.7");
        assert_eq!(serde_json::to_string(&N(1e300)).unwrap(), "1e+300");
    }
}
