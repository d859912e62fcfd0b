//! Integration tests: the adapter behind a real `kelson_server::Server`, driven in process with
//! JSON-RPC bytes, on scratch directories under the system temp dir.

mod escape;
mod read;
mod scopes;
mod support;
mod watch;
