//! What a user of the crate writes: an agent definition (prompt, model
//! settings, typed server tools, concurrency, turn and tool hooks) with
//! defaults read from the worker's vars and secrets.

use std::future::Future;
use std::ops::{Deref, DerefMut};
use std::pin::Pin;
use std::rc::Rc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use futures::future::LocalBoxFuture;

use crate::core::{
    ApprovalRule, ChatError, ChatResponse, Concurrency, ContextPolicy, CoreConfig, CoreSettings,
    ErrorDisposition, Hooks, Limits, LogLevel, RetryPolicy, ToolCall, ToolCallDecision,
    ToolOutcome, ToolSpec, TurnConfig, TurnContext,
};

pub use super::tool_context::ToolContext;

use super::access::{require_token, Refusal, RequestInfo};
use crate::model::openai::OpenAiCompatible;
use crate::model::workers_ai::WorkersAi;
use crate::model::{ModelFailure, ModelSettings, Provider};

pub type ToolFuture = Pin<Box<dyn Future<Output = Result<Value, String>>>>;

/// A tool the agent runs itself. Its JSON schema comes from the input type.
#[derive(Clone)]
pub struct ServerTool {
    pub spec: ToolSpec,
    run: Rc<dyn Fn(Value, ToolContext) -> ToolFuture>,
}

impl ServerTool {
    /// `run` gets the model's input parsed as `I`; its `Ok` value becomes the
    /// tool output, its `Err` text the tool error the model reads.
    pub fn new<I, O, F, Fut>(name: &str, description: &str, run: F) -> Self
    where
        I: DeserializeOwned + JsonSchema + 'static,
        O: Serialize + 'static,
        F: Fn(I) -> Fut + 'static,
        Fut: Future<Output = Result<O, String>> + 'static,
    {
        ServerTool::with_context(name, description, move |input: I, _ctx: ToolContext| {
            run(input)
        })
    }

    /// Like [`ServerTool::new`], and `run` also gets the run's
    /// [`ToolContext`]: its tool call id, an abort signal that fires when the
    /// turn is cancelled, the turn's recent messages and the agent's env.
    pub fn with_context<I, O, F, Fut>(name: &str, description: &str, run: F) -> Self
    where
        I: DeserializeOwned + JsonSchema + 'static,
        O: Serialize + 'static,
        F: Fn(I, ToolContext) -> Fut + 'static,
        Fut: Future<Output = Result<O, String>> + 'static,
    {
        let run = Rc::new(run);
        let tool_name = name.to_string();
        ServerTool {
            spec: ToolSpec::new(name, description, input_schema::<I>()),
            run: Rc::new(move |input: Value, ctx: ToolContext| -> ToolFuture {
                let run = run.clone();
                let tool_name = tool_name.clone();
                Box::pin(async move {
                    let input: I = serde_json::from_value(input)
                        .map_err(|e| format!("Invalid input for tool '{tool_name}': {e}"))?;
                    let output = run(input, ctx).await?;
                    serde_json::to_value(output).map_err(|e| {
                        format!("Tool '{tool_name}' returned unserializable output: {e}")
                    })
                })
            }),
        }
    }

    /// A person approves each call (or the calls `rule` picks) before it runs.
    /// Such a tool is not overridable by a client tool unless marked `overridable()`.
    pub fn needs_approval(mut self, rule: ApprovalRule) -> Self {
        self.spec.approval = rule;
        self
    }

    /// A client tool of the same name never replaces this tool.
    pub fn not_overridable(mut self) -> Self {
        self.spec = self.spec.not_overridable();
        self
    }

    /// A client tool of the same name replaces this tool even if it needs approval.
    pub fn overridable(mut self) -> Self {
        self.spec = self.spec.overridable();
        self
    }

    /// A run still going after `ms` ends as a tool error the model reads
    /// (default: the settings' `tool_timeout_ms`, five minutes).
    pub fn timeout_ms(mut self, ms: u64) -> Self {
        self.spec = self.spec.timeout_ms(ms);
        self
    }

    /// Offered only in turns whose `before_turn` adds it (`TurnConfig::add_tools`).
    pub fn opt_in(mut self) -> Self {
        self.spec = self.spec.opt_in();
        self
    }

