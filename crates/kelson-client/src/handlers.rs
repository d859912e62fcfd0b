//! The application's input handlers: elicitation (form and URL), sampling and roots.
//!
//! A modern server asks for input inside an `input_required` result (MRTR); a legacy server sends a
//! JSON-RPC request. Both go to the same handlers, and the handlers installed decide the capabilities
//! the client declares (spec 2026-07-28 basic/index: capabilities travel with every request).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use kelson_jsonrpc::ErrorObject;
use kelson_types::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitAction,
    ElicitRequestFormParams, ElicitRequestParams, ElicitRequestURLParams, ElicitResult,
    ElicitValue, InputRequest, InputRequests, InputResponse, InputResponses, JsonObject,
    ListRootsResult, Method, RequestedSchema, method_names,
};
use serde_json::Value;

use crate::Error;

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The error an input handler returns when it cannot produce an answer.
pub type HandlerError = Box<dyn std::error::Error + Send + Sync>;

/// Answers one kind of input request: `P` is what the server asks, `R` the answer.
///
/// Any `Fn(P) -> impl Future<Output = Result<R, HandlerError>>` that is `Send + Sync + 'static` is a
/// handler.
pub trait InputHandler<P, R>: Send + Sync + 'static {
    /// Produces the answer.
    fn handle(&self, params: P) -> BoxFuture<'static, Result<R, HandlerError>>;
}

impl<P, R, F, Fut> InputHandler<P, R> for F
where
    F: Fn(P) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, HandlerError>> + Send + 'static,
{
    fn handle(&self, params: P) -> BoxFuture<'static, Result<R, HandlerError>> {
        Box::pin(self(params))
    }
}

type Handler<P, R> = Arc<dyn InputHandler<P, R>>;

/// The handlers an application installed.
#[derive(Clone, Default)]
pub(crate) struct Handlers {
    pub(crate) elicit_form: Option<Handler<ElicitRequestFormParams, ElicitResult>>,
    pub(crate) elicit_url: Option<Handler<ElicitRequestURLParams, ElicitResult>>,
    pub(crate) sampling: Option<Handler<CreateMessageRequestParams, CreateMessageResult>>,
    pub(crate) sampling_tools: bool,
    pub(crate) roots: Option<Handler<(), ListRootsResult>>,
}

impl std::fmt::Debug for Handlers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handlers")
            .field("elicit_form", &self.elicit_form.is_some())
            .field("elicit_url", &self.elicit_url.is_some())
            .field("sampling", &self.sampling.is_some())
            .field("roots", &self.roots.is_some())
            .finish()
    }
}

impl Handlers {
    /// The capabilities these handlers let the client declare.
    pub(crate) fn capabilities(&self) -> ClientCapabilities {
        let mut caps = ClientCapabilities::default();
        if self.elicit_form.is_some() {
            caps = caps.with_elicitation_form();
        }
        if self.elicit_url.is_some() {
            caps = caps.with_elicitation_url();
        }
        if self.sampling.is_some() {
            caps = caps.with_sampling();
            if self.sampling_tools
                && let Some(sampling) = caps.sampling.as_mut()
            {
                sampling.tools = Some(JsonObject::new());
            }
        }
        if self.roots.is_some() {
            caps = caps.with_roots();
        }
        caps
    }

    /// Answers one input request.
    ///
    /// spec 2026-07-28 client/elicitation and basic/patterns/mrtr: an elicitation nobody can show is
    /// declined; a sampling or roots request without a handler stops the request with a clear error.
    pub(crate) async fn answer(&self, request: InputRequest) -> Result<InputResponse, Error> {
        match request {
            InputRequest::Elicit(ElicitRequestParams::Form(params)) => match &self.elicit_form {
                Some(h) => {
                    let schema = params.requested_schema.clone();
                    h.handle(params)
                        .await
                        .map(|mut result| {
                            with_defaults(&schema, &mut result);
                            InputResponse::Elicit(result)
                        })
                        .map_err(|source| handler_failed(method_names::ELICITATION_CREATE, source))
                }
                None => Ok(InputResponse::Elicit(ElicitResult::decline())),
            },
            InputRequest::Elicit(ElicitRequestParams::Url(params)) => match &self.elicit_url {
                Some(h) => h
                    .handle(params)
                    .await
                    .map(InputResponse::Elicit)
                    .map_err(|source| handler_failed(method_names::ELICITATION_CREATE, source)),
                None => Ok(InputResponse::Elicit(ElicitResult::decline())),
            },
            InputRequest::CreateMessage(params) => match &self.sampling {
                Some(h) => h
                    .handle(params)
                    .await
                    .map(InputResponse::CreateMessage)
                    .map_err(|source| {
                        handler_failed(method_names::SAMPLING_CREATE_MESSAGE, source)
                    }),
                None => Err(Error::MissingHandler {
                    method: method_names::SAMPLING_CREATE_MESSAGE,
                }),
            },
            InputRequest::ListRoots(_) => match &self.roots {
                Some(h) => h
                    .handle(())
                    .await
                    .map(InputResponse::ListRoots)
                    .map_err(|source| handler_failed(method_names::ROOTS_LIST, source)),
                None => Err(Error::MissingHandler {
                    method: method_names::ROOTS_LIST,
                }),
            },
        }
    }

