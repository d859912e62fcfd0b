//! Plain async functions as handlers: every parameter is a [`FromCall`] extractor, the return
//! value converts into the method's result.

use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use kelson_types::{GetPromptResult, JsonObject, ResourceContents};
use serde_json::Value;

use super::extract::{CallParts, ExtractKind, FromCall};
use super::output::{IntoPromptResult, IntoReadResult, IntoToolResult};
use super::shape::Shape;
use super::{BoxFuture, PromptHandler, ResourceHandler, TemplateVars, ToolHandler, ToolResult};
use crate::{HandlerError, RequestContext};

/// Counts the parameters of one kind, at compile time.
#[doc(hidden)]
pub const fn count_kind(kinds: &[ExtractKind], arguments: bool) -> usize {
    let mut i = 0;
    let mut n = 0;
    while i < kinds.len() {
        let hit = if arguments {
            matches!(kinds[i], ExtractKind::Arguments)
        } else {
            matches!(kinds[i], ExtractKind::Context)
        };
        if hit {
            n += 1;
        }
        i += 1;
    }
    n
}

/// An async function (or closure) that serves `tools/call`: any number (up to 12) of
/// [`FromCall`] parameters in any order, at most one of them the arguments and one the
/// [`RequestContext`], returning an [`IntoToolResult`].
///
/// `M` only tells the implementations apart (it is the tuple of parameter types); it is inferred.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot serve a tool",
    note = "a tool handler is an async fn (or a closure returning a future) whose parameters implement FromCall and whose output implements IntoToolResult"
)]
pub trait ToolFn<M>: Send + Sync + 'static {
    /// What the signature declares.
    #[doc(hidden)]
    fn shape() -> Shape
    where
        Self: Sized;

    /// Extracts the parameters and runs the function.
    #[doc(hidden)]
    fn call_tool(&self, parts: CallParts) -> BoxFuture<ToolResult>;
}

/// An async function that serves `prompts/get`; parameters as for [`ToolFn`], returning an
/// [`IntoPromptResult`]. Its arguments type declares the prompt's arguments.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot serve a prompt",
    note = "a prompt handler is an async fn whose parameters implement FromCall and whose output implements IntoPromptResult"
)]
pub trait PromptFn<M>: Send + Sync + 'static {
    /// What the signature declares.
    #[doc(hidden)]
    fn shape() -> Shape
    where
        Self: Sized;

    /// Extracts the parameters and runs the function.
    #[doc(hidden)]
    fn call_prompt(&self, parts: CallParts) -> BoxFuture<Result<GetPromptResult, HandlerError>>;
}

/// An async function that serves `resources/read` for a resource or a template; parameters as
/// for [`ToolFn`] (for a template the arguments are its variables), returning an
/// [`IntoReadResult`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot serve a resource",
    note = "a resource handler is an async fn whose parameters implement FromCall and whose output implements IntoReadResult"
)]
pub trait ResourceFn<M>: Send + Sync + 'static {
    /// What the signature declares.
    #[doc(hidden)]
    fn shape() -> Shape
    where
        Self: Sized;

    /// Extracts the parameters and runs the function.
    #[doc(hidden)]
    fn call_resource(
        &self,
        parts: CallParts,
        mime_type: Option<Arc<str>>,
    ) -> BoxFuture<Result<Vec<ResourceContents>, HandlerError>>;
}

macro_rules! extract_all {
    ($parts:ident; $($T:ident),*) => {
        (|| -> Result<($($T,)*), HandlerError> {
            // First pass: the extractors that only look at the call.
            $(
                let $T: Option<$T> = if matches!(<$T as FromCall>::KIND, ExtractKind::Other) {
                    Some(<$T as FromCall>::from_call(&mut $parts)?)
                } else {
                    None
                };
            )*
            // Second pass: the arguments and the context, taken whole.
            $(
                let $T: $T = match $T {
                    Some(value) => value,
                    None => <$T as FromCall>::from_call(&mut $parts)?,
                };
            )*
            Ok(($($T,)*))
        })()
    };
}

