//! Handlers: plain async functions whose parameters are extracted from the call ([`extract`],
//! [`func`]) and whose return values convert into results ([`output`]), and underneath them the
//! object-safe traits the registry stores. Closures over the raw request implement those traits
//! too, for servers that want the call as it came.

pub(crate) mod extract;
pub(crate) mod func;
pub(crate) mod output;
mod result;
pub(crate) mod shape;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::future::Future;

use kelson_types::{CompleteRequestParams, GetPromptResult, JsonObject, ResourceContents};

pub use result::{BoxFuture, ToolResult};

use crate::{HandlerError, RequestContext};

/// Serves `tools/call` for one tool. The arguments have passed the tool's `inputSchema`.
pub trait ToolHandler: Send + Sync + 'static {
    /// Runs the tool.
    fn call(&self, ctx: RequestContext, arguments: JsonObject) -> BoxFuture<ToolResult>;
}

impl<F, Fut> ToolHandler for F
where
    F: Fn(RequestContext, JsonObject) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolResult> + Send + 'static,
{
    fn call(&self, ctx: RequestContext, arguments: JsonObject) -> BoxFuture<ToolResult> {
        Box::pin(self(ctx, arguments))
    }
}

/// The variables a resource template bound when it matched a URI, percent-decoded.
pub type TemplateVars = BTreeMap<String, String>;

/// Serves `resources/read` for one resource or for every URI a template matches.
pub trait ResourceHandler: Send + Sync + 'static {
    /// Reads the resource. `vars` is empty for a fixed resource.
    fn read(
        &self,
        ctx: RequestContext,
        uri: String,
        vars: TemplateVars,
    ) -> BoxFuture<Result<Vec<ResourceContents>, HandlerError>>;
}

impl<F, Fut> ResourceHandler for F
where
    F: Fn(RequestContext, String, TemplateVars) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Vec<ResourceContents>, HandlerError>> + Send + 'static,
{
    fn read(
        &self,
        ctx: RequestContext,
        uri: String,
        vars: TemplateVars,
    ) -> BoxFuture<Result<Vec<ResourceContents>, HandlerError>> {
        Box::pin(self(ctx, uri, vars))
    }
}

/// Serves `prompts/get` for one prompt. Required arguments have been checked.
pub trait PromptHandler: Send + Sync + 'static {
    /// Renders the prompt.
    fn get(
        &self,
        ctx: RequestContext,
        arguments: BTreeMap<String, String>,
    ) -> BoxFuture<Result<GetPromptResult, HandlerError>>;
}

impl<F, Fut> PromptHandler for F
where
    F: Fn(RequestContext, BTreeMap<String, String>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<GetPromptResult, HandlerError>> + Send + 'static,
{
    fn get(
        &self,
        ctx: RequestContext,
        arguments: BTreeMap<String, String>,
    ) -> BoxFuture<Result<GetPromptResult, HandlerError>> {
        Box::pin(self(ctx, arguments))
    }
}

/// Completion candidates for one argument. The runtime caps the list at the spec's 100 values.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Completions {
    /// Candidate values, best first.
    pub values: Vec<String>,
    /// How many candidates exist in all, if known.
    pub total: Option<u64>,
    /// Whether more candidates exist than were returned.
    pub has_more: Option<bool>,
}

impl Completions {
    /// The values among `candidates` that start with `prefix`, in their given order.
    pub fn filter_prefix<'a>(candidates: impl IntoIterator<Item = &'a str>, prefix: &str) -> Self {
        Completions {
            values: candidates
                .into_iter()
                .filter(|c| c.starts_with(prefix))
                .map(str::to_owned)
                .collect(),
            total: None,
            has_more: None,
        }
    }
}

/// Serves `completion/complete`.
pub trait CompletionHandler: Send + Sync + 'static {
    /// Suggests values for `params.argument`.
    fn complete(
        &self,
        ctx: RequestContext,
        params: CompleteRequestParams,
    ) -> BoxFuture<Result<Completions, HandlerError>>;
}

impl<F, Fut> CompletionHandler for F
where
    F: Fn(RequestContext, CompleteRequestParams) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Completions, HandlerError>> + Send + 'static,
{
    fn complete(
        &self,
        ctx: RequestContext,
        params: CompleteRequestParams,
    ) -> BoxFuture<Result<Completions, HandlerError>> {
        Box::pin(self(ctx, params))
    }
}
