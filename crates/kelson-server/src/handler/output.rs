//! What a handler function returns: anything that becomes a tool result, a prompt or resource
//! contents.

use bytes::Bytes;
use kelson_jsonrpc::ErrorObject;
use kelson_types::{
    BlobResourceContents, CallToolResult, ContentBlock, GetPromptResult, JsonObject, PromptMessage,
    ResourceContents, TextResourceContents,
};
use schemars::JsonSchema;
use serde::Serialize;

use crate::schema::schema_object;
use crate::{HandlerError, ToolResult};

/// Structured output: `T` is serialized as the result's `structuredContent` (with the same JSON
/// as a text block, as the spec asks), and a tool returning it gets an `outputSchema` generated
/// from `T`, against which every result is validated. As a resource's contents, `application/json`
/// text.
///
/// A `T` whose schema is not an object (a number, a string, a `Vec`, an enum) is put under
/// `result`: `Json(3.0)` is `structuredContent: {"result": 3.0}`, and the output schema is an
/// object with that one required property. 2026-07-28 allows any JSON value there, but the
/// handshake era (2025-06-18 to 2025-11-25) requires an object, and its clients refuse a tool list
/// whose output schema is anything else; one shape serves both. The text block keeps the plain
/// JSON of the value.
///
/// ```
/// use kelson_server::Json;
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Sum {
///     a: i64,
///     b: i64,
/// }
///
/// #[derive(Serialize, JsonSchema)]
/// struct Total {
///     total: i64,
/// }
///
/// async fn add(Sum { a, b }: Sum) -> Json<Total> {
///     Json(Total { total: a + b })
/// }
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Json<T>(pub T);

fn encode<T: Serialize>(value: &T) -> Result<serde_json::Value, HandlerError> {
    serde_json::to_value(value).map_err(|e| {
        HandlerError::Protocol(ErrorObject::internal_error(format_args!(
            "the result does not serialize: {e}"
        )))
    })
}

/// A value a tool handler returns. `Err` of a `Result` becomes an `isError` result with its
/// message (or, for a [`HandlerError::protocol`], a JSON-RPC error).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool result",
    label = "a tool handler cannot return this",
    note = "return a String, Json<T> (T: Serialize + JsonSchema), CallToolResult, ContentBlock, Vec<ContentBlock>, (), or a Result<T, E> of one of them (E: Into<HandlerError>)"
)]
pub trait IntoToolResult: Send + 'static {
    /// The result.
    fn into_tool_result(self) -> ToolResult;

    /// The `outputSchema` a tool returning this type declares.
    fn output_schema() -> Option<JsonObject> {
        None
    }

    /// Whether the `structuredContent` of this type is put under `result` to make it an object
    /// (see [`Json`]); [`output_schema`](Self::output_schema) then describes the wrapped form.
    fn output_wrapped() -> bool {
        false
    }
}

/// The property a non-object structured output is put under.
const WRAPPED: &str = "result";

/// Whether a generated schema describes objects only (`"type": "object"` at its root).
fn is_object_schema(schema: &JsonObject) -> bool {
    schema.get("type").and_then(serde_json::Value::as_str) == Some("object")
}

/// `schema` as the one required property `result` of an object; `$schema` and `$defs` stay at
/// the root, where the references inside point.
fn wrap_schema(mut schema: JsonObject) -> JsonObject {
    // The generated title names the Rust type (`double`, `Array_of_Point`).
    schema.remove("title");
    let mut root = JsonObject::new();
    for key in ["$schema", "$defs"] {
        if let Some(value) = schema.remove(key) {
            root.insert(key.to_owned(), value);
        }
    }
    root.insert("type".to_owned(), "object".into());
    root.insert(
        "properties".to_owned(),
        serde_json::Value::Object(JsonObject::from_iter([(
            WRAPPED.to_owned(),
            serde_json::Value::Object(schema),
        )])),
    );
    root.insert("required".to_owned(), serde_json::json!([WRAPPED]));
    root
}

