//! The agent as an author writes it, in folders by concern, lowest first (a
//! file names only its own rank and those below it; `scripts/check-layers.py`
//! checks it):
//!
//! 1. vocabulary: `settings` (settings and worker vars), `body` (request
//!    bodies read under a limit), `ids`, `typed_handler` (a closure of typed
//!    arguments, for tools and callables alike), `binding_model`;
//! 2. `access` (who may connect: the default `authorize`, the deployment's
//!    internal credential);
//! 3. `storage` (the author's own KV and SQL), `connections` (a socket as the
//!    author sees it);
//! 4. `handle` (the agent's own code reaching its agent, over a narrow trait
//!    the host implements: turns, submissions, schedules and their
//!    callbacks, the other tabs);
//! 5. `callables` (methods a client calls, and those other Workers call over
//!    RPC), `tools` (the server tool builder, what a tool run gets);
//! 6. `subagents` (other agents: their stubs, a child's events and calls in
//!    flight, Think's submission shapes, a parent's `chat()` to a child);
//! 7. `definition` (the `AgentDefinition` trait an author implements);
//! 8. `engine_config` (a definition turned into the core's configuration),
//!    `author_hooks` (the hooks of the agent as a whole, for the host),
//!    `builtin_tools` (`set_context`, `search_context`, added from it),
//!    `debug_tools`, `durable_object` (the `chat_agent!` macro),
//!    `effect_handlers` (which handler of a host carries out each core
//!    effect, for the worker's host and the test kit's alike);
//! 9. `host` (runs the core in a Durable Object);
//! 10. `rpc_target` (the agent's methods over Durable Object RPC, which the
//!     build's generated bridge class forwards to), on top.

pub mod access;
// Only a host uses these two: the worker's, or the test kit's.
#[cfg_attr(
    not(any(target_arch = "wasm32", feature = "test-kit")),
    allow(dead_code)
)]
pub(crate) mod author_hooks;
#[cfg(target_arch = "wasm32")]
mod binding_model;
pub mod body;
pub mod builtin_tools;
pub mod callables;
pub mod connections;
#[doc(hidden)]
#[cfg(feature = "debug-routes")]
pub mod debug_tools;
pub mod definition;
mod durable_object;
#[cfg(any(target_arch = "wasm32", feature = "test-kit"))]
pub(crate) mod effect_handlers;
#[cfg_attr(
    not(any(target_arch = "wasm32", feature = "test-kit")),
    allow(dead_code)
)]
pub(crate) mod engine_config;
pub mod handle;
#[cfg(target_arch = "wasm32")]
#[doc(hidden)]
pub mod host;
#[cfg(target_arch = "wasm32")]
pub(crate) mod ids;
#[cfg(target_arch = "wasm32")]
#[doc(hidden)]
pub mod rpc_target;
pub mod settings;
pub mod storage;
pub mod subagents;
pub mod tools;
pub mod typed_handler;

pub use crate::core::SubmissionFilter;
pub use access::anonymous::default_authorize;
pub use access::{check_origin, Refusal, RequestInfo};
pub use callables::{CallContext, CallStream, Callable, StreamingCall};
pub use connections::{Connection, MAX_CONNECTION_TAGS, MAX_TAG_BYTES};
pub use definition::AgentDefinition;
pub use handle::connections::{DESTROYED_CLOSE_CODE, DESTROYED_CLOSE_REASON};
pub use handle::schedule_callback::{ScheduleCallback, ScheduleContext};
pub use handle::schedules::Schedule;
pub use handle::turns::TurnResult;
pub use handle::{AgentHandle, Submission, SubmitOptions};
pub use settings::{AgentSettings, Vars};
pub use storage::{AuthorStorage, SqlValue, StorageError};
#[cfg(target_arch = "wasm32")]
pub use subagents::remote::AgentStub;
pub use tools::context::{AbortSignal, AgentEnv, ToolContext};
pub use tools::{ServerTool, ToolFuture};
pub use typed_handler::{FromContext, JsonFuture, TypedHandler};
