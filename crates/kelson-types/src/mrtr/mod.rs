//! Multi round-trip requests (MRTR): how a server asks the client for input in the middle of
//! `tools/call`, `resources/read` or `prompts/get`, without ever sending a JSON-RPC request.
//!
//! spec 2026-07-28 basic/patterns/mrtr: the server answers with an [`InputRequiredResult`]; the client
//! gathers the answers and sends the same method with the same parameters again, under a new id, with
//! `inputResponses` and the echoed `requestState`.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use kelson_jsonrpc::Id;
use serde::de::{self, DeserializeOwned, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::capabilities::{ClientCapabilities, ElicitationCapability, SamplingCapability};
use crate::common::{JsonObject, ResultType};
use crate::elicitation::{ElicitRequestParams, ElicitResult};
use crate::meta::ResultMeta;
use crate::method::method_names;
use crate::prompts::GetPromptResult;
use crate::resources::ReadResourceResult;
use crate::roots::{ListRootsRequestParams, ListRootsResult};
use crate::sampling::{CreateMessageRequestParams, CreateMessageResult};
use crate::tools::CallToolResult;
use crate::wire::{KeySeed, from_value};

/// Input requests keyed by server-chosen names, unique within one request (`InputRequests`).
pub type InputRequests = BTreeMap<String, InputRequest>;

/// Answers keyed by the names of the input requests they answer (`InputResponses`).
pub type InputResponses = BTreeMap<String, InputResponse>;

/// An interim result that asks the client for input before the request can complete
/// (`InputRequiredResult`, `resultType: "input_required"`).
///
/// spec 2026-07-28 basic/patterns/mrtr: allowed only on `tools/call`, `resources/read` and
/// `prompts/get`; it carries at least one of `inputRequests` and `requestState`, and no cache hints.
/// `requestState` comes back attacker-controlled: protect its integrity if it matters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequiredResult {
    /// Always `input_required` for this type.
    #[serde(default = "input_required")]
    pub result_type: ResultType,
    /// What the client must gather before retrying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests>,
    /// Opaque state the client echoes byte for byte on retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
}

fn input_required() -> ResultType {
    ResultType::InputRequired
}

impl Default for InputRequiredResult {
    fn default() -> Self {
        Self::new()
    }
}

impl InputRequiredResult {
    /// An empty interim result; add input requests or a request state before sending it.
    pub fn new() -> Self {
        InputRequiredResult {
            result_type: ResultType::InputRequired,
            input_requests: None,
            request_state: None,
            meta: None,
        }
    }

    /// Adds an input request under a name.
    #[must_use]
    pub fn with_input_request(
        mut self,
        name: impl Into<String>,
        request: impl Into<InputRequest>,
    ) -> Self {
        self.input_requests
            .get_or_insert_with(BTreeMap::new)
            .insert(name.into(), request.into());
        self
    }

    /// Sets the opaque request state.
    #[must_use]
    pub fn with_request_state(mut self, state: impl Into<String>) -> Self {
        self.request_state = Some(state.into());
        self
    }

    /// True when the result asks for something: a server MUST include at least one of
    /// `inputRequests` and `requestState`.
    pub fn is_well_formed(&self) -> bool {
        self.input_requests.is_some() || self.request_state.is_some()
    }
}

/// A request for input embedded in an [`InputRequiredResult`] (`InputRequest`): `{method, params}`,
/// with no `jsonrpc` and no `id`.
#[derive(Clone, Debug, PartialEq)]
pub enum InputRequest {
    /// `elicitation/create`: ask the user.
    Elicit(ElicitRequestParams),
    /// `sampling/createMessage` (deprecated): ask the client's model.
    CreateMessage(CreateMessageRequestParams),
    /// `roots/list` (deprecated): ask for the client's roots; the parameters are optional.
    ListRoots(Option<ListRootsRequestParams>),
}

impl InputRequest {
    /// An elicitation, form or URL.
    pub fn elicit(params: impl Into<ElicitRequestParams>) -> Self {
        InputRequest::Elicit(params.into())
    }

