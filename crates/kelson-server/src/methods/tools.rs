//! `tools/call`.

use std::borrow::Cow;

use kelson_jsonrpc::{ErrorObject, Id, RawValue};
use kelson_types::{CallToolResult, InputResponses, JsonObject, Method, ResultType};
use serde::Deserialize;
use serde_json::Value;

use crate::Server;
use crate::context::RequestContext;
use crate::error::HandlerError;
use crate::handler::ToolResult;
use crate::mrtr::{Binding, StateError, state_error};
use crate::registry::{Registry, ToolEntry};
use crate::router::{
    CallFields, Outcome, Prepared, ReplyMessage, RequestIo, Stopped, error_reply, human,
};
use crate::tasks::runner::TaskCall;
use crate::tasks::{Settled, TaskSupport};

/// `tools/call` params as the router needs them. Usually assembled from what `prepare` captured
/// in its single pass over the params; decoded whole only to explain a params object without a
/// string `name`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CallParams<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default)]
    arguments: Option<JsonObject>,
    #[serde(default)]
    input_responses: Option<InputResponses>,
    #[serde(default)]
    request_state: Option<String>,
}

impl<'a> CallParams<'a> {
    fn from_prepared(
        name: Option<Cow<'a, str>>,
        fields: &CallFields<'_>,
        raw_params: Option<&'a RawValue>,
    ) -> Result<Self, ErrorObject> {
        let Some(name) = name else {
            return super::decode(raw_params);
        };
        fields.refuse_nulls()?;
        // `arguments: null` reads as no arguments.
        fn field<T: serde::de::DeserializeOwned>(
            raw: Option<&RawValue>,
            what: &str,
        ) -> Result<Option<T>, ErrorObject> {
            match raw.map(|r| r.get().trim()) {
                None | Some("null") => Ok(None),
                Some(text) => serde_json::from_str(text)
                    .map(Some)
                    .map_err(|e| ErrorObject::invalid_params(format_args!("{what}: {e}"))),
            }
        }
        Ok(CallParams {
            name,
            arguments: field(fields.arguments.as_deref(), "arguments")?,
            input_responses: field(fields.input_responses.as_deref(), "inputResponses")?,
            request_state: field(fields.request_state.as_deref(), "requestState")?,
        })
    }
}

impl Server {
    pub(crate) async fn call_tool(
        &self,
        req: Prepared<'_>,
        registry: &Registry,
        mut io: RequestIo<'_>,
    ) -> ReplyMessage {
        let Prepared {
            id,
            params: raw_params,
            meta,
            name,
            call,
            legacy,
            ..
        } = req;
        let params = match CallParams::from_prepared(name, &call, raw_params.as_deref()) {
            Ok(p) => p,
            Err(e) => return error_reply(Some(&id), &e, false),
        };
        let Some(tool) = registry.tools.get(params.name.as_ref()).cloned() else {
            if let Some(probe) = io.probe_mut() {
                probe.set_unknown_tool(&params.name);
            }
            let e = ErrorObject::invalid_params(format_args!("Unknown tool: {}", params.name));
            return error_reply(Some(&id), &e, false);
        };
        if let Some(probe) = io.probe_mut() {
            probe.set_tool(&tool);
        }
        // spec 2026-07-28 basic/authorization: a call beyond the caller's scopes is a 403 naming
        // them (step-up), not an unknown tool.
        if !tool.scopes.allows(&io.principal) {
            let what = format!("the tool {}", params.name);
            return crate::scopes::refusal(&id, &what, &tool.scopes);
        }
        if let Some(guard) = io.guard
            && let Err(e) = guard.check(&tool.param_headers, params.arguments.as_ref())
        {
            return error_reply(Some(&id), &e, false);
        }

        // The tasks extension: declared on this request (never in the handshake era), a call of a
        // tool that supports tasks may become one; a tool that runs only as a task refuses others.
        let declared = !legacy
            && meta
                .client_capabilities
                .as_ref()
                .is_some_and(|c| c.supports_extension(kelson_types::TASKS_EXTENSION));
        let as_task = match tool.tasks.support {
            TaskSupport::Never => false,
            TaskSupport::Optional => declared,
            TaskSupport::Required if declared => true,
            TaskSupport::Required if legacy => {
                let result = CallToolResult::error(format!(
                    "The tool {} runs only as a task, which needs protocol revision 2026-07-28 and the {} extension.",
                    params.name,
                    kelson_types::TASKS_EXTENSION
                ));
                return self.tool_reply(&id, result, Outcome::ToolError);
            }
            TaskSupport::Required => {
                let e = crate::tasks::undeclared(&format!("the tool {}", params.name));
                return error_reply(Some(&id), &e, false);
            }
        };

        let arguments = params.arguments.unwrap_or_default();
        let binding = Binding::new(Method::CallTool, raw_params.as_deref(), &io.principal);
        let mrtr = match self.open_round(
            &binding,
            params.input_responses,
            params.request_state.as_deref(),
        ) {
            Ok(m) => m,
            // spec 2026-07-28 server/tools: an expired state handle is reported to the model as a
            // tool error, so it can simply call the tool again.
            Err(StateError::Expired) => {
                let result = CallToolResult::error(
                    "The confirmation for this call expired before it was answered; call the tool again.",
                );
                return self.tool_reply(&id, result, Outcome::ToolError);
            }
            Err(e) => return error_reply(Some(&id), &state_error(e), false),
        };

        // SEP-1303: arguments that fail the input schema are a tool execution error the model can
        // read and correct, with the failing path named.
        let args_value = Value::Object(arguments);
        if let Err(why) = tool.input.validate(&args_value) {
            let result =
                CallToolResult::error(format!("Invalid arguments for tool {}: {why}", params.name));
            return self.tool_reply(&id, result, Outcome::ToolError);
        }
        let Value::Object(arguments) = args_value else {
            unreachable!("built from an object above")
        };

        if as_task {
            let call = TaskCall {
                id: &id,
                tool,
                arguments,
                meta,
                mrtr,
                binding: &binding,
            };
            return self.call_as_task(call, &io).await;
        }

        let ctx = RequestContext::new(self, &io, id.clone(), Method::CallTool, meta, mrtr);
        let stop = ctx.deadline_token();
        let outcome = self
            .run_handler(stop, tool.handler.call(ctx, arguments), "tool")
            .await;
        let settled = self.settle_tool(&tool, outcome);
        self.settled_reply(&id, &binding, settled)
    }

