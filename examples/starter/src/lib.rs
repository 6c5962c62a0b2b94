//! A starter agent: a prompt, one typed tool, the Durable Object class `StarterAgent` (reached
//! by the client as `/agents/starter-agent/<name>`) and the worker's fetch entry. Copy this
//! folder and change the agent.

use durable_chat::prelude::*;
use schemars::JsonSchema;
use serde::Deserialize;

pub struct Starter;

#[derive(Deserialize, JsonSchema)]
pub struct Greet {
    /// Who to greet.
    pub name: String,
}

impl AgentDefinition for Starter {
    fn system_prompt(&self) -> String {
        "You are a friendly assistant. Use the greet tool to greet people.".into()
    }

    fn tools(&self) -> Vec<ServerTool> {
        vec![ServerTool::new(
            "greet",
            "Greets someone by name",
            |input: Greet| async move {
                match input.name.trim() {
                    "" => Err("a name is needed"),
                    name => Ok(serde_json::json!({ "greeting": format!("Hello, {name}!") })),
                }
            },
        )]
    }
}

// The Durable Object class; the closure builds the agent from the worker's `Env`.
#[cfg(target_arch = "wasm32")]
chat_agent!(StarterAgent, |_env: &worker::Env| Starter);

// The worker's fetch entry: agent requests go to their Durable Object, anything else is 404.
#[cfg(target_arch = "wasm32")]
#[worker::event(fetch)]
async fn fetch(
    req: worker::Request,
    env: worker::Env,
    _ctx: worker::Context,
) -> worker::Result<worker::Response> {
    route_request(req, &env, &["StarterAgent"])
        .await?
        .or_not_found()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn greet(input: serde_json::Value) -> Result<serde_json::Value, String> {
        let tools = Starter.tools();
        futures::executor::block_on(tools[0].call(input))
    }

    #[test]
    fn the_greet_tool_greets_and_refuses_an_empty_name() {
        assert_eq!(
            greet(serde_json::json!({ "name": "Ada" })),
            Ok(serde_json::json!({ "greeting": "Hello, Ada!" }))
        );
        assert_eq!(
            greet(serde_json::json!({ "name": " " })),
            Err("a name is needed".into())
        );
    }
}
