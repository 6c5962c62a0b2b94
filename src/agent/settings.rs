//! An agent's settings: where the model lives (an OpenAI-compatible API,
//! a Workers AI binding or the scripted model), who may connect (`AUTH_TOKEN`) and how turns
//! run, with defaults read from the worker's vars and secrets (`Vars`).

use crate::core::{Concurrency, ContextPolicy, CoreSettings, Limits, LogLevel, RetryPolicy};
use crate::model::ai_gateway::AiGateway;
use crate::model::anthropic::AnthropicMessages;
use crate::model::openai::OpenAiCompatible;
use crate::model::providers::{Provider, ProviderSet};
use crate::model::scripted::ScriptedModel;
use crate::model::workers_ai::WorkersAi;
use crate::model::{ModelFailure, ModelSettings};
use crate::outbound::{OutboundHosts, OUTBOUND_ALLOW_HOSTS_VAR};

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

/// Where the model lives, who may connect, and how turns run
/// (`settings.turns`: `settings.turns.max_steps`,
/// `settings.turns.concurrency`, `settings.turns.model`, …).
#[derive(Clone)]
pub struct AgentSettings {
    /// Base URL of an OpenAI-compatible API, e.g. `https://api.openai.com/v1`.
    pub base_url: Option<String>,
    pub api_key: Option<String>,
    /// `ANTHROPIC_BASE_URL` (default `https://api.anthropic.com/v1` once
    /// `ANTHROPIC_API_KEY` is set): Anthropic's Messages API, the default
    /// provider with `MODEL_PROVIDER=anthropic` and a turn's pick
    /// (`anthropic`) otherwise.
    pub anthropic_base_url: Option<String>,
    pub anthropic_api_key: Option<String>,
    /// `MODEL_PROVIDER=anthropic`.
    pub anthropic_default: bool,
    /// `MODEL_PROVIDER=workers-ai`: the model runs on Workers AI through this
    /// binding (`AI_BINDING`, default `AI`) instead of an HTTP API.
    pub workers_ai_binding: Option<String>,
    /// `MODEL_PROVIDER=scripted`: replies come from the scripted model in
    /// this crate (read from the conversation; no key, no network), for
    /// development. It wins over every other model setting.
    pub scripted_model: bool,
    /// `AI_GATEWAY_ID` (with `AI_GATEWAY_SKIP_CACHE`, `AI_GATEWAY_CACHE_TTL`):
    /// Workers AI calls go through this AI Gateway.
    pub ai_gateway: Option<AiGateway>,
    /// `WORKERS_AI_IMAGES=1`: images in user messages reach a Workers AI
    /// model as `image_url` parts (a vision model); else as text notes.
    pub workers_ai_images: bool,
    /// `AUTH_TOKEN`: when set, requests must carry a matching `token` query parameter.
    pub auth_token: Option<String>,
    /// `ALLOW_ANONYMOUS=1` (or `true`): with a real model and no access
    /// check, anyone may still connect (see `default_authorize`).
    pub allow_anonymous: bool,
    /// `ALLOWED_ORIGINS` (comma-separated origins such as
    /// `https://app.example.com`, or `*`): the browser origins besides the
    /// worker's own that may connect (see `default_authorize`).
    pub allowed_origins: Vec<String>,
    /// `OUTBOUND_ALLOW_HOSTS` (comma-separated hosts, `host:port`,
    /// `*.suffix` or `*`): the hosts besides public names the agent may
    /// fetch on someone's behalf (MCP servers, OAuth endpoints, file links);
    /// an author adds more in code with `outbound_hosts.allow(…)`.
    pub outbound_hosts: OutboundHosts,
    /// `MCP_SIGN_IN_SAME_BROWSER=1` (or `true`): an MCP server's sign-in
    /// may be completed (or refused) only by the browser that opened its
    /// link. Tabs are shown a link to the agent's callback path, which
    /// hands that browser a one-time cookie and sends it on to the
    /// authorization server; a callback without the cookie is refused and
    /// the sign-in stays pending. Off by default: any browser holding the
    /// authorization server's redirect completes it.
    pub mcp_sign_in_same_browser: bool,
    /// How turns run: the model, step limit, concurrency, limits, model
    /// retries (`MODEL_MAX_RETRIES`: retries of a call that failed
    /// transiently before streaming anything, default 2, 0 turns them off),
    /// context policy, tool deadline, log level and recovery budget.
    pub turns: CoreSettings,
}

