//! The restricted JSON Schema subset of form-mode elicitation: a flat object of primitive properties.
//!
//! spec 2026-07-28 client/elicitation (requested schema): only top-level properties of primitive
//! types (string, number, boolean, single- and multi-select enums) are allowed, so that any client can
//! render the form.

use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::common::JsonObject;
use crate::wire::{KeySeed, from_value, serialize_opt_number, string_const};

string_const! {
    /// The constant `"object"`: the `type` of a requested schema.
    ObjectType = "object"
}
string_const! {
    /// The constant `"string"`: the `type` of string and single-select schemas.
    StringType = "string"
}
string_const! {
    /// The constant `"boolean"`: the `type` of a boolean schema.
    BooleanType = "boolean"
}
string_const! {
    /// The constant `"array"`: the `type` of a multi-select schema.
    ArrayType = "array"
}

/// The schema of the form a server asks the user to fill (`requestedSchema`).
///
/// `properties` keeps the server's order, because clients render form fields in that order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestedSchema {
    /// The JSON Schema dialect, when given.
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Always `"object"`.
    pub r#type: ObjectType,
    /// The form fields, in order.
    #[serde(with = "ordered_properties")]
    pub properties: Vec<(String, PrimitiveSchemaDefinition)>,
    /// The names of the fields the user must fill.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<Vec<String>>,
}

impl RequestedSchema {
    /// An empty form.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an optional field.
    #[must_use]
    pub fn property(
        mut self,
        name: impl Into<String>,
        schema: impl Into<PrimitiveSchemaDefinition>,
    ) -> Self {
        self.properties.push((name.into(), schema.into()));
        self
    }

    /// Adds a required field.
    #[must_use]
    pub fn required_property(
        mut self,
        name: impl Into<String>,
        schema: impl Into<PrimitiveSchemaDefinition>,
    ) -> Self {
        let name = name.into();
        self.required
            .get_or_insert_with(Vec::new)
            .push(name.clone());
        self.properties.push((name, schema.into()));
        self
    }

    /// The schema of a field by name.
    pub fn get(&self, name: &str) -> Option<&PrimitiveSchemaDefinition> {
        self.properties
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, s)| s)
    }
}

/// (De)serializes an ordered list of pairs as a JSON object, refusing duplicate names.
mod ordered_properties {
    use super::*;

    pub(super) fn serialize<S: Serializer>(
        pairs: &[(String, PrimitiveSchemaDefinition)],
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(pairs.len()))?;
        for (name, schema) in pairs {
            map.serialize_entry(name, schema)?;
        }
        map.end()
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<(String, PrimitiveSchemaDefinition)>, D::Error> {
        struct PairsVisitor;

        impl<'de> Visitor<'de> for PairsVisitor {
            type Value = Vec<(String, PrimitiveSchemaDefinition)>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of property schemas")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut pairs: Self::Value = Vec::new();
                while let Some(name) = map.next_key_seed(KeySeed)? {
                    if pairs.iter().any(|(n, _)| *n == name) {
                        return Err(de::Error::custom(format_args!(
                            "duplicate property `{name}`"
                        )));
                    }
                    pairs.push((name.into_owned(), map.next_value()?));
                }
                Ok(pairs)
            }
        }

        deserializer.deserialize_map(PairsVisitor)
    }
}

/// One field of an elicitation form (`PrimitiveSchemaDefinition`).
///
/// The kinds share `type` values (four are `"string"`), so decoding looks at `type` and then at the
/// distinguishing keys: `oneOf`, `enum`, `enumNames`, `items.anyOf`.
#[derive(Clone, Debug, PartialEq)]
pub enum PrimitiveSchemaDefinition {
    /// A free string.
    String(StringSchema),
    /// A number or an integer.
    Number(NumberSchema),
    /// A boolean.
    Boolean(BooleanSchema),
    /// One value of a list of strings.
    UntitledSingleSelectEnum(UntitledSingleSelectEnumSchema),
    /// One value of a list of titled options.
    TitledSingleSelectEnum(TitledSingleSelectEnumSchema),
    /// Several values of a list of strings.
    UntitledMultiSelectEnum(UntitledMultiSelectEnumSchema),
    /// Several values of a list of titled options.
    TitledMultiSelectEnum(TitledMultiSelectEnumSchema),
    /// The deprecated `enum` + `enumNames` form.
    LegacyTitledEnum(LegacyTitledEnumSchema),
}

