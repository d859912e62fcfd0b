//! Elicitation: a server asks the user for input through the client, as an input request of a multi
//! round-trip request (`elicitation/create`).

mod schema;

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::wire::string_const;

pub use schema::{
    ArrayType, BooleanSchema, BooleanType, EnumOption, LegacyTitledEnumSchema, NumberSchema,
    NumberType, ObjectType, PrimitiveSchemaDefinition, RequestedSchema, StringFormat, StringSchema,
    StringType, TitledEnumItems, TitledMultiSelectEnumSchema, TitledSingleSelectEnumSchema,
    UntitledEnumItems, UntitledMultiSelectEnumSchema, UntitledSingleSelectEnumSchema,
};

string_const! {
    /// The constant `"form"`: the `mode` of a form elicitation, optional on the wire.
    FormMode = "form"
}
string_const! {
    /// The constant `"url"`: the `mode` of a URL elicitation, required on the wire.
    UrlMode = "url"
}

/// The parameters of `elicitation/create` (`ElicitRequestParams`): a form or a URL, told apart by
/// `mode` (absent means form).
///
/// spec 2026-07-28 client/elicitation: a server MUST NOT send URL mode unless the client declared
/// `elicitation.url` on this request, nor form mode unless it declared `elicitation` with `form` or
/// with neither sub-key.
#[derive(Clone, Debug, PartialEq)]
pub enum ElicitRequestParams {
    /// Form mode: the client renders a flat form.
    Form(ElicitRequestFormParams),
    /// URL mode: the client opens a URL, after the user consents, for an out-of-band flow.
    Url(ElicitRequestURLParams),
}

impl ElicitRequestParams {
    /// The message shown to the user.
    pub fn message(&self) -> &str {
        match self {
            ElicitRequestParams::Form(f) => &f.message,
            ElicitRequestParams::Url(u) => &u.message,
        }
    }
}

impl From<ElicitRequestFormParams> for ElicitRequestParams {
    fn from(value: ElicitRequestFormParams) -> Self {
        ElicitRequestParams::Form(value)
    }
}

impl From<ElicitRequestURLParams> for ElicitRequestParams {
    fn from(value: ElicitRequestURLParams) -> Self {
        ElicitRequestParams::Url(value)
    }
}

impl Serialize for ElicitRequestParams {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ElicitRequestParams::Form(f) => f.serialize(serializer),
            ElicitRequestParams::Url(u) => u.serialize(serializer),
        }
    }
}

/// Every member either mode may have, read in one pass; the mode is chosen afterwards.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AnyElicitParams {
    #[serde(default)]
    mode: Option<String>,
    message: String,
    #[serde(default)]
    requested_schema: Option<RequestedSchema>,
    #[serde(default)]
    url: Option<String>,
}

impl<'de> Deserialize<'de> for ElicitRequestParams {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let any = AnyElicitParams::deserialize(deserializer)?;
        match any.mode.as_deref() {
            None | Some(FormMode::VALUE) => {
                Ok(ElicitRequestParams::Form(ElicitRequestFormParams {
                    mode: any.mode.map(|_| FormMode),
                    message: any.message,
                    requested_schema: any
                        .requested_schema
                        .ok_or_else(|| de::Error::missing_field("requestedSchema"))?,
                }))
            }
            Some(UrlMode::VALUE) => Ok(ElicitRequestParams::Url(ElicitRequestURLParams {
                mode: UrlMode,
                message: any.message,
                url: any.url.ok_or_else(|| de::Error::missing_field("url"))?,
            })),
            Some(other) => Err(de::Error::unknown_variant(other, &["form", "url"])),
        }
    }
}

/// Form-mode elicitation (`ElicitRequestFormParams`).
///
/// spec 2026-07-28 client/elicitation: servers MUST NOT ask for passwords, API keys or other secrets
/// through a form; use URL mode for those.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitRequestFormParams {
    /// `Some` when the sender wrote `"mode": "form"`; absent also means form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<FormMode>,
    /// The message shown to the user.
    pub message: String,
    /// The form to fill.
    pub requested_schema: RequestedSchema,
}

