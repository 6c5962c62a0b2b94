//! An example agent built on `durable-chat` used as a library (no feature: no demo code): a
//! support agent with a typed tool (`lookup_order`), a tool that needs the user's approval
//! (`refund`), turn and tool hooks (a French prompt on request, an order as JSON on request,
//! refunds of `X-` orders blocked, orders on hold in the agent's storage looked up as held, each step and each ended turn logged with its token usage),
//! metadata on each answer (when it was started, the model, the tokens used, the agent's own
//! `source`), its Durable Object class `SupportAgentDO` and the worker's fetch entry. It is the README's "Writing your own agent", built and tested end to end.

#[cfg(target_arch = "wasm32")]
mod worker_entry;

use durable_chat::prelude::*;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

pub struct SupportAgent;

#[derive(Deserialize, JsonSchema)]
struct Lookup {
    /// The order number.
    order: String,
}

impl AgentDefinition for SupportAgent {
    fn system_prompt(&self) -> String {
        "You help customers with their orders.".into()
    }
    fn tools(&self) -> Vec<ServerTool> {
        vec![
            ServerTool::new(
                "lookup_order",
                "Find an order",
                |input: Lookup| async move {
                    Ok::<_, String>(
                        serde_json::json!({ "order": input.order, "status": "shipped" }),
                    )
                },
            ),
            ServerTool::new("refund", "Refund an order", |input: Lookup| async move {
                Ok::<_, String>(serde_json::json!({ "refunded": input.order }))
            })
            .needs_approval(ApprovalRule::Always),
        ]
    }

    // A tab may ask for French answers with a custom body: `{ "locale": "fr" }`, and for the
    // order as JSON of a fixed shape, sampled steadily: `{ "format": "order" }`.
    async fn before_turn(&self, ctx: TurnContext, _agent: AgentHandle) -> TurnConfig {
        let french = ctx.body.get("locale").and_then(|l| l.as_str()) == Some("fr");
        let config = TurnConfig {
            system: french.then(|| format!("{} Answer in French.", self.system_prompt())),
            ..Default::default()
        };
        if ctx.body.get("format").and_then(|f| f.as_str()) != Some("order") {
            return config;
        }
        let schema = serde_json::json!({
            "type": "object",
            "properties": { "order": { "type": "string" }, "status": { "type": "string" } },
            "required": ["order", "status"],
            "additionalProperties": false
        });
        let options = serde_json::json!({ "reasoning_effort": "low" });
        TurnConfig {
            structured_output: Some(StructuredOutput::new("order_status", schema)),
            top_p: Some(0.5),
            seed: Some(7),
            stop: Some(vec!["END".into()]),
            provider_options: options.as_object().cloned().unwrap_or_default(),
            ..config
        }
    }

    // Every answer says when it was started, which model wrote it and the tokens it used, and
    // that this server wrote it (`message.metadata` in the tabs and in the stored message).
    fn message_metadata(&self, moment: &MetadataMoment<'_>) -> Option<Map<String, Value>> {
        let mut fields = standard_message_metadata(moment)?;
        if let MetadataMoment::Start { .. } = moment {
            fields.insert("source".into(), "support-agent".into());
        }
        Some(fields)
    }

    // Each model step goes to the Worker's log with the tokens it used.
    #[cfg(target_arch = "wasm32")]
    async fn on_step_end(&self, step: StepReport, _agent: AgentHandle) {
        let line = serde_json::json!({
            "requestId": step.request_id,
            "step": step.step,
            "tools": step.tool_calls,
            "inputTokens": step.usage.map(|u| u.prompt_tokens),
            "outputTokens": step.usage.map(|u| u.completion_tokens),
        });
        worker::console_log!("step end {line}");
    }

    // Orders numbered `X-…` are refunded by a person: the model reads why, nobody is asked.
    async fn before_tool_call(&self, call: ToolCall, _agent: AgentHandle) -> ToolCallDecision {
        let order = call.input["order"].as_str().unwrap_or_default();
        if call.tool_name == "refund" && order.starts_with("X-") {
            return ToolCallDecision::Block(
                "Refunds of X- orders are made by our staff: ask the customer to call us.".into(),
            );
        }
        ToolCallDecision::Allow
    }

    // A looked-up order the staff put on hold (the agent's key-value entry `hold:<order>`, a
    // reason) reads as held: the stored result and what the model reads say so.
    async fn after_tool_call(
        &self,
        call: ToolCall,
        result: ToolOutcome,
        agent: AgentHandle,
    ) -> ToolOutcome {
        let order = call.input["order"].as_str().unwrap_or_default();
        if call.tool_name != "lookup_order" || result.is_err() {
            return result;
        }
        match agent.storage().get::<String>(&format!("hold:{order}")) {
            Ok(Some(reason)) => {
                Ok(serde_json::json!({ "order": order, "status": "on hold", "reason": reason }))
            }
            _ => result,
        }
    }

    // Each ended turn, once its answer is stored, goes to the Worker's log.
    #[cfg(target_arch = "wasm32")]
    async fn on_chat_response(&self, response: ChatResponse, _agent: AgentHandle) {
        let line = serde_json::json!({
            "requestId": response.request_id,
            "outcome": response.outcome,
            "answerId": response.answer_id,
            "messageIds": response.message_ids,
            "steps": response.steps,
            "outputTokens": response.usage.map(|u| u.completion_tokens),
        });
        worker::console_log!("chat response {line}");
    }
}

// The closure builds the definition from the worker's `Env` (keep a clone if tools need bindings).
// The agent's name is the class's in kebab case, as the client writes it: `support-agent-d-o`.
#[cfg(target_arch = "wasm32")]
chat_agent!(SupportAgentDO, |_env: &worker::Env| SupportAgent);