macro_rules! shape_of {
    ($output:expr; $($T:ident),*) => {{
        const {
            let kinds: &[ExtractKind] = &[$(<$T as FromCall>::KIND),*];
            assert!(
                count_kind(kinds, true) <= 1,
                "a handler takes at most one arguments parameter (a Deserialize + JsonSchema type)"
            );
            assert!(
                count_kind(kinds, false) <= 1,
                "a handler takes at most one RequestContext"
            );
        }
        #[allow(unused_mut)]
        let mut shape = Shape {
            arguments: None,
            output: $output,
            wrap_output: false,
            states: Vec::new(),
        };
        $(
            if let Some(schema) = <$T as FromCall>::arguments_schema() {
                shape.arguments = Some(schema);
            }
            if let Some(need) = <$T as FromCall>::state_need() {
                shape.states.push(need);
            }
        )*
        shape
    }};
}

macro_rules! handler_fns {
    ($($T:ident),*) => {
        impl<F, Fut, R, $($T,)*> ToolFn<($($T,)*)> for F
        where
            F: Fn($($T),*) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = R> + Send + 'static,
            R: IntoToolResult,
            $($T: FromCall,)*
        {
            fn shape() -> Shape {
                let mut shape = shape_of!(R::output_schema(); $($T),*);
                shape.wrap_output = R::output_wrapped();
                shape
            }

            #[allow(non_snake_case, unused_mut, unused_variables, clippy::redundant_closure_call)]
            fn call_tool(&self, mut parts: CallParts) -> BoxFuture<ToolResult> {
                match extract_all!(parts; $($T),*) {
                    Ok(($($T,)*)) => {
                        let fut = self($($T),*);
                        Box::pin(async move { fut.await.into_tool_result() })
                    }
                    Err(e) => Box::pin(std::future::ready(Err(e))),
                }
            }
        }

        impl<F, Fut, R, $($T,)*> PromptFn<($($T,)*)> for F
        where
            F: Fn($($T),*) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = R> + Send + 'static,
            R: IntoPromptResult,
            $($T: FromCall,)*
        {
            fn shape() -> Shape {
                shape_of!(None; $($T),*)
            }

            #[allow(non_snake_case, unused_mut, unused_variables, clippy::redundant_closure_call)]
            fn call_prompt(
                &self,
                mut parts: CallParts,
            ) -> BoxFuture<Result<GetPromptResult, HandlerError>> {
                match extract_all!(parts; $($T),*) {
                    Ok(($($T,)*)) => {
                        let fut = self($($T),*);
                        Box::pin(async move { fut.await.into_prompt_result() })
                    }
                    Err(e) => Box::pin(std::future::ready(Err(e))),
                }
            }
        }

        impl<F, Fut, R, $($T,)*> ResourceFn<($($T,)*)> for F
        where
            F: Fn($($T),*) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = R> + Send + 'static,
            R: IntoReadResult,
            $($T: FromCall,)*
        {
            fn shape() -> Shape {
                shape_of!(None; $($T),*)
            }

            #[allow(non_snake_case, unused_mut, unused_variables, clippy::redundant_closure_call)]
            fn call_resource(
                &self,
                mut parts: CallParts,
                mime_type: Option<Arc<str>>,
            ) -> BoxFuture<Result<Vec<ResourceContents>, HandlerError>> {
                let uri = parts.uri().unwrap_or_default().to_owned();
                match extract_all!(parts; $($T),*) {
                    Ok(($($T,)*)) => {
                        let fut = self($($T),*);
                        Box::pin(async move { fut.await.into_contents(&uri, mime_type.as_deref()) })
                    }
                    Err(e) => Box::pin(std::future::ready(Err(e))),
                }
            }
        }
    };
}

handler_fns!();
handler_fns!(T1);
handler_fns!(T1, T2);
handler_fns!(T1, T2, T3);
handler_fns!(T1, T2, T3, T4);
handler_fns!(T1, T2, T3, T4, T5);
handler_fns!(T1, T2, T3, T4, T5, T6);
handler_fns!(T1, T2, T3, T4, T5, T6, T7);
handler_fns!(T1, T2, T3, T4, T5, T6, T7, T8);
handler_fns!(T1, T2, T3, T4, T5, T6, T7, T8, T9);
handler_fns!(T1, T2, T3, T4, T5, T6, T7, T8, T9, T10);
handler_fns!(T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11);
handler_fns!(T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12);

/// A [`ToolFn`] as the registry's [`ToolHandler`].
pub(crate) struct FnTool<F, M> {
    f: F,
    /// Whether the structured output goes under `result` ([`Shape::wrap_output`]).
    wrap_output: bool,
    _marker: PhantomData<fn() -> M>,
}