/// Shows whether the key and the token are set, never their values.
impl std::fmt::Debug for AgentSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let set = |v: &Option<String>| if v.is_some() { "<set>" } else { "<unset>" };
        f.debug_struct("AgentSettings")
            .field("base_url", &self.base_url)
            .field("api_key", &set(&self.api_key))
            .field("auth_token", &set(&self.auth_token))
            .field("allow_anonymous", &self.allow_anonymous)
            .field("allowed_origins", &self.allowed_origins)
            .field("outbound_hosts", &self.outbound_hosts)
            .field("turns", &self.turns)
            .finish()
    }
}

impl AgentSettings {
    /// `OPENAI_BASE_URL`, `OPENAI_API_KEY`, `MODEL`, `MESSAGE_CONCURRENCY`,
    /// `AUTH_TOKEN`, `ALLOW_ANONYMOUS`, `MODEL_STALL_TIMEOUT_MS`, `MODEL_MAX_RETRIES`, `LOG_LEVEL`.
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
            anthropic_api_key: vars.get("ANTHROPIC_API_KEY"),
            anthropic_base_url: vars.get("ANTHROPIC_BASE_URL").or_else(|| {
                vars.get("ANTHROPIC_API_KEY")
                    .map(|_| crate::model::anthropic::DEFAULT_BASE_URL.to_string())
            }),
            anthropic_default: vars
                .get("MODEL_PROVIDER")
                .is_some_and(|p| p.trim().eq_ignore_ascii_case("anthropic")),
            scripted_model: vars
                .get("MODEL_PROVIDER")
                .is_some_and(|p| p.trim().eq_ignore_ascii_case("scripted")),
            workers_ai_binding: vars
                .get("MODEL_PROVIDER")
                .filter(|p| p.trim().eq_ignore_ascii_case("workers-ai"))
                .map(|_| vars.get("AI_BINDING").unwrap_or_else(|| "AI".to_string())),
            ai_gateway: vars
                .get("AI_GATEWAY_ID")
                .filter(|id| !id.trim().is_empty())
                .map(|id| AiGateway {
                    skip_cache: matches!(
                        vars.get("AI_GATEWAY_SKIP_CACHE").as_deref().map(str::trim),
                        Some("1" | "true")
                    ),
                    cache_ttl: vars
                        .get("AI_GATEWAY_CACHE_TTL")
                        .and_then(|t| t.trim().parse().ok()),
                    ..AiGateway::new(id.trim())
                }),
            workers_ai_images: matches!(
                vars.get("WORKERS_AI_IMAGES").as_deref().map(str::trim),
                Some("1" | "true")
            ),
            auth_token: vars.get("AUTH_TOKEN"),
            allow_anonymous: matches!(
                vars.get("ALLOW_ANONYMOUS")
                    .map(|v| v.trim().to_ascii_lowercase())
                    .as_deref(),
                Some("1" | "true")
            ),
            allowed_origins: vars
                .get("ALLOWED_ORIGINS")
                .map(|v| {
                    v.split(',')
                        .map(|o| o.trim().trim_end_matches('/').to_string())
                        .filter(|o| !o.is_empty())
                        .collect()
                })
                .unwrap_or_default(),
            mcp_sign_in_same_browser: matches!(
                vars.get("MCP_SIGN_IN_SAME_BROWSER")
                    .map(|v| v.trim().to_ascii_lowercase())
                    .as_deref(),
                Some("1" | "true")
            ),
            outbound_hosts: OutboundHosts::from_list(
                &vars.get(OUTBOUND_ALLOW_HOSTS_VAR).unwrap_or_default(),
            ),
            turns: CoreSettings {
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
                    max_requests_per_minute: vars.parsed_or(
                        "RATE_LIMIT_PER_CONNECTION",
                        defaults.limits.max_requests_per_minute,
                    ),
                    max_agent_requests_per_minute: vars.parsed_or(
                        "RATE_LIMIT_PER_AGENT",
                        defaults.limits.max_agent_requests_per_minute,
                    ),
                    max_agent_tokens_per_hour: vars.parsed_or(
                        "TOKEN_LIMIT_PER_HOUR",
                        defaults.limits.max_agent_tokens_per_hour,
                    ),
                    max_agent_tokens_per_day: vars.parsed_or(
                        "TOKEN_LIMIT_PER_DAY",
                        defaults.limits.max_agent_tokens_per_day,
                    ),
                    max_caller_tokens_per_day: vars.parsed_or(
                        "TOKEN_LIMIT_PER_CALLER_PER_DAY",
                        defaults.limits.max_caller_tokens_per_day,
                    ),
                    max_connection_tokens: vars.parsed_or(
                        "TOKEN_LIMIT_PER_CONNECTION",
                        defaults.limits.max_connection_tokens,
                    ),
                    max_turn_tokens: vars
                        .parsed_or("TOKEN_LIMIT_PER_TURN", defaults.limits.max_turn_tokens),
                    max_connections: vars
                        .parsed_or("MAX_CONNECTIONS", defaults.limits.max_connections),
                    max_stored_messages: vars
                        .parsed_or("HISTORY_MAX_MESSAGES", defaults.limits.max_stored_messages),
                    max_child_calls_per_turn: vars.parsed_or(
                        "MAX_CHILD_CALLS_PER_TURN",
                        defaults.limits.max_child_calls_per_turn,
                    ),
                    max_child_calls_per_agent: vars.parsed_or(
                        "MAX_CHILD_CALLS_PER_AGENT",
                        defaults.limits.max_child_calls_per_agent,
                    ),
                    max_delegation_depth: vars
                        .parsed_or("MAX_DELEGATION_DEPTH", defaults.limits.max_delegation_depth),
                    max_message_values: vars
                        .parsed_or("MAX_MESSAGE_VALUES", defaults.limits.max_message_values),
                    max_message_depth: vars
                        .parsed_or("MAX_MESSAGE_DEPTH", defaults.limits.max_message_depth),
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
                schedule_time_zone: vars
                    .get("SCHEDULE_TIME_ZONE")
                    .map(|z| z.trim().to_string())
                    .filter(|z| !z.is_empty()),
                ..defaults
            },
        }
    }

    /// The model provider these settings choose, or the failure every model
    /// call meets when none is configured.
    pub fn model_provider(&self) -> Result<Provider, ModelFailure> {
        if self.scripted_model {
            return Ok(Provider::Scripted(ScriptedModel::new()));
        }
        if let Some(binding) = &self.workers_ai_binding {
            return Ok(Provider::WorkersAi(self.workers_ai(binding)));
        }
        if self.anthropic_default {
            return self.anthropic().ok_or_else(|| {
                ModelFailure::permanent(
                    "MODEL_PROVIDER=anthropic, but no key is set: set ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL).",
                )
            });
        }
        match self.openai() {
            Some(provider) => Ok(provider),
            None => Err(ModelFailure::permanent(
                "No model is configured: set OPENAI_BASE_URL (and OPENAI_API_KEY).",
            )),
        }
    }

    /// The default provider and each configured built-in one by the name a
    /// turn picks it with: `openai` (with `OPENAI_BASE_URL`), `anthropic`
    /// (with `ANTHROPIC_API_KEY` or `ANTHROPIC_BASE_URL`), `workers-ai`
    /// (the `AI_BINDING` binding, default `AI`) and, in scripted mode,
    /// `scripted`.
    pub fn providers(&self) -> ProviderSet {
        let mut set = ProviderSet::new(self.model_provider());
        if let Some(openai) = self.openai() {
            set = set.with("openai", openai);
        }
        if let Some(anthropic) = self.anthropic() {
            set = set.with("anthropic", anthropic);
        }
        let binding = self.workers_ai_binding.as_deref().unwrap_or("AI");
        set = set.with("workers-ai", Provider::WorkersAi(self.workers_ai(binding)));
        if self.scripted_model {
            set = set.with("scripted", Provider::Scripted(ScriptedModel::new()));
        }
        set
    }

    fn openai(&self) -> Option<Provider> {
        let base_url = self.base_url.as_ref()?;
        Some(Provider::OpenAiCompatible(OpenAiCompatible::new(
            base_url,
            self.api_key.clone(),
        )))
    }

    fn anthropic(&self) -> Option<Provider> {
        let base_url = self.anthropic_base_url.as_ref()?;
        Some(Provider::Anthropic(AnthropicMessages::new(
            base_url,
            self.anthropic_api_key.clone(),
        )))
    }

    fn workers_ai(&self, binding: &str) -> WorkersAi {
        WorkersAi::new(binding, "call")
            .with_gateway(self.ai_gateway.clone())
            .with_images(self.workers_ai_images)
    }
}