    /// A sampling request.
    pub fn create_message(params: CreateMessageRequestParams) -> Self {
        InputRequest::CreateMessage(params)
    }

    /// A roots request without parameters.
    pub fn list_roots() -> Self {
        InputRequest::ListRoots(None)
    }

    /// The embedded method name.
    pub fn method(&self) -> &'static str {
        match self {
            InputRequest::Elicit(_) => method_names::ELICITATION_CREATE,
            InputRequest::CreateMessage(_) => method_names::SAMPLING_CREATE_MESSAGE,
            InputRequest::ListRoots(_) => method_names::ROOTS_LIST,
        }
    }

    /// True when the client declared, on this request, the capability this input request needs.
    ///
    /// spec 2026-07-28 basic/patterns/mrtr: a server MUST NOT send an input request the client cannot
    /// answer: no elicitation without `elicitation`, no URL mode without `elicitation.url`, no
    /// tool-enabled sampling without `sampling.tools`.
    pub fn is_supported_by(&self, capabilities: &ClientCapabilities) -> bool {
        match self {
            InputRequest::Elicit(ElicitRequestParams::Form(_)) => {
                capabilities.supports_elicitation_form()
            }
            InputRequest::Elicit(ElicitRequestParams::Url(_)) => {
                capabilities.supports_elicitation_url()
            }
            InputRequest::CreateMessage(params) => {
                capabilities.supports_sampling()
                    && (!params.uses_tools() || capabilities.supports_sampling_tools())
            }
            InputRequest::ListRoots(_) => capabilities.supports_roots(),
        }
    }

    /// The capabilities this input request needs, shaped for the `requiredCapabilities` member of a
    /// -32021 error.
    pub fn required_capabilities(&self) -> ClientCapabilities {
        let mut required = ClientCapabilities::default();
        match self {
            InputRequest::Elicit(ElicitRequestParams::Form(_)) => {
                required.elicitation = Some(ElicitationCapability::default());
            }
            InputRequest::Elicit(ElicitRequestParams::Url(_)) => {
                required.elicitation = Some(ElicitationCapability {
                    url: Some(JsonObject::new()),
                    ..Default::default()
                });
            }
            InputRequest::CreateMessage(params) => {
                required.sampling = Some(SamplingCapability {
                    tools: params.uses_tools().then(JsonObject::new),
                    ..Default::default()
                });
            }
            InputRequest::ListRoots(_) => required.roots = Some(JsonObject::new()),
        }
        required
    }
}

impl From<ElicitRequestParams> for InputRequest {
    fn from(value: ElicitRequestParams) -> Self {
        InputRequest::Elicit(value)
    }
}

impl From<CreateMessageRequestParams> for InputRequest {
    fn from(value: CreateMessageRequestParams) -> Self {
        InputRequest::CreateMessage(value)
    }
}

impl Serialize for InputRequest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serialize_embedded(self, None, serializer)
    }
}

impl<'de> Deserialize<'de> for InputRequest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_map(EmbeddedVisitor { keep_id: false })
            .map(|(request, _)| request)
    }
}

/// Writes `{method, params}` (and an `id`, only for the legacy shape [`ListRootsRequest`] may carry).
fn serialize_embedded<S: Serializer>(
    request: &InputRequest,
    id: Option<&Id>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let has_params = !matches!(request, InputRequest::ListRoots(None));
    let len = 1 + usize::from(has_params) + usize::from(id.is_some());
    let mut map = serializer.serialize_map(Some(len))?;
    if let Some(id) = id {
        map.serialize_entry("id", id)?;
    }
    map.serialize_entry("method", request.method())?;
    match request {
        InputRequest::Elicit(params) => map.serialize_entry("params", params)?,
        InputRequest::CreateMessage(params) => map.serialize_entry("params", params)?,
        InputRequest::ListRoots(Some(params)) => map.serialize_entry("params", params)?,
        InputRequest::ListRoots(None) => {}
    }
    map.end()
}

