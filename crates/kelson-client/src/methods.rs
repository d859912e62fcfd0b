//! The typed calls: one per client-to-server method, the pagination helpers, MRTR driving, the
//! cache, and the `x-mcp-header` bookkeeping of `tools/call` on HTTP.

use std::collections::BTreeMap;
use std::sync::Arc;

use kelson_jsonrpc::code;
use kelson_types::{
    CallToolResult, CompleteArgument, CompleteContext, CompleteResult, CompletionReference,
    CreateTaskResult, DiscoverResult, GetPromptResult, InputRequiredResult, JsonObject,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, Prompt,
    ReadResourceResult, Resource, ResourceTemplate, Tool, method_names, param_headers,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::cache::Cacheable;
use crate::client::{Hints, Inner};
use crate::list::Received;
use crate::request::{Options, Request};
use crate::result::{Kind, decode, result_kind};
use crate::{Client, Error, Violation};

#[derive(Debug, thiserror::Error)]
#[error("tool arguments must be a JSON object or null, not {0}")]
struct NotAnObject(&'static str);

pub(crate) fn object(value: Value) -> Result<Option<JsonObject>, Error> {
    match value {
        Value::Null => Ok(None),
        Value::Object(map) => Ok(Some(map)),
        Value::Bool(_) => Err(Error::InvalidArgument(Box::new(NotAnObject("a boolean")))),
        Value::Number(_) => Err(Error::InvalidArgument(Box::new(NotAnObject("a number")))),
        Value::String(_) => Err(Error::InvalidArgument(Box::new(NotAnObject("a string")))),
        Value::Array(_) => Err(Error::InvalidArgument(Box::new(NotAnObject("an array")))),
    }
}

impl Client {
    /// `server/discover`: versions, capabilities, instructions, server identity. On a legacy server
    /// it is built from the `initialize` result, without a request.
    pub fn discover(&self) -> Request<'_, DiscoverResult> {
        Request::new(self, |c, o| {
            Box::pin(async move { c.inner.discover(&o).await })
        })
    }

    /// One page of `tools/list` (`None` for the first page). On HTTP, tools with an invalid
    /// `x-mcp-header` declaration are dropped with a warning naming the tool and the reason.
    pub fn list_tools(&self, cursor: Option<String>) -> Request<'_, ListToolsResult> {
        Request::new(self, move |c, o| {
            Box::pin(async move { c.inner.list_page(cursor, &o).await })
        })
    }

    /// Every tool, following `nextCursor` until it is absent (an empty cursor is a cursor). The
    /// walk is bounded ([`ClientBuilder::max_list_pages`], [`ClientBuilder::max_list_items`],
    /// [`ClientBuilder::max_list_bytes`]): a server whose list does not end within the bounds
    /// fails it with [`Error::ListTooLong`], as do the other `list_all_*` calls.
    ///
    /// [`ClientBuilder::max_list_pages`]: crate::ClientBuilder::max_list_pages
    /// [`ClientBuilder::max_list_items`]: crate::ClientBuilder::max_list_items
    /// [`ClientBuilder::max_list_bytes`]: crate::ClientBuilder::max_list_bytes
    pub fn list_all_tools(&self) -> Request<'_, Vec<Tool>> {
        Request::new(self, |c, o| {
            Box::pin(async move { c.inner.list_all::<ListToolsResult>(&o).await })
        })
    }

    /// `tools/call`. `arguments` is a JSON object, or null for none. Input the server asks for is
    /// gathered with the installed handlers; on HTTP, a -32020 HeaderMismatch re-fetches
    /// `tools/list` once and retries the call as a new request.
    pub fn call_tool(
        &self,
        name: impl Into<String>,
        arguments: Value,
    ) -> Request<'_, CallToolResult> {
        let name = name.into();
        Request::new(self, move |c, o| {
            Box::pin(async move { c.inner.call_tool(name, object(arguments)?, &o).await })
        })
    }

    /// One page of `resources/list`.
    pub fn list_resources(&self, cursor: Option<String>) -> Request<'_, ListResourcesResult> {
        Request::new(self, move |c, o| {
            Box::pin(async move { c.inner.list_page(cursor, &o).await })
        })
    }

    /// Every resource, following every cursor within the client's bounds (see
    /// [`list_all_tools`](Self::list_all_tools)).
    pub fn list_all_resources(&self) -> Request<'_, Vec<Resource>> {
        Request::new(self, |c, o| {
            Box::pin(async move { c.inner.list_all::<ListResourcesResult>(&o).await })
        })
    }

    /// One page of `resources/templates/list`.
    pub fn list_resource_templates(
        &self,
        cursor: Option<String>,
    ) -> Request<'_, ListResourceTemplatesResult> {
        Request::new(self, move |c, o| {
            Box::pin(async move { c.inner.list_page(cursor, &o).await })
        })
    }

    /// Every resource template, following every cursor within the client's bounds (see
    /// [`list_all_tools`](Self::list_all_tools)).
    pub fn list_all_resource_templates(&self) -> Request<'_, Vec<ResourceTemplate>> {
        Request::new(self, |c, o| {
            Box::pin(async move { c.inner.list_all::<ListResourceTemplatesResult>(&o).await })
        })
    }

    /// `resources/read`. A missing resource is an error for which
    /// [`Error::is_resource_not_found`] holds, in both eras.
    pub fn read_resource(&self, uri: impl Into<String>) -> Request<'_, ReadResourceResult> {
        let uri = uri.into();
        Request::new(self, move |c, o| {
            Box::pin(async move { c.inner.read_resource(uri, &o).await })
        })
    }

    /// One page of `prompts/list`.
    pub fn list_prompts(&self, cursor: Option<String>) -> Request<'_, ListPromptsResult> {
        Request::new(self, move |c, o| {
            Box::pin(async move { c.inner.list_page(cursor, &o).await })
        })
    }

    /// Every prompt, following every cursor within the client's bounds (see
    /// [`list_all_tools`](Self::list_all_tools)).
    pub fn list_all_prompts(&self) -> Request<'_, Vec<Prompt>> {
        Request::new(self, |c, o| {
            Box::pin(async move { c.inner.list_all::<ListPromptsResult>(&o).await })
        })
    }

    /// `prompts/get` with string arguments (none when empty).
    pub fn get_prompt(
        &self,
        name: impl Into<String>,
        arguments: BTreeMap<String, String>,
    ) -> Request<'_, GetPromptResult> {
        let name = name.into();
        Request::new(self, move |c, o| {
            Box::pin(async move { c.inner.get_prompt(name, arguments, &o).await })
        })
    }

    /// `completion/complete` for one argument of a prompt or resource template.
    pub fn complete(
        &self,
        reference: CompletionReference,
        argument: CompleteArgument,
        context: Option<CompleteContext>,
    ) -> Request<'_, CompleteResult> {
        Request::new(self, move |c, o| {
            Box::pin(async move {
                let mut params = JsonObject::new();
                params.insert("ref".into(), to_value(&reference));
                params.insert("argument".into(), to_value(&argument));
                if let Some(context) = &context {
                    params.insert("context".into(), to_value(context));
                }
                let method = method_names::COMPLETION_COMPLETE;
                let raw = c.inner.send(method, params, Hints::default(), &o).await?;
                result_kind(method, &raw, false, false)?;
                o.deliver_result(&raw);
                decode(method, &raw)
            })
        })
    }
}

