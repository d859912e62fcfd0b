//! The Streamable HTTP server over real loopback HTTP: every test starts its own server with
//! `serve` on `127.0.0.1:0` and talks to it with a real HTTP client (hyper's
//! connection API for HTTP/1.1 and h2c, or raw TCP where the bytes on the wire matter).
//!
//! spec 2026-07-28 basic/transports/streamable-http. The spec fixes the statuses but not the order
//! of the checks: the tests pin ours where the official conformance suite pins one (a missing
//! `_meta` key beats a header mismatch, which beats an unsupported version).

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
mod quotas;
mod responses;
mod scopes;
mod shutdown;
mod transport;
