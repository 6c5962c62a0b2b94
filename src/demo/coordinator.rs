//! The second demo class, `Coordinator`: delegates tasks to a `ChatAgent` as
//! a sub-agent, executing two client tools of its own for the child.

use std::rc::Rc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use futures::future::Either;

use crate::agent::subagents::chat::{abort_pair, chat, ChatCallback, ChatOptions, ClientToolCall};
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
                        ended
                            .map_err(|e| format!("delegating to '{}' failed: {e}", input.agent))?;
                        match result.error {
                            Some(error) => Err(format!("agent '{}' failed: {error}", input.agent)),
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
