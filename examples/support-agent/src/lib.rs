//! An example agent built on `durable-chat` used as a library (`default-features = false`): a
//! support agent with a typed tool (`lookup_order`), a tool that needs the user's approval
//! (`refund`), its Durable Object class `SupportAgentDO` and the worker's fetch entry. It is the
//! README's "Writing your own agent", built and tested end to end.

#[cfg(target_arch = "wasm32")]
mod worker_entry;

use durable_chat::agent::{AgentDefinition, ServerTool};
use durable_chat::core::ApprovalRule;
use schemars::JsonSchema;
use serde::Deserialize;

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
}

// The closure builds the definition from the worker's `Env` (keep a clone if tools need bindings).
#[cfg(target_arch = "wasm32")]
durable_chat::chat_agent!(
    SupportAgentDO,
    |_env: &worker::Env| SupportAgent,
    "support-agent-do"
);