/// A var or secret of the worker's environment (a secret wins when both are set).
#[cfg(target_arch = "wasm32")]
pub(crate) fn env_value(env: &worker::Env, name: &str) -> Option<String> {
    env.secret(name)
        .map(|s| s.to_string())
        .or_else(|_| env.var(name).map(|v| v.to_string()))
        .ok()
}

fn log_warning(text: &str) {
    crate::log::write(crate::log::LogLevel::Warn, text);
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn settings_read_vars_and_fall_back_to_queue() {
        let lookup = |name: &str| match name {
            "OPENAI_BASE_URL" => Some("http://127.0.0.1:9/v1".to_string()),
            "MESSAGE_CONCURRENCY" => Some("debounce:300".to_string()),
            "MODEL" => Some("".to_string()),
            _ => None,
        };
        let settings = AgentSettings::from_vars(&Vars(&lookup));
        assert_eq!(settings.base_url.as_deref(), Some("http://127.0.0.1:9/v1"));
        assert_eq!(
            settings.turns.concurrency,
            Concurrency::Debounce { ms: 300 }
        );
        assert_eq!(settings.turns.model.model, "gpt-4o-mini");
        assert!(settings.api_key.is_none());
        assert_eq!(settings.turns.model_retry.max_retries, 2);
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
        assert_eq!(settings.turns.model.model, "@cf/meta/llama-3.1-8b-instruct");
    }

    #[test]
    fn model_provider_anthropic_chooses_the_messages_api_and_a_turn_may_pick_it_by_name() {
        let lookup = |name: &str| match name {
            "MODEL_PROVIDER" => Some("anthropic".to_string()),
            "ANTHROPIC_API_KEY" => Some("sk-ant".to_string()),
            "OPENAI_BASE_URL" => Some("http://127.0.0.1:9/v1".to_string()),
            _ => None,
        };
        let settings = AgentSettings::from_vars(&Vars(&lookup));
        assert_eq!(
            settings.model_provider(),
            Ok(Provider::Anthropic(AnthropicMessages::new(
                crate::model::anthropic::DEFAULT_BASE_URL,
                Some("sk-ant".into())
            )))
        );
        let set = settings.providers();
        assert_eq!(set.names(), vec!["openai", "anthropic", "workers-ai"]);
        let unset = |_: &str| None;
        let without = AgentSettings::from_vars(&Vars(&|name: &str| {
            (name == "MODEL_PROVIDER")
                .then(|| "anthropic".to_string())
                .or_else(|| unset(name))
        }));
        assert!(without
            .model_provider()
            .is_err_and(|f| f.text.contains("ANTHROPIC_API_KEY")));
    }

    #[test]
    fn model_provider_scripted_chooses_the_scripted_model_over_any_other() {
        let lookup = |name: &str| match name {
            "MODEL_PROVIDER" => Some(" Scripted ".to_string()),
            "OPENAI_BASE_URL" => Some("https://api.openai.com/v1".to_string()),
            _ => None,
        };
        let settings = AgentSettings::from_vars(&Vars(&lookup));
        assert_eq!(
            settings.model_provider(),
            Ok(Provider::Scripted(ScriptedModel::new()))
        );
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
            AgentSettings::from_vars(&Vars(&lookup)).turns.log_level
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
            "MAX_CHILD_CALLS_PER_TURN" => Some("0".to_string()),
            _ => None,
        };
        let settings = AgentSettings::from_vars(&Vars(&lookup));
        assert_eq!(settings.turns.model_retry.max_retries, 0);
        assert_eq!(settings.turns.limits.max_child_calls_per_turn, 0);
        assert_eq!(settings.turns.limits.max_child_calls_per_agent, 16);
        assert_eq!(
            settings.turns.limits.model_stall_timeout_ms,
            Limits::default().model_stall_timeout_ms
        );
    }
}
