//! kelson-auth in front of a real kelson-http `McpService` over loopback HTTP, with tokens from a real
//! authorization server (oidc-provider, run by `peers/interop/oidc-as.mjs`) and tokens the tests
//! sign themselves with keys they publish in a JWKS of their own.

mod crafted;
mod harness;
mod introspection;
mod jwks;
mod oidc;
mod principal;
mod real_as;
