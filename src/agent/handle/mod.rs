//! What the agent's own code holds to hand work to its agent: `AgentHandle`,
//! given to `AgentDefinition::on_request` (a route of the author's on the
//! Durable Object). It submits messages durably (`submit_messages`, with an
//! idempotency key; `submission_status`, `cancel_submission`), stores
//! messages without a turn (`save_messages`) and continues the last answer
//! (`continue_last_turn`); each reaches every tab like a tab's own turn
//! (`turns.rs` adds `run_turn`, waiting and cancelling). It
//! also schedules the agent's own alarm (`schedule_alarm`), which runs the
//! definition's `on_alarm` with a handle of its own. A handle reaches the
//! host through the narrow `CoreHost` trait (the core, and carrying out
//! what the core asked for), so it sits below the host and knows nothing else
//! of it: the Durable Object's host in a worker, the test kit's in memory
//! natively (the same handle and methods on every target).

pub(crate) mod connections;
pub mod schedule_callback;
pub mod schedules;
#[cfg_attr(
    not(any(target_arch = "wasm32", feature = "test-kit")),
    allow(dead_code)
)]
pub(crate) mod settled_waiters;
pub mod turns;

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::{Map, Value};

use crate::core::{Core, SubmissionRecord, SubmitError, SubmitRequest};
use crate::mcp::{McpServer, ServerInfo};
use crate::protocol::UIMessage;

/// The agent's environment as its code sees it: the Worker's `Env` on wasm
/// (bindings, vars, secrets); nothing in native builds (the platform's
/// bindings exist only in a worker; the test kit's tools see `None`).
#[cfg(target_arch = "wasm32")]
pub type AgentEnv = worker::Env;
#[cfg(not(target_arch = "wasm32"))]
pub type AgentEnv = ();

/// What a handle needs of the host that runs the agent.
pub(crate) trait CoreHost {
    /// The agent's core.
    fn core(&self) -> &RefCell<Core>;
    /// Carries out the effects the core queued and keeps its timers in step.
    fn carry_out_effects(self: Rc<Self>);
    /// The worker's environment (natively: none).
    fn env(&self) -> &AgentEnv;
    /// Milliseconds since the epoch (the test kit's virtual clock natively).
    fn now_ms(&self) -> u64;
    /// Adds (or updates) an MCP server for good; its id.
    fn add_mcp_server(self: Rc<Self>, server: McpServer) -> Result<String, String>;
    /// Removes an MCP server the agent's code added; whether there was one.
    fn remove_mcp_server(self: Rc<Self>, name: &str) -> Result<bool, String>;
    /// The MCP servers and where each stands.
    fn mcp_servers(&self) -> Vec<ServerInfo>;
    /// The author's own storage (`storage/`).
    fn author_storage(&self) -> crate::agent::storage::AuthorStorage;
    /// Resolves the next time submission `id` may have become final (the
    /// host checks after carrying out each event's effects).
    fn settled(&self, id: &str) -> futures::future::LocalBoxFuture<'static, ()>;
    /// The open tabs, or those holding `tag`.
    fn connections(&self, tag: Option<&str>) -> Vec<crate::agent::connections::Connection>;
    /// Erases everything the agent holds and closes every socket (see
    /// `AgentHandle::destroy`).
    fn destroy(self: Rc<Self>) -> futures::future::LocalBoxFuture<'static, Result<(), String>>;
    /// The best `limit` matches of `query` over the whole stored history.
    fn search_history(
        &self,
        query: &str,
        limit: usize,
    ) -> Result<Vec<crate::core::HistoryHit>, String>;
    /// One model call outside a turn, its text collected.
    fn generate_text(
        self: Rc<Self>,
        request: crate::model::ModelRequest,
    ) -> futures::future::LocalBoxFuture<'static, Result<String, crate::model::ModelFailure>>;
}

/// A submission and where it stands (serialises as the status routes send
/// it: `{"id", "status", "messageIds", "answerMessageId", "error", …}`).
pub type Submission = SubmissionRecord;

/// Options of [`AgentHandle::submit_messages`].
#[derive(Debug, Clone, Default)]
pub struct SubmitOptions {
    /// A second submit with the same key and the same messages (and body)
    /// returns the first submission (kept across restarts, for the last 256
    /// submissions); the same key with other messages is refused as a
    /// conflict. At most 256 bytes.
    pub idempotency_key: Option<String>,
    /// Who the key belongs to: keys are compared only between submissions
    /// of the same caller, so a route that strangers reach (name it, e.g.
    /// `"http"` or the signed-in user) cannot replay or block the keys of
    /// the agent's own code (`None`). Calls over an `AgentStub` are a caller
    /// of their own (`stub:<caller>`). A named caller's submissions count
    /// toward the agent's request rate (`RATE_LIMIT_PER_AGENT`); the agent's
    /// own code's are not rate limited.
    pub caller: Option<String>,
    /// The custom body `before_turn` sees (`TurnContext::body`), as a
    /// tab's request body.
    pub body: Option<Map<String, Value>>,
}