/// The first final answer to a request that may become a task.
pub(crate) enum Answer<T> {
    /// The result, and how many input rounds it took.
    Done(T, usize),
    /// The task it became, and the result as received.
    Task(Box<CreateTaskResult>, Box<kelson_jsonrpc::RawValue>),
}

impl<T> Answer<T> {
    /// The result of a request that cannot become a task.
    fn done(self, method: &str) -> Result<(T, usize), Error> {
        match self {
            Answer::Done(result, rounds) => Ok((result, rounds)),
            // `mrtr` accepts a task only where one is allowed.
            Answer::Task(..) => Err(Violation::UnknownResultType {
                method: method.to_owned(),
                value: "\"task\"".to_owned(),
            }
            .into()),
        }
    }
}

fn to_value(value: &impl serde::Serialize) -> Value {
    serde_json::to_value(value).expect("protocol types serialize")
}

impl Inner {
    async fn discover(&self, options: &Options) -> Result<DiscoverResult, Error> {
        if self.era().is_legacy() {
            if let Some(raw) = self.initialized.lock().expect("initialize lock").as_deref() {
                options.deliver_result(raw);
            }
            let discovered = self.discovered.lock().expect("discover lock").clone();
            return discovered.ok_or_else(|| Error::disconnected("the handshake did not finish"));
        }
        let result: DiscoverResult = self
            .cacheable(
                method_names::SERVER_DISCOVER,
                None,
                JsonObject::new(),
                options,
                |r| r,
            )
            .await?
            .value;
        *self.discovered.lock().expect("discover lock") = Some(result.clone());
        Ok(result)
    }

