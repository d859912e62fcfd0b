//! One module per group of methods.

mod complete;
mod listen;
mod lists;
mod prompts;
mod resources;
mod strict;
mod tools;

use kelson_jsonrpc::{ErrorObject, RawValue};

use crate::router::Prepared;

/// Decodes a method's params, or explains what is wrong with them (-32602).
pub(crate) fn params<'a, T: serde::Deserialize<'a>>(
    req: &'a Prepared<'_>,
) -> Result<T, ErrorObject> {
    decode(req.params.as_deref())
}

/// Decodes raw params, possibly borrowing from them, or explains what is wrong (-32602).
pub(crate) fn decode<'a, T: serde::Deserialize<'a>>(
    raw: Option<&'a RawValue>,
) -> Result<T, ErrorObject> {
    let mut de = serde_json::Deserializer::from_str(raw.map_or("{}", RawValue::get));
    let value = T::deserialize(strict::Strict(&mut de)).map_err(ErrorObject::invalid_params)?;
    de.end().map_err(ErrorObject::invalid_params)?;
    Ok(value)
}
