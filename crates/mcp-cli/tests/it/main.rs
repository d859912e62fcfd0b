//! Integration tests of the `mcp` client commands: the real binary, run as a user would, against our
//! conformance fixture served over loopback HTTP (in this process) and over stdio (the
//! `conformance-server` binary).

mod harness;
mod http;
mod interactive;
mod stdio;