/// The embedded methods, for error messages.
const INPUT_METHODS: &[&str] = &[
    method_names::ELICITATION_CREATE,
    method_names::SAMPLING_CREATE_MESSAGE,
    method_names::ROOTS_LIST,
];

/// Decodes `params` as the type its method names.
struct ParamsSeed<'a>(&'a str);

impl<'de> DeserializeSeed<'de> for ParamsSeed<'_> {
    type Value = InputRequest;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<InputRequest, D::Error> {
        match self.0 {
            method_names::ELICITATION_CREATE => {
                ElicitRequestParams::deserialize(deserializer).map(InputRequest::Elicit)
            }
            method_names::SAMPLING_CREATE_MESSAGE => {
                CreateMessageRequestParams::deserialize(deserializer)
                    .map(InputRequest::CreateMessage)
            }
            method_names::ROOTS_LIST => Option::<ListRootsRequestParams>::deserialize(deserializer)
                .map(InputRequest::ListRoots),
            other => Err(de::Error::unknown_variant(other, INPUT_METHODS)),
        }
    }
}

/// Reads `{method, params}` in one pass when `method` comes first (the usual order), and buffers
/// `params` only when it comes before `method`: as its text, so that a form's fields keep the
/// server's order (a `Value` would sort them by name).
struct EmbeddedVisitor {
    keep_id: bool,
}

impl<'de> Visitor<'de> for EmbeddedVisitor {
    type Value = (InputRequest, Option<Id>);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an input request object with `method` and `params`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut method: Option<Cow<'de, str>> = None;
        let mut decoded: Option<InputRequest> = None;
        let mut buffered: Option<Box<serde_json::value::RawValue>> = None;
        let mut id: Option<Id> = None;
        while let Some(key) = map.next_key_seed(KeySeed)? {
            match &*key {
                "method" => {
                    if method.is_some() {
                        return Err(de::Error::duplicate_field("method"));
                    }
                    method = Some(map.next_value_seed(KeySeed)?);
                }
                "params" => {
                    if decoded.is_some() || buffered.is_some() {
                        return Err(de::Error::duplicate_field("params"));
                    }
                    match &method {
                        Some(method) => decoded = Some(map.next_value_seed(ParamsSeed(method))?),
                        None => buffered = Some(map.next_value()?),
                    }
                }
                "id" if self.keep_id => id = map.next_value()?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let method = method.ok_or_else(|| de::Error::missing_field("method"))?;
        let request = match (decoded, buffered) {
            (Some(request), _) => request,
            (None, Some(params)) => ParamsSeed(&method)
                .deserialize(&*params)
                .map_err(de::Error::custom)?,
            (None, None) if method == method_names::ROOTS_LIST => InputRequest::ListRoots(None),
            (None, None) if INPUT_METHODS.contains(&&*method) => {
                return Err(de::Error::missing_field("params"));
            }
            (None, None) => return Err(de::Error::unknown_variant(&method, INPUT_METHODS)),
        };
        Ok((request, id))
    }
}

/// Declares a schema-named struct for one embedded request kind, `{method: <const>, params}`.
macro_rules! embedded_request {
    ($(#[$attr:meta])* $name:ident, $variant:ident, $params:ty, $method:expr) => {
        $(#[$attr])*
        #[derive(Clone, Debug, PartialEq)]
        pub struct $name {
            /// The parameters.
            pub params: $params,
        }

        impl From<$name> for InputRequest {
            fn from(value: $name) -> Self {
                InputRequest::$variant(value.params)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                // Cloning keeps one writer for the embedded shape; these values are small and rare.
                serialize_embedded(&InputRequest::$variant(self.params.clone()), None, serializer)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                match InputRequest::deserialize(deserializer)? {
                    InputRequest::$variant(params) => Ok($name { params }),
                    other => Err(de::Error::custom(format_args!(
                        "expected method {:?}, found {:?}",
                        $method,
                        other.method()
                    ))),
                }
            }
        }
    };
}

embedded_request! {
    /// An `elicitation/create` input request on its own (`ElicitRequest`).
    ElicitRequest, Elicit, ElicitRequestParams, method_names::ELICITATION_CREATE
}

embedded_request! {
    /// A `sampling/createMessage` input request on its own (`CreateMessageRequest`).
    CreateMessageRequest, CreateMessage, CreateMessageRequestParams, method_names::SAMPLING_CREATE_MESSAGE
}

/// A `roots/list` input request on its own (`ListRootsRequest`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ListRootsRequest {
    /// The optional parameters.
    pub params: Option<ListRootsRequestParams>,
    /// A JSON-RPC id left over from the era when this was a real request. The 2026-07-28 shape has
    /// none and a server never sets one, but the official example carries one, so it is kept when
    /// present to make the round trip lossless. [`InputRequest`] ignores it.
    pub id: Option<Id>,
}

impl From<ListRootsRequest> for InputRequest {
    fn from(value: ListRootsRequest) -> Self {
        InputRequest::ListRoots(value.params)
    }
}

impl Serialize for ListRootsRequest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serialize_embedded(
            &InputRequest::ListRoots(self.params.clone()),
            self.id.as_ref(),
            serializer,
        )
    }
}

