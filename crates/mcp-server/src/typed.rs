//! Typed tools: arguments and output as Rust types, with both schemas generated (JSON Schema 2020-12).

use std::future::Future;

use mcp_types::{CallToolResult, JsonObject, Tool};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::handler::{BoxFuture, ToolHandler, ToolResult};
use crate::scopes::Scoped;
use crate::{BuildError, HandlerError, RequestContext, Server, ServerBuilder};

/// The JSON Schema (2020-12) of a Rust type, as a JSON object.
pub fn schema_object<T: JsonSchema>() -> JsonObject {
    let schema = schemars::SchemaGenerator::default().into_root_schema_for::<T>();
    match Value::from(schema) {
        Value::Object(map) => map,
        // `true` / `false` schemas: accept anything / nothing.
        Value::Bool(true) => JsonObject::new(),
        other => {
            let mut map = JsonObject::new();
            map.insert("allOf".to_owned(), Value::Array(vec![other]));
            map
        }
    }
}

struct TypedTool<A, F> {
    handler: F,
    _args: std::marker::PhantomData<fn(A)>,
}

impl<A, F, Fut> ToolHandler for TypedTool<A, F>
where
    A: DeserializeOwned + Send + 'static,
    F: Fn(RequestContext, A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolResult> + Send + 'static,
{
    fn call(&self, ctx: RequestContext, arguments: JsonObject) -> BoxFuture<ToolResult> {
        match serde_json::from_value::<A>(Value::Object(arguments)) {
            Ok(args) => Box::pin((self.handler)(ctx, args)),
            // The arguments passed the generated schema, so this only happens when serde is stricter
            // than the schema; report it to the model like any invalid argument.
            Err(e) => {
                Box::pin(
                    async move { Ok(CallToolResult::error(format!("Invalid arguments: {e}"))) },
                )
            }
        }
    }
}

struct StructuredTool<A, F> {
    handler: F,
    _args: std::marker::PhantomData<fn(A)>,
}

impl<A, O, F, Fut> ToolHandler for StructuredTool<A, F>
where
    A: DeserializeOwned + Send + 'static,
    O: Serialize + Send + 'static,
    F: Fn(RequestContext, A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, HandlerError>> + Send + 'static,
{
    fn call(&self, ctx: RequestContext, arguments: JsonObject) -> BoxFuture<ToolResult> {
        let args = match serde_json::from_value::<A>(Value::Object(arguments)) {
            Ok(args) => args,
            Err(e) => {
                return Box::pin(async move {
                    Ok(CallToolResult::error(format!("Invalid arguments: {e}")))
                });
            }
        };
        let fut = (self.handler)(ctx, args);
        Box::pin(async move {
            let output = fut.await?;
            let value = serde_json::to_value(output)
                .map_err(|e| HandlerError::Protocol(mcp_jsonrpc::ErrorObject::internal_error(e)))?;
            Ok(CallToolResult::structured(value))
        })
    }
}

fn typed_def<A: JsonSchema>(tool: impl Into<Scoped<Tool>>) -> Scoped<Tool> {
    let mut tool = tool.into();
    tool.def.input_schema = schema_object::<A>();
    tool
}

fn structured_def<A: JsonSchema, O: JsonSchema>(tool: impl Into<Scoped<Tool>>) -> Scoped<Tool> {
    let mut tool = tool.into();
    tool.def.input_schema = schema_object::<A>();
    tool.def.output_schema = Some(schema_object::<O>());
    tool
}

impl ServerBuilder {
    /// Registers a tool whose arguments are a Rust type; `inputSchema` is generated from `A` and
    /// replaces the one in `tool`. Scopes are named as for [`tool`](Self::tool).
    #[must_use]
    pub fn typed_tool<A, F, Fut>(self, tool: impl Into<Scoped<Tool>>, handler: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(RequestContext, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolResult> + Send + 'static,
    {
        self.tool(
            typed_def::<A>(tool),
            TypedTool {
                handler,
                _args: std::marker::PhantomData,
            },
        )
    }

    /// Registers a tool with typed arguments and a typed result: both schemas are generated, and the
    /// output is returned as `structuredContent` plus the same JSON as text.
    #[must_use]
    pub fn structured_tool<A, O, F, Fut>(self, tool: impl Into<Scoped<Tool>>, handler: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        O: Serialize + JsonSchema + Send + 'static,
        F: Fn(RequestContext, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, HandlerError>> + Send + 'static,
    {
        self.tool(
            structured_def::<A, O>(tool),
            StructuredTool {
                handler,
                _args: std::marker::PhantomData,
            },
        )
    }
}

impl Server {
    /// Registers a typed tool at run time (see [`ServerBuilder::typed_tool`]).
    pub fn add_typed_tool<A, F, Fut>(
        &self,
        tool: impl Into<Scoped<Tool>>,
        handler: F,
    ) -> Result<(), BuildError>
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(RequestContext, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolResult> + Send + 'static,
    {
        self.add_tool(
            typed_def::<A>(tool),
            TypedTool {
                handler,
                _args: std::marker::PhantomData,
            },
        )
    }
}
