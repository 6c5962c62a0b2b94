//! How an agent is configured: its identity, system prompt, tools and hooks
//! (`CoreConfig`) and how its turns behave (`CoreSettings`: message
//! concurrency, step limit, chunk-log batching, recovery, retries, limits).

use std::fmt;

use crate::model::ModelSettings;
use crate::protocol::ClientToolSchema;

use crate::core::vocab::tool_spec::ToolSpec;

/// What happens to a submit that arrives while another turn is running or queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Concurrency {
    /// Every submit runs, in arrival order.
    #[default]
    Queue,
    /// Every message is kept; only the newest overlapping submit runs.
    Latest,
    /// Every message is kept as written; the newest overlapping submit runs
    /// once and the model sees all of them (one turn for the burst).
    Merge,
    /// The overlapping submit is refused and not stored.
    Drop,
    /// Like `Latest`, after a quiet window of `ms` since the last submit.
    Debounce { ms: u64 },
}

pub const DEFAULT_DEBOUNCE_MS: u64 = 750;

impl Concurrency {
    /// `queue`, `latest`, `merge`, `drop`, `debounce` or `debounce:<ms>`.
    pub fn parse(text: &str) -> Option<Concurrency> {
        let text = text.trim().to_ascii_lowercase();
        Some(match text.as_str() {
            "" | "queue" => Concurrency::Queue,
            "latest" => Concurrency::Latest,
            "merge" => Concurrency::Merge,
            "drop" => Concurrency::Drop,
            "debounce" => Concurrency::Debounce {
                ms: DEFAULT_DEBOUNCE_MS,
            },
            other => {
                let ms = other
                    .strip_prefix("debounce:")?
                    .trim()
                    .parse::<u64>()
                    .ok()?;
                Concurrency::Debounce { ms }
            }
        })
    }

    pub fn supersedes(self) -> bool {
        matches!(
            self,
            Concurrency::Latest | Concurrency::Merge | Concurrency::Debounce { .. }
        )
    }
}

/// When buffered chunks are written to the durable chunk log. Settled tool
/// results, tool calls and the first delta of a stream are written at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlushPolicy {
    pub max_chunks: usize,
    pub max_delay_ms: u64,
}

impl Default for FlushPolicy {
    fn default() -> Self {
        FlushPolicy {
            max_chunks: 64,
            max_delay_ms: 500,
        }
    }
}

/// Bounds on recovering turns cut by evictions. Turns waiting for a person
/// are parked instead and never use this budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecoveryConfig {
    pub max_attempts: u32,
    /// Attempts whose isolate died again; never reset by progress.
    pub max_interrupted_attempts: u32,
    /// Give up when no attempt made durable progress for this long.
    pub no_progress_timeout_ms: u64,
    /// While a turn runs, a durable alarm is kept this far ahead so an
    /// evicted turn is woken and recovered without any client.
    pub heartbeat_ms: u64,
}

impl Default for RecoveryConfig {
    fn default() -> Self {
        RecoveryConfig {
            max_attempts: 10,
            max_interrupted_attempts: 5,
            no_progress_timeout_ms: 300_000,
            heartbeat_ms: 10_000,
        }
    }
}

/// How a model call that failed before producing anything is tried again.
/// Only transient failures (rate limits, overload, network) are retried, and
/// only while the step has streamed nothing, so no text is ever repeated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Further attempts after the first (0: never retry).
    pub max_retries: u32,
    /// Wait before the first retry; each later one waits twice as long.
    pub initial_delay_ms: u64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 2,
            initial_delay_ms: 1_000,
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `attempt` (1-based), or `None` when the
    /// budget is spent or the provider asked for more than we are willing to wait.
    pub fn delay(&self, attempt: u32, retry_after_ms: Option<u64>) -> Option<u64> {
        if attempt == 0 || attempt > self.max_retries {
            return None;
        }
        let backoff = self
            .initial_delay_ms
            .saturating_mul(1u64 << (attempt - 1).min(16));
        match retry_after_ms {
            Some(ms) if ms > crate::model::MAX_RETRY_AFTER_MS => None,
            Some(ms) => Some(ms.max(backoff)),
            None => Some(backoff),
        }
    }
}

/// How an agent's turns behave: the model, the step limit, message
/// concurrency, chunk-log batching, continuation coalescing, recovery, limits
/// and model retries. The agent.s settings hold these as one named field, so
/// a setting added here reaches the core with no copying.
#[derive(Debug, Clone)]
pub struct CoreSettings {
    pub model: ModelSettings,
    pub max_steps: u32,
    pub concurrency: Concurrency,
    pub flush: FlushPolicy,
    /// Quiet time that coalesces tool results into one continuation.
    pub continuation_coalesce_ms: u64,
    pub recovery: RecoveryConfig,
    pub limits: crate::core::vocab::limits::Limits,
    pub model_retry: RetryPolicy,
    /// How much of a long conversation each model request carries.
    pub context: crate::core::vocab::context_policy::ContextPolicy,
    /// Deadline of a server tool run (or of a parent's client tool run), in
    /// ms; a tool's own `ToolSpec::timeout_ms` wins. 0: no deadline.
    pub tool_timeout_ms: u64,
    /// Which log events the core keeps for the host (`LOG_LEVEL`, see `log.rs`).
    pub log_level: crate::core::vocab::log_level::LogLevel,
    /// Conditions that end every turn after a step (a turn's `before_turn`
    /// may add more); none by default.
    pub stop_when: Vec<crate::core::vocab::turn_config::StopWhen>,
    /// The time zone a schedule's cron expression is read in when it names
    /// none (`SCHEDULE_TIME_ZONE`, an IANA name); `None`: UTC.
    pub schedule_time_zone: Option<String>,
}

