//! The client against our own server, in process: over real loopback HTTP and over the stdio
//! framing on an in-memory pipe.

mod cache;
mod calls;
mod fixture;
mod harness;
mod http_only;
mod mrtr;
mod process;
mod streams;