/// The agent as its own code reaches it (see the module header).
#[derive(Clone)]
pub struct AgentHandle {
    host: Rc<dyn CoreHost>,
}

impl AgentHandle {
    #[cfg_attr(
        not(any(target_arch = "wasm32", feature = "test-kit")),
        allow(dead_code)
    )]
    pub(crate) fn new(host: Rc<dyn CoreHost>) -> AgentHandle {
        AgentHandle { host }
    }

    /// The host, for the handle's other files.
    pub(crate) fn host(&self) -> &Rc<dyn CoreHost> {
        &self.host
    }

    /// Runs `f` on the core at the current time and carries out what it
    /// asked for.
    pub(crate) fn with_core<R>(&self, f: impl FnOnce(&mut Core, u64) -> R) -> R {
        let result = f(&mut self.host.core().borrow_mut(), self.now_ms());
        self.host.clone().carry_out_effects();
        result
    }

    /// Rewrites context block `name` (any block the definition declares,
    /// read-only ones too); the agent's next model request shows it. Refused
    /// for a name not declared or a text over the block's size.
    pub fn set_context(
        &self,
        name: &str,
        text: &str,
    ) -> Result<(), crate::core::ContextBlockError> {
        self.with_core(|core, now| core.set_context_block(name, text, now))
    }

    /// Searches the whole stored history (not only what the model sees):
    /// the best matches of any of `query`'s words, newest place and an
    /// excerpt each, at most `limit` (default 5, at most 20) and 8 KiB of
    /// excerpts.
    pub fn search_history(
        &self,
        query: &str,
        limit: Option<usize>,
    ) -> Result<Vec<crate::core::HistoryHit>, String> {
        let limit = crate::core::vocab::history_search::hits_for(limit);
        self.host.search_history(query, limit)
    }

    /// Each context block the definition declares, with its text now.
    pub fn context_blocks(&self) -> Vec<(crate::core::ContextBlock, String)> {
        self.with_core(|core, _| core.context_blocks())
    }

    /// The agent's limits (`CoreSettings::limits`).
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
    pub(crate) fn limits(&self) -> crate::core::Limits {
        self.host.core().borrow().config().settings.limits
    }

    /// Stores `messages` (user messages), queues their turn and returns at
    /// once: the turn runs in the turn queue under the agent's message
    /// concurrency and streams to every tab; it survives an eviction.
    pub fn submit_messages(
        &self,
        messages: Vec<UIMessage>,
        options: SubmitOptions,
    ) -> Result<Submission, SubmitError> {
        self.submit_messages_at_depth(messages, options, 0)
    }

    /// [`AgentHandle::submit_messages`] of a parent's submission: its turn
    /// is `depth` delegated calls deep (kept with it while it waits).
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
    pub(crate) fn submit_messages_at_depth(
        &self,
        messages: Vec<UIMessage>,
        options: SubmitOptions,
        depth: u32,
    ) -> Result<Submission, SubmitError> {
        let request = SubmitRequest {
            messages,
            idempotency_key: options.idempotency_key,
            caller: options.caller,
            body: options.body,
            delegation_depth: depth,
        };
        self.with_core(|core, now| core.submit(request, now))
    }

    /// Where submission `id` stands (`None`: unknown, or long forgotten).
    pub fn submission_status(&self, id: &str) -> Option<Submission> {
        self.with_core(|core, _| core.submission(id).cloned())
    }

    /// Cancels submission `id`: a queued one never runs, a running one ends
    /// `aborted` (what streamed is kept, as with a tab's stop). A finished
    /// one is returned as it is.
    pub fn cancel_submission(&self, id: &str) -> Option<Submission> {
        self.with_core(|core, now| core.cancel(id, now))
    }

    /// Appends `messages` to the transcript (a message whose id is stored
    /// replaces it) and shows them to every tab, without a model turn. The
    /// tool parts of an assistant or system message must be settled and not
    /// marked approved, unless left exactly as stored (see the trust model):
    /// only the agent's own turn asks for an approval, only a person gives one.
    pub fn save_messages(&self, messages: Vec<UIMessage>) -> Result<Vec<String>, SubmitError> {
        self.with_core(|core, now| core.save(messages, now))
    }

    /// Runs a model turn that continues the last assistant message (the
    /// protocol's continuation), after whatever runs now. Returns the
    /// continuation's request id.
    pub fn continue_last_turn(&self) -> Result<String, SubmitError> {
        self.with_core(|core, now| core.continue_last(now))
    }

    /// `continue_last_turn` asked for by a caller outside the agent (over
    /// RPC or the submission API): it counts toward `RATE_LIMIT_PER_AGENT`.
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
    pub(crate) fn continue_last_turn_from_outside(&self) -> Result<String, SubmitError> {
        self.with_core(|core, now| core.continue_last_from_outside(now))
    }

    /// Runs the definition's `on_alarm` at `at_ms` (ms since the epoch),
    /// replacing an alarm already scheduled; `None` cancels it. Stored, so
    /// it fires after an eviction too (once: an alarm whose `on_alarm` is
    /// cut by an eviction is not run again).
    pub fn schedule_alarm(&self, at_ms: Option<u64>) {
        self.with_core(|core, now| core.schedule_alarm(at_ms, now));
    }

    /// When the scheduled alarm is due, if one is.
    pub fn scheduled_alarm(&self) -> Option<u64> {
        self.with_core(|core, _| core.scheduled_alarm())
    }

    /// Milliseconds since the epoch (the clock `schedule_alarm` uses).
    pub fn now_ms(&self) -> u64 {
        self.host.now_ms()
    }

    /// The agent's instance name (the one its URL or its Durable Object id
    /// gave; empty until a request or a call named it).
    pub fn name(&self) -> String {
        self.with_core(|core, _| core.config().name.clone())
    }

    /// The stored conversation.
    pub fn messages(&self) -> Vec<UIMessage> {
        self.with_core(|core, _| core.messages())
    }

    /// The worker's environment (bindings, vars, secrets; `worker::Env`
    /// in a worker, `()` in a native build, see [`AgentEnv`]).
    pub fn env(&self) -> &AgentEnv {
        self.host.env()
    }

    /// Connects the agent to an MCP server, for good: stored, connected
    /// now and again after every restart, its tools offered to the model as
    /// `mcp_<id>_<tool>`. Returns the server's id (its name normalized). A
    /// server of the same name and URL is updated (headers, options); the
    /// same name with another URL is refused.
    pub fn add_mcp_server(&self, server: McpServer) -> Result<String, String> {
        self.host.clone().add_mcp_server(server)
    }

    /// Disconnects and forgets the MCP server named `name` (added by the
    /// agent's code; a declared one stays). `Ok(false)`: no such server.
    pub fn remove_mcp_server(&self, name: &str) -> Result<bool, String> {
        self.host.clone().remove_mcp_server(name)
    }

    /// The MCP servers: id, name, URL, state, error, tool names.
    pub fn mcp_servers(&self) -> Vec<ServerInfo> {
        self.host.mcp_servers()
    }

    /// The agent's synced state (`None`: it has none yet).
    pub fn state(&self) -> Option<Value> {
        self.host.core().borrow().state().cloned()
    }

    /// Replaces the synced state: validated by the definition's
    /// `validate_state`, stored, sent to every tab, then `on_state_changed`.
    /// `Err(reason)`: refused, or its write failed; nothing changed.
    pub fn set_state(&self, state: Value) -> Result<(), String> {
        let failures = self.host.core().borrow().state_write_failures();
        self.with_core(|core, now| core.set_state(state, now))?;
        match self.host.core().borrow().state_write_failures() == failures {
            true => Ok(()),
            false => Err("the state could not be stored; it was not changed".to_string()),
        }
    }

    pub(crate) fn author_storage(&self) -> crate::agent::storage::AuthorStorage {
        self.host.author_storage()
    }

    /// Asks the agent's model once, outside any turn (no tools, nothing
    /// stored or shown to the tabs): `system` and `prompt` in, the text of
    /// its answer out (`Err`: the provider's failure). E.g. to write a
    /// summary in `AgentDefinition::summarize`. `model` replaces the agent's
    /// model for this call.
    pub async fn generate_text(
        &self,
        system: &str,
        prompt: &str,
        model: Option<&str>,
    ) -> Result<String, String> {
        let mut settings = self.host.core().borrow().config().settings.model.clone();
        if let Some(model) = model {
            settings.model = model.to_string();
        }
        let request = crate::model::ModelRequest {
            settings,
            messages: vec![
                crate::model::ModelMessage::System {
                    content: system.to_string(),
                },
                crate::model::ModelMessage::User {
                    content: prompt.to_string(),
                    files: Vec::new(),
                },
            ],
            tools: Vec::new(),
            headers: Vec::new(),
            tool_choice: None,
        };
        self.host
            .clone()
            .generate_text(request)
            .await
            .map_err(|failure| failure.text)
    }

    /// See `CoreHost::settled`.
    pub(crate) fn settled(&self, id: &str) -> futures::future::LocalBoxFuture<'static, ()> {
        self.host.settled(id)
    }
}
