//! The client against our own server, in process: over real loopback HTTP and over the stdio
//! framing on an in-memory pipe; and (`interop`) against servers written with the official SDKs,
//! as child processes, which needs the peers from `scripts/peers-install`.

mod auth;
mod cache;
mod calls;
mod era;
mod fixture;
mod harness;
mod http_only;
mod interop;
mod legacy_stream;
mod mrtr;
mod pagination;
mod process;
mod raw;
mod streams;
mod tasks;
