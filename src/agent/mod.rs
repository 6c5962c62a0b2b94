//! The agent as an author writes it, in layers (each file uses only the ones
//! below it):
//!
//! 1. vocabulary: `tool_context` (what a tool run gets), `tool` (the server
//!    tool builder), `settings` (settings and worker vars), `access` (who may
//!    connect), `anonymous` (the default `authorize`: no anonymous requests
//!    to a real model unless opted in), `channel_auth` (the deployment's internal credential), `body`
//!    (request bodies read under a limit), `child_events` (what a parent
//!    hears from a child's `chat()`), `child_calls` (calls to child agents in
//!    flight, held under their caps), `think_submissions` (Think's submission
//!    shapes), `rpc_stub` (a Durable Object stub called over RPC);
//! 2. `handle` (the agent's own code reaching its agent, over a narrow trait
//!    the host implements), `connection` (a socket as the author sees it),
//!    `callable` (methods a client calls);
//! 3. `definition` (the `AgentDefinition` trait an author implements);
//! 4. `engine_config` (a definition turned into the core's configuration),
//!    `author_hooks` (the hooks of the agent as a whole, for the host),
//!    `call_runs` (callable runs in flight), `settled_waiters` (code
//!    waiting for a submission),
//!    `debug_tools`, `remote` (submissions from other agents), `subagent`
//!    (a parent's `chat()` to a child, made by `rpc_chat`);
//! 5. `host` (runs the core in a Durable Object), with the `chat_agent!`
//!    macro that declares the Durable Object class;
//! 6. `rpc_target` (the agent's methods over Durable Object RPC, which the
//!    build's generated bridge class forwards to), on top.

pub mod access;
pub mod anonymous;
// Only a host uses these two: the worker's, or the test kit's.
#[cfg_attr(
    not(any(target_arch = "wasm32", feature = "test-kit")),
    allow(dead_code)
)]
pub(crate) mod author_hooks;
pub mod author_sql_guard;
pub mod author_storage;
#[cfg(target_arch = "wasm32")]
mod author_storage_sql;
#[cfg(target_arch = "wasm32")]
mod binding_model;
pub mod body;
#[cfg_attr(
    not(any(target_arch = "wasm32", feature = "test-kit")),
    allow(dead_code)
)]
pub(crate) mod call_runs;
pub mod callable;
pub mod channel_auth;
pub mod child_calls;
pub mod child_events;
pub mod connection;
#[cfg(target_arch = "wasm32")]
mod connection_socket;
pub mod context_tool;
#[doc(hidden)]
#[cfg(feature = "debug-routes")]
pub mod debug_tools;
pub mod definition;
mod durable_object;
#[cfg_attr(
    not(any(target_arch = "wasm32", feature = "test-kit")),
    allow(dead_code)
)]
pub(crate) mod engine_config;
pub mod handle;
pub(crate) mod handle_connections;
mod handle_schedules;
mod handle_turns;
#[cfg(target_arch = "wasm32")]
#[doc(hidden)]
pub mod host;
#[cfg(target_arch = "wasm32")]
pub(crate) mod ids;
#[cfg(target_arch = "wasm32")]
pub mod remote;
#[cfg(target_arch = "wasm32")]
mod rpc_chat;
pub mod rpc_methods;
#[cfg(target_arch = "wasm32")]
mod rpc_stub;
#[cfg(target_arch = "wasm32")]
#[doc(hidden)]
pub mod rpc_target;
pub mod schedule_callback;
pub mod search_tool;
pub mod settings;
#[cfg_attr(
    not(any(target_arch = "wasm32", feature = "test-kit")),
    allow(dead_code)
)]
pub(crate) mod settled_waiters;
#[cfg(target_arch = "wasm32")]
pub mod subagent;
pub mod think_submissions;
pub mod tool;
pub mod tool_context;
pub mod typed_handler;

pub use crate::core::SubmissionFilter;
pub use access::{check_origin, Refusal, RequestInfo};
pub use anonymous::default_authorize;
pub use author_storage::{AuthorStorage, SqlValue, StorageError};
pub use callable::{CallContext, CallStream, Callable};
pub use connection::{Connection, MAX_CONNECTION_TAGS, MAX_TAG_BYTES};
pub use definition::AgentDefinition;
pub use handle::{AgentHandle, Submission, SubmitOptions};
pub use handle_connections::{DESTROYED_CLOSE_CODE, DESTROYED_CLOSE_REASON};
pub use handle_schedules::Schedule;
pub use handle_turns::TurnResult;
#[cfg(target_arch = "wasm32")]
pub use remote::AgentStub;
pub use schedule_callback::ScheduleCallback;
pub use settings::{AgentSettings, Vars};
pub use tool::{ServerTool, ToolFuture};
pub use tool_context::{AbortSignal, AgentEnv, ToolContext};
pub use typed_handler::{JsonFuture, TypedHandler};