impl<'de> Deserialize<'de> for ListRootsRequest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match deserializer.deserialize_map(EmbeddedVisitor { keep_id: true })? {
            (InputRequest::ListRoots(params), id) => Ok(ListRootsRequest { params, id }),
            (other, _) => Err(de::Error::custom(format_args!(
                "expected method \"roots/list\", found {:?}",
                other.method()
            ))),
        }
    }
}

/// The client's answer to one input request (`InputResponse`): a plain object without `resultType`.
///
/// Decoding tells the kinds apart by their keys (`action` for elicitation, `roots` for roots,
/// otherwise a sampling result), never by trial and error.
#[derive(Clone, Debug, PartialEq)]
#[allow(
    clippy::large_enum_variant,
    reason = "answers live for one request round; boxing would cost an allocation on the common path"
)]
pub enum InputResponse {
    /// The answer to `elicitation/create`.
    Elicit(ElicitResult),
    /// The answer to `sampling/createMessage`.
    CreateMessage(CreateMessageResult),
    /// The answer to `roots/list`.
    ListRoots(ListRootsResult),
}

impl InputResponse {
    /// The elicitation answer, if this is one.
    pub fn as_elicit(&self) -> Option<&ElicitResult> {
        match self {
            InputResponse::Elicit(r) => Some(r),
            _ => None,
        }
    }

    /// The sampling answer, if this is one.
    pub fn as_create_message(&self) -> Option<&CreateMessageResult> {
        match self {
            InputResponse::CreateMessage(r) => Some(r),
            _ => None,
        }
    }

    /// The roots answer, if this is one.
    pub fn as_list_roots(&self) -> Option<&ListRootsResult> {
        match self {
            InputResponse::ListRoots(r) => Some(r),
            _ => None,
        }
    }
}

impl From<ElicitResult> for InputResponse {
    fn from(value: ElicitResult) -> Self {
        InputResponse::Elicit(value)
    }
}

impl From<CreateMessageResult> for InputResponse {
    fn from(value: CreateMessageResult) -> Self {
        InputResponse::CreateMessage(value)
    }
}

impl From<ListRootsResult> for InputResponse {
    fn from(value: ListRootsResult) -> Self {
        InputResponse::ListRoots(value)
    }
}

impl Serialize for InputResponse {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            InputResponse::Elicit(r) => r.serialize(serializer),
            InputResponse::CreateMessage(r) => r.serialize(serializer),
            InputResponse::ListRoots(r) => r.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for InputResponse {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // The distinguishing key may come last, so the object is buffered; input responses appear only
        // on multi round-trip retries.
        let object = JsonObject::deserialize(deserializer)?;
        if object.contains_key("action") {
            from_value(Value::Object(object)).map(InputResponse::Elicit)
        } else if object.contains_key("roots") {
            from_value(Value::Object(object)).map(InputResponse::ListRoots)
        } else {
            from_value(Value::Object(object)).map(InputResponse::CreateMessage)
        }
    }
}