impl Serialize for PrimitiveSchemaDefinition {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            PrimitiveSchemaDefinition::String(s) => s.serialize(serializer),
            PrimitiveSchemaDefinition::Number(s) => s.serialize(serializer),
            PrimitiveSchemaDefinition::Boolean(s) => s.serialize(serializer),
            PrimitiveSchemaDefinition::UntitledSingleSelectEnum(s) => s.serialize(serializer),
            PrimitiveSchemaDefinition::TitledSingleSelectEnum(s) => s.serialize(serializer),
            PrimitiveSchemaDefinition::UntitledMultiSelectEnum(s) => s.serialize(serializer),
            PrimitiveSchemaDefinition::TitledMultiSelectEnum(s) => s.serialize(serializer),
            PrimitiveSchemaDefinition::LegacyTitledEnum(s) => s.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for PrimitiveSchemaDefinition {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Forms are small and rare, so buffering one field's schema is cheaper than cleverness.
        let object = JsonObject::deserialize(deserializer)?;
        let kind = match object.get("type") {
            Some(Value::String(kind)) => kind.as_str(),
            Some(_) => return Err(de::Error::custom("`type` must be a string")),
            None => return Err(de::Error::missing_field("type")),
        };
        let has = |key: &str| object.contains_key(key);
        let items_any_of = object
            .get("items")
            .and_then(Value::as_object)
            .is_some_and(|items| items.contains_key("anyOf"));
        use PrimitiveSchemaDefinition as P;
        type Decode = fn(Value) -> Result<PrimitiveSchemaDefinition, serde_json::Error>;
        let decode: Decode = match kind {
            "string" if has("oneOf") => |v| from_value(v).map(P::TitledSingleSelectEnum),
            "string" if has("enum") && has("enumNames") => {
                |v| from_value(v).map(P::LegacyTitledEnum)
            }
            "string" if has("enum") => |v| from_value(v).map(P::UntitledSingleSelectEnum),
            "string" => |v| from_value(v).map(P::String),
            "number" | "integer" => |v| from_value(v).map(P::Number),
            "boolean" => |v| from_value(v).map(P::Boolean),
            "array" if items_any_of => |v| from_value(v).map(P::TitledMultiSelectEnum),
            "array" => |v| from_value(v).map(P::UntitledMultiSelectEnum),
            other => {
                return Err(de::Error::invalid_value(
                    de::Unexpected::Str(other),
                    &"one of string, number, integer, boolean, array",
                ));
            }
        };
        decode(Value::Object(object)).map_err(de::Error::custom)
    }
}

/// Implements `From<$ty> for PrimitiveSchemaDefinition` and the shared `title`/`description` setters.
macro_rules! primitive_schema {
    ($ty:ident => $variant:ident) => {
        impl From<$ty> for PrimitiveSchemaDefinition {
            fn from(value: $ty) -> Self {
                PrimitiveSchemaDefinition::$variant(value)
            }
        }

        impl $ty {
            /// Sets the field's label.
            #[must_use]
            pub fn with_title(mut self, title: impl Into<String>) -> Self {
                self.title = Some(title.into());
                self
            }

            /// Sets the field's help text.
            #[must_use]
            pub fn with_description(mut self, description: impl Into<String>) -> Self {
                self.description = Some(description.into());
                self
            }
        }
    };
}

/// A free-text field (`StringSchema`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StringSchema {
    /// Always `"string"`.
    pub r#type: StringType,
    /// The field's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The field's help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The shortest accepted length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u64>,
    /// The longest accepted length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
    /// A format the value must have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<StringFormat>,
    /// The pre-filled value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

impl StringSchema {
    /// A string field with no constraints.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the format.
    #[must_use]
    pub fn with_format(mut self, format: StringFormat) -> Self {
        self.format = Some(format);
        self
    }
}
primitive_schema!(StringSchema => String);

