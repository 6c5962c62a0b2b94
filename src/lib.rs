//! # durable-chat
//!
//! A chat agent for Cloudflare Durable Objects, written in Rust and compiled
//! to WebAssembly, that speaks the `useAgentChat` protocol of the `agents`
//! package: a React page with `useAgentChat` talks to it as to an agent of
//! the TypeScript SDK. Each conversation is one Durable Object; its
//! transcript lives in the object's SQLite storage, its turns stream to
//! every open tab, survive evictions and restarts, and call your tools.
//!
//! ## A short agent
//!
//! ```ignore
//! use durable_chat::prelude::*;
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! pub struct Support;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Lookup {
//!     /// The order number.
//!     order: String,
//! }
//!
//! impl AgentDefinition for Support {
//!     fn system_prompt(&self) -> String {
//!         "You help customers with their orders.".into()
//!     }
//!
//!     fn tools(&self) -> Vec<ServerTool> {
//!         vec![
//!             ServerTool::new("lookup_order", "Find an order", |input: Lookup| async move {
//!                 Ok::<_, String>(serde_json::json!({ "order": input.order, "status": "shipped" }))
//!             }),
//!             ServerTool::new("refund", "Refund an order", |input: Lookup| async move {
//!                 Ok::<_, String>(serde_json::json!({ "refunded": input.order }))
//!             })
//!             .needs_approval(ApprovalRule::Always),
//!         ]
//!     }
//! }
//!
//! // The Durable Object class `SupportAgent` (bound under that name in wrangler.toml), which
//! // the client reaches as `/agents/support-agent/<name>`.
//! chat_agent!(SupportAgent, |_env: &worker::Env| Support);
//!
//! // The worker's fetch entry: agent requests to their Durable Object, anything else 404.
//! #[worker::event(fetch)]
//! async fn fetch(req: worker::Request, env: worker::Env, _ctx: worker::Context) -> worker::Result<worker::Response> {
//!     route_request(req, &env, &["SupportAgent"]).await?.or_not_found()
//! }
//! ```
//!
//! The crate has no default feature: an agent's crate gets the library and
//! no demo code (this repository's demo classes and page are the `demo`
//! feature, which its own worker build turns on). Everything above
//! comes from [`prelude`]. The package holds a starter and its generator:
//! `bash scripts/new-agent.sh NAME DIR` in the package's folder (the one
//! `cargo metadata` names for `durable-chat`) makes a new agent crate, with
//! its `wrangler.toml`, build profiles, `package.json` and the scripted model
//! (`MODEL_PROVIDER=scripted`), so `npx wrangler dev` chats with no key.
//!
//! ## Guides
//!
//! The guides are the [`guides`] module's pages (in the repository, under
//! `docs/guides/`):
//!
//! - [Writing an agent](guides::writing_an_agent) — the definition, its settings, the class and the router;
//! - [Tools and approval](guides::tools_and_approval) — server tools, client tools, approvals;
//! - [Hooks](guides::hooks) — `before_turn`, the tool hooks, `on_chat_response`, `on_chat_error`;
//! - [State and callables](guides::state_and_callables) — the synced state, callable methods, connections;
//! - [Storage and schedules](guides::storage_and_schedules) — the agent's own SQL tables and its schedules;
//! - [Submissions](guides::submissions) — the agent's own code submitting messages, alarms;
//! - [Sub-agents](guides::sub_agents) — one agent asking another;
//! - [Many chats per user](guides::many_chats) — a directory agent per user over one agent per chat;
//! - [Long conversations](guides::long_conversations) — the context policy and compaction;
//! - [MCP servers](guides::mcp) — the agent's MCP client: servers, their tools, OAuth;
//! - [Testing your agent](guides::testing_your_agent) — the test kit: the agent natively under `cargo test`;
//! - [Models and providers](guides::models) — OpenAI-compatible, Anthropic, Workers AI, a provider of your own, per turn;
//! - [Configuration](guides::configuration) — vars, secrets and settings;
//! - [Coming from Think](guides::coming_from_think) — the TypeScript agent's names here;
//! - [Wire reference](guides::wire_protocol) — the frames, for a client that is not `useAgentChat`;
//! - [Architecture](https://github.com/durable-chat/durable-chat/blob/main/docs/design/architecture.md) — how the core, the host and the store fit.
//!
//! ## Modules
//!
//! [`agent`] holds the definition API and the handle, the same on every
//! target (and, on wasm, sub-agents and submissions between agents);
//! [`protocol`] the wire types; [`model`] the model providers; [`routing`]
//! the request paths; `core` the behaviour (no I/O) that the host drives.
//! With the `test-kit` feature, `test_kit` runs an agent's definition
//! natively under `cargo test`. With the `testing` feature (native tests
//! and the fuzzer), `testing` holds the test support.

pub mod agent;
/// The engine: the sans-I/O core a host drives (`Core`, its events and
/// effects). Public for the crate's own tests and fuzzer, not an author API:
/// authors use [`prelude`].
#[doc(hidden)]
pub mod core;
#[cfg(feature = "demo")]
pub mod demo;
pub mod guides;
pub mod log;
pub mod mcp;
pub mod model;
pub mod outbound;
pub mod prelude;
pub mod protocol;
pub mod router;
pub mod routing;
#[cfg(target_arch = "wasm32")]
#[doc(hidden)]
pub mod store;
#[cfg(all(feature = "test-kit", not(target_arch = "wasm32")))]
pub mod test_kit;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod testing;
#[cfg(all(target_arch = "wasm32", feature = "demo"))]
mod worker_entry;

#[cfg(target_arch = "wasm32")]
pub use router::{route_request, route_request_with, AgentTarget, Before, Routed};
pub use router::{Cors, RouteOptions};

/// The fixed bounds of the agent's own frames (the configurable ones are
/// the fields of [`prelude::Limits`]; the input budgets are
/// [`protocol::gate::BUDGETS`]).
pub mod limits {
    pub use crate::core::{
        MAX_CALLS_IN_FLIGHT, MAX_CALL_BYTES_IN_FLIGHT, MAX_CALL_FRAME_BYTES, MAX_STATE_FRAME_BYTES,
    };
}

/// What `chat_agent!` expands to reaches the engine through here; not an API.
#[doc(hidden)]
pub mod __private {
    #[cfg(target_arch = "wasm32")]
    pub use crate::agent::host::lazy::LazyHost;
    #[cfg(target_arch = "wasm32")]
    pub use crate::agent::host::AgentHost;
    #[cfg(target_arch = "wasm32")]
    pub use crate::agent::rpc_target::author_method_names as rpc_method_names;
    #[cfg(target_arch = "wasm32")]
    pub use crate::agent::rpc_target::call as rpc_call;
    pub use crate::log::{write as log_write, LogLevel};
    pub use crate::routing::kebab;
    /// The frame limit of an agent that failed to start.
    pub const DEFAULT_FRAME_LIMIT: usize = crate::protocol::gate::CHAT.max_bytes;
}
