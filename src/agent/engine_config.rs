//! How a definition becomes what the engine runs: the core's configuration
//! (system prompt, tool specs, settings, the inline hooks) and the awaited
//! hooks the host calls (`before_turn`, `before_tool_call`,
//! `after_tool_call`, `on_chat_error`, `on_chat_response`, `on_step_end`).

use std::rc::Rc;

use futures::future::LocalBoxFuture;

use crate::core::{
    ChatError, ChatResponse, CoreConfig, ErrorDisposition, Hooks, MetadataMoment, StepContext,
    StepReport, SummaryRequest, ToolCall, ToolCallDecision, ToolOutcome, TurnConfig, TurnContext,
};

use crate::agent::definition::AgentDefinition;
use crate::agent::settings::AgentSettings;
use crate::agent::tools::ServerTool;
use crate::agent::AgentHandle;

/// An awaited hook: its argument and the agent's handle in, a future out.
type Awaited<A, R> = Rc<dyn Fn(A, AgentHandle) -> LocalBoxFuture<'static, R>>;

/// The awaited hooks of a definition, type-erased for the host.
/// (Natively only the tests build it, and they read `before_turn` only.)
#[derive(Clone)]
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub struct AsyncHooks {
    pub before_turn: Awaited<TurnContext, TurnConfig>,
    pub on_chat_response: Awaited<ChatResponse, ()>,
    pub on_step_end: Awaited<StepReport, ()>,
    pub before_tool_call: Awaited<ToolCall, ToolCallDecision>,
    pub after_tool_call: Awaited<(ToolCall, ToolOutcome), ToolOutcome>,
    pub on_chat_error: Awaited<ChatError, ErrorDisposition>,
    pub summarize: Awaited<SummaryRequest, Option<String>>,
}

impl AsyncHooks {
    pub fn of<D: AgentDefinition>(definition: &Rc<D>) -> AsyncHooks {
        let (prepare, respond, step) = (definition.clone(), definition.clone(), definition.clone());
        let (decide, summarize) = (definition.clone(), definition.clone());
        let (rewrite, errors) = (definition.clone(), definition.clone());
        AsyncHooks {
            before_turn: Rc::new(move |ctx, agent| {
                let definition = prepare.clone();
                Box::pin(async move { definition.before_turn(ctx, agent).await })
            }),
            on_chat_response: Rc::new(move |response, agent| {
                let definition = respond.clone();
                Box::pin(async move { definition.on_chat_response(response, agent).await })
            }),
            on_step_end: Rc::new(move |report, agent| {
                let definition = step.clone();
                Box::pin(async move { definition.on_step_end(report, agent).await })
            }),
            before_tool_call: Rc::new(move |call, agent| {
                let definition = decide.clone();
                Box::pin(async move { definition.before_tool_call(call, agent).await })
            }),
            after_tool_call: Rc::new(move |(call, result), agent| {
                let definition = rewrite.clone();
                Box::pin(async move { definition.after_tool_call(call, result, agent).await })
            }),
            on_chat_error: Rc::new(move |error, agent| {
                let definition = errors.clone();
                Box::pin(async move { definition.on_chat_error(error, agent).await })
            }),
            summarize: Rc::new(move |request, agent| {
                let definition = summarize.clone();
                Box::pin(async move { definition.summarize(request, agent).await })
            }),
        }
    }
}

/// Builds the core's configuration for one agent instance: each turn is
/// prepared by the host and each tool call decided and its result looked at
/// there, and each failed turn's disposition (`before_turn`,
/// `before_tool_call`, `after_tool_call` and `on_chat_error` are awaited
/// there); the inline hooks go to the core.
pub fn core_config<D: AgentDefinition>(
    definition: &Rc<D>,
    settings: &AgentSettings,
    tools: &[ServerTool],
    name: &str,
    agent: &str,
) -> CoreConfig {
    let mut config = CoreConfig::new(name, agent);
    config.system_prompt = definition.system_prompt();
    config.context_blocks = definition.context_blocks();
    config.tools = tools.iter().map(|t| t.spec.clone()).collect();
    config.settings = settings.turns.clone();
    let (metadata, step) = (definition.clone(), definition.clone());
    config.hooks = Hooks {
        before_step: Some(Rc::new(move |ctx: &StepContext| step.before_step(ctx))),
        message_metadata: Some(Rc::new(move |moment: &MetadataMoment<'_>| {
            metadata.message_metadata(moment)
        })),
    };
    config.summarize_by_host = definition.summarizes();
    config
}

#[cfg(test)]
mod tests {
    use super::super::settings::Vars;
    use super::*;
    use crate::core::{Concurrency, TurnTrigger};
    use serde_json::Value;

    /// A handle on an agent running in the test kit.
    fn handle() -> AgentHandle {
        crate::test_kit::TestAgent::new(Tuned).handle()
    }

    struct Tuned;

    impl AgentDefinition for Tuned {
        fn settings(&self, vars: &Vars) -> AgentSettings {
            let mut settings = AgentSettings::from_vars(vars);
            settings.turns.concurrency = Concurrency::Latest;
            settings.turns.max_steps = 5;
            settings.turns.recovery.max_attempts = 3;
            settings.turns.model_retry.max_retries = 1;
            settings.turns.continuation_coalesce_ms = 20;
            settings
        }
    }

