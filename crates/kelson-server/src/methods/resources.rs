//! `resources/read`.

use kelson_jsonrpc::ErrorObject;
use kelson_types::{Method, ReadResourceRequestParams, ReadResourceResult, ResultType};

use crate::Server;
use crate::context::RequestContext;
use crate::error::{HandlerError, resource_not_found};
use crate::mrtr::{Binding, state_error};
use crate::registry::Registry;
use crate::router::{Outcome, Prepared, ReplyMessage, RequestIo, error_reply};

impl Server {
    pub(crate) async fn read_resource(
        &self,
        req: Prepared<'_>,
        registry: &Registry,
        mut io: RequestIo<'_>,
    ) -> ReplyMessage {
        if let Err(e) = req.call.refuse_nulls() {
            return error_reply(Some(&req.id), &e, false);
        }
        let params: ReadResourceRequestParams = match super::params(&req) {
            Ok(p) => p,
            Err(e) => return error_reply(Some(&req.id), &e, false),
        };
        if let Some(probe) = io.probe_mut() {
            probe.set_resource(&params.uri);
        }
        // spec 2026-07-28 server/resources (SEP-2164): a missing resource is -32602 with data.uri.
        let Some(found) = registry.find_resource(&params.uri) else {
            return error_reply(Some(&req.id), &resource_not_found(&params.uri), false);
        };
        if !found.scopes.allows(&io.principal) {
            let what = format!("the resource {}", params.uri);
            return crate::scopes::refusal(&req.id, &what, &found.scopes);
        }
        // spec 2026-07-28 server/utilities/caching: what a scoped resource holds is for callers
        // with its scopes only, so no cache may share it across authorization contexts. Without an
        // auth layer (anonymous) there is one context.
        let cache_scope = if found.scopes.is_unrestricted() || io.principal.is_anonymous() {
            self.inner.config.cache_scope
        } else {
            kelson_types::CacheScope::Private
        };
        let (handler, vars) = (found.handler, found.vars);
        let binding = Binding::new(Method::ReadResource, req.params.as_deref(), &io.principal);
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
            Method::ReadResource,
            req.meta.clone(),
            mrtr,
        );
        let stop = ctx.deadline_token();
        let outcome = self
            .run_handler(
                stop,
                handler.read(ctx, params.uri.clone(), vars),
                "resource",
            )
            .await;
        match outcome {
            Err(e) => error_reply(Some(&req.id), &e.into_error("resource"), false),
            Ok(Ok(contents)) if contents.is_empty() => {
                // Never an empty `contents` for a missing resource.
                error_reply(Some(&req.id), &resource_not_found(&params.uri), false)
            }
            Ok(Ok(contents)) => {
                let result = ReadResourceResult {
                    result_type: ResultType::Complete,
                    contents,
                    ttl_ms: Some(millis(self.inner.config.read_ttl)),
                    cache_scope: Some(cache_scope),
                    meta: Some(self.result_meta()),
                };
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

pub(crate) fn millis(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}