    /// A cacheable, non-MRTR result, with its size as received: from the cache when fresh, else
    /// fetched, prepared and stored.
    pub(crate) async fn cacheable<T: Cacheable + DeserializeOwned>(
        &self,
        method: &'static str,
        arg: Option<String>,
        params: JsonObject,
        options: &Options,
        prepare: impl FnOnce(T) -> T,
    ) -> Result<Received<T>, Error> {
        let context = self.auth_context();
        if let Some(cache) = &self.cache
            && options.may_use_cache()
            && let Some(hit) = cache.get::<Received<T>>(method, arg.as_deref(), &context)
        {
            return Ok(hit);
        }
        let raw = self.send(method, params, Hints::default(), options).await?;
        result_kind(method, &raw, false, false)?;
        options.deliver_result(&raw);
        let received = Received {
            value: prepare(decode::<T>(method, &raw)?),
            bytes: raw.get().len(),
        };
        if let Some(cache) = &self.cache {
            cache.put(method, arg.as_deref(), &context, &received);
        }
        Ok(received)
    }

    /// Keeps the `x-mcp-header` declarations of the listed tools, and drops (HTTP only) the tools
    /// whose declarations are invalid. spec 2026-07-28 basic/transports/streamable-http: the client
    /// MUST drop such a tool, SHOULD warn with its name and the reason, and keeps the others.
    pub(crate) fn index_tools(&self, mut page: ListToolsResult) -> ListToolsResult {
        if !self.is_http() || self.era().is_legacy() {
            return page;
        }
        let mut index = self.tool_headers.lock().expect("tool index lock");
        page.tools
            .retain(|tool| match param_headers(&tool.input_schema) {
                Ok(decls) => {
                    index.insert(tool.name.clone(), decls);
                    true
                }
                Err(reason) => {
                    tracing::warn!(tool = %tool.name, %reason, "dropped a tool with an invalid x-mcp-header declaration");
                    index.remove(&tool.name);
                    false
                }
            });
        page
    }

