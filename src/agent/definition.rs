//! What an author writes: the agent definition trait (prompt, settings,
//! server tools, its own routes and alarm, who may connect, turn and tool
//! hooks, compaction). Every method has a default.

#[cfg(target_arch = "wasm32")]
use std::future::Future;

use crate::core::{
    ChatError, ChatResponse, ErrorDisposition, ToolCall, ToolCallDecision, ToolOutcome, TurnConfig,
    TurnContext,
};

use crate::mcp::McpServer;

use super::access::{require_token, Refusal, RequestInfo};
#[cfg(target_arch = "wasm32")]
use super::handle::AgentHandle;
use super::settings::{AgentSettings, Vars};
use super::tool::ServerTool;

/// Implement this to define an agent; `chat_agent!` turns it into a Durable Object class.
/// Every method has a default. The agent runs on one thread, so the futures
/// of its `async fn`s need not be `Send`.
#[allow(async_fn_in_trait)]
pub trait AgentDefinition: 'static {
    /// Settings from the worker's vars and secrets.
    fn settings(&self, vars: &Vars) -> AgentSettings {
        AgentSettings::from_vars(vars)
    }

    fn system_prompt(&self) -> String {
        "You are a helpful assistant.".to_string()
    }

    fn tools(&self) -> Vec<ServerTool> {
        Vec::new()
    }

    /// MCP servers the agent is always connected to, e.g. from a URL and a
    /// token among the worker's vars and secrets (connected on every start;
    /// their tools are offered as `mcp_<id>_<tool>`). Servers added at run
    /// time go through `AgentHandle::add_mcp_server`.
    fn mcp_servers(&self, _vars: &Vars) -> Vec<McpServer> {
        Vec::new()
    }

    /// A request to the agent's Durable Object that is neither a tab's
    /// socket nor `…/get-messages` (it passed `authorize`): the author's
    /// own routes, which reach the agent through `agent` (submit messages,
    /// read a submission's status, …). `Ok(None)`: not one of them (404).
    #[cfg(target_arch = "wasm32")]
    fn on_request(
        &self,
        _req: worker::Request,
        _agent: AgentHandle,
    ) -> impl Future<Output = worker::Result<Option<worker::Response>>> {
        async { Ok(None) }
    }

    /// The alarm scheduled with `AgentHandle::schedule_alarm` is due (run
    /// once; schedule the next one from here to repeat).
    #[cfg(target_arch = "wasm32")]
    fn on_alarm(&self, _agent: AgentHandle) -> impl Future<Output = ()> {
        async {}
    }

    /// Decides whether a request may open a socket or read the transcript.
    /// The default requires `?token=` to match `AUTH_TOKEN` when that is set.
    fn authorize(&self, request: &RequestInfo, settings: &AgentSettings) -> Result<(), Refusal> {
        require_token(request, settings.auth_token.as_deref())
    }

    /// Chooses one turn's settings from its context (trigger, custom body,
    /// client tools, recent messages): system prompt, step limit, model,
    /// sampling, extra headers, the tools offered and the tool choice.
    /// Awaited before the turn's first model call; a turn cancelled
    /// meanwhile never calls the model, and a turn recovered after an
    /// eviction is prepared again.
    async fn before_turn(&self, _ctx: TurnContext) -> TurnConfig {
        TurnConfig::default()
    }

    /// Called once a turn ended and its answer is stored: its outcome, the
    /// ids of the messages it answered and of its answer, its request id.
    async fn on_chat_response(&self, _response: ChatResponse) {}

    /// Called for a turn that is about to fail. `Retry` sends the failed
    /// model call again (when `error.retryable`: it streamed nothing and the
    /// step's model-retry budget is left); `Fail` (the default) ends the turn.
    fn on_chat_error(&self, _error: &ChatError) -> ErrorDisposition {
        ErrorDisposition::Fail
    }

    /// Decides a tool call before it runs (a server tool) or is sent to the
    /// tab or parent agent (a client tool): allow it, block it with text the
    /// model reads as its result, change its input, or give its result.
    fn before_tool_call(&self, _call: &ToolCall) -> ToolCallDecision {
        ToolCallDecision::Allow
    }

    /// Sees every tool result (a server tool's run, a tab's or a parent's
    /// answer) before it is stored and the model reads it; may rewrite it.
    fn after_tool_call(&self, _call: &ToolCall, result: ToolOutcome) -> ToolOutcome {
        result
    }

    /// Compaction: a hook that makes a summary standing in for the messages
    /// the context policy leaves out, from the previous summary (if any) and
    /// the messages left out since. The summary is stored and reused by
    /// every later model request until more must be left out. `None` (the
    /// default): older messages are left out without a summary.
    fn compaction(&self) -> Option<crate::core::Compact> {
        None
    }
}