/// Default deadline of one tool run: five minutes.
pub const DEFAULT_TOOL_TIMEOUT_MS: u64 = 300_000;

impl Default for CoreSettings {
    fn default() -> Self {
        CoreSettings {
            model: ModelSettings::default(),
            max_steps: 10,
            concurrency: Concurrency::Queue,
            flush: FlushPolicy::default(),
            continuation_coalesce_ms: 50,
            recovery: RecoveryConfig::default(),
            limits: crate::core::vocab::limits::Limits::default(),
            model_retry: RetryPolicy::default(),
            context: Default::default(),
            tool_timeout_ms: DEFAULT_TOOL_TIMEOUT_MS,
            log_level: Default::default(),
            stop_when: Vec::new(),
            schedule_time_zone: None,
        }
    }
}

/// One agent instance's configuration: who it is, what its definition says
/// (system prompt, tools, per-turn hook) and its [`CoreSettings`], which the
/// config holds by name (`config.settings.max_steps`).
#[derive(Clone)]
pub struct CoreConfig {
    /// The instance name (the `<name>` of the URL).
    pub name: String,
    /// kebab-case agent class name, sent in the identity frame.
    pub agent: String,
    pub system_prompt: String,
    pub tools: Vec<ToolSpec>,
    /// What the context policy leaves out is summarized by the host
    /// (`Effect::Summarize`, answered with `Event::Summarized`) before the
    /// step's model call (`compaction.rs`); else it is left out with a note.
    pub summarize_by_host: bool,
    /// The author's hooks on failed turns and on tool calls (see `hooks.rs`).
    pub hooks: crate::core::vocab::hooks::Hooks,
    pub settings: CoreSettings,
    /// The synced state and the callable methods (`agent_api.rs`).
    pub agent_api: crate::core::vocab::agent_api::AgentApi,
    /// The context blocks the agent keeps and shows the model (`context_block.rs`).
    pub context_blocks: Vec<crate::core::vocab::context_block::ContextBlock>,
}

impl CoreConfig {
    pub fn new(name: &str, agent: &str) -> Self {
        CoreConfig {
            name: name.to_string(),
            agent: agent.to_string(),
            system_prompt: String::new(),
            tools: Vec::new(),
            summarize_by_host: false,
            hooks: Default::default(),
            settings: CoreSettings::default(),
            agent_api: Default::default(),
            context_blocks: Vec::new(),
        }
    }

    pub fn tool(&self, name: &str) -> Option<&ToolSpec> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// Whether a call to `name` goes to a client, given the turn's client
    /// tools: the name is one of them and no server tool that cannot be
    /// replaced has it.
    pub fn routes_to_client(&self, name: &str, client_tools: &[ClientToolSchema]) -> bool {
        client_tools.iter().any(|t| t.name == name)
            && self.tool(name).is_none_or(ToolSpec::is_overridable)
    }

    /// The deadline of one run of `name`, if any.
    pub fn tool_timeout(&self, name: &str) -> Option<u64> {
        let ms = self
            .tool(name)
            .and_then(|t| t.timeout_ms)
            .unwrap_or(self.settings.tool_timeout_ms);
        (ms > 0).then_some(ms)
    }
}

impl fmt::Debug for CoreConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CoreConfig")
            .field("name", &self.name)
            .field("agent", &self.agent)
            .field("tools", &self.tools)
            .field("max_steps", &self.settings.max_steps)
            .field("concurrency", &self.settings.concurrency)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_back_off_and_respect_the_provider_hint_within_reason() {
        let policy = RetryPolicy::default();
        assert_eq!(policy.delay(1, None), Some(1_000));
        assert_eq!(policy.delay(2, None), Some(2_000));
        assert_eq!(policy.delay(3, None), None, "budget of two retries");
        assert_eq!(policy.delay(1, Some(5_000)), Some(5_000));
        assert_eq!(
            policy.delay(2, Some(10)),
            Some(2_000),
            "never faster than the backoff"
        );
        assert_eq!(
            policy.delay(1, Some(120_000)),
            None,
            "too long a wait fails now"
        );
        let never = RetryPolicy {
            max_retries: 0,
            ..policy
        };
        assert_eq!(never.delay(1, None), None);
    }

    #[test]
    fn concurrency_setting_parses_every_documented_spelling() {
        assert_eq!(Concurrency::parse("queue"), Some(Concurrency::Queue));
        assert_eq!(Concurrency::parse("LATEST"), Some(Concurrency::Latest));
        assert_eq!(Concurrency::parse("merge"), Some(Concurrency::Merge));
        assert_eq!(Concurrency::parse("drop"), Some(Concurrency::Drop));
        assert_eq!(
            Concurrency::parse("debounce"),
            Some(Concurrency::Debounce {
                ms: DEFAULT_DEBOUNCE_MS
            })
        );
        assert_eq!(
            Concurrency::parse("debounce:200"),
            Some(Concurrency::Debounce { ms: 200 })
        );
        assert_eq!(Concurrency::parse("debounce:-5"), None);
        assert_eq!(Concurrency::parse("sometimes"), None);
    }
}