/// The formats a string field may require.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StringFormat {
    /// `"email"`.
    Email,
    /// `"uri"`.
    Uri,
    /// `"date"`.
    Date,
    /// `"date-time"`.
    DateTime,
}

/// Whether a number field accepts any number or only integers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NumberType {
    /// `"number"`.
    #[default]
    Number,
    /// `"integer"`.
    Integer,
}

/// A numeric field (`NumberSchema`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NumberSchema {
    /// `"number"` or `"integer"`.
    pub r#type: NumberType,
    /// The field's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The field's help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The smallest accepted value.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_opt_number"
    )]
    pub minimum: Option<f64>,
    /// The largest accepted value.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_opt_number"
    )]
    pub maximum: Option<f64>,
    /// The pre-filled value.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_opt_number"
    )]
    pub default: Option<f64>,
}

impl NumberSchema {
    /// A field accepting any number.
    pub fn number() -> Self {
        Self::default()
    }

    /// A field accepting integers only.
    pub fn integer() -> Self {
        NumberSchema {
            r#type: NumberType::Integer,
            ..Self::default()
        }
    }

    /// Sets the accepted range.
    #[must_use]
    pub fn with_range(mut self, minimum: Option<f64>, maximum: Option<f64>) -> Self {
        self.minimum = minimum;
        self.maximum = maximum;
        self
    }
}
primitive_schema!(NumberSchema => Number);

/// A yes/no field (`BooleanSchema`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BooleanSchema {
    /// Always `"boolean"`.
    pub r#type: BooleanType,
    /// The field's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The field's help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The pre-filled value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<bool>,
}

impl BooleanSchema {
    /// A boolean field.
    pub fn new() -> Self {
        Self::default()
    }
}
primitive_schema!(BooleanSchema => Boolean);

/// A titled option of an enum field: the value and its label.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EnumOption {
    /// The value submitted.
    pub r#const: String,
    /// The label shown.
    pub title: String,
}

impl EnumOption {
    /// An option with a value and a label.
    pub fn new(value: impl Into<String>, title: impl Into<String>) -> Self {
        EnumOption {
            r#const: value.into(),
            title: title.into(),
        }
    }
}

/// A single choice among plain strings (`UntitledSingleSelectEnumSchema`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UntitledSingleSelectEnumSchema {
    /// Always `"string"`.
    pub r#type: StringType,
    /// The field's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The field's help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The values offered.
    pub r#enum: Vec<String>,
    /// The pre-selected value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

impl UntitledSingleSelectEnumSchema {
    /// A choice among these values.
    pub fn new(values: Vec<String>) -> Self {
        UntitledSingleSelectEnumSchema {
            r#enum: values,
            ..Self::default()
        }
    }
}
primitive_schema!(UntitledSingleSelectEnumSchema => UntitledSingleSelectEnum);

/// A single choice among titled options (`TitledSingleSelectEnumSchema`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledSingleSelectEnumSchema {
    /// Always `"string"`.
    pub r#type: StringType,
    /// The field's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The field's help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The options offered.
    pub one_of: Vec<EnumOption>,
    /// The pre-selected value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

impl TitledSingleSelectEnumSchema {
    /// A choice among these options.
    pub fn new(options: Vec<EnumOption>) -> Self {
        TitledSingleSelectEnumSchema {
            one_of: options,
            ..Self::default()
        }
    }
}
primitive_schema!(TitledSingleSelectEnumSchema => TitledSingleSelectEnum);

/// The `items` of an untitled multi-select: plain strings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UntitledEnumItems {
    /// Always `"string"`.
    pub r#type: StringType,
    /// The values offered.
    pub r#enum: Vec<String>,
}

/// The `items` of a titled multi-select: titled options.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledEnumItems {
    /// The options offered.
    pub any_of: Vec<EnumOption>,
}

/// Several choices among plain strings (`UntitledMultiSelectEnumSchema`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UntitledMultiSelectEnumSchema {
    /// Always `"array"`.
    pub r#type: ArrayType,
    /// The field's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The field's help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The fewest values the user must pick.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// The most values the user may pick.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// The values offered.
    pub items: UntitledEnumItems,
    /// The pre-selected values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
}