    /// Runs the tool outside an agent (no env, a signal that never fires).
    pub fn call(&self, input: Value) -> ToolFuture {
        (self.run)(input, ToolContext::default())
    }

    /// Runs the tool with its context.
    pub fn call_with(&self, input: Value, ctx: ToolContext) -> ToolFuture {
        (self.run)(input, ctx)
    }
}

/// The JSON schema of a tool input type, without the meta keys models ignore.
pub fn input_schema<I: JsonSchema>() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(I)).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
        map.remove("title");
    }
    if !schema.is_object() {
        schema = serde_json::json!({"type": "object"});
    }
    schema
}

/// Reads worker vars and secrets by name.
pub struct Vars<'a>(pub &'a dyn Fn(&str) -> Option<String>);

impl Vars<'_> {
    pub fn get(&self, name: &str) -> Option<String> {
        (self.0)(name).filter(|v| !v.trim().is_empty())
    }

    /// A numeric (or otherwise parsed) var; `default` when unset or unreadable.
    pub fn parsed_or<T: std::str::FromStr>(&self, name: &str, default: T) -> T {
        self.get(name)
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(default)
    }
}

/// Where the model lives, who may connect, and how turns run: the
/// [`CoreSettings`] the settings deref to (`settings.max_steps`,
/// `settings.concurrency`, `settings.model`, …).
#[derive(Clone)]
pub struct AgentSettings {
    /// Base URL of an OpenAI-compatible API, e.g. `https://api.openai.com/v1`.
    pub base_url: Option<String>,
    pub api_key: Option<String>,
    /// `MODEL_PROVIDER=workers-ai`: the model runs on Workers AI through this
    /// binding (`AI_BINDING`, default `AI`) instead of an HTTP API.
    pub workers_ai_binding: Option<String>,
    /// `AUTH_TOKEN`: when set, requests must carry a matching `token` query parameter.
    pub auth_token: Option<String>,
    /// The model, step limit, concurrency, limits, model retries
    /// (`MODEL_MAX_RETRIES`: retries of a call that failed transiently before
    /// streaming anything, default 2, 0 turns them off) and recovery budget.
    pub core: CoreSettings,
}

/// Shows whether the key and the token are set, never their values.
impl std::fmt::Debug for AgentSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let set = |v: &Option<String>| if v.is_some() { "<set>" } else { "<unset>" };
        f.debug_struct("AgentSettings")
            .field("base_url", &self.base_url)
            .field("api_key", &set(&self.api_key))
            .field("auth_token", &set(&self.auth_token))
            .field("core", &self.core)
            .finish()
    }
}

impl Deref for AgentSettings {
    type Target = CoreSettings;

    fn deref(&self) -> &CoreSettings {
        &self.core
    }
}

impl DerefMut for AgentSettings {
    fn deref_mut(&mut self) -> &mut CoreSettings {
        &mut self.core
    }
}

