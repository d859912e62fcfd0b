//! What a handler function takes: each parameter is extracted from the call by [`FromCall`].

use std::any::{Any, TypeId};
use std::ops::Deref;
use std::sync::Arc;

use kelson_jsonrpc::ErrorObject;
use kelson_types::{JsonObject, Method};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::shape::StateNeed;
use crate::schema::schema_object;
use crate::{HandlerError, Principal, RequestContext, Server};

/// The call a handler function's parameters are extracted from: the request context, the
/// arguments (a tool's `arguments`, a prompt's arguments, a resource template's variables) and,
/// for `resources/read`, the URI.
///
/// Extraction runs in two passes, so that parameters may come in any order: first every
/// extractor that only looks at the call (the state, the principal, the URI, user extractors),
/// then the two that take a part of it whole, the arguments and the context.
pub struct CallParts {
    ctx: Option<RequestContext>,
    args: Option<JsonObject>,
    uri: Option<String>,
    /// `tools/call`, `prompts/get` or `resources/read`.
    method: Method<'static>,
}

impl CallParts {
    pub(crate) fn new(ctx: RequestContext, args: JsonObject, uri: Option<String>) -> Self {
        CallParts {
            method: ctx.method.clone(),
            ctx: Some(ctx),
            args: Some(args),
            uri,
        }
    }

    /// The request context. Extractors of the first pass (every [`FromCall`] implementation
    /// outside this crate) always see it.
    ///
    /// # Panics
    /// After the [`RequestContext`] parameter took it, which happens only in the second pass.
    pub fn context(&self) -> &RequestContext {
        self.ctx
            .as_ref()
            .expect("extractors that look at the context run before the context is taken")
    }

    /// The server serving the call.
    pub fn server(&self) -> &Server {
        self.context().server()
    }

    /// The method being served: `tools/call`, `prompts/get` or `resources/read`.
    pub fn method(&self) -> &'static str {
        // Made only for a method of the spec, whose name is `'static`.
        self.method.known_name().unwrap_or_default()
    }

    /// The URI a `resources/read` asked for.
    pub fn uri(&self) -> Option<&str> {
        self.uri.as_deref()
    }

    /// The arguments, before the arguments parameter takes them.
    pub fn arguments(&self) -> Option<&JsonObject> {
        self.args.as_ref()
    }
}

/// Which pass extracts a parameter; see [`CallParts`]. Only this crate's extractors choose one.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExtractKind {
    /// The arguments, taken whole (second pass). At most one per handler.
    Arguments,
    /// The request context, taken whole (second pass). At most one per handler.
    Context,
    /// Looks at the call without taking anything (first pass).
    Other,
}

/// A value a handler function takes as a parameter, extracted from the call.
///
/// Implemented here for the handler's arguments (any `Deserialize + JsonSchema` type: the tool's
/// `inputSchema`, a prompt's arguments or a template's variables come from its schema),
/// [`RequestContext`], [`State<S>`], [`Principal`] and [`Uri`]. Implement it for a type of your own
/// to compute something per call (a tenant from the principal's claims, say):
///
/// ```
/// use kelson_server::{CallParts, FromCall, HandlerError};
///
/// struct Tenant(String);
///
/// impl FromCall for Tenant {
///     fn from_call(parts: &mut CallParts) -> Result<Self, HandlerError> {
///         let principal = parts.context().principal();
///         match principal.claim("tenant").and_then(|v| v.as_str()) {
///             Some(t) => Ok(Tenant(t.to_owned())),
///             None => Err(HandlerError::failed("this token names no tenant")),
///         }
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a handler parameter",
    note = "a parameter is the arguments (a type that derives Deserialize and JsonSchema), RequestContext, State<S>, Principal, Uri, or a type that implements FromCall"
)]
pub trait FromCall: Sized + Send + 'static {
    /// Which pass extracts it.
    #[doc(hidden)]
    const KIND: ExtractKind = ExtractKind::Other;

    /// Extracts the value, or ends the call with an error.
    fn from_call(parts: &mut CallParts) -> Result<Self, HandlerError>;

    /// The JSON Schema of the arguments, for the arguments parameter.
    #[doc(hidden)]
    fn arguments_schema() -> Option<JsonObject> {
        None
    }

    /// The state the extractor reads, checked at registration.
    #[doc(hidden)]
    fn state_need() -> Option<StateNeed> {
        None
    }
}

