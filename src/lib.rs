//! A chat agent for Cloudflare Durable Objects that speaks the `useAgentChat`
//! protocol. `protocol` holds the wire types, `core` the behaviour (no I/O),
//! `model` the provider, `agent` the definition API and Durable Object host,
//! `store` the SQLite persistence, `routing` request paths, `log` the
//! leveled console output; with the `demo` feature (default) the demo
//! classes and the worker entry; with the `testing` feature (native tests
//! and the fuzzer) the test support.

pub mod agent;
pub mod core;
pub mod demo;
pub mod log;
pub mod model;
pub mod protocol;
pub mod routing;
#[cfg(target_arch = "wasm32")]
pub mod store;
#[cfg(feature = "testing")]
pub mod testing;
#[cfg(all(target_arch = "wasm32", feature = "demo"))]
mod worker_entry;
