//! The Streamable HTTP server over real loopback HTTP: every test starts its own server with
//! `serve_with_shutdown` on `127.0.0.1:0` and talks to it with a real HTTP client (hyper's
//! connection API for HTTP/1.1 and h2c, or raw TCP where the bytes on the wire matter).
//!
//! spec 2026-07-28 basic/transports/streamable-http (DIGEST §16), with the validation order and
//! statuses of DIGEST §16.4 and the conformance note's §3.

mod axum_mount;
mod cancel;
mod envelope;
mod fixture;
mod harness;
mod legacy;
mod limits;
mod listen;
mod load;
mod observe;
mod params;
mod responses;
mod scopes;
mod shutdown;
mod transport;
