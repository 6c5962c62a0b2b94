//! The demo agent of this repository: a weather tool and a file deletion that
//! needs approval, a synced state with two callable methods
//! (`shared_state.rs`), a streaming callable (`ticks.rs`), a reminder on a
//! named schedule (`reminders.rs`), connection hooks, tags, readonly viewers
//! and broadcasts (`connections.rs`), HTTP routes with erasure behind the
//! operator's token (`routes.rs`), and a chat directory per user
//! (`ChatDirectory`, `directory.rs`) whose chats are `ChatAgent`s, bound as
//! the `ChatAgent` Durable Object class; with `DEMO_SUMMARIZE=1` its model
//! summarizes what a long conversation leaves out (`summary.rs`). A second
//! class, `Coordinator` (`coordinator.rs`), delegates to it as a sub-agent.

mod connections;
#[cfg(target_arch = "wasm32")]
mod coordinator;
pub mod directory;
#[cfg(target_arch = "wasm32")]
mod mcp_routes;
mod reminders;
#[cfg(target_arch = "wasm32")]
mod routes;
mod shared_state;
mod summary;
mod ticks;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::agent::{AgentDefinition, ServerTool, Vars};
use crate::core::ApprovalRule;
use crate::mcp::McpServer;

#[derive(Default)]
pub struct DemoAgent {
    /// `DEMO_SUMMARIZE=1`: what the context policy leaves out is summarized
    /// by the agent's model (`summary.rs`).
    pub summarize: bool,
    /// `MCP_ADMIN_TOKEN`: who may add, list and remove MCP servers at run
    /// time (`mcp_routes.rs`); unset, nobody may.
    pub mcp_admin_token: Option<String>,
    /// `DEBUG_AUTHORIZE_HEADER` (read by the test build only): the agent's
    /// own `authorize` also refuses (403) a request without this header, as
    /// an author's access check of its own would.
    pub debug_authorize_header: Option<String>,
    /// `DEMO_MEMORY=1`: the agent keeps a `memory` context block the model
    /// writes with `set_context` (`DEMO_MEMORY=approve`: each write waits
    /// for a person's approval), and the model searches the whole history
    /// with `search_context`.
    pub memory: Option<ApprovalRule>,
}

#[derive(Deserialize, JsonSchema)]
pub struct WeatherInput {
    /// City name, e.g. "Paris".
    pub city: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Weather {
    pub city: String,
    pub temp_c: i32,
}

#[derive(Deserialize, JsonSchema)]
pub struct DeleteFileInput {
    /// Path of the file to delete.
    pub path: String,
}

impl AgentDefinition for DemoAgent {
    fn authorize(
        &self,
        request: &crate::agent::RequestInfo,
        settings: &crate::agent::AgentSettings,
    ) -> Result<(), crate::agent::Refusal> {
        #[cfg(feature = "debug-routes")]
        if let Some(header) = &self.debug_authorize_header {
            if request.header(header).is_none() {
                return Err(crate::agent::Refusal::forbidden(
                    "refused by the agent's own authorize",
                ));
            }
        }
        crate::agent::default_authorize(request, settings)
    }

    fn system_prompt(&self) -> String {
        "You are a helpful assistant in a demo chat. Use the tools when they help.".to_string()
    }

    /// The repository's small MCP server (`tests/support/mcp-server.mjs`,
    /// started by `scripts/demo.sh`) when `MCP_DEMO_URL` is set; its tools
    /// are offered as `mcp_demo_add`, `mcp_demo_echo`, ….
    fn mcp_servers(&self, vars: &Vars) -> Vec<McpServer> {
        match vars.get("MCP_DEMO_URL") {
            Some(url) if !url.trim().is_empty() => vec![McpServer::new("demo", url.trim())],
            _ => Vec::new(),
        }
    }

    /// A turn whose custom body names a `provider` (`anthropic`, `openai`,
    /// `workers-ai`) runs on it, with the body's `gatewayMetadata` object
    /// as the AI Gateway metadata of its calls: a tab picks the model
    /// service per message.
    async fn before_turn(
        &self,
        ctx: crate::core::TurnContext,
        _agent: crate::agent::AgentHandle,
    ) -> crate::core::TurnConfig {
        crate::core::TurnConfig {
            provider: ctx
                .body
                .get("provider")
                .and_then(serde_json::Value::as_str)
                .map(str::to_string),
            gateway_metadata: ctx
                .body
                .get("gatewayMetadata")
                .and_then(serde_json::Value::as_object)
                .cloned()
                .unwrap_or_default(),
            ..Default::default()
        }
    }

    fn context_blocks(&self) -> Vec<crate::core::ContextBlock> {
        match self.memory {
            Some(_) => vec![crate::core::ContextBlock::new(
                "memory",
                "What the user asked you to remember, and facts about them worth keeping",
                2000,
            )],
            None => Vec::new(),
        }
    }

    fn searches_history(&self) -> bool {
        self.memory.is_some()
    }

    fn set_context_approval(&self) -> ApprovalRule {
        self.memory.clone().unwrap_or_default()
    }

    fn tools(&self) -> Vec<ServerTool> {
        vec![
            ServerTool::new(
                "get_weather",
                "Current weather for a city.",
                |input: WeatherInput| async move {
                    Ok::<_, String>(Weather {
                        city: input.city,
                        temp_c: 21,
                    })
                },
            ),
            ServerTool::new(
                "delete_file",
                "Delete a file by path.",
                |input: DeleteFileInput| async move {
                    Ok::<_, String>(serde_json::json!({"deleted": input.path}))
                },
            )
            .needs_approval(ApprovalRule::Always),
        ]
    }