/// A structured output as the wrapped schema describes it.
pub(crate) fn wrap_output(value: serde_json::Value) -> serde_json::Value {
    serde_json::Value::Object(JsonObject::from_iter([(WRAPPED.to_owned(), value)]))
}

impl IntoToolResult for CallToolResult {
    fn into_tool_result(self) -> ToolResult {
        Ok(self)
    }
}

impl IntoToolResult for String {
    fn into_tool_result(self) -> ToolResult {
        Ok(CallToolResult::text(self))
    }
}

impl IntoToolResult for &'static str {
    fn into_tool_result(self) -> ToolResult {
        Ok(CallToolResult::text(self))
    }
}

impl IntoToolResult for ContentBlock {
    fn into_tool_result(self) -> ToolResult {
        Ok(CallToolResult::new(vec![self]))
    }
}

impl IntoToolResult for Vec<ContentBlock> {
    fn into_tool_result(self) -> ToolResult {
        Ok(CallToolResult::new(self))
    }
}

/// No content: a tool that only acts.
impl IntoToolResult for () {
    fn into_tool_result(self) -> ToolResult {
        Ok(CallToolResult::new(Vec::new()))
    }
}

impl<T: Serialize + JsonSchema + Send + 'static> IntoToolResult for Json<T> {
    fn into_tool_result(self) -> ToolResult {
        Ok(CallToolResult::structured(encode(&self.0)?))
    }

    fn output_schema() -> Option<JsonObject> {
        let schema = schema_object::<T>();
        Some(if is_object_schema(&schema) {
            schema
        } else {
            wrap_schema(schema)
        })
    }

    fn output_wrapped() -> bool {
        !is_object_schema(&schema_object::<T>())
    }
}

impl<T, E> IntoToolResult for Result<T, E>
where
    T: IntoToolResult,
    E: Into<HandlerError> + Send + 'static,
{
    fn into_tool_result(self) -> ToolResult {
        match self {
            Ok(value) => value.into_tool_result(),
            Err(e) => Err(e.into()),
        }
    }

    fn output_schema() -> Option<JsonObject> {
        T::output_schema()
    }

    fn output_wrapped() -> bool {
        T::output_wrapped()
    }
}

/// A value a prompt handler returns.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a prompt result",
    note = "return a String, PromptMessage, Vec<PromptMessage>, GetPromptResult, or a Result<T, E> of one of them"
)]
pub trait IntoPromptResult: Send + 'static {
    /// The rendered prompt.
    fn into_prompt_result(self) -> Result<GetPromptResult, HandlerError>;
}

impl IntoPromptResult for GetPromptResult {
    fn into_prompt_result(self) -> Result<GetPromptResult, HandlerError> {
        Ok(self)
    }
}

/// One user message.
impl IntoPromptResult for String {
    fn into_prompt_result(self) -> Result<GetPromptResult, HandlerError> {
        Ok(GetPromptResult::new(vec![PromptMessage::user_text(self)]))
    }
}

impl IntoPromptResult for &'static str {
    fn into_prompt_result(self) -> Result<GetPromptResult, HandlerError> {
        self.to_owned().into_prompt_result()
    }
}

impl IntoPromptResult for PromptMessage {
    fn into_prompt_result(self) -> Result<GetPromptResult, HandlerError> {
        Ok(GetPromptResult::new(vec![self]))
    }
}

impl IntoPromptResult for Vec<PromptMessage> {
    fn into_prompt_result(self) -> Result<GetPromptResult, HandlerError> {
        Ok(GetPromptResult::new(self))
    }
}

impl<T, E> IntoPromptResult for Result<T, E>
where
    T: IntoPromptResult,
    E: Into<HandlerError> + Send + 'static,
{
    fn into_prompt_result(self) -> Result<GetPromptResult, HandlerError> {
        self.map_err(Into::into)?.into_prompt_result()
    }
}

