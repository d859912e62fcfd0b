//! Integration tests of the gateway: real upstream servers over HTTP on loopback, the gateway in
//! front of them, and clients of either era.

mod forwarding;
mod policy;
mod support;