    #[test]
    fn settings_changed_in_code_reach_the_core_config() {
        let definition = Rc::new(Tuned);
        let settings = definition.settings(&Vars(&|_: &str| None));
        let config = core_config(&definition, &settings, &[], "room", "tuned");
        assert_eq!(config.settings.concurrency, Concurrency::Latest);
        assert_eq!(config.settings.max_steps, 5);
        assert_eq!(config.settings.recovery.max_attempts, 3);
        assert_eq!(config.settings.model_retry.max_retries, 1);
        assert_eq!(config.settings.continuation_coalesce_ms, 20);
        assert_eq!(config.system_prompt, "You are a helpful assistant.");
    }

    struct Hooked;

    impl AgentDefinition for Hooked {
        async fn before_turn(&self, ctx: TurnContext, _agent: AgentHandle) -> TurnConfig {
            TurnConfig {
                model: Some(format!("for-{}", ctx.request_id)),
                ..TurnConfig::default()
            }
        }

        async fn before_tool_call(&self, call: ToolCall, _agent: AgentHandle) -> ToolCallDecision {
            ToolCallDecision::Block(format!("no {}", call.tool_name))
        }

        async fn after_tool_call(
            &self,
            call: ToolCall,
            result: ToolOutcome,
            _agent: AgentHandle,
        ) -> ToolOutcome {
            result.map(|_| Value::String(format!("seen {}", call.tool_name)))
        }
    }

    #[test]
    fn the_definitions_hooks_reach_the_core_and_the_host() {
        let definition = Rc::new(Hooked);
        let settings = definition.settings(&Vars(&|_: &str| None));
        let config = core_config(&definition, &settings, &[], "room", "hooked");
        assert_eq!(config.name, "room");
        let hooks = AsyncHooks::of(&definition);
        let call = ToolCall {
            request_id: "r1".into(),
            tool_call_id: "c1".into(),
            tool_name: "refund".into(),
            input: Value::Null,
            client: true,
        };
        let rewritten = futures::executor::block_on((hooks.after_tool_call)(
            (call.clone(), Ok(Value::Null)),
            handle(),
        ));
        assert_eq!(rewritten, Ok(Value::String("seen refund".into())));
        let decided = futures::executor::block_on((hooks.before_tool_call)(call, handle()));
        assert_eq!(decided, ToolCallDecision::Block("no refund".into()));
        let context = TurnContext {
            request_id: "r9".into(),
            trigger: TurnTrigger::Submit,
            continuation: false,
            from_parent: false,
            messages: Vec::new(),
            client_tools: Vec::new(),
            body: Default::default(),
        };
        let chosen = futures::executor::block_on((hooks.before_turn)(context, handle()));
        assert_eq!(chosen.model.as_deref(), Some("for-r9"));
    }

    struct Summarizing;

    #[allow(deprecated)]
    impl AgentDefinition for Summarizing {
        fn compaction(&self) -> Option<crate::agent::definition::Compact> {
            Some(Rc::new(|_: &crate::core::CompactionInput<'_>| None))
        }

        fn summarizes(&self) -> bool {
            true
        }

        async fn summarize(&self, request: SummaryRequest, _agent: AgentHandle) -> Option<String> {
            Some(format!("{} messages", request.dropped.len()))
        }
    }

    /// An agent of an earlier release, with only the synchronous hook.
    struct InlineHookOnly;

    #[allow(deprecated)]
    impl AgentDefinition for InlineHookOnly {
        fn compaction(&self) -> Option<crate::agent::definition::Compact> {
            Some(Rc::new(|input: &crate::core::CompactionInput<'_>| {
                Some(format!("{} left out", input.dropped.len()))
            }))
        }
    }

    fn one_message_left_out() -> SummaryRequest {
        SummaryRequest {
            previous: None,
            dropped: vec![crate::protocol::UIMessage::user_text("u1", "hi")],
        }
    }

    #[test]
    fn an_agent_that_summarizes_has_the_host_summarize_instead_of_the_inline_hook() {
        let definition = Rc::new(Summarizing);
        let settings = definition.settings(&Vars(&|_: &str| None));
        let config = core_config(&definition, &settings, &[], "room", "summarizing");
        assert!(config.summarize_by_host);
        let hooks = AsyncHooks::of(&definition);
        let written =
            futures::executor::block_on((hooks.summarize)(one_message_left_out(), handle()));
        assert_eq!(
            written.as_deref(),
            Some("1 messages"),
            "the inline hook is not used as well"
        );
        let plain = core_config(&Rc::new(Tuned), &settings, &[], "room", "tuned");
        assert!(!plain.summarize_by_host, "off unless the agent asks");
    }

    #[test]
    fn a_deprecated_inline_hook_is_run_by_the_host_summarizer() {
        let definition = Rc::new(InlineHookOnly);
        let settings = definition.settings(&Vars(&|_: &str| None));
        let config = core_config(&definition, &settings, &[], "room", "inline");
        assert!(
            config.summarize_by_host,
            "the one path: the host summarizes"
        );
        let hooks = AsyncHooks::of(&definition);
        let written =
            futures::executor::block_on((hooks.summarize)(one_message_left_out(), handle()));
        assert_eq!(written.as_deref(), Some("1 left out"));
    }
}
