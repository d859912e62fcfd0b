//! The guide (docs/guide/), included here so that its Rust code blocks are compiled and run by
//! `cargo test --doc`. Chapters whose code needs a feature beyond the defaults are compiled only
//! with that feature: `cargo test -p kelson --doc --features auth,tls,client` runs every block.
//! The chapters are read through crates/kelson/guide, a symlink to docs/guide that `cargo package`
//! follows, so that the published crate carries them and builds without the repository.

#[doc = include_str!("../guide/README.md")]
pub mod contents {}

#[doc = include_str!("../guide/01-first-server.md")]
pub mod first_server {}

#[doc = include_str!("../guide/02-tools.md")]
pub mod tools {}

#[doc = include_str!("../guide/03-state-and-context.md")]
pub mod state_and_context {}

#[doc = include_str!("../guide/04-resources-and-prompts.md")]
pub mod resources_and_prompts {}

#[doc = include_str!("../guide/05-http.md")]
pub mod http {}

#[doc = include_str!("../guide/06-security.md")]
pub mod security {}

#[cfg(all(feature = "auth", feature = "tls"))]
#[doc = include_str!("../guide/07-authorization-and-tls.md")]
pub mod authorization_and_tls {}

#[doc = include_str!("../guide/08-logs-and-metrics.md")]
pub mod logs_and_metrics {}

#[doc = include_str!("../guide/09-deployment.md")]
pub mod deployment {}

#[cfg(feature = "client")]
#[doc = include_str!("../guide/10-client.md")]
pub mod client {}