impl ElicitRequestFormParams {
    /// A form request, written with an explicit `"mode": "form"`.
    pub fn new(message: impl Into<String>, requested_schema: RequestedSchema) -> Self {
        ElicitRequestFormParams {
            mode: Some(FormMode),
            message: message.into(),
            requested_schema,
        }
    }
}

/// URL-mode elicitation (`ElicitRequestURLParams`).
///
/// spec 2026-07-28 client/elicitation: there is no `elicitationId` in this revision; the server learns
/// whether the out-of-band flow finished from `requestState` or its own store on retry. The URL MUST
/// NOT carry credentials or personal data, and the client MUST NOT open it without the user's consent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitRequestURLParams {
    /// Always `"url"`.
    pub mode: UrlMode,
    /// The message shown to the user.
    pub message: String,
    /// The URL to open.
    pub url: String,
}

impl ElicitRequestURLParams {
    /// A URL request.
    pub fn new(message: impl Into<String>, url: impl Into<String>) -> Self {
        ElicitRequestURLParams {
            mode: UrlMode,
            message: message.into(),
            url: url.into(),
        }
    }
}

/// The client's answer to an elicitation (`ElicitResult`), sent in `inputResponses` on retry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ElicitResult {
    /// What the user did.
    pub action: ElicitAction,
    /// The submitted form values; only for an accepted form, never in URL mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<BTreeMap<String, ElicitValue>>,
}

impl ElicitResult {
    /// The user submitted the form with these values.
    pub fn accept(content: BTreeMap<String, ElicitValue>) -> Self {
        ElicitResult {
            action: ElicitAction::Accept,
            content: Some(content),
        }
    }

    /// The user consented to open the URL (URL mode carries no content).
    pub fn accept_url() -> Self {
        ElicitResult {
            action: ElicitAction::Accept,
            content: None,
        }
    }

    /// The user explicitly declined.
    pub fn decline() -> Self {
        ElicitResult {
            action: ElicitAction::Decline,
            content: None,
        }
    }

    /// The user dismissed the request without choosing.
    pub fn cancel() -> Self {
        ElicitResult {
            action: ElicitAction::Cancel,
            content: None,
        }
    }
}

/// What the user did with an elicitation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// The user submitted the form or consented to open the URL.
    Accept,
    /// The user explicitly declined.
    Decline,
    /// The user dismissed the request without an explicit choice.
    Cancel,
}

/// One submitted form value: a string, a number, a boolean or a list of strings.
///
/// Numbers keep their exact JSON form (`30` stays an integer) through [`serde_json::Number`].
#[derive(Clone, Debug, PartialEq)]
pub enum ElicitValue {
    /// A string.
    String(String),
    /// A number.
    Number(serde_json::Number),
    /// A boolean.
    Boolean(bool),
    /// The values picked in a multi-select field.
    StringArray(Vec<String>),
}

impl ElicitValue {
    /// The value as a string, if it is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            ElicitValue::String(s) => Some(s),
            _ => None,
        }
    }

    /// The value as an integer, if it is one that fits.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            ElicitValue::Number(n) => n.as_i64(),
            _ => None,
        }
    }

    /// The value as a float, if it is a number.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            ElicitValue::Number(n) => n.as_f64(),
            _ => None,
        }
    }

    /// The value as a boolean, if it is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            ElicitValue::Boolean(b) => Some(*b),
            _ => None,
        }
    }
}

impl From<&str> for ElicitValue {
    fn from(value: &str) -> Self {
        ElicitValue::String(value.to_owned())
    }
}

impl From<String> for ElicitValue {
    fn from(value: String) -> Self {
        ElicitValue::String(value)
    }
}

impl From<i64> for ElicitValue {
    fn from(value: i64) -> Self {
        ElicitValue::Number(value.into())
    }
}

impl From<bool> for ElicitValue {
    fn from(value: bool) -> Self {
        ElicitValue::Boolean(value)
    }
}

impl From<Vec<String>> for ElicitValue {
    fn from(value: Vec<String>) -> Self {
        ElicitValue::StringArray(value)
    }
}