impl<F, M> FnTool<F, M> {
    pub(crate) fn new(f: F, wrap_output: bool) -> Self {
        FnTool {
            f,
            wrap_output,
            _marker: PhantomData,
        }
    }
}

impl<F: ToolFn<M>, M: 'static> ToolHandler for FnTool<F, M> {
    fn call(&self, ctx: RequestContext, arguments: JsonObject) -> BoxFuture<ToolResult> {
        let call = self.f.call_tool(CallParts::new(ctx, arguments, None));
        if !self.wrap_output {
            return call;
        }
        Box::pin(async move {
            let mut result = call.await?;
            if let Some(value) = result.structured_content.take() {
                result.structured_content = Some(super::output::wrap_output(value));
            }
            Ok(result)
        })
    }
}

/// A [`PromptFn`] as the registry's [`PromptHandler`]: the string arguments are turned into the
/// JSON types the arguments schema names before they are decoded.
pub(crate) struct FnPrompt<F, M> {
    f: F,
    schema: Option<Arc<JsonObject>>,
    _marker: PhantomData<fn() -> M>,
}

impl<F, M> FnPrompt<F, M> {
    pub(crate) fn new(f: F, schema: Option<JsonObject>) -> Self {
        FnPrompt {
            f,
            schema: schema.map(Arc::new),
            _marker: PhantomData,
        }
    }
}

impl<F: PromptFn<M>, M: 'static> PromptHandler for FnPrompt<F, M> {
    fn get(
        &self,
        ctx: RequestContext,
        arguments: std::collections::BTreeMap<String, String>,
    ) -> BoxFuture<Result<GetPromptResult, HandlerError>> {
        let args = typed_strings(arguments, self.schema.as_deref());
        self.f.call_prompt(CallParts::new(ctx, args, None))
    }
}

/// A [`ResourceFn`] as the registry's [`ResourceHandler`]; a template's variables are typed by the
/// arguments schema as a prompt's arguments are.
pub(crate) struct FnResource<F, M> {
    f: F,
    schema: Option<Arc<JsonObject>>,
    mime_type: Option<Arc<str>>,
    _marker: PhantomData<fn() -> M>,
}

impl<F, M> FnResource<F, M> {
    pub(crate) fn new(f: F, schema: Option<JsonObject>, mime_type: Option<&str>) -> Self {
        FnResource {
            f,
            schema: schema.map(Arc::new),
            mime_type: mime_type.map(Arc::from),
            _marker: PhantomData,
        }
    }
}

impl<F: ResourceFn<M>, M: 'static> ResourceHandler for FnResource<F, M> {
    fn read(
        &self,
        ctx: RequestContext,
        uri: String,
        vars: TemplateVars,
    ) -> BoxFuture<Result<Vec<ResourceContents>, HandlerError>> {
        let args = typed_strings(vars, self.schema.as_deref());
        self.f
            .call_resource(CallParts::new(ctx, args, Some(uri)), self.mime_type.clone())
    }
}

/// Prompt arguments and template variables arrive as strings; a property whose schema says
/// `integer`, `number` or `boolean` gets that JSON type when the string spells one, so that the
/// arguments struct can say `u32` instead of `String`. Anything else stays a string (and a string
/// that does not parse is left for the decoder to report).
pub(crate) fn typed_strings(
    strings: std::collections::BTreeMap<String, String>,
    schema: Option<&JsonObject>,
) -> JsonObject {
    let properties = schema
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object);
    strings
        .into_iter()
        .map(|(name, text)| {
            let types = properties
                .and_then(|p| p.get(&name))
                .map(property_types)
                .unwrap_or_default();
            let value = typed_value(&text, &types).unwrap_or(Value::String(text));
            (name, value)
        })
        .collect()
}

/// The JSON types a property's schema allows (`type` as a string or a list).
fn property_types(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn typed_value(text: &str, types: &[&str]) -> Option<Value> {
    if types.contains(&"string") {
        return None;
    }
    for t in types {
        let parsed = match *t {
            "integer" => text.parse::<i64>().ok().map(Value::from),
            "number" => text
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number),
            "boolean" => match text {
                "true" => Some(Value::Bool(true)),
                "false" => Some(Value::Bool(false)),
                _ => None,
            },
            _ => None,
        };
        if parsed.is_some() {
            return parsed;
        }
    }
    None
}
