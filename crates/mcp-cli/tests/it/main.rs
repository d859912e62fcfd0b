//! Integration tests of the `mcp` binary, run as a user would: the client commands against our
//! conformance fixture served over loopback HTTP (in this process) and over stdio (the
//! `conformance-server` binary), and `mcp serve` with its adapters (serve/).

mod arguments;
mod bench;
mod era;
mod harness;
mod hints;
mod http;
mod interactive;
mod json;
mod legacy;
mod offers;
mod output;
mod serve;
mod stdio;