impl Serialize for ElicitValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ElicitValue::String(s) => serializer.serialize_str(s),
            ElicitValue::Number(n) => n.serialize(serializer),
            ElicitValue::Boolean(b) => serializer.serialize_bool(*b),
            ElicitValue::StringArray(items) => items.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ElicitValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ValueVisitor;

        impl<'de> Visitor<'de> for ValueVisitor {
            type Value = ElicitValue;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string, a number, a boolean or an array of strings")
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<ElicitValue, E> {
                Ok(ElicitValue::String(v.to_owned()))
            }

            fn visit_string<E: de::Error>(self, v: String) -> Result<ElicitValue, E> {
                Ok(ElicitValue::String(v))
            }

            fn visit_bool<E: de::Error>(self, v: bool) -> Result<ElicitValue, E> {
                Ok(ElicitValue::Boolean(v))
            }

            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ElicitValue, E> {
                Ok(ElicitValue::Number(v.into()))
            }

            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ElicitValue, E> {
                Ok(ElicitValue::Number(v.into()))
            }

            fn visit_f64<E: de::Error>(self, v: f64) -> Result<ElicitValue, E> {
                serde_json::Number::from_f64(v)
                    .map(ElicitValue::Number)
                    .ok_or_else(|| E::custom("a form value cannot be NaN or infinite"))
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ElicitValue, A::Error> {
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
                while let Some(item) = seq.next_element::<String>()? {
                    items.push(item);
                }
                Ok(ElicitValue::StringArray(items))
            }
        }

        deserializer.deserialize_any(ValueVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn mode_decides_the_kind_and_survives() {
        let form = json!({"message": "m", "requestedSchema": {"type": "object", "properties": {}}});
        let params: ElicitRequestParams = serde_json::from_value(form.clone()).unwrap();
        assert!(matches!(&params, ElicitRequestParams::Form(f) if f.mode.is_none()));
        assert_eq!(serde_json::to_value(&params).unwrap(), form);

        let mut explicit = form.clone();
        explicit["mode"] = json!("form");
        let params: ElicitRequestParams = serde_json::from_value(explicit.clone()).unwrap();
        assert!(matches!(&params, ElicitRequestParams::Form(f) if f.mode.is_some()));
        assert_eq!(serde_json::to_value(&params).unwrap(), explicit);

        let url = json!({"mode": "url", "message": "m", "url": "https://example.com/x"});
        let params: ElicitRequestParams = serde_json::from_value(url.clone()).unwrap();
        assert!(matches!(params, ElicitRequestParams::Url(_)));
        assert_eq!(serde_json::to_value(&params).unwrap(), url);
    }

    #[test]
    fn bad_modes_are_refused() {
        let bad = [
            json!({"mode": "popup", "message": "m", "url": "https://x"}),
            json!({"mode": "url", "message": "m"}),
            json!({"message": "m", "url": "https://x"}),
            json!({"mode": 3, "message": "m"}),
        ];
        for value in bad {
            assert!(
                serde_json::from_value::<ElicitRequestParams>(value.clone()).is_err(),
                "{value}"
            );
        }
        // The standalone structs check their own `mode`.
        assert!(
            serde_json::from_value::<ElicitRequestURLParams>(
                json!({"mode": "form", "message": "m", "url": "u"})
            )
            .is_err()
        );
    }

    #[test]
    fn values_keep_their_json_kind() {
        let wire = json!({"action": "accept", "content": {
            "name": "octocat", "age": 30, "ratio": 0.5, "ok": true, "tags": ["a", "b"]
        }});
        let result: ElicitResult = serde_json::from_value(wire.clone()).unwrap();
        let content = result.content.as_ref().unwrap();
        assert_eq!(content["age"].as_i64(), Some(30));
        assert_eq!(content["ratio"].as_f64(), Some(0.5));
        assert_eq!(content["ok"].as_bool(), Some(true));
        assert_eq!(content["name"].as_str(), Some("octocat"));
        assert_eq!(serde_json::to_value(&result).unwrap(), wire);
        assert!(serde_json::from_value::<ElicitValue>(json!({"a": 1})).is_err());
        assert!(serde_json::from_value::<ElicitValue>(json!([1])).is_err());
        assert_eq!(
            serde_json::to_value(ElicitResult::decline()).unwrap(),
            json!({"action": "decline"})
        );
    }
}
