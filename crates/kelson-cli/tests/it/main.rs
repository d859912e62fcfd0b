//! Integration tests of the `kelson` binary, run as a user would: the client commands against our
//! conformance fixture served over loopback HTTP (in this process) and over stdio (the
//! `conformance-server` binary), `kelson serve` with its adapters (serve/), and `kelson serve` as the
//! hosts' own SDK clients and the Inspector reach it, in both protocol eras (hosts/).

mod arguments;
mod bench;
mod certs;
mod completions;
mod docs;
mod era;
mod errors;
mod field_order;
mod harness;
mod hints;
mod hosts;
mod http;
mod interactive;
mod json;
mod legacy;
mod offers;
mod output;
mod output_safety;
mod pagination;
mod progress;
mod readme;
mod save_dir;
mod serve;
mod stdio;
mod tasks;
#[cfg(unix)]
mod terminal;
mod tools_view;