/// The result of a method that may ask for input first: `tools/call`, `resources/read` and
/// `prompts/get`.
///
/// Decoding peeks at `resultType`: absent or `"complete"` gives `Complete`, `"input_required"` gives
/// `InputRequired`, and any other value is an error, because a client MUST treat a `resultType` it
/// does not recognise as invalid (spec 2026-07-28 basic/index, resultType). Encoding writes the inner value.
#[derive(Clone, Debug, PartialEq)]
#[allow(
    clippy::large_enum_variant,
    reason = "the lint sizes the generic `T` as zero; real results are as large as the interim one"
)]
pub enum ResultOrInputRequired<T> {
    /// The final result.
    Complete(T),
    /// An interim result asking for input.
    InputRequired(InputRequiredResult),
}

impl<T> ResultOrInputRequired<T> {
    /// True for a final result.
    pub fn is_complete(&self) -> bool {
        matches!(self, ResultOrInputRequired::Complete(_))
    }

    /// The final result, if this is one.
    pub fn complete(self) -> Option<T> {
        match self {
            ResultOrInputRequired::Complete(result) => Some(result),
            ResultOrInputRequired::InputRequired(_) => None,
        }
    }

    /// The final result by reference, if this is one.
    pub fn as_complete(&self) -> Option<&T> {
        match self {
            ResultOrInputRequired::Complete(result) => Some(result),
            ResultOrInputRequired::InputRequired(_) => None,
        }
    }

    /// The interim result, if this is one.
    pub fn as_input_required(&self) -> Option<&InputRequiredResult> {
        match self {
            ResultOrInputRequired::Complete(_) => None,
            ResultOrInputRequired::InputRequired(result) => Some(result),
        }
    }

    /// Transforms the final result.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> ResultOrInputRequired<U> {
        match self {
            ResultOrInputRequired::Complete(result) => ResultOrInputRequired::Complete(f(result)),
            ResultOrInputRequired::InputRequired(result) => {
                ResultOrInputRequired::InputRequired(result)
            }
        }
    }
}

impl<T> From<InputRequiredResult> for ResultOrInputRequired<T> {
    fn from(value: InputRequiredResult) -> Self {
        ResultOrInputRequired::InputRequired(value)
    }
}

impl From<CallToolResult> for ResultOrInputRequired<CallToolResult> {
    fn from(value: CallToolResult) -> Self {
        ResultOrInputRequired::Complete(value)
    }
}

impl From<ReadResourceResult> for ResultOrInputRequired<ReadResourceResult> {
    fn from(value: ReadResourceResult) -> Self {
        ResultOrInputRequired::Complete(value)
    }
}

impl From<GetPromptResult> for ResultOrInputRequired<GetPromptResult> {
    fn from(value: GetPromptResult) -> Self {
        ResultOrInputRequired::Complete(value)
    }
}

impl<T: Serialize> Serialize for ResultOrInputRequired<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ResultOrInputRequired::Complete(result) => result.serialize(serializer),
            ResultOrInputRequired::InputRequired(result) => result.serialize(serializer),
        }
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for ResultOrInputRequired<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let object = JsonObject::deserialize(deserializer)?;
        let input_required = match object.get("resultType") {
            None => false,
            Some(Value::String(kind)) => match ResultType::from(kind.as_str()) {
                ResultType::Complete => false,
                ResultType::InputRequired => true,
                other @ (ResultType::Task | ResultType::Other(_)) => {
                    return Err(de::Error::invalid_value(
                        de::Unexpected::Str(other.as_str()),
                        &"resultType \"complete\" or \"input_required\"",
                    ));
                }
            },
            Some(_) => return Err(de::Error::custom("resultType must be a string")),
        };
        if input_required {
            from_value(Value::Object(object)).map(ResultOrInputRequired::InputRequired)
        } else {
            from_value(Value::Object(object)).map(ResultOrInputRequired::Complete)
        }
    }
}

#[cfg(test)]
mod tests;