impl UntitledMultiSelectEnumSchema {
    /// A multiple choice among these values.
    pub fn new(values: Vec<String>) -> Self {
        UntitledMultiSelectEnumSchema {
            items: UntitledEnumItems {
                r#type: StringType,
                r#enum: values,
            },
            ..Self::default()
        }
    }
}
primitive_schema!(UntitledMultiSelectEnumSchema => UntitledMultiSelectEnum);

/// Several choices among titled options (`TitledMultiSelectEnumSchema`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledMultiSelectEnumSchema {
    /// Always `"array"`.
    pub r#type: ArrayType,
    /// The field's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The field's help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The fewest values the user must pick.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// The most values the user may pick.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// The options offered.
    pub items: TitledEnumItems,
    /// The pre-selected values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
}

impl TitledMultiSelectEnumSchema {
    /// A multiple choice among these options.
    pub fn new(options: Vec<EnumOption>) -> Self {
        TitledMultiSelectEnumSchema {
            items: TitledEnumItems { any_of: options },
            ..Self::default()
        }
    }
}
primitive_schema!(TitledMultiSelectEnumSchema => TitledMultiSelectEnum);

/// The deprecated titled enum: values in `enum`, labels in the parallel `enumNames`
/// (`LegacyTitledEnumSchema`). New servers use [`TitledSingleSelectEnumSchema`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LegacyTitledEnumSchema {
    /// Always `"string"`.
    pub r#type: StringType,
    /// The field's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The field's help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The values offered.
    pub r#enum: Vec<String>,
    /// The labels, in the order of `enum`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enum_names: Option<Vec<String>>,
    /// The pre-selected value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}
primitive_schema!(LegacyTitledEnumSchema => LegacyTitledEnum);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kind(value: Value) -> PrimitiveSchemaDefinition {
        let def: PrimitiveSchemaDefinition = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(serde_json::to_value(&def).unwrap(), value);
        def
    }

    #[test]
    fn kinds_are_told_apart() {
        use PrimitiveSchemaDefinition as P;
        assert!(matches!(
            kind(json!({"type": "string", "format": "email"})),
            P::String(_)
        ));
        assert!(matches!(
            kind(json!({"type": "integer", "minimum": 1})),
            P::Number(_)
        ));
        assert!(matches!(
            kind(json!({"type": "boolean", "default": true})),
            P::Boolean(_)
        ));
        assert!(matches!(
            kind(json!({"type": "string", "enum": ["a"]})),
            P::UntitledSingleSelectEnum(_)
        ));
        assert!(matches!(
            kind(json!({"type": "string", "enum": ["a"], "enumNames": ["A"]})),
            P::LegacyTitledEnum(_)
        ));
        assert!(matches!(
            kind(json!({"type": "string", "oneOf": [{"const": "a", "title": "A"}]})),
            P::TitledSingleSelectEnum(_)
        ));
        assert!(matches!(
            kind(json!({"type": "array", "items": {"type": "string", "enum": ["a"]}})),
            P::UntitledMultiSelectEnum(_)
        ));
        assert!(matches!(
            kind(json!({"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}]}})),
            P::TitledMultiSelectEnum(_)
        ));
        assert!(serde_json::from_value::<P>(json!({"type": "object"})).is_err());
        assert!(serde_json::from_value::<P>(json!({"title": "x"})).is_err());
    }

    #[test]
    fn properties_keep_their_order() {
        let schema = RequestedSchema::new()
            .required_property("zeta", StringSchema::new())
            .property("alpha", NumberSchema::integer().with_title("Age"));
        let text = serde_json::to_string(&schema).unwrap();
        assert!(
            text.find("zeta").unwrap() < text.find("alpha").unwrap(),
            "{text}"
        );
        let back: RequestedSchema = serde_json::from_str(&text).unwrap();
        assert_eq!(back, schema);
        assert_eq!(back.properties[0].0, "zeta");
        assert!(back.get("alpha").is_some());
        let dup = r#"{"type":"object","properties":{"a":{"type":"string"},"a":{"type":"string"}}}"#;
        assert!(serde_json::from_str::<RequestedSchema>(dup).is_err());
    }
}