/// What a resource read produced, before it is given its URI and MIME type.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a resource's contents",
    note = "return a String (text), Vec<u8> or Bytes (a blob), Json<T>, ResourceContents, Vec<ResourceContents>, Option<T> (None: not found), or a Result<T, E> of one of them"
)]
pub trait IntoReadResult: Send + 'static {
    /// The contents of `uri`; `mime_type` is the one registered for the resource or template.
    fn into_contents(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> Result<Vec<ResourceContents>, HandlerError>;
}

impl IntoReadResult for Vec<ResourceContents> {
    fn into_contents(
        self,
        _: &str,
        _: Option<&str>,
    ) -> Result<Vec<ResourceContents>, HandlerError> {
        Ok(self)
    }
}

impl IntoReadResult for ResourceContents {
    fn into_contents(
        self,
        _: &str,
        _: Option<&str>,
    ) -> Result<Vec<ResourceContents>, HandlerError> {
        Ok(vec![self])
    }
}

fn text_contents(uri: &str, mime_type: Option<&str>, text: String) -> Vec<ResourceContents> {
    let mut contents = TextResourceContents::new(uri, text);
    if let Some(mime) = mime_type {
        contents = contents.with_mime_type(mime);
    }
    vec![contents.into()]
}

fn blob_contents(uri: &str, mime_type: Option<&str>, data: &[u8]) -> Vec<ResourceContents> {
    use base64::Engine as _;
    let blob = base64::engine::general_purpose::STANDARD.encode(data);
    let mut contents = BlobResourceContents::new(uri, blob);
    if let Some(mime) = mime_type {
        contents = contents.with_mime_type(mime);
    }
    vec![contents.into()]
}

/// Text, with the registered MIME type.
impl IntoReadResult for String {
    fn into_contents(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> Result<Vec<ResourceContents>, HandlerError> {
        Ok(text_contents(uri, mime_type, self))
    }
}

impl IntoReadResult for &'static str {
    fn into_contents(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> Result<Vec<ResourceContents>, HandlerError> {
        Ok(text_contents(uri, mime_type, self.to_owned()))
    }
}

/// Binary contents (base64 on the wire), with the registered MIME type.
impl IntoReadResult for Vec<u8> {
    fn into_contents(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> Result<Vec<ResourceContents>, HandlerError> {
        Ok(blob_contents(uri, mime_type, &self))
    }
}

impl IntoReadResult for Bytes {
    fn into_contents(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> Result<Vec<ResourceContents>, HandlerError> {
        Ok(blob_contents(uri, mime_type, &self))
    }
}

/// JSON text, `application/json` unless the registration names another type.
impl<T: Serialize + Send + 'static> IntoReadResult for Json<T> {
    fn into_contents(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> Result<Vec<ResourceContents>, HandlerError> {
        let text = serde_json::to_string(&self.0).map_err(|e| {
            HandlerError::Protocol(ErrorObject::internal_error(format_args!(
                "the contents do not serialize: {e}"
            )))
        })?;
        Ok(text_contents(
            uri,
            Some(mime_type.unwrap_or("application/json")),
            text,
        ))
    }
}

/// `None` is the spec's "resource not found" (-32602 with the URI).
impl<T: IntoReadResult> IntoReadResult for Option<T> {
    fn into_contents(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> Result<Vec<ResourceContents>, HandlerError> {
        match self {
            Some(value) => value.into_contents(uri, mime_type),
            None => Err(HandlerError::resource_not_found(uri)),
        }
    }
}

impl<T, E> IntoReadResult for Result<T, E>
where
    T: IntoReadResult,
    E: Into<HandlerError> + Send + 'static,
{
    fn into_contents(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> Result<Vec<ResourceContents>, HandlerError> {
        self.map_err(Into::into)?.into_contents(uri, mime_type)
    }
}