    /// `Mcp-Name` and the `Mcp-Param-*` headers of a call, from the latest `inputSchema`.
    fn tool_hints(&self, name: &str, arguments: Option<&JsonObject>) -> Hints {
        let param_headers = match (self.is_http(), arguments) {
            (true, Some(arguments)) => self
                .tool_headers
                .lock()
                .expect("tool index lock")
                .get(name)
                .map(|decls| kelson_http::param_header_values(decls, arguments))
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        Hints {
            name: Some(name.to_owned()),
            param_headers,
        }
    }

    /// `tools/call` up to its first final answer: the result, or the task it became.
    pub(crate) async fn start_tool_call(
        &self,
        name: &str,
        arguments: Option<&JsonObject>,
        options: &Options,
    ) -> Result<Answer<CallToolResult>, Error> {
        let mut params = JsonObject::new();
        params.insert("name".into(), Value::from(name));
        if let Some(arguments) = arguments {
            params.insert("arguments".into(), Value::Object(arguments.clone()));
        }
        let method = method_names::TOOLS_CALL;
        let hints = self.tool_hints(name, arguments);
        match self.mrtr(method, &params, &hints, options).await {
            // spec 2026-07-28 basic/transports/streamable-http: headers come from the latest
            // inputSchema; on -32020 the client SHOULD re-fetch tools/list and retry, as a new
            // request.
            Err(e)
                if e.code() == Some(code::HEADER_MISMATCH)
                    && self.is_http()
                    && !self.era().is_legacy() =>
            {
                tracing::debug!(tool = %name, error = %e, "HeaderMismatch; re-fetching tools/list and retrying once");
                let fresh = Options {
                    fresh: true,
                    ..Options::default()
                };
                self.list_all::<ListToolsResult>(&fresh).await?;
                let hints = self.tool_hints(name, arguments);
                self.mrtr(method, &params, &hints, options).await
            }
            other => other,
        }
    }

    /// `tools/call`, waiting through the task it may become.
    async fn call_tool(
        self: &Arc<Self>,
        name: String,
        arguments: Option<JsonObject>,
        options: &Options,
    ) -> Result<CallToolResult, Error> {
        match self
            .start_tool_call(&name, arguments.as_ref(), options)
            .await?
        {
            Answer::Done(result, _) => Ok(result),
            Answer::Task(created, _) => {
                self.drive_task(created.task, options, crate::tasks::Abort::Cancel)
                    .await
            }
        }
    }

    async fn read_resource(
        &self,
        uri: String,
        options: &Options,
    ) -> Result<ReadResourceResult, Error> {
        let method = method_names::RESOURCES_READ;
        let context = self.auth_context();
        if let Some(cache) = &self.cache
            && options.may_use_cache()
            && let Some(hit) = cache.get::<ReadResourceResult>(method, Some(&uri), &context)
        {
            return Ok(hit);
        }
        let mut params = JsonObject::new();
        params.insert("uri".into(), Value::from(uri.as_str()));
        let hints = Hints {
            name: Some(uri.clone()),
            param_headers: Vec::new(),
        };
        let (result, rounds) = self
            .mrtr::<ReadResourceResult>(method, &params, &hints, options)
            .await?
            .done(method)?;
        // spec 2026-07-28 basic/patterns/mrtr: results of retries carrying inputResponses or
        // requestState MUST NOT be cached.
        if rounds == 0
            && let Some(cache) = &self.cache
        {
            cache.put(method, Some(&uri), &context, &result);
        }
        Ok(result)
    }

    async fn get_prompt(
        &self,
        name: String,
        arguments: BTreeMap<String, String>,
        options: &Options,
    ) -> Result<GetPromptResult, Error> {
        let mut params = JsonObject::new();
        params.insert("name".into(), Value::from(name.as_str()));
        if !arguments.is_empty() {
            params.insert("arguments".into(), to_value(&arguments));
        }
        let hints = Hints {
            name: Some(name),
            param_headers: Vec::new(),
        };
        self.mrtr(method_names::PROMPTS_GET, &params, &hints, options)
            .await?
            .done(method_names::PROMPTS_GET)
            .map(|(r, _)| r)
    }

    /// Whether a request of `method` with `options` may be answered with a task: a `tools/call`
    /// of the modern era that declares the extension.
    pub(crate) fn task_allowed(&self, method: &str, options: &Options) -> bool {
        method == method_names::TOOLS_CALL
            && !self.era().is_legacy()
            && (self.config.tasks || options.declare_tasks)
    }

    /// Runs a request that may answer `input_required`, with the number of rounds it took, or the
    /// task it became (`tools/call` only, when the extension was declared).
    ///
    /// spec 2026-07-28 basic/patterns/mrtr: fulfil every input request, then resend the original
    /// params with `inputResponses` and the `requestState` echoed unmodified, under a new id; these
    /// never go on any other request. The rounds are bounded.
    async fn mrtr<T: DeserializeOwned>(
        &self,
        method: &'static str,
        params: &JsonObject,
        hints: &Hints,
        options: &Options,
    ) -> Result<Answer<T>, Error> {
        let task = self.task_allowed(method, options);
        let mut responses: Option<Value> = None;
        let mut state: Option<String> = None;
        let mut rounds = 0;
        loop {
            let mut round = params.clone();
            if let Some(responses) = &responses {
                round.insert("inputResponses".into(), responses.clone());
            }
            if let Some(state) = &state {
                round.insert("requestState".into(), Value::String(state.clone()));
            }
            let raw = self.send(method, round, hints.clone(), options).await?;
            match result_kind(method, &raw, true, task)? {
                Kind::Complete => {
                    options.deliver_result(&raw);
                    return Ok(Answer::Done(decode(method, &raw)?, rounds));
                }
                Kind::Task => return Ok(Answer::Task(Box::new(decode(method, &raw)?), raw)),
                Kind::InputRequired => {}
            }
            let interim: InputRequiredResult = decode(method, &raw)?;
            if !interim.is_well_formed() {
                return Err(Error::malformed(
                    method,
                    "input_required without inputRequests or requestState",
                ));
            }
            if rounds >= self.config.max_rounds {
                return Err(Violation::TooManyRounds {
                    method: method.to_owned(),
                    rounds,
                }
                .into());
            }
            rounds += 1;
            responses = match interim.input_requests {
                Some(requests) if !requests.is_empty() => {
                    Some(to_value(&self.handlers.answer_all(requests).await?))
                }
                // Only a requestState ("load shedding"): retry at once with it alone.
                _ => None,
            };
            state = interim.request_state;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_must_be_objects() {
        assert!(object(Value::Null).unwrap().is_none());
        assert!(object(serde_json::json!({"a": 1})).unwrap().is_some());
        let e = object(serde_json::json!([1])).unwrap_err();
        assert!(e.to_string().contains("an array"));
    }
}