impl AgentSettings {
    /// `OPENAI_BASE_URL`, `OPENAI_API_KEY`, `MODEL`, `MESSAGE_CONCURRENCY`,
    /// `AUTH_TOKEN`, `MODEL_STALL_TIMEOUT_MS`, `MODEL_MAX_RETRIES`, `LOG_LEVEL`.
    pub fn from_vars(vars: &Vars) -> AgentSettings {
        let concurrency = vars
            .get("MESSAGE_CONCURRENCY")
            .map(|v| match Concurrency::parse(&v) {
                Some(c) => c,
                None => {
                    log_warning(&format!(
                        "MESSAGE_CONCURRENCY `{v}` is not understood; using queue"
                    ));
                    Concurrency::Queue
                }
            });
        let log_level = vars.get("LOG_LEVEL").map(|v| match LogLevel::parse(&v) {
            Some(level) => level,
            None => {
                log_warning(&format!(
                    "LOG_LEVEL `{v}` is not understood (error, warn, info or debug); using info"
                ));
                LogLevel::Info
            }
        });
        let defaults = CoreSettings::default();
        AgentSettings {
            base_url: vars.get("OPENAI_BASE_URL"),
            api_key: vars.get("OPENAI_API_KEY"),
            workers_ai_binding: vars
                .get("MODEL_PROVIDER")
                .filter(|p| p.trim().eq_ignore_ascii_case("workers-ai"))
                .map(|_| vars.get("AI_BINDING").unwrap_or_else(|| "AI".to_string())),
            auth_token: vars.get("AUTH_TOKEN"),
            core: CoreSettings {
                model: ModelSettings {
                    model: vars
                        .get("MODEL")
                        .unwrap_or_else(|| "gpt-4o-mini".to_string()),
                    ..Default::default()
                },
                concurrency: concurrency.unwrap_or_default(),
                limits: Limits {
                    model_stall_timeout_ms: vars.parsed_or(
                        "MODEL_STALL_TIMEOUT_MS",
                        defaults.limits.model_stall_timeout_ms,
                    ),
                    ..defaults.limits
                },
                model_retry: RetryPolicy {
                    max_retries: vars
                        .parsed_or("MODEL_MAX_RETRIES", defaults.model_retry.max_retries),
                    ..defaults.model_retry
                },
                context: ContextPolicy {
                    max_bytes: vars.parsed_or("MODEL_CONTEXT_BYTES", defaults.context.max_bytes),
                    max_messages: vars
                        .parsed_or("MODEL_CONTEXT_MESSAGES", defaults.context.max_messages),
                },
                tool_timeout_ms: vars.parsed_or("TOOL_TIMEOUT_MS", defaults.tool_timeout_ms),
                log_level: log_level.unwrap_or(defaults.log_level),
                ..defaults
            },
        }
    }

    /// The model provider these settings choose, or the failure every model
    /// call meets when none is configured.
    pub fn model_provider(&self) -> Result<Provider, ModelFailure> {
        if let Some(binding) = &self.workers_ai_binding {
            return Ok(Provider::WorkersAi(WorkersAi::new(binding, "call")));
        }
        match &self.base_url {
            Some(base_url) => Ok(Provider::OpenAiCompatible(OpenAiCompatible::new(
                base_url,
                self.api_key.clone(),
            ))),
            None => Err(ModelFailure::permanent(
                "No model is configured: set OPENAI_BASE_URL (and OPENAI_API_KEY).",
            )),
        }
    }
}

