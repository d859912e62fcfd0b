//! Property tests of mcp-http: the value codec, client-to-server header mirroring, and SSE framing.

mod codec_props;
mod mirror_props;
mod sse_props;
