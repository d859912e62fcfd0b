//! One module per group of methods.

mod complete;
mod listen;
mod lists;
mod prompts;
mod resources;
mod tools;

use mcp_jsonrpc::{ErrorObject, RawValue};
use serde::de::DeserializeOwned;

use crate::router::Prepared;

/// Decodes a method's params, or explains what is wrong with them (-32602).
pub(crate) fn params<T: DeserializeOwned>(req: &Prepared<'_>) -> Result<T, ErrorObject> {
    let raw = req.params.as_deref().map_or("{}", RawValue::get);
    serde_json::from_str(raw).map_err(ErrorObject::invalid_params)
}
