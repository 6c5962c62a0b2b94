//! What an author writes: the agent definition trait (prompt, settings,
//! server tools, its own routes and alarm, who may connect, turn and tool
//! hooks, summaries of what the context leaves out). Every method has a default, and every one but
//! `on_request` (whose request and response are the runtime's) exists on
//! every target, so a native `cargo test` compiles the same definition.

use std::future::Future;

use serde_json::{Map, Value};

use crate::core::{
    ChatError, ChatResponse, CompactionInput, ErrorDisposition, MetadataMoment, StepConfig,
    StepContext, StepReport, SummaryRequest, ToolCall, ToolCallDecision, ToolOutcome, TurnConfig,
    TurnContext,
};

use crate::core::StateSource;
use crate::mcp::McpServer;

use crate::agent::access::{Refusal, RequestInfo};
use std::rc::Rc;

use crate::agent::access::anonymous::default_authorize;
use crate::agent::callables::Callable;
use crate::agent::connections::Connection;
use crate::agent::handle::schedule_callback::ScheduleCallback;
use crate::agent::settings::{AgentSettings, Vars};
use crate::agent::tools::ServerTool;
use crate::agent::AgentHandle;

/// The synchronous compaction hook of earlier releases
/// (`AgentDefinition::compaction`): a summary of the request, or `None`.
#[deprecated(note = "write the summary in `AgentDefinition::summarize`")]
pub type Compact = Rc<dyn Fn(&CompactionInput<'_>) -> Option<String>>;

/// Implement this to define an agent; `chat_agent!` turns it into a Durable Object class.
/// Every method has a default. The agent runs on one thread, so the futures
/// of its `async fn`s need not be `Send`.
#[allow(async_fn_in_trait)]
pub trait AgentDefinition: 'static {
    /// Settings from the worker's vars and secrets.
    fn settings(&self, vars: &Vars) -> AgentSettings {
        AgentSettings::from_vars(vars)
    }

    /// Model providers of the agent's own (types implementing
    /// [`ModelProvider`](crate::model::ModelProvider)), each under the name
    /// a turn picks it by (`TurnConfig::provider`); built from the worker's
    /// vars and secrets. A name of a built-in one (`openai`, `anthropic`,
    /// `workers-ai`) replaces it, and the one `MODEL_PROVIDER` names is the
    /// default.
    fn model_providers(&self, _vars: &Vars) -> Vec<(String, Rc<dyn crate::model::ModelProvider>)> {
        Vec::new()
    }

    /// Context blocks the agent keeps with it and shows the model at the
    /// start of every request, after the system prompt: named, bounded in
    /// bytes, stored with the agent (a restart keeps them, a clear of the
    /// history empties them). The model rewrites the ones it may through the
    /// built-in `set_context` tool; code through `AgentHandle::set_context`.
    fn context_blocks(&self) -> Vec<crate::core::ContextBlock> {
        Vec::new()
    }

    /// Whether the model gets the built-in `search_context` tool, which
    /// searches the whole stored history (SQLite full-text search in the
    /// Durable Object), not only the window it sees. The agent's code can
    /// always search with `AgentHandle::search_history`.
    fn searches_history(&self) -> bool {
        false
    }

    /// Whether a `set_context` call waits for a person's approval (default: never).
    fn set_context_approval(&self) -> crate::core::ApprovalRule {
        crate::core::ApprovalRule::Never
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
    /// The one hook that exists only in a worker (its request and response
    /// are the runtime's); put what a route does in a function of the
    /// handle to test it natively.
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
    fn on_alarm(&self, _agent: AgentHandle) -> impl Future<Output = ()> {
        async {}
    }

    /// The callbacks the agent's schedules run, by name (see
    /// `AgentHandle::schedule`).
    fn schedule_callbacks(&self) -> Vec<ScheduleCallback> {
        Vec::new()
    }

    /// Schedules the agent always has (cron or interval; Think's
    /// `getScheduledTasks`), kept in step with this list each time the
    /// agent starts: added when missing, replaced when their callback,
    /// payload or timing changed, removed when no longer listed; unchanged
    /// ones keep their next due time. A one-off, or one that does not
    /// schedule (a bad cron, an unknown time zone), is skipped with an
    /// error in the log.
    fn scheduled_tasks(&self) -> Vec<crate::core::ScheduleRequest> {
        Vec::new()
    }

    /// Runs once each time the agent's object starts (after an eviction
    /// or hibernation too), before it serves its first request, socket
    /// message, alarm or RPC call; they wait for it. Do not wait here for
    /// a turn or a submission: they run only after it.
    fn on_start(&self, _agent: AgentHandle) -> impl Future<Output = ()> {
        async {}
    }

    /// Decides whether a request from outside may open a socket, read the
    /// transcript (`get-messages`) or reach `on_request`. The default is
    /// [`default_authorize`]: `?token=` (or `Authorization: Bearer`) must
    /// match `AUTH_TOKEN` when that is set; without it, a real model (the
    /// Workers AI binding, or an `OPENAI_BASE_URL` that is not loopback)
    /// refuses every request unless `ALLOW_ANONYMOUS=1`. An override is the
    /// agent's access check (no such refusal is added); it may call
    /// `default_authorize` itself.
    fn authorize(&self, request: &RequestInfo, settings: &AgentSettings) -> Result<(), Refusal> {
        default_authorize(request, settings)
    }

    /// Chooses one turn's settings from its context (trigger, custom body,
    /// client tools, recent messages): system prompt, step limit, model,
    /// sampling, extra headers, the tools offered and the tool choice.
    /// Awaited before the turn's first model call (it may read the agent's
    /// state and storage through `agent`, or ask a service); a turn
    /// cancelled meanwhile never calls the model, and a turn recovered
    /// after an eviction is prepared again.
    async fn before_turn(&self, _ctx: TurnContext, _agent: AgentHandle) -> TurnConfig {
        TurnConfig::default()
    }

    /// Called once a turn ended and its answer is stored: its outcome, the
    /// ids of the messages it answered and of its answer, its request id,
    /// its steps and the tokens they used. Delivered at least once: the
    /// report is stored with the turn's end and delivered again after a
    /// restart until this returns, so make it safe to repeat. Through
    /// `agent` it may submit the next turn or save messages.
    async fn on_chat_response(&self, _response: ChatResponse, _agent: AgentHandle) {}

    /// Changes one model step (its number, the turn's model, the tools the
    /// model called in the step before and the tokens used so far are in
    /// `ctx`): its model, system prompt, the tools it offers (of the
    /// turn's) and the tool choice. Called as each step begins; the next
    /// step is back to the turn's settings unless it changes them again.
    fn before_step(&self, _ctx: &StepContext) -> StepConfig {
        StepConfig::default()
    }

    /// Called as each model step ends (its tool calls routed, server tools
    /// run): the step's number, model, finish reason, the tools it called,
    /// the tokens its call used, and whether another step follows.
    async fn on_step_end(&self, _step: StepReport, _agent: AgentHandle) {}

    /// Writes metadata on the answer (`message.metadata` on the stored
    /// message and in the tabs): the fields returned at each moment — the
    /// answer's start, each step's end, the turn's finish — are merged into
    /// it. The default writes none; `standard_message_metadata` writes
    /// `createdAt`, `model` and the turn's token `usage`.
    fn message_metadata(&self, _moment: &MetadataMoment<'_>) -> Option<Map<String, Value>> {
        None
    }

    /// Called for a turn that is about to fail. `Retry` sends the failed
    /// model call again (when `error.retryable`: it streamed nothing and the
    /// step's model-retry budget is left); `Fail` (the default) ends the turn.
    /// Awaited (it may read the agent's storage or ask a service): the turn
    /// waits for it, at most the model call's deadline.
    async fn on_chat_error(&self, _error: ChatError, _agent: AgentHandle) -> ErrorDisposition {
        ErrorDisposition::Fail
    }

    /// Decides a tool call before it runs (a server tool) or is sent to the
    /// tab or parent agent (a client tool): allow it, block it with text the
    /// model reads as its result, change its input, or give its result.
    /// Awaited (it may look in the agent's storage or ask a service): the
    /// call waits for it, under the tool's deadline.
    async fn before_tool_call(&self, _call: ToolCall, _agent: AgentHandle) -> ToolCallDecision {
        ToolCallDecision::Allow
    }

    /// Sees every tool result (a server tool's run, a tab's or a parent's
    /// answer) before it is stored and the model reads it; may rewrite it.
    /// Awaited (it may read the agent's storage or ask a service): the result
    /// waits for it, under the tool's deadline (past it, the result stands
    /// as it came).
    async fn after_tool_call(
        &self,
        _call: ToolCall,
        result: ToolOutcome,
        _agent: AgentHandle,
    ) -> ToolOutcome {
        result
    }

    /// Whether `summarize` writes the summaries standing in for what the
    /// context policy leaves out. Default: no (older messages are left out
    /// with a note), unless the deprecated `compaction` gives a hook.
    fn summarizes(&self) -> bool {
        #[allow(deprecated)]
        self.compaction().is_some()
    }

    /// Compaction, when `summarizes` says so: given the previous summary
    /// (if any) and the messages left out since, returns the new summary,
    /// or `None` to leave them out without one. Awaited before the model
    /// step that needs it, so it may ask a model (`agent.generate_text`) or
    /// a service; a summary made by plain code is returned at once
    /// (`SummaryRequest::input` lends the request to such code). The summary
    /// is stored and reused by every later model request until more must be
    /// left out.
    async fn summarize(&self, request: SummaryRequest, _agent: AgentHandle) -> Option<String> {
        #[allow(deprecated)]
        let hook = self.compaction()?;
        hook(&request.input())
    }

    /// The synchronous compaction hook of earlier releases; what it returns
    /// is run by the default `summarizes` and `summarize`.
    #[deprecated(
        note = "write the summary in `summarize` (with `summarizes` returning true); \
                         plain code reads `request.input()`"
    )]
    #[allow(deprecated)]
    fn compaction(&self) -> Option<Compact> {
        None
    }

    // ---- the agent as a whole: synced state, callables, connections ----

    /// The synced state before anything set one (every tab gets the state
    /// on connect). `None` (the default): no state until one is set.
    fn initial_state(&self) -> Option<Value> {
        None
    }

    /// Decides a state change (a tab's `setState` or the agent's own)
    /// before it is stored. `Err(reason)`: refused; the tab that sent it is
    /// told `reason` (`cf_agent_state_error`), nothing is stored or sent.
    fn validate_state(&self, _next: &Value, _source: &StateSource) -> Result<(), String> {
        Ok(())
    }

    /// Called after a state change was stored and sent to the tabs, with
    /// the state the agent holds (shared, not copied).
    fn on_state_changed(
        &self,
        _state: std::rc::Rc<Value>,
        _source: StateSource,
        _agent: AgentHandle,
    ) -> impl Future<Output = ()> {
        async {}
    }

    /// The methods a connected client may call (`agent.call`, `agent.stub`).
    /// One marked `.over_rpc()` is also an RPC method (see `rpc_methods`).
    fn callables(&self) -> Vec<Callable> {
        Vec::new()
    }

    /// The tags of a tab that connects (`id`, its upgrade `request`), set
    /// before `on_connect` and kept for the socket's life, across
    /// hibernation: `AgentHandle::connections(Some(tag))` and
    /// `broadcast_to_tag` reach the tabs holding a tag. At most
    /// `MAX_CONNECTION_TAGS` tags of 1 to `MAX_TAG_BYTES` bytes each; others
    /// are dropped and logged. None by default.
    fn connection_tags(&self, _id: &str, _request: &RequestInfo) -> Vec<String> {
        Vec::new()
    }

    /// Whether a tab that connects is readonly from the start (see
    /// `Connection::set_readonly`): it receives every stream and state frame,
    /// and what would change the agent is refused. `false` by default.
    fn should_connection_be_readonly(&self, _id: &str, _request: &RequestInfo) -> bool {
        false
    }

    /// Methods other Workers and agents call on the agent's Durable Object
    /// stub (`env.MY_AGENT.get(id).myMethod(a, b)`), typed like callables
    /// (`Callable::new`), not offered to tabs. Arguments are read under the
    /// agent's message limits; the call's connection is the RPC caller's
    /// (no socket, no state). A name must be a JavaScript identifier and not
    /// one of the agent's built-in RPC methods (`chat`, `runTurn`, …) nor a
    /// Durable Object handler (`fetch`, `alarm`, …): such a method is
    /// skipped with an error in the log.
    fn rpc_methods(&self) -> Vec<Callable> {
        Vec::new()
    }

    /// A tab connected (after its connect frames): its request's path,
    /// query and headers, and the connection, whose own state you may set.
    fn on_connect(
        &self,
        _connection: Connection,
        _request: RequestInfo,
        _agent: AgentHandle,
    ) -> impl Future<Output = ()> {
        async {}
    }

    /// A tab's socket closed.
    fn on_close(&self, _connection: Connection, _agent: AgentHandle) -> impl Future<Output = ()> {
        async {}
    }

    /// A text frame of a type neither the chat nor the agent's state and
    /// calls use (the author's own frames).
    fn on_message(
        &self,
        _connection: Connection,
        _text: String,
        _agent: AgentHandle,
    ) -> impl Future<Output = ()> {
        async {}
    }
}
