//! `prompts/get`.

use kelson_jsonrpc::ErrorObject;
use kelson_types::{GetPromptRequestParams, Method, ResultType};

use crate::Server;
use crate::context::RequestContext;
use crate::error::HandlerError;
use crate::mrtr::{Binding, state_error};
use crate::registry::Registry;
use crate::router::{Outcome, Prepared, ReplyMessage, RequestIo, error_reply};

impl Server {
    pub(crate) async fn get_prompt(
        &self,
        req: Prepared<'_>,
        registry: &Registry,
        mut io: RequestIo<'_>,
    ) -> ReplyMessage {
        if let Err(e) = req.call.refuse_nulls() {
            return error_reply(Some(&req.id), &e, false);
        }
        let params: GetPromptRequestParams = match super::params(&req) {
            Ok(p) => p,
            Err(e) => return error_reply(Some(&req.id), &e, false),
        };
        let Some(prompt) = registry.prompts.get(&params.name).cloned() else {
            if let Some(probe) = io.probe_mut() {
                probe.set_unknown_prompt(&params.name);
            }
            let e = ErrorObject::invalid_params(format_args!("Unknown prompt: {}", params.name));
            return error_reply(Some(&req.id), &e, false);
        };
        if let Some(probe) = io.probe_mut() {
            probe.set_prompt(&prompt);
        }
        if !prompt.scopes.allows(&io.principal) {
            let what = format!("the prompt {}", params.name);
            return crate::scopes::refusal(&req.id, &what, &prompt.scopes);
        }
        let arguments = params.arguments.unwrap_or_default();
        // spec 2026-07-28 server/prompts: a missing required argument is -32602.
        for arg in prompt.def.arguments.iter().flatten() {
            if arg.required == Some(true) && !arguments.contains_key(&arg.name) {
                let e = ErrorObject::invalid_params(format_args!(
                    "Missing required argument {:?} for prompt {}",
                    arg.name, params.name
                ));
                return error_reply(Some(&req.id), &e, false);
            }
        }
        let binding = Binding::new(Method::GetPrompt, req.params.as_deref(), &io.principal);
        let mrtr = match self.open_round(
            &binding,
            params.input_responses,
            params.request_state.as_deref(),
        ) {
            Ok(m) => m,
            Err(e) => return error_reply(Some(&req.id), &state_error(e), false),
        };
        let ctx = RequestContext::new(
            self,
            &io,
            req.id.clone(),
            Method::GetPrompt,
            req.meta.clone(),
            mrtr,
        );
        let stop = ctx.deadline_token();
        match self
            .run_handler(stop, prompt.handler.get(ctx, arguments), "prompt")
            .await
        {
            Err(e) => error_reply(Some(&req.id), &e.into_error("prompt"), false),
            Ok(Ok(mut result)) => {
                result.result_type = ResultType::Complete;
                result.meta.get_or_insert_with(Default::default).server_info =
                    Some(self.inner.info.clone());
                self.result_reply(&req.id, &result, Outcome::Success)
            }
            Ok(Err(HandlerError::Failed(m))) => {
                error_reply(Some(&req.id), &ErrorObject::internal_error(m), false)
            }
            Ok(Err(HandlerError::Protocol(e))) => error_reply(Some(&req.id), &e, false),
            Ok(Err(HandlerError::InputRequired(input))) => {
                self.input_required_reply(&req.id, &binding, *input)
            }
        }
    }
}
