//! Transports that need nothing beyond tokio. Streamable HTTP lives in `mcp-http`.

pub mod stdio;