fn log_warning(text: &str) {
    crate::log::write(crate::log::LogLevel::Warn, text);
}

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

    /// A request to the agent's Durable Object that is neither a tab's
    /// socket nor `…/get-messages` (it passed `authorize`): the author's
    /// own routes, which reach the agent through `agent` (submit messages,
    /// read a submission's status, …). `Ok(None)`: not one of them (404).
    #[cfg(target_arch = "wasm32")]
    fn on_request(
        &self,
        _req: worker::Request,
        _agent: super::handle::AgentHandle,
    ) -> impl Future<Output = worker::Result<Option<worker::Response>>> {
        async { Ok(None) }
    }

    /// The alarm scheduled with `AgentHandle::schedule_alarm` is due (run
    /// once; schedule the next one from here to repeat).
    #[cfg(target_arch = "wasm32")]
    fn on_alarm(&self, _agent: super::handle::AgentHandle) -> impl Future<Output = ()> {
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

/// The awaited hooks of a definition, type-erased for the host.
#[derive(Clone)]
pub struct AsyncHooks {
    pub before_turn: Rc<dyn Fn(TurnContext) -> LocalBoxFuture<'static, TurnConfig>>,
    pub on_chat_response: Rc<dyn Fn(ChatResponse) -> LocalBoxFuture<'static, ()>>,
}

impl AsyncHooks {
    pub fn of<D: AgentDefinition>(definition: &Rc<D>) -> AsyncHooks {
        let (prepare, respond) = (definition.clone(), definition.clone());
        AsyncHooks {
            before_turn: Rc::new(move |ctx| {
                let definition = prepare.clone();
                Box::pin(async move { definition.before_turn(ctx).await })
            }),
            on_chat_response: Rc::new(move |response| {
                let definition = respond.clone();
                Box::pin(async move { definition.on_chat_response(response).await })
            }),
        }
    }
}

/// Builds the core's configuration for one agent instance: each turn is
/// prepared by the host (`before_turn` is awaited there); the inline hooks
/// go to the core.
pub fn core_config<D: AgentDefinition>(
    definition: &Rc<D>,
    settings: &AgentSettings,
    tools: &[ServerTool],
    name: &str,
    agent: &str,
) -> CoreConfig {
    let mut config = CoreConfig::new(name, agent);
    config.system_prompt = definition.system_prompt();
    config.tools = tools.iter().map(|t| t.spec.clone()).collect();
    config.settings = settings.core.clone();
    config.prepare_turn = true;
    let (errors, before, after) = (definition.clone(), definition.clone(), definition.clone());
    config.hooks = Hooks {
        on_chat_error: Some(Rc::new(move |error: &ChatError| {
            errors.on_chat_error(error)
        })),
        before_tool_call: Some(Rc::new(move |call: &ToolCall| {
            before.before_tool_call(call)
        })),
        after_tool_call: Some(Rc::new(move |call: &ToolCall, result: ToolOutcome| {
            after.after_tool_call(call, result)
        })),
    };
    config.compact = definition.compaction();
    config
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize, JsonSchema)]
    struct WeatherInput {
        /// The city to look up.
        #[allow(dead_code)]
        city: String,
    }

    #[test]
    fn settings_debug_output_never_shows_secrets() {
        let lookup = |name: &str| match name {
            "OPENAI_API_KEY" => Some("sk-very-secret".to_string()),
            "AUTH_TOKEN" => Some("tok-very-secret".to_string()),
            _ => None,
        };
        let text = format!("{:?}", AgentSettings::from_vars(&Vars(&lookup)));
        assert!(
            !text.contains("very-secret") && text.contains("<set>"),
            "{text}"
        );
    }

    #[test]
    fn tool_schema_comes_from_the_input_type() {
        let schema = input_schema::<WeatherInput>();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["properties"]["city"]["type"], "string");
        assert_eq!(schema["required"], serde_json::json!(["city"]));
        assert!(schema.get("$schema").is_none());
    }

    #[test]
    fn settings_read_vars_and_fall_back_to_queue() {
        let lookup = |name: &str| match name {
            "OPENAI_BASE_URL" => Some("http://127.0.0.1:9/v1".to_string()),
            "MESSAGE_CONCURRENCY" => Some("debounce:300".to_string()),
            "MODEL" => Some("".to_string()),
            _ => None,
        };
        let settings = AgentSettings::from_vars(&Vars(&lookup));
        assert_eq!(settings.base_url.as_deref(), Some("http://127.0.0.1:9/v1"));
        assert_eq!(settings.concurrency, Concurrency::Debounce { ms: 300 });
        assert_eq!(settings.model.model, "gpt-4o-mini");
        assert!(settings.api_key.is_none());
        assert_eq!(settings.model_retry.max_retries, 2);
    }

    struct Tuned;

    impl AgentDefinition for Tuned {
        fn settings(&self, vars: &Vars) -> AgentSettings {
            let mut settings = AgentSettings::from_vars(vars);
            settings.concurrency = Concurrency::Latest;
            settings.max_steps = 5;
            settings.recovery.max_attempts = 3;
            settings.model_retry.max_retries = 1;
            settings.continuation_coalesce_ms = 20;
            settings
        }
    }

    #[test]
    fn settings_changed_in_code_reach_the_core_config() {
        let definition = Rc::new(Tuned);
        let settings = definition.settings(&Vars(&|_: &str| None));
        let config = core_config(&definition, &settings, &[], "room", "tuned");
        assert_eq!(config.concurrency, Concurrency::Latest);
        assert_eq!(config.max_steps, 5);
        assert_eq!(config.recovery.max_attempts, 3);
        assert_eq!(config.model_retry.max_retries, 1);
        assert_eq!(config.continuation_coalesce_ms, 20);
        assert_eq!(config.system_prompt, "You are a helpful assistant.");
    }

    #[test]
    fn the_base_url_chooses_the_openai_compatible_provider() {
        let lookup = |name: &str| match name {
            "OPENAI_BASE_URL" => Some("http://127.0.0.1:9/v1".to_string()),
            "OPENAI_API_KEY" => Some("sk-1".to_string()),
            _ => None,
        };
        let settings = AgentSettings::from_vars(&Vars(&lookup));
        assert_eq!(
            settings.model_provider(),
            Ok(Provider::OpenAiCompatible(OpenAiCompatible::new(
                "http://127.0.0.1:9/v1",
                Some("sk-1".into())
            )))
        );
    }

    #[test]
    fn model_provider_workers_ai_chooses_the_ai_binding() {
        let lookup = |name: &str| match name {
            "MODEL_PROVIDER" => Some("workers-ai".to_string()),
            "MODEL" => Some("@cf/meta/llama-3.1-8b-instruct".to_string()),
            "OPENAI_BASE_URL" => Some("http://127.0.0.1:9/v1".to_string()),
            _ => None,
        };
        let settings = AgentSettings::from_vars(&Vars(&lookup));
        assert_eq!(
            settings.model_provider(),
            Ok(Provider::WorkersAi(WorkersAi::new("AI", "call")))
        );
        assert_eq!(settings.model.model, "@cf/meta/llama-3.1-8b-instruct");
    }

    #[test]
    fn without_a_base_url_every_model_call_fails_and_says_what_to_set() {
        let settings = AgentSettings::from_vars(&Vars(&|_: &str| None));
        assert_eq!(
            settings.model_provider(),
            Err(ModelFailure::permanent(
                "No model is configured: set OPENAI_BASE_URL (and OPENAI_API_KEY)."
            ))
        );
    }

    #[test]
    fn log_level_is_read_and_an_unknown_one_keeps_info() {
        let read = |value: &'static str| {
            let lookup = move |name: &str| (name == "LOG_LEVEL").then(|| value.to_string());
            AgentSettings::from_vars(&Vars(&lookup)).log_level
        };
        assert_eq!(read("warn"), LogLevel::Warn);
        assert_eq!(read("Debug"), LogLevel::Debug);
        assert_eq!(read("loud"), LogLevel::Info);
        assert_eq!(read(""), LogLevel::Info);
    }

    #[test]
    fn numeric_settings_are_read_and_unreadable_ones_keep_their_defaults() {
        let lookup = |name: &str| match name {
            "MODEL_MAX_RETRIES" => Some(" 0 ".to_string()),
            "MODEL_STALL_TIMEOUT_MS" => Some("soon".to_string()),
            _ => None,
        };
        let settings = AgentSettings::from_vars(&Vars(&lookup));
        assert_eq!(settings.model_retry.max_retries, 0);
        assert_eq!(
            settings.limits.model_stall_timeout_ms,
            Limits::default().model_stall_timeout_ms
        );
    }

    struct Hooked;

    impl AgentDefinition for Hooked {
        async fn before_turn(&self, ctx: TurnContext) -> TurnConfig {
            TurnConfig {
                model: Some(format!("for-{}", ctx.request_id)),
                ..TurnConfig::default()
            }
        }

        fn before_tool_call(&self, call: &ToolCall) -> ToolCallDecision {
            ToolCallDecision::Block(format!("no {}", call.tool_name))
        }
    }

    #[test]
    fn the_definitions_hooks_reach_the_core_and_the_host() {
        let definition = Rc::new(Hooked);
        let settings = definition.settings(&Vars(&|_: &str| None));
        let config = core_config(&definition, &settings, &[], "room", "hooked");
        assert!(config.prepare_turn, "each turn is prepared by the host");
        let call = ToolCall {
            request_id: "r1".into(),
            tool_call_id: "c1".into(),
            tool_name: "refund".into(),
            input: Value::Null,
            client: true,
        };
        let decide = config.hooks.before_tool_call.clone();
        assert_eq!(
            decide.map(|hook| hook(&call)),
            Some(ToolCallDecision::Block("no refund".into()))
        );
        let context = TurnContext {
            request_id: "r9".into(),
            trigger: crate::core::TurnTrigger::Submit,
            continuation: false,
            from_parent: false,
            messages: Vec::new(),
            client_tools: Vec::new(),
            body: Default::default(),
        };
        let hooks = AsyncHooks::of(&definition);
        let chosen = futures::executor::block_on((hooks.before_turn)(context));
        assert_eq!(chosen.model.as_deref(), Some("for-r9"));
    }
}
