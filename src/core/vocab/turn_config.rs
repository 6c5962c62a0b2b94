//! A turn as the author's `before_turn` sees and shapes it: why it runs
//! (`TurnTrigger`), what it is given (`TurnContext`), what the hook may change
//! (`TurnConfig`: the model, sampling, structured output, provider options,
//! tools, when to stop) and the turn's resulting settings (`TurnSettings`).

use serde_json::{Map, Value};

use crate::model::{ModelSettings, StructuredOutput, ToolChoice};
use crate::protocol::{ClientToolSchema, UIMessage};

/// Why a turn runs (`TurnContext::trigger`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TurnTrigger {
    Submit,
    Regenerate,
    AutoContinuation,
    Programmatic,
    /// A turn cut by an eviction, continued into the same assistant message.
    RecoveryContinue,
    /// A turn cut before it produced anything, run again.
    RecoveryRetry,
}

/// What `before_turn` sees: why the turn runs, the request's custom body,
/// the client tools on offer and the most recent messages.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnContext {
    pub request_id: String,
    pub trigger: TurnTrigger,
    pub continuation: bool,
    /// The turn was asked for by a parent agent (a sub-agent turn).
    pub from_parent: bool,
    /// The newest messages of the conversation (at most
    /// [`TURN_CONTEXT_MESSAGES`] of the window the agent keeps in memory), oldest first.
    pub messages: Vec<UIMessage>,
    pub client_tools: Vec<ClientToolSchema>,
    /// The custom body of the request (or the last one a tab sent).
    pub body: Map<String, Value>,
}

/// How many recent messages a [`TurnContext`] carries.
pub const TURN_CONTEXT_MESSAGES: usize = 32;

/// What `before_turn` may change for one turn (`None`: the agent's setting).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnConfig {
    pub system: Option<String>,
    pub max_steps: Option<u32>,
    /// The model asked for this turn.
    pub model: Option<String>,
    /// The provider this turn's model calls go to, by name (`anthropic`,
    /// `openai`, `workers-ai`, or one registered by
    /// `AgentDefinition::model_providers`); `None`: the agent's default.
    pub provider: Option<String>,
    /// Metadata for the AI Gateway this turn's calls go through, over the
    /// agent's (see [`ModelSettings::gateway_metadata`]).
    pub gateway_metadata: Map<String, Value>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    /// Extra headers on this turn's model requests (an HTTP provider's).
    pub headers: Vec<(String, String)>,
    /// Offer only the tools with these names (server and client tools) this turn.
    pub tools: Option<Vec<String>>,
    /// Also offer these tools this turn: server tools marked `opt_in()`,
    /// which no turn offers unless it adds them.
    pub add_tools: Vec<String>,
    /// Offer none of these tools this turn.
    pub remove_tools: Vec<String>,
    /// Whether the model may, must or must not call a tool (`None`: it decides).
    pub tool_choice: Option<ToolChoice>,
    /// Nucleus sampling (`top_p`).
    pub top_p: Option<f64>,
    /// A seed for a reproducible sample, where the provider honours it.
    pub seed: Option<i64>,
    /// Stop sequences (`Some(vec![])` sends none even if the agent has some).
    pub stop: Option<Vec<String>>,
    /// The answer must be JSON following this schema.
    pub structured_output: Option<StructuredOutput>,
    /// Provider options for this turn, by their wire names, over the
    /// agent's (a key named here replaces the agent's value); see
    /// [`ModelSettings::provider_options`] for how they reach the request.
    pub provider_options: Map<String, Value>,
    /// More conditions that end the turn after a step (besides the agent's
    /// and the step limit): see [`StopWhen`].
    pub stop_when: Vec<StopWhen>,
}

/// A condition on the turn's steps: once a step that called tools ends and
/// any of the turn's conditions holds, no further model step follows and
/// the turn ends (its answer holds the tool calls and results so far).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopWhen {
    /// After this many model steps (a step limit below `max_steps`).
    StepCount(u32),
    /// After a step in which the model called the tool of this name.
    ToolCalled(String),
}

impl StopWhen {
    /// Whether the condition holds after step number `steps` (1-based)
    /// whose tool calls named `called`.
    pub fn holds(&self, steps: u32, called: &[String]) -> bool {
        match self {
            StopWhen::StepCount(n) => steps >= *n,
            StopWhen::ToolCalled(name) => called.iter().any(|c| c == name),
        }
    }
}

/// A turn's settings: the agent's, with what `before_turn` changed.
#[derive(Debug, Clone)]
pub struct TurnSettings {
    pub system: String,
    pub max_steps: u32,
    pub model: ModelSettings,
    pub headers: Vec<(String, String)>,
    pub tools: Option<Vec<String>>,
    pub add_tools: Vec<String>,
    pub remove_tools: Vec<String>,
    pub tool_choice: Option<ToolChoice>,
    /// The agent's conditions and the turn's (any one ends the turn).
    pub stop_when: Vec<StopWhen>,
    /// One step's narrower tool list (`before_step`), within the turn's.
    pub step_tools: Option<Vec<String>>,
}

impl TurnSettings {
    /// Applies what a `before_turn` hook chose.
    pub fn apply(&mut self, config: TurnConfig) {
        self.system = config.system.unwrap_or(std::mem::take(&mut self.system));
        self.max_steps = config.max_steps.unwrap_or(self.max_steps).max(1);
        if let Some(model) = config.model.filter(|m| !m.trim().is_empty()) {
            self.model.model = model;
        }
        if let Some(provider) = config.provider.filter(|p| !p.trim().is_empty()) {
            self.model.provider = Some(provider);
        }
        self.model.gateway_metadata.extend(config.gateway_metadata);
        self.model.temperature = config.temperature.or(self.model.temperature);
        self.model.max_tokens = config.max_tokens.or(self.model.max_tokens);
        self.headers.extend(config.headers);
        if config.tools.is_some() {
            self.tools = config.tools;
        }
        self.add_tools.extend(config.add_tools);
        self.remove_tools.extend(config.remove_tools);
        if config.tool_choice.is_some() {
            self.tool_choice = config.tool_choice;
        }
        self.model.top_p = config.top_p.or(self.model.top_p);
        self.model.seed = config.seed.or(self.model.seed);
        if let Some(stop) = config.stop {
            self.model.stop = stop;
        }
        if config.structured_output.is_some() {
            self.model.structured_output = config.structured_output;
        }
        self.model.provider_options.extend(config.provider_options);
        self.stop_when.extend(config.stop_when);
    }

    /// Whether the turn ends after step number `steps`, whose tool calls
    /// named `called`.
    pub fn stops_after(&self, steps: u32, called: &[String]) -> bool {
        self.stop_when.iter().any(|c| c.holds(steps, called))
    }

    /// Whether the turn offers the tool `name`; `opt_in` tools only when added.
    pub fn offers(&self, name: &str, opt_in: bool) -> bool {
        let added = self.add_tools.iter().any(|n| n == name);
        let listed = self
            .tools
            .as_ref()
            .is_none_or(|names| names.iter().any(|n| n == name));
        let in_step = self
            .step_tools
            .as_ref()
            .is_none_or(|names| names.iter().any(|n| n == name));
        (added || (listed && !opt_in)) && in_step && !self.remove_tools.iter().any(|n| n == name)
    }
}
