//! Example MCP servers built on mcp-rs.
//!
//! [`conformance`] is the fixture server the official conformance suite runs against; the
//! `conformance-server` binary serves it on stdio (and, once `mcp-http` lands, over HTTP).

pub mod conformance;
