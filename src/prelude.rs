//! Everything an agent's author uses, in one import:
//! `use durable_chat::prelude::*;` — the definition trait and its settings,
//! the tool builder and what a tool run gets, the turn and tool hooks'
//! types, the handle and submissions, sub-agents, MCP servers, the worker's
//! router and the `chat_agent!` macro, and serde_json's `Value`, `Map` and
//! `json!` (synced state, payloads and tool results are JSON).

pub use crate::agent::body::{BodyError, DEFAULT_BODY_LIMIT};
pub use crate::agent::{
    check_origin, default_authorize, AbortSignal, AgentDefinition, AgentEnv, AgentHandle,
    AgentSettings, CallContext, Callable, Refusal, RequestInfo, ServerTool, ToolContext,
    ToolFuture, Vars,
};
pub use crate::chat_agent;
pub use crate::core::StateSource;
pub use crate::core::{
    standard_message_metadata, ApprovalRule, ChatError, ChatResponse, Concurrency, ContextBlock,
    ContextBlockError, ContextPolicy, CoreSettings, ErrorDisposition, Limits, LogLevel,
    MetadataMoment, RecoveryConfig, RetryPolicy, StepConfig, StepContext, StepReport, StopWhen,
    SubmissionStatus, SubmitError, ToolCall, ToolCallDecision, ToolChoice, ToolOutcome, TurnConfig,
    TurnContext, TurnTrigger,
};
pub use crate::mcp::{McpServer, ServerInfo as McpServerInfo, ServerState as McpServerState};
pub use crate::model::{FinishReason, ModelProvider, ModelSettings, StructuredOutput, Usage};
pub use crate::outbound::OutboundHosts;
pub use crate::protocol::{ClientToolSchema, Outcome, UIMessage};
pub use crate::routing::check_agent_name;
pub use serde_json::{json, Map, Value};

/// The deprecated synchronous compaction hook's type.
#[allow(deprecated)]
pub use crate::agent::definition::Compact;
/// What `AgentDefinition::summarize` is given, and the same borrowed
/// (`SummaryRequest::input`) for plain summary code.
pub use crate::core::{CompactionInput, SummaryRequest};

#[cfg(target_arch = "wasm32")]
pub use crate::agent::body::{read_bytes, read_json, read_json_typed, read_text};
#[cfg(target_arch = "wasm32")]
pub use crate::agent::subagents::chat::{self, ChatCallback, ChatOptions, ClientToolCall};
#[cfg(target_arch = "wasm32")]
pub use crate::agent::AgentStub;
pub use crate::agent::{
    Connection, Submission, SubmissionFilter, SubmitOptions, TurnResult, DESTROYED_CLOSE_CODE,
};
#[cfg(target_arch = "wasm32")]
pub use crate::router::{route_request, route_request_with, AgentTarget, Before, Routed};
pub use crate::router::{Cors, RouteOptions};

pub use crate::agent::{
    AuthorStorage, Schedule, ScheduleCallback, ScheduleContext, SqlValue, StorageError,
};
/// The author's own storage and schedules (see `AgentHandle::storage` and
/// `AgentHandle::schedule`).
pub use crate::core::{Repeat, ScheduleError, ScheduleRequest, ScheduleWhen};
