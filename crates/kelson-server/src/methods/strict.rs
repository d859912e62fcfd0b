//! Decoding of protocol params that refuses a JSON array where an object is expected.
//!
//! serde's derived code reads a struct from a map or, by position, from a sequence, and
//! serde_json offers both: `"notifications": [true]` would be read as `{"toolsListChanged":
//! true}`. The spec's params are objects only, so [`Strict`] wraps the deserializer and asks for
//! a map wherever a struct is wanted, at every depth; everything else passes through unchanged.

use std::fmt;

use serde::de::{
    DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor,
};

/// A deserializer that reads structs from maps only.
pub(crate) struct Strict<D>(pub(crate) D);

/// A visitor whose nested deserializers are [`Strict`] too.
struct Wrap<V>(V);

/// A seed that deserializes through [`Strict`].
struct Seed<S>(S);

struct Seq<A>(A);
struct Map<A>(A);
struct Enum<A>(A);
struct Variant<A>(A);

macro_rules! forward {
    ($($method:ident),* $(,)?) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
                self.0.$method(Wrap(visitor))
            }
        )*
    };
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Strict<D> {
    type Error = D::Error;

    forward!(
        deserialize_any,
        deserialize_bool,
        deserialize_i8,
        deserialize_i16,
        deserialize_i32,
        deserialize_i64,
        deserialize_i128,
        deserialize_u8,
        deserialize_u16,
        deserialize_u32,
        deserialize_u64,
        deserialize_u128,
        deserialize_f32,
        deserialize_f64,
        deserialize_char,
        deserialize_str,
        deserialize_string,
        deserialize_bytes,
        deserialize_byte_buf,
        deserialize_option,
        deserialize_unit,
        deserialize_seq,
        deserialize_map,
        deserialize_identifier,
        deserialize_ignored_any,
    );

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_unit_struct(name, Wrap(visitor))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_newtype_struct(name, Wrap(visitor))
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_tuple(len, Wrap(visitor))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_tuple_struct(name, len, Wrap(visitor))
    }

    /// The point of the wrapper: a struct is read from a map, never from a sequence.
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_map(Wrap(visitor))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_enum(name, variants, Wrap(visitor))
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

macro_rules! visit {
    ($($method:ident: $ty:ty),* $(,)?) => {
        $(
            fn $method<E: serde::de::Error>(self, v: $ty) -> Result<Self::Value, E> {
                self.0.$method(v)
            }
        )*
    };
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(f)
    }

    visit!(
        visit_bool: bool,
        visit_i8: i8,
        visit_i16: i16,
        visit_i32: i32,
        visit_i64: i64,
        visit_i128: i128,
        visit_u8: u8,
        visit_u16: u16,
        visit_u32: u32,
        visit_u64: u64,
        visit_u128: u128,
        visit_f32: f32,
        visit_f64: f64,
        visit_char: char,
        visit_str: &str,
        visit_borrowed_str: &'de str,
        visit_string: String,
        visit_bytes: &[u8],
        visit_borrowed_bytes: &'de [u8],
        visit_byte_buf: Vec<u8>,
    );

    fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        self.0.visit_none()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.0.visit_some(Strict(d))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        self.0.visit_unit()
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.0.visit_newtype_struct(Strict(d))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        // An internally tagged enum (`#[serde(tag = "type")]`, like a completion reference) is
        // read through `deserialize_any`, whose visitor also takes a sequence (the tag first):
        // told apart by what it expects, it gets the same refusal as a struct.
        if expects_tagged_enum(&self.0) {
            return Err(serde::de::Error::invalid_type(
                serde::de::Unexpected::Seq,
                &self.0,
            ));
        }
        self.0.visit_seq(Seq(seq))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.0.visit_map(Map(map))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Self::Value, A::Error> {
        self.0.visit_enum(Enum(data))
    }
}

