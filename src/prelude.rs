//! Everything an agent's author uses, in one import:
//! `use durable_chat::prelude::*;` — the definition trait and its settings,
//! the tool builder and what a tool run gets, the turn and tool hooks'
//! types, the handle and submissions, sub-agents, MCP servers, the worker's
//! router and the `chat_agent!` macro.

pub use crate::agent::{
    AbortSignal, AgentDefinition, AgentEnv, AgentSettings, Refusal, RequestInfo, ServerTool,
    ToolContext, ToolFuture, Vars,
};
pub use crate::chat_agent;
pub use crate::core::{
    ApprovalRule, ChatError, ChatResponse, Concurrency, ContextPolicy, CoreSettings,
    ErrorDisposition, Limits, LogLevel, RecoveryConfig, RetryPolicy, SubmissionStatus, SubmitError,
    ToolCall, ToolCallDecision, ToolChoice, ToolOutcome, TurnConfig, TurnContext, TurnTrigger,
};
pub use crate::mcp::{McpServer, ServerInfo as McpServerInfo, ServerState as McpServerState};
pub use crate::model::ModelSettings;
pub use crate::protocol::{ClientToolSchema, UIMessage};
pub use crate::routing::check_agent_name;

/// The compaction hook's type and what it reads (see
/// `AgentDefinition::compaction`).
pub use crate::core::{Compact, CompactionInput};

#[cfg(target_arch = "wasm32")]
pub use crate::agent::subagent::{self, ChatCallback, ChatOptions, ClientToolCall};
#[cfg(target_arch = "wasm32")]
pub use crate::agent::{AgentHandle, AgentStub, Submission, SubmitOptions};
#[cfg(target_arch = "wasm32")]
pub use crate::router::{route_request, Routed};
