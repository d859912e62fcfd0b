//! Integration tests of the conformance fixture over stdio: each test starts the real
//! `conformance-server --stdio` as a child process and talks MCP 2026-07-28 to it line by line.
//!
//! Every message the server writes is checked by the client helper against the invariants of the
//! revision (JSON-RPC 2.0, no server requests, `resultType` and `serverInfo` on every result, a
//! string or integer `id`), so each test also checks those for everything it provokes.
//!
//! `legacy` speaks the handshake era (2025-11-25 and before) to the same process.
//!
//! `echo` drives `echo-server --http`, the benchmarks' server, over raw HTTP/1.1: its structured
//! `echo` and its text-only `echo_text`.
//!
//! `hostile` sends every hostile-input case over stdio and over HTTP (`conformance-server --http`,
//! raw HTTP/1.1), registers tools with hostile schemas, and tampers with `requestState`.
//!
//! `interop` runs the official SDKs' clients (TypeScript v2, Python) against `interop-server` over
//! stdio and HTTP; it needs the peers from `scripts/peers-install`.

mod client;
mod echo;
mod envelope;
mod framing;
mod hostile;
mod interop;
mod legacy;
mod listen;
mod mrtr;
mod prompts;
mod ready;
mod resources;
mod tools;