/// Whether `visitor` is serde's visitor of an internally tagged enum, from the first words of what
/// it expects (written into a small buffer, no allocation).
fn expects_tagged_enum<'de, V: Visitor<'de>>(visitor: &V) -> bool {
    const WORDS: &[u8] = b"internally tagged enum";
    struct Prefix {
        buf: [u8; WORDS.len()],
        len: usize,
    }
    impl fmt::Write for Prefix {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            let take = s.len().min(self.buf.len() - self.len);
            self.buf[self.len..self.len + take].copy_from_slice(&s.as_bytes()[..take]);
            self.len += take;
            // Enough read: stop the formatting.
            if self.len == self.buf.len() {
                Err(fmt::Error)
            } else {
                Ok(())
            }
        }
    }
    struct Expecting<'a, V>(&'a V);
    impl<'de, V: Visitor<'de>> fmt::Display for Expecting<'_, V> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            self.0.expecting(f)
        }
    }
    let mut prefix = Prefix {
        buf: [0; WORDS.len()],
        len: 0,
    };
    let _ = fmt::write(&mut prefix, format_args!("{}", Expecting(visitor)));
    prefix.buf[..prefix.len] == *WORDS
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Seed<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.0.deserialize(Strict(d))
    }
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Seq<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Self::Error> {
        self.0.next_element_seed(Seed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Map<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Self::Error> {
        self.0.next_key_seed(Seed(seed))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.next_value_seed(Seed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: EnumAccess<'de>> EnumAccess<'de> for Enum<A> {
    type Error = A::Error;
    type Variant = Variant<A::Variant>;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, Self::Variant), Self::Error> {
        self.0
            .variant_seed(Seed(seed))
            .map(|(value, variant)| (value, Variant(variant)))
    }
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Variant<A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), Self::Error> {
        self.0.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<T::Value, Self::Error> {
        self.0.newtype_variant_seed(Seed(seed))
    }

    fn tuple_variant<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.tuple_variant(len, Wrap(visitor))
    }

    /// A struct variant from a map only, as for structs.
    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.struct_variant(fields, Wrap(MapOnly(visitor)))
    }
}

/// A visitor that refuses sequences: for struct variants, whose access has no map-only form.
struct MapOnly<V>(V);

impl<'de, V: Visitor<'de>> Visitor<'de> for MapOnly<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(f)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.0.visit_map(map)
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::Strict;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase")]
    struct Inner {
        a: Option<bool>,
        b: Option<u32>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Outer<'a> {
        name: &'a str,
        inner: Option<Inner>,
        list: Option<Vec<Inner>>,
        value: Option<serde_json::Value>,
    }

    fn strict<'a, T: Deserialize<'a>>(text: &'a str) -> Result<T, serde_json::Error> {
        let mut de = serde_json::Deserializer::from_str(text);
        let value = T::deserialize(Strict(&mut de))?;
        de.end()?;
        Ok(value)
    }

    #[test]
    fn structs_come_from_objects_only_at_every_depth() {
        let ok: Outer<'_> = strict(
            r#"{"name": "n", "inner": {"a": true}, "list": [{"b": 2}], "value": [1, {"x": []}]}"#,
        )
        .unwrap();
        assert_eq!(ok.name, "n");
        assert_eq!(
            ok.inner,
            Some(Inner {
                a: Some(true),
                b: None
            })
        );
        assert_eq!(
            ok.list,
            Some(vec![Inner {
                a: None,
                b: Some(2)
            }])
        );
        assert_eq!(ok.value, Some(serde_json::json!([1, {"x": []}])));
        // What serde_json alone accepts, read by position:
        let loose: Outer<'_> =
            serde_json::from_str(r#"{"name": "n", "inner": [true, 3]}"#).unwrap();
        assert_eq!(
            loose.inner,
            Some(Inner {
                a: Some(true),
                b: Some(3)
            })
        );
        for text in [
            r#"["n"]"#,
            r#"{"name": "n", "inner": [true, 3]}"#,
            r#"{"name": "n", "list": [[true]]}"#,
        ] {
            let e = strict::<Outer<'_>>(text).unwrap_err();
            assert!(
                e.to_string().contains("invalid type: sequence"),
                "{text}: {e}"
            );
        }
        // An internally tagged enum, which serde also reads from [tag, fields...].
        #[derive(Debug, Deserialize, PartialEq)]
        #[serde(tag = "type")]
        enum Tagged {
            #[serde(rename = "a")]
            A { name: String },
        }
        assert_eq!(
            strict::<Tagged>(r#"{"type": "a", "name": "x"}"#).unwrap(),
            Tagged::A { name: "x".into() }
        );
        assert!(serde_json::from_str::<Tagged>(r#"["a", "x"]"#).is_ok());
        let e = strict::<Tagged>(r#"["a", "x"]"#).unwrap_err();
        assert!(e.to_string().contains("invalid type: sequence"), "{e}");
        // Borrowing still works, and trailing text is still an error.
        assert!(strict::<Outer<'_>>(r#"{"name": "n"} x"#).is_err());
    }
}
