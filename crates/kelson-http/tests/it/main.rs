//! Integration tests of kelson-http: property tests of the value codec, client-to-server header
//! mirroring and SSE framing, and (with the `server` feature) the Streamable HTTP server over real
//! loopback HTTP.

mod codec_props;
#[cfg(feature = "server")]
mod http_server;
mod mirror_props;
mod sse_props;
