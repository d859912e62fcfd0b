//! `completion/complete`.

use kelson_jsonrpc::ErrorObject;
use kelson_types::{
    CompleteRequestParams, CompleteResult, Completion, CompletionReference, Method, ResultType,
};

use crate::Server;
use crate::context::{Mrtr, RequestContext};
use crate::error::HandlerError;
use crate::registry::Registry;
use crate::router::{Outcome, Prepared, ReplyMessage, RequestIo, error_reply};

/// spec 2026-07-28 server/utilities/completion: at most 100 values per response.
const MAX_VALUES: usize = 100;

impl Server {
    pub(crate) async fn complete(
        &self,
        req: Prepared<'_>,
        registry: &Registry,
        io: RequestIo<'_>,
    ) -> ReplyMessage {
        let params: CompleteRequestParams = match super::params(&req) {
            Ok(p) => p,
            Err(e) => return error_reply(Some(&req.id), &e, false),
        };
        // Completions follow what they complete: the scopes of the prompt or template.
        let scopes = match &params.r#ref {
            CompletionReference::Prompt(p) => registry.prompts.get(&p.name).map(|p| &p.scopes),
            CompletionReference::Resource(r) => registry
                .templates
                .iter()
                .find(|t| t.def.uri_template == r.uri)
                .map(|t| &t.scopes)
                .or_else(|| registry.resources.get(&r.uri).map(|r| &r.scopes)),
        };
        let Some(scopes) = scopes else {
            let e = ErrorObject::invalid_params(
                "the completion ref names no prompt or resource template of this server",
            );
            return error_reply(Some(&req.id), &e, false);
        };
        if !scopes.allows(&io.principal) {
            let what = match &params.r#ref {
                CompletionReference::Prompt(p) => format!("completing the prompt {}", p.name),
                CompletionReference::Resource(r) => format!("completing the resource {}", r.uri),
            };
            return crate::scopes::refusal(&req.id, &what, scopes);
        }
        let Some(handler) = registry.completion.clone() else {
            return error_reply(
                Some(&req.id),
                &ErrorObject::method_not_found(Method::Complete.as_str()),
                true,
            );
        };
        let ctx = RequestContext::new(
            self,
            &io,
            req.id.clone(),
            Method::Complete,
            req.meta.clone(),
            Mrtr::default(),
        );
        let stop = ctx.deadline_token();
        match self
            .run_handler(stop, handler.complete(ctx, params), "completion")
            .await
        {
            Err(e) => error_reply(Some(&req.id), &e.into_error("completion"), false),
            Ok(Ok(mut c)) => {
                if c.values.len() > MAX_VALUES {
                    c.total.get_or_insert(c.values.len() as u64);
                    c.values.truncate(MAX_VALUES);
                    c.has_more = Some(true);
                }
                let result = CompleteResult {
                    result_type: ResultType::Complete,
                    completion: Completion {
                        values: c.values,
                        total: c.total,
                        has_more: c.has_more,
                    },
                    meta: Some(self.result_meta()),
                };
                self.result_reply(&req.id, &result, Outcome::Success)
            }
            Ok(Err(HandlerError::Failed(m))) => {
                error_reply(Some(&req.id), &ErrorObject::internal_error(m), false)
            }
            Ok(Err(HandlerError::Protocol(e))) => error_reply(Some(&req.id), &e, false),
            // spec 2026-07-28 MRTR: input_required is only for tools/call, resources/read and
            // prompts/get.
            Ok(Err(HandlerError::InputRequired(_))) => error_reply(
                Some(&req.id),
                &ErrorObject::internal_error("completion handlers cannot ask for input"),
                false,
            ),
        }
    }
}