    fn summarizes(&self) -> bool {
        self.summarize
    }

    async fn summarize(
        &self,
        request: crate::core::SummaryRequest,
        agent: crate::agent::AgentHandle,
    ) -> Option<String> {
        summary::summarize(request, agent).await
    }

    fn initial_state(&self) -> Option<serde_json::Value> {
        Some(shared_state::initial_state())
    }

    fn validate_state(
        &self,
        next: &serde_json::Value,
        _source: &crate::core::StateSource,
    ) -> Result<(), String> {
        shared_state::validate(next)
    }

    fn callables(&self) -> Vec<crate::agent::Callable> {
        let mut callables = shared_state::callables();
        callables.extend([ticks::callable(), reminders::callable()]);
        callables.extend(connections::callables());
        callables
    }

    fn rpc_methods(&self) -> Vec<crate::agent::Callable> {
        shared_state::rpc_methods()
    }

    fn schedule_callbacks(&self) -> Vec<crate::agent::handle::schedule_callback::ScheduleCallback> {
        vec![
            reminders::schedule_callback(),
            connections::schedule_callback(),
        ]
    }

    fn connection_tags(&self, _id: &str, request: &crate::agent::RequestInfo) -> Vec<String> {
        connections::tags(request)
    }

    fn should_connection_be_readonly(
        &self,
        _id: &str,
        request: &crate::agent::RequestInfo,
    ) -> bool {
        connections::readonly(request)
    }

    async fn on_state_changed(
        &self,
        _state: std::rc::Rc<serde_json::Value>,
        source: crate::core::StateSource,
        agent: crate::agent::AgentHandle,
    ) {
        connections::on_state_changed(&source, &agent);
    }

    async fn on_close(
        &self,
        connection: crate::agent::Connection,
        agent: crate::agent::AgentHandle,
    ) {
        connections::on_close(&connection, &agent);
    }

    async fn on_connect(
        &self,
        connection: crate::agent::Connection,
        request: crate::agent::RequestInfo,
        _agent: crate::agent::AgentHandle,
    ) {
        connections::on_connect(&connection, &request);
    }

    async fn on_message(
        &self,
        connection: crate::agent::Connection,
        text: String,
        agent: crate::agent::AgentHandle,
    ) {
        connections::on_message(&connection, &text, &agent);
    }

    /// The demo's own routes (after the token check; every JSON body read
    /// to a limit and only as `application/json`): `POST …/submit`
    /// `{"text", "idempotencyKey"?}` submits a user message (202 with the
    /// submission), `GET …/submissions/<id>` reads its status,
    /// `POST …/submissions/<id>/cancel` cancels it and `POST …/schedule`
    /// `{"inMs"}` schedules a check-in (see `on_alarm`), `POST …/announce`
    /// `{"text", "tag"?}` sends an announcement to the tabs, `POST …/destroy`
    /// (with `MCP_ADMIN_TOKEN` as `Authorization: Bearer`) erases the agent.
    /// A chat of a user's directory (named `<user>~<id>`) tells it that a
    /// turn ended (its last activity, its first message as a title).
    #[cfg(target_arch = "wasm32")]
    async fn on_chat_response(
        &self,
        _response: crate::core::ChatResponse,
        agent: crate::agent::AgentHandle,
    ) {
        directory::report_activity(&agent).await;
    }

    #[cfg(target_arch = "wasm32")]
    async fn on_request(
        &self,
        req: worker::Request,
        agent: crate::agent::AgentHandle,
    ) -> worker::Result<Option<worker::Response>> {
        routes::serve(req, agent, self.mcp_admin_token.as_deref()).await
    }

    /// The scheduled check-in: the agent submits a message of its own,
    /// named as the alarm's (anyone let in may set it with `…/schedule`, so
    /// its turns count toward `RATE_LIMIT_PER_AGENT` and the log names them).
    async fn on_alarm(&self, agent: crate::agent::AgentHandle) {
        let message = crate::protocol::UIMessage::user_text("", "scheduled check-in");
        let options = crate::agent::SubmitOptions {
            caller: Some("alarm".into()),
            ..Default::default()
        };
        if let Err(e) = agent.submit_messages(vec![message], options) {
            crate::log::write(
                crate::log::LogLevel::Warn,
                &format!("the scheduled check-in was refused: {e}"),
            );
        }
    }
}

#[cfg(target_arch = "wasm32")]
crate::chat_agent!(ChatAgent, |env: &worker::Env| DemoAgent {
    summarize: crate::agent::settings::env_value(env, "DEMO_SUMMARIZE").as_deref() == Some("1"),
    mcp_admin_token: crate::agent::settings::env_value(env, "MCP_ADMIN_TOKEN"),
    debug_authorize_header: crate::agent::settings::env_value(env, "DEBUG_AUTHORIZE_HEADER")
        .filter(|h| cfg!(feature = "debug-routes") && !h.trim().is_empty()),
    memory: match crate::agent::settings::env_value(env, "DEMO_MEMORY").as_deref() {
        Some("1") => Some(ApprovalRule::Never),
        Some("approve") => Some(ApprovalRule::Always),
        _ => None,
    },
});

#[cfg(target_arch = "wasm32")]
crate::chat_agent!(ChatDirectory, |_env: &worker::Env| {
    directory::ChatDirectoryAgent
});

#[cfg(target_arch = "wasm32")]
pub use coordinator::Coordinator;
