//! What handlers return: a boxed future, and a tool's result.

use std::future::Future;
use std::pin::Pin;

use kelson_types::CallToolResult;

use crate::error::HandlerError;

/// A boxed, sendable future.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// What a tool handler returns.
pub type ToolResult = Result<CallToolResult, HandlerError>;