    /// What a tool handler's run comes to: its result (checked against the tool's output
    /// schema), a tool error, a JSON-RPC error, or input requests.
    pub(crate) fn settle_tool(
        &self,
        tool: &ToolEntry,
        outcome: Result<ToolResult, Stopped>,
    ) -> Settled {
        let name = &tool.def.name;
        match outcome {
            Err(Stopped::Failed(e)) => Settled::Error(e),
            // A tool that runs too long is a failure of this call the model can read, and may
            // retry with less work.
            Err(Stopped::Deadline(limit)) => Settled::Result(
                CallToolResult::error(format!(
                    "The tool {name} did not finish within {} and was stopped.",
                    human(limit)
                )),
                Outcome::ToolError,
            ),
            Ok(Ok(result)) => {
                let is_error = result.is_error == Some(true);
                if !is_error && let Some(schema) = &tool.output {
                    // spec 2026-07-28 server/tools: with an outputSchema the server MUST return
                    // conforming structuredContent; a handler that does not is a server fault.
                    let problem = match &result.structured_content {
                        None => Some("no structuredContent".to_owned()),
                        Some(v) => schema.validate(v).err(),
                    };
                    if let Some(problem) = problem {
                        tracing::error!(tool = %name, %problem, "tool result does not match its outputSchema");
                        return Settled::Error(ErrorObject::internal_error(format_args!(
                            "tool {name} returned a result that does not match its outputSchema"
                        )));
                    }
                }
                let outcome = if is_error {
                    Outcome::ToolError
                } else {
                    Outcome::Success
                };
                Settled::Result(result, outcome)
            }
            Ok(Err(HandlerError::Failed(message))) => {
                Settled::Result(CallToolResult::error(message), Outcome::ToolError)
            }
            Ok(Err(HandlerError::Protocol(e))) => Settled::Error(e),
            Ok(Err(HandlerError::InputRequired(input))) => Settled::Input(*input),
        }
    }

    /// Answers a call with what its handler came to.
    pub(crate) fn settled_reply(
        &self,
        id: &Id,
        binding: &Binding<'_>,
        settled: Settled,
    ) -> ReplyMessage {
        match settled {
            Settled::Result(result, outcome) => self.tool_reply(id, result, outcome),
            Settled::Error(e) => error_reply(Some(id), &e, false),
            Settled::Input(input) => self.input_required_reply(id, binding, input),
        }
    }

    pub(crate) fn tool_reply(
        &self,
        id: &Id,
        mut result: CallToolResult,
        outcome: Outcome,
    ) -> ReplyMessage {
        result.result_type = ResultType::Complete;
        match result.meta.as_mut() {
            Some(meta) => {
                meta.server_info = Some(self.inner.info.clone());
                self.result_reply(id, &result, outcome)
            }
            None => self.result_reply_with_info(id, &result, outcome),
        }
    }
}
