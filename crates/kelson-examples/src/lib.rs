//! Example MCP servers built on kelson.
//!
//! [`conformance`] is the fixture server the official conformance suite runs against; the
//! `conformance-server` binary serves it on stdio or HTTP. [`echo`] is the server the
//! benchmarks drive; the `echo-server` binary serves it. [`interop`] is the profile the interop tests
//! run against the official SDKs; the `interop-server` binary serves it. [`run`] is what the three
//! binaries share.

pub mod conformance;
pub mod echo;
pub mod interop;
pub mod run;
