//! The demo agent of this repository: a weather tool and a file deletion that
//! needs approval, a synced state with two callable methods
//! (`shared_state.rs`), a streaming callable (`ticks.rs`), a reminder on a
//! named schedule (`reminders.rs`), connection hooks, tags, readonly viewers
//! and broadcasts (`connections.rs`), erasure behind the operator's token
//! (`POST …/destroy`), and a chat directory per user (`ChatDirectory`,
//! `directory.rs`) whose chats are `ChatAgent`s,
//! bound as the `ChatAgent` Durable Object class; with `DEMO_SUMMARIZE=1`
//! its model summarizes what a long conversation leaves out (`summary.rs`).

mod connections;
pub mod directory;
#[cfg(target_arch = "wasm32")]
mod mcp_routes;
mod reminders;
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
mod routes {
    use serde::Deserialize;
    use worker::{Method, Request, Response};

    use crate::agent::body::{read_json_typed, refusal};
    use crate::agent::{AgentHandle, SubmitOptions};
    use crate::protocol::UIMessage;

    /// The most a submit body may hold (its text is one message).
    const SUBMIT_BODY_LIMIT: usize = 256 * 1024;
    /// An announcement is a short text and a tag.
    const ANNOUNCE_BODY_LIMIT: usize = 4 * 1024;
    /// A schedule body is a number.
    const SCHEDULE_BODY_LIMIT: usize = 1024;

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Schedule {
        in_ms: u64,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Submit {
        text: String,
        idempotency_key: Option<String>,
    }

    pub async fn serve(
        mut req: Request,
        agent: AgentHandle,
        mcp_admin_token: Option<&str>,
    ) -> worker::Result<Option<Response>> {
        let path = req.path();
        let post = req.method() == Method::Post;
        if post && path.ends_with("/submit") {
            let submit: Submit = match read_json_typed(&mut req, SUBMIT_BODY_LIMIT).await {
                Ok(submit) => submit,
                Err(e) => return refusal(&e).map(Some),
            };
            let options = SubmitOptions {
                idempotency_key: submit.idempotency_key,
                // Anyone who passes `authorize` reaches this route: its keys
                // are kept apart from the agent's own.
                caller: Some("http".into()),
                ..Default::default()
            };
            // An empty id: the agent gives the message one.
            let message = UIMessage::user_text("", submit.text);
            return match agent.submit_messages(vec![message], options) {
                Ok(submission) => Ok(Some(Response::from_json(&submission)?.with_status(202))),
                // A named caller counts toward RATE_LIMIT_PER_AGENT.
                Err(e) if e.is_rate_limited() => Response::error(e.to_string(), 429).map(Some),
                Err(e) => Response::error(e.to_string(), 400).map(Some),
            };
        }
        if post && path.ends_with("/schedule") {
            let schedule: Schedule = match read_json_typed(&mut req, SCHEDULE_BODY_LIMIT).await {
                Ok(schedule) => schedule,
                Err(e) => return refusal(&e).map(Some),
            };
            let at = agent.now_ms().saturating_add(schedule.in_ms);
            agent.schedule_alarm(Some(at));
            return Response::from_json(&serde_json::json!({ "at": at })).map(Some);
        }
        if post && path.ends_with("/announce") {
            let announcement: super::connections::Announcement =
                match read_json_typed(&mut req, ANNOUNCE_BODY_LIMIT).await {
                    Ok(announcement) => announcement,
                    Err(e) => return refusal(&e).map(Some),
                };
            if let Err(e) = announcement.check() {
                return Response::error(e, 400).map(Some);
            }
            let sent = super::connections::announce_now(&agent, &announcement);
            return Response::from_json(&serde_json::json!({ "sentTo": sent })).map(Some);
        }
        if post && path.ends_with("/destroy") {
            let what = "Erasing the agent";
            if let Some(refused) = super::mcp_routes::refuse_non_admin(&req, mcp_admin_token, what)?
            {
                return Ok(Some(refused));
            }
            return match agent.destroy().await {
                Ok(()) => Response::ok("destroyed").map(Some),
                Err(e) => Response::error(e, 500).map(Some),
            };
        }
        if let Some(answer) =
            super::mcp_routes::serve(&mut req, &path, &agent, mcp_admin_token).await?
        {
            return Ok(Some(answer));
        }
        let Some((_, rest)) = path.split_once("/submissions/") else {
            return Ok(None);
        };
        let found = match rest.strip_suffix("/cancel") {
            Some(id) if post => agent.cancel_submission(id),
            Some(_) => return Ok(None),
            None => agent.submission_status(rest),
        };
        match found {
            Some(submission) => Response::from_json(&submission).map(Some),
            None => Response::error("unknown submission", 404).map(Some),
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

/// The second demo class: delegates tasks to a `ChatAgent` as a sub-agent,
/// executing two client tools of its own for the child.
#[cfg(target_arch = "wasm32")]
mod coordinator {
    use std::rc::Rc;

    use schemars::JsonSchema;
    use serde::Deserialize;
    use serde_json::{json, Value};

    use futures::future::Either;

    use crate::agent::subagents::chat::{
        abort_pair, chat, ChatCallback, ChatOptions, ClientToolCall,
    };
    use crate::agent::ToolContext;
    use crate::agent::{AgentDefinition, ServerTool};
    use crate::protocol::{ClientToolSchema, UIMessageChunk};

    pub struct CoordinatorAgent {
        env: Rc<worker::Env>,
        children: Rc<Children>,
    }

    /// The agents this coordinator may reach (`COORDINATOR_CHILDREN`:
    /// comma-separated entries `[Class/]name`, where the name may be
    /// `prefix*` for every name with that prefix or `*` for any, and the
    /// class a binding or `*`; without a class, `ChatAgent`). Unset or
    /// empty: none. A model chooses the class and the name its tools reach;
    /// this list is the parent's say over both, so a coordinator class is
    /// reached (and can fan out further) only where the author lists it.
    pub struct Children(Vec<(String, String)>);

    impl Children {
        pub fn from_var(value: Option<String>) -> Children {
            Children(
                value
                    .unwrap_or_default()
                    .split(',')
                    .map(str::trim)
                    .filter(|p| !p.is_empty())
                    .map(|entry| match entry.split_once('/') {
                        Some((class, name)) => (class.trim().to_string(), name.trim().to_string()),
                        None => (CHAT_AGENT.to_string(), entry.to_string()),
                    })
                    .collect(),
            )
        }

        /// `Err`: the tool error the model reads (the name is not quoted).
        pub fn check(&self, class: &Option<String>, name: &str) -> Result<(), String> {
            let class = class_of(class);
            let allowed = self.0.iter().any(|(c, p)| {
                let class_listed = c == "*" || c == class;
                class_listed
                    && match p.strip_suffix('*') {
                        Some(prefix) => name.starts_with(prefix),
                        None => p == name,
                    }
            });
            if allowed {
                Ok(())
            } else {
                Err(
                    "that agent is not one this coordinator may reach (see COORDINATOR_CHILDREN)"
                        .to_string(),
                )
            }
        }
    }

    /// The class binding an agent input names: `ChatAgent` (this worker's,
    /// the default) or another, such as a Think agent's in another worker.
    fn class_of(class: &Option<String>) -> &str {
        class.as_deref().unwrap_or(CHAT_AGENT)
    }

    const CHAT_AGENT: &str = "ChatAgent";

    #[derive(Deserialize, JsonSchema)]
    pub struct SubmitToInput {
        /// Name of the agent to hand the message to.
        pub agent: String,
        /// The user message it should answer on its own.
        pub text: String,
        /// Its class binding (default `ChatAgent`).
        #[serde(default)]
        pub class: Option<String>,
        /// Idempotency key: a repeat returns the first submission.
        #[serde(default)]
        pub key: Option<String>,
    }

    #[derive(Deserialize, JsonSchema)]
    pub struct SubmissionInput {
        /// Name of the agent the submission was handed to.
        pub agent: String,
        /// The submission's id.
        pub id: String,
        /// Its class binding (default `ChatAgent`).
        #[serde(default)]
        pub class: Option<String>,
        /// Cancel it instead of reading it.
        #[serde(default)]
        pub cancel: bool,
    }

    #[derive(Deserialize, JsonSchema)]
    pub struct DelegateInput {
        /// Name of the agent to delegate to.
        pub agent: String,
        /// What it should do.
        pub task: String,
        /// Its class binding (default `ChatAgent`).
        #[serde(default)]
        pub class: Option<String>,
        /// How long the child may take, in ms (default five minutes).
        #[serde(default)]
        pub timeout_ms: Option<u64>,
    }

    fn stub_for(
        env: &worker::Env,
        class: &Option<String>,
        agent: &str,
    ) -> worker::Result<crate::agent::AgentStub> {
        crate::agent::AgentStub::new(env, class_of(class), agent)
    }

    /// Keeps the child's final assistant text (its last text part) and any error.
    #[derive(Default)]
    struct FinalText {
        text: String,
        error: Option<String>,
    }

    impl ChatCallback for FinalText {
        fn on_event(&mut self, chunk_json: &str) {
            let budget = crate::protocol::gate::AGENT_REPLY;
            match crate::protocol::gate::read_json::<UIMessageChunk>(chunk_json, &budget) {
                Ok(UIMessageChunk::TextStart { .. }) => self.text.clear(),
                Ok(UIMessageChunk::TextDelta { delta, .. }) => self.text.push_str(&delta),
                _ => {}
            }
        }
        fn on_error(&mut self, text: &str) {
            self.error = Some(text.to_string());
        }
    }

    fn parent_tools() -> Vec<ClientToolSchema> {
        let no_parameters = Some(json!({"type": "object", "properties": {}}));
        vec![
            ClientToolSchema {
                name: "parent_clock".into(),
                description: Some("The coordinator's current time.".into()),
                parameters: no_parameters.clone(),
            },
            ClientToolSchema {
                name: "parent_fail".into(),
                description: Some("A tool the coordinator always refuses.".into()),
                parameters: no_parameters,
            },
        ]
    }

    fn run_parent_tool(call: ClientToolCall) -> crate::agent::ToolFuture {
        Box::pin(async move {
            match call.tool_name.as_str() {
                "parent_clock" => {
                    let now: String = js_sys::Date::new_0().to_iso_string().into();
                    Ok::<Value, String>(json!({"now": now, "by": "coordinator"}))
                }
                "parent_fail" => Err("the coordinator refused".to_string()),
                other => Err(format!("the coordinator has no tool '{other}'")),
            }
        })
    }

    impl AgentDefinition for CoordinatorAgent {
        fn system_prompt(&self) -> String {
            "You coordinate other agents: use `delegate` to hand them tasks.".to_string()
        }

        fn tools(&self) -> Vec<ServerTool> {
            let env = self.env.clone();
            let submit_env = self.env.clone();
            let (children, submit_children) = (self.children.clone(), self.children.clone());
            let submit_to = ServerTool::new(
                "submit_to",
                "Hand a message to another agent to answer on its own; returns its submission.",
                move |input: SubmitToInput| {
                    let env = submit_env.clone();
                    let allowed = submit_children.check(&input.class, &input.agent);
                    async move {
                        allowed.map_err(|e| format!("cannot submit: {e}"))?;
                        let stub = stub_for(&env, &input.class, &input.agent)
                            .map_err(|e| format!("cannot submit: {e}"))?;
                        let message = crate::protocol::UIMessage::user_text("", input.text);
                        let options = crate::agent::SubmitOptions {
                            idempotency_key: input.key,
                            ..Default::default()
                        };
                        stub.submit_messages(vec![message], options)
                            .await
                            .map_err(|e| format!("submitting to '{}' failed: {e}", input.agent))
                    }
                },
            );
            let status_env = self.env.clone();
            let status_children = self.children.clone();
            let submission = ServerTool::new(
                "submission",
                "Read (or cancel) a submission handed to another agent.",
                move |input: SubmissionInput| {
                    let env = status_env.clone();
                    let allowed = status_children.check(&input.class, &input.agent);
                    async move {
                        allowed.map_err(|e| format!("cannot reach '{}': {e}", input.agent))?;
                        let stub = stub_for(&env, &input.class, &input.agent)
                            .map_err(|e| format!("cannot reach '{}': {e}", input.agent))?;
                        let found = if input.cancel {
                            stub.cancel_submission(&input.id).await
                        } else {
                            stub.submission_status(&input.id).await
                        };
                        match found.map_err(|e| format!("asking '{}' failed: {e}", input.agent))? {
                            Some(submission) => Ok(submission),
                            None => Err(format!(
                                "'{}' has no submission '{}'",
                                input.agent, input.id
                            )),
                        }
                    }
                },
            );
            vec![
                submit_to,
                submission,
                ServerTool::new(
                    "delegate",
                    "Hand a task to another agent and get its answer.",
                    move |input: DelegateInput, ctx: ToolContext| {
                        let env = env.clone();
                        let allowed = children.check(&input.class, &input.agent);
                        async move {
                            // Fails fast, as a tool error the model reads, without quoting a bad name.
                            crate::routing::check_agent_name(&input.agent)
                                .map_err(|e| format!("cannot delegate: {e}"))?;
                            allowed.map_err(|e| format!("cannot delegate: {e}"))?;
                            let mut result = FinalText::default();
                            // The coordinator's own turn cancelled cancels the child's.
                            let (abort, signal) = abort_pair();
                            let options = ChatOptions {
                                client_tools: parent_tools(),
                                on_client_tool_call: Some(Rc::new(run_parent_tool)),
                                signal: Some(signal),
                                timeout_ms: input.timeout_ms,
                            };
                            let ended = {
                                let call = chat(
                                    &env,
                                    class_of(&input.class),
                                    &input.agent,
                                    input.task,
                                    &mut result,
                                    options,
                                );
                                let given_up = ctx.abort.aborted();
                                futures::pin_mut!(call, given_up);
                                match futures::future::select(call, given_up).await {
                                    Either::Left((ended, _)) => ended,
                                    Either::Right(((), call)) => {
                                        abort.abort();
                                        call.await
                                    }
                                }
                            };
                            ended.map_err(|e| {
                                format!("delegating to '{}' failed: {e}", input.agent)
                            })?;
                            match result.error {
                                Some(error) => {
                                    Err(format!("agent '{}' failed: {error}", input.agent))
                                }
                                None => Ok(json!({"text": result.text})),
                            }
                        }
                    },
                ),
            ]
        }
    }

    crate::chat_agent!(Coordinator, |env: &worker::Env| CoordinatorAgent {
        env: Rc::new(env.clone()),
        children: Rc::new(Children::from_var(crate::agent::settings::env_value(
            env,
            "COORDINATOR_CHILDREN"
        ))),
    });
}
