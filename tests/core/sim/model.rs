//! The scripted model and scripted server tools: a queue of replies the sim
//! feeds back as `ModelEvent`s (text words, tool calls, HTTP failure, a cut stream),
//! every provider-neutral request recorded, and per-tool queues of results.

use std::collections::{BTreeMap, VecDeque};

use serde_json::Value;

use durable_chat::core::CallId;
pub use durable_chat::model::{ModelMessage, ModelRequest, ModelToolCall, ToolDefinition};
pub use durable_chat::test_kit::{End, Reply};

/// One model call the core asked for: the provider-neutral request and when.
#[derive(Debug, Clone)]
pub struct ModelCall {
    pub at: u64,
    pub request: ModelRequest,
}

/// The text of a message (`None` for an assistant turn without text).
pub fn content(message: &ModelMessage) -> Option<&str> {
    match message {
        ModelMessage::System { content }
        | ModelMessage::User { content, .. }
        | ModelMessage::Tool { content, .. } => Some(content),
        ModelMessage::Assistant { content, .. } => content.as_deref(),
    }
}

impl ModelCall {
    pub fn messages(&self) -> &[ModelMessage] {
        &self.request.messages
    }

    /// `system`, `user`, `assistant` or `tool` for each message, in order.
    pub fn roles(&self) -> Vec<String> {
        self.messages()
            .iter()
            .map(|m| {
                match m {
                    ModelMessage::System { .. } => "system",
                    ModelMessage::User { .. } => "user",
                    ModelMessage::Assistant { .. } => "assistant",
                    ModelMessage::Tool { .. } => "tool",
                }
                .to_string()
            })
            .collect()
    }

    pub fn user_texts(&self) -> Vec<String> {
        self.messages()
            .iter()
            .filter_map(|m| match m {
                ModelMessage::User { content, .. } => Some(content.clone()),
                _ => None,
            })
            .collect()
    }

    pub fn tool_names(&self) -> Vec<String> {
        self.request.tools.iter().map(|t| t.name.clone()).collect()
    }

    pub fn tool(&self, name: &str) -> Option<&ToolDefinition> {
        self.request.tools.iter().find(|t| t.name == name)
    }

    /// The tool calls of the assistant message at `index` (none for any other message).
    pub fn tool_calls(&self, index: usize) -> &[ModelToolCall] {
        match self.messages().get(index) {
            Some(ModelMessage::Assistant { tool_calls, .. }) => tool_calls,
            _ => &[],
        }
    }

    /// `(tool_call_id, content)` of every tool message the model is shown.
    pub fn tool_results(&self) -> Vec<(String, String)> {
        self.messages()
            .iter()
            .filter_map(|m| match m {
                ModelMessage::Tool {
                    tool_call_id,
                    content,
                } => Some((tool_call_id.clone(), content.clone())),
                _ => None,
            })
            .collect()
    }

    pub fn tool_result(&self, tool_call_id: &str) -> Option<String> {
        self.tool_results()
            .into_iter()
            .find(|(id, _)| id == tool_call_id)
            .map(|(_, content)| content)
    }
}

#[derive(Debug, Default)]
pub struct ScriptedModel {
    pub replies: VecDeque<Reply>,
    pub requests: Vec<ModelCall>,
    pub aborted: Vec<CallId>,
}

/// One scripted server-tool outcome, delivered `delay_ms` after the run starts.
#[derive(Debug, Clone)]
pub struct ToolReply {
    pub result: Result<Value, String>,
    pub delay_ms: u64,
}

impl ToolReply {
    pub fn ok(output: Value) -> ToolReply {
        ToolReply {
            result: Ok(output),
            delay_ms: 0,
        }
    }

    pub fn err(text: &str) -> ToolReply {
        ToolReply {
            result: Err(text.to_string()),
            delay_ms: 0,
        }
    }

    pub fn after(mut self, ms: u64) -> ToolReply {
        self.delay_ms = ms;
        self
    }
}

#[derive(Debug, Clone)]
pub struct ToolRun {
    pub call: CallId,
    pub tool_call_id: String,
    pub tool_name: String,
    pub input: Value,
}

#[derive(Debug, Default)]
pub struct ScriptedTools {
    pub scripts: BTreeMap<String, VecDeque<ToolReply>>,
    pub runs: Vec<ToolRun>,
}

impl ScriptedTools {
    /// The next scripted reply for `name`; an unscripted run fails readably.
    pub fn next(&mut self, name: &str) -> ToolReply {
        self.scripts
            .get_mut(name)
            .and_then(VecDeque::pop_front)
            .unwrap_or_else(|| ToolReply::err(&format!("no scripted result for tool {name}")))
    }

    pub fn runs_of(&self, name: &str) -> Vec<&ToolRun> {
        self.runs.iter().filter(|r| r.tool_name == name).collect()
    }
}