/// The handler's arguments: decoded from the call's arguments, with the schema generated from
/// the type.
impl<T> FromCall for T
where
    T: DeserializeOwned + JsonSchema + Send + 'static,
{
    const KIND: ExtractKind = ExtractKind::Arguments;

    fn from_call(parts: &mut CallParts) -> Result<Self, HandlerError> {
        let args = parts.args.take().unwrap_or_default();
        decode_arguments(args, &parts.method)
    }

    fn arguments_schema() -> Option<JsonObject> {
        Some(schema_object::<T>())
    }
}

/// Decodes `args` as `T`. A raw [`JsonObject`] is passed through as it came, without a copy.
pub(crate) fn decode_arguments<T: DeserializeOwned + 'static>(
    args: JsonObject,
    method: &Method<'_>,
) -> Result<T, HandlerError> {
    if TypeId::of::<T>() == TypeId::of::<JsonObject>() {
        let boxed: Box<dyn Any> = Box::new(args);
        return Ok(*boxed
            .downcast::<T>()
            .expect("T is JsonObject, as its TypeId says"));
    }
    serde_json::from_value(Value::Object(args)).map_err(|e| {
        // The arguments passed the schema, so this happens only where serde is stricter than the
        // schema. spec 2026-07-28 server/tools: a tool reports bad input in an `isError` result the
        // model can read; a prompt or resource answers -32602.
        let message = format!("Invalid arguments: {e}");
        if matches!(method, Method::CallTool) {
            HandlerError::Failed(message)
        } else {
            HandlerError::invalid_params(message)
        }
    })
}

impl FromCall for RequestContext {
    const KIND: ExtractKind = ExtractKind::Context;

    fn from_call(parts: &mut CallParts) -> Result<Self, HandlerError> {
        Ok(parts
            .ctx
            .take()
            .expect("a handler takes at most one RequestContext (checked when it is registered)"))
    }
}

impl FromCall for Principal {
    fn from_call(parts: &mut CallParts) -> Result<Self, HandlerError> {
        Ok(parts.context().principal().clone())
    }
}

/// The URI a `resources/read` asked for (empty for other methods).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Uri(pub String);

impl Deref for Uri {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl FromCall for Uri {
    fn from_call(parts: &mut CallParts) -> Result<Self, HandlerError> {
        Ok(Uri(parts.uri.clone().unwrap_or_default()))
    }
}

/// Application state given once to [`ServerBuilder::state`](crate::ServerBuilder::state) and
/// shared by every call: a database pool, a client, a configuration. Registration fails with
/// [`BuildError::MissingState`](crate::BuildError::MissingState) when a handler takes a state the
/// builder was not given, so a missing state is never a run-time surprise.
///
/// ```
/// use kelson_server::{Server, State};
///
/// struct Greeter {
///     greeting: String,
/// }
///
/// async fn greet(State(greeter): State<Greeter>) -> String {
///     format!("{}!", greeter.greeting)
/// }
///
/// # fn main() -> Result<(), kelson_server::BuildError> {
/// let server = Server::builder("greeter", "1.0.0")
///     .state(Greeter { greeting: "Hello".into() })
///     .tool("greet", greet)
///     .build()?;
/// # let _ = server;
/// # Ok(())
/// # }
/// ```
pub struct State<S: ?Sized>(pub Arc<S>);

impl<S: ?Sized> Clone for State<S> {
    fn clone(&self) -> Self {
        State(Arc::clone(&self.0))
    }
}

impl<S: ?Sized> Deref for State<S> {
    type Target = S;
    fn deref(&self) -> &S {
        &self.0
    }
}

impl<S: ?Sized + std::fmt::Debug> std::fmt::Debug for State<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("State").field(&&*self.0).finish()
    }
}

impl<S: Send + Sync + 'static> FromCall for State<S> {
    fn from_call(parts: &mut CallParts) -> Result<Self, HandlerError> {
        match parts.server().state::<S>() {
            Some(state) => Ok(State(state)),
            // Registration checks the state, so this is a server bug, not the caller's.
            None => Err(HandlerError::Protocol(ErrorObject::internal_error(
                format_args!("no state of type {}", std::any::type_name::<S>()),
            ))),
        }
    }

    fn state_need() -> Option<StateNeed> {
        Some(StateNeed::of::<S>())
    }
}
