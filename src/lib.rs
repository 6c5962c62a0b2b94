//! A chat agent for Cloudflare Durable Objects that speaks the `useAgentChat`
//! protocol. `protocol` holds the wire types, `core` the behaviour (no I/O),
//! `model` the provider, and the wasm-only adapter runs it all in a Durable Object.

pub mod core;
pub mod model;
pub mod protocol;