    /// Answers every input request of one `input_required` result, in key order.
    pub(crate) async fn answer_all(
        &self,
        requests: InputRequests,
    ) -> Result<InputResponses, Error> {
        let mut responses = InputResponses::new();
        for (key, request) in requests {
            let response = self.answer(request).await?;
            responses.insert(key, response);
        }
        Ok(responses)
    }

    /// Answers a JSON-RPC request a legacy (2025) server sent: the same handlers as MRTR, plus
    /// `ping`. The result is the JSON-RPC `result` or `error`.
    pub(crate) async fn answer_legacy(
        &self,
        method: &str,
        params: Option<&serde_json::value::RawValue>,
    ) -> Result<Value, ErrorObject> {
        let request = match Method::parse(method) {
            // spec 2025-11-25 basic/utilities/ping: the receiver MUST answer promptly, with an
            // empty result.
            Method::Ping => return Ok(Value::Object(JsonObject::new())),
            Method::Elicit | Method::CreateMessage | Method::ListRoots => {
                // The embedded shape is written as text and decoded in one pass, method first, so
                // the params are read from the server's own text: a round trip through `Value`
                // would sort a form's fields by name instead of keeping the server's order.
                let mut text = format!(r#"{{"method":"{method}""#);
                if let Some(params) = params {
                    text.push_str(r#","params":"#);
                    text.push_str(params.get());
                }
                text.push('}');
                serde_json::from_str::<InputRequest>(&text).map_err(ErrorObject::invalid_params)?
            }
            _ => return Err(ErrorObject::method_not_found(method)),
        };
        let missing = match &request {
            InputRequest::CreateMessage(_) => self.sampling.is_none(),
            InputRequest::ListRoots(_) => self.roots.is_none(),
            InputRequest::Elicit(_) => false,
        };
        if missing {
            // The capability was not declared, so the method does not exist for this client.
            return Err(ErrorObject::method_not_found(method));
        }
        match self.answer(request).await {
            Ok(response) => serde_json::to_value(response).map_err(ErrorObject::internal_error),
            Err(e) => Err(ErrorObject::internal_error(e)),
        }
    }
}

/// Fills the fields an accepted form left out with the defaults its schema gives (spec
/// 2025-11-25 client/elicitation, SEP-1034): the server then gets every field it offered a
/// default for, whether or not the application's form showed it.
fn with_defaults(schema: &RequestedSchema, result: &mut ElicitResult) {
    if result.action != ElicitAction::Accept {
        return;
    }
    let content = result.content.get_or_insert_with(Default::default);
    for (name, field) in &schema.properties {
        if content.contains_key(name) {
            continue;
        }
        let Ok(Value::Object(field)) = serde_json::to_value(field) else {
            continue;
        };
        let Some(default) = field.get("default") else {
            continue;
        };
        // A number schema keeps its default as a float; an integer field's default goes back as
        // an integer.
        let default = match (field.get("type").and_then(Value::as_str), default) {
            (Some("integer"), Value::Number(n)) => match n.as_f64() {
                Some(f) if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 => {
                    Value::from(f as i64)
                }
                _ => default.clone(),
            },
            _ => default.clone(),
        };
        if let Ok(value) = serde_json::from_value::<ElicitValue>(default) {
            content.insert(name.clone(), value);
        }
    }
}

fn handler_failed(method: &'static str, source: HandlerError) -> Error {
    Error::InputHandler { method, source }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kelson_types::{ElicitAction, RequestedSchema, Root};
    use serde_json::json;
    use serde_json::value::RawValue;

    fn with_form() -> Handlers {
        Handlers {
            elicit_form: Some(Arc::new(|_p: ElicitRequestFormParams| async {
                Ok(ElicitResult::accept(Default::default()))
            })),
            ..Handlers::default()
        }
    }

    #[test]
    fn capabilities_follow_the_handlers() {
        assert_eq!(
            serde_json::to_value(Handlers::default().capabilities()).unwrap(),
            json!({})
        );
        let mut h = with_form();
        h.roots = Some(Arc::new(|()| async {
            Ok(ListRootsResult {
                roots: vec![Root::new("file:///tmp")],
            })
        }));
        assert_eq!(
            serde_json::to_value(h.capabilities()).unwrap(),
            json!({"roots": {}, "elicitation": {"form": {}}})
        );
    }

    #[tokio::test]
    async fn missing_handlers() {
        let h = Handlers::default();
        let form = InputRequest::elicit(ElicitRequestFormParams::new("?", RequestedSchema::new()));
        let answer = h.answer(form).await.unwrap();
        assert_eq!(answer.as_elicit().unwrap().action, ElicitAction::Decline);
        let err = h.answer(InputRequest::list_roots()).await.unwrap_err();
        assert!(matches!(
            err,
            Error::MissingHandler {
                method: "roots/list"
            }
        ));
    }

    #[tokio::test]
    async fn legacy_forms_keep_the_servers_field_order() {
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let names = seen.clone();
        let h = Handlers {
            elicit_form: Some(Arc::new(move |p: ElicitRequestFormParams| {
                let names = names.clone();
                async move {
                    let order = p.requested_schema.properties.iter().map(|(n, _)| n.clone());
                    names.lock().unwrap().extend(order);
                    Ok(ElicitResult::decline())
                }
            })),
            ..Handlers::default()
        };
        let params = RawValue::from_string(
            r#"{"message":"?","requestedSchema":{"type":"object","properties":{"zip":{"type":"string"},"name":{"type":"string"},"age":{"type":"integer"}}}}"#
                .to_owned(),
        )
        .unwrap();
        h.answer_legacy("elicitation/create", Some(&params))
            .await
            .unwrap();
        assert_eq!(*seen.lock().unwrap(), ["zip", "name", "age"]);
    }

    #[tokio::test]
    async fn legacy_requests_share_the_handlers() {
        let h = with_form();
        assert_eq!(h.answer_legacy("ping", None).await.unwrap(), json!({}));
        let params = serde_json::value::to_raw_value(&json!({
            "mode": "form", "message": "?", "requestedSchema": {"type": "object", "properties": {}}
        }))
        .unwrap();
        let answer = h
            .answer_legacy("elicitation/create", Some(&params))
            .await
            .unwrap();
        assert_eq!(answer["action"], "accept");
        let err = h.answer_legacy("roots/list", None).await.unwrap_err();
        assert_eq!(err.code, -32601);
        let bad = serde_json::value::to_raw_value(&json!({"message": 7})).unwrap();
        let err = h
            .answer_legacy("elicitation/create", Some(&bad))
            .await
            .unwrap_err();
        assert_eq!(err.code, -32602);
        let err = h.answer_legacy("tasks/get", None).await.unwrap_err();
        assert_eq!(err.code, -32601);
    }

    #[tokio::test]
    async fn an_accepted_form_gets_the_schema_defaults_of_the_fields_it_left_out() {
        let schema: RequestedSchema = serde_json::from_value(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
                "verified": {"type": "boolean", "default": true},
                "nickname": {"type": "string"}
            }
        }))
        .unwrap();
        let h = Handlers {
            elicit_form: Some(Arc::new(|_p: ElicitRequestFormParams| async {
                let mut content = std::collections::BTreeMap::new();
                content.insert("name".to_owned(), ElicitValue::String("Ada".into()));
                Ok::<_, HandlerError>(ElicitResult::accept(content))
            })),
            ..Handlers::default()
        };
        let form = InputRequest::elicit(ElicitRequestFormParams::new("?", schema.clone()));
        let answer = h.answer(form).await.unwrap();
        let content = serde_json::to_value(&answer.as_elicit().unwrap().content).unwrap();
        assert_eq!(
            content,
            json!({"name": "Ada", "age": 30, "score": 95.5, "status": "active", "verified": true})
        );
        // Declined stays declined, without content.
        let h = Handlers {
            elicit_form: Some(Arc::new(|_p: ElicitRequestFormParams| async {
                Ok::<_, HandlerError>(ElicitResult::decline())
            })),
            ..Handlers::default()
        };
        let form = InputRequest::elicit(ElicitRequestFormParams::new("?", schema));
        let answer = h.answer(form).await.unwrap();
        assert_eq!(answer.as_elicit().unwrap().content, None);
    }
}
