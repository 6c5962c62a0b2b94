//! The scripted model and scripted server tools: a queue of replies the sim
//! feeds back as `ModelEvent`s (text words, tool calls, HTTP failure, a cut stream),
//! every provider-neutral request recorded, and per-tool queues of results.

use std::collections::{BTreeMap, VecDeque};

use serde_json::Value;

use durable_chat::core::CallId;
use durable_chat::model::{FinishReason, ModelEvent, ModelFailure, Usage};
pub use durable_chat::model::{ModelMessage, ModelRequest, ModelToolCall, ToolDefinition};

#[derive(Debug, Clone, PartialEq)]
pub enum End {
    Finish(FinishReason),
    /// The call fails (HTTP error or broken stream) as described.
    Fail(ModelFailure),
}

/// One scripted model reply. Events are delivered `every_ms` apart in virtual
/// time, starting `every_ms` after the call (all at once when 0).
#[derive(Debug, Clone)]
pub struct Reply {
    pub events: Vec<ModelEvent>,
    pub end: End,
    pub every_ms: u64,
    /// The usage reported with the finish.
    pub usage: Option<Usage>,
}

impl Reply {
    /// Text split into words (each word after the first keeps its leading space).
    pub fn text(text: &str) -> Reply {
        let mut events = Vec::new();
        for (i, word) in text.split(' ').enumerate() {
            let delta = if i == 0 {
                word.to_string()
            } else {
                format!(" {word}")
            };
            events.push(ModelEvent::TextDelta(delta));
        }
        Reply {
            events,
            end: End::Finish(FinishReason::Stop),
            every_ms: 0,
            usage: None,
        }
    }

    /// `n` text tokens: `w0 w1 w2 …`.
    pub fn words(n: usize) -> Reply {
        let words: Vec<String> = (0..n).map(|i| format!("w{i}")).collect();
        Reply::text(&words.join(" "))
    }

    pub fn tool_call(id: &str, name: &str, args: Value) -> Reply {
        Reply::tool_calls(&[(id, name, args)])
    }

    /// Several tool calls in one step (parallel calls).
    pub fn tool_calls(calls: &[(&str, &str, Value)]) -> Reply {
        let mut reply = Reply {
            events: Vec::new(),
            end: End::Finish(FinishReason::ToolCalls),
            every_ms: 0,
            usage: None,
        };
        for (id, name, args) in calls {
            reply = reply.and_tool_call(id, name, args.clone());
        }
        reply
    }

    /// The provider answers with an HTTP error before streaming anything
    /// (429 and 5xx are transient and retried; other statuses are not).
    pub fn http_error(status: u16, text: &str) -> Reply {
        Reply::failure(ModelFailure::http(status, text, None, None))
    }

    /// The call fails as `failure` says, before streaming anything.
    pub fn failure(failure: ModelFailure) -> Reply {
        Reply {
            events: Vec::new(),
            end: End::Fail(failure),
            every_ms: 0,
            usage: None,
        }
    }

    /// Adds a tool call after what the reply already streams; the step ends with tool calls.
    pub fn and_tool_call(mut self, id: &str, name: &str, args: Value) -> Reply {
        let index = self
            .events
            .iter()
            .filter(|e| matches!(e, ModelEvent::ToolCallStarted { .. }))
            .count() as u32;
        self.events.push(ModelEvent::ToolCallStarted {
            index,
            id: id.to_string(),
            name: name.to_string(),
        });
        let text = args.to_string();
        let mid = text
            .char_indices()
            .map(|(i, _)| i)
            .nth(text.chars().count() / 2)
            .unwrap_or(0);
        for piece in [&text[..mid], &text[mid..]] {
            if !piece.is_empty() {
                self.events.push(ModelEvent::ToolCallArgumentsDelta {
                    index,
                    delta: piece.to_string(),
                });
            }
        }
        self.end = End::Finish(FinishReason::ToolCalls);
        self
    }

    /// The provider reports these token counts with the finish.
    pub fn with_usage(mut self, prompt: u64, completion: u64, cached: Option<u64>) -> Reply {
        self.usage = Some(Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            cached_tokens: cached,
        });
        self
    }

    pub fn every(mut self, ms: u64) -> Reply {
        self.every_ms = ms;
        self
    }

    /// Streams what it has, then the provider reports a transient error.
    pub fn then_fail(mut self, text: &str) -> Reply {
        self.end = End::Fail(ModelFailure::transient(text));
        self
    }

    /// Streams what it has, then the connection breaks off (no finish).
    pub fn then_cut(mut self) -> Reply {
        self.end = End::Fail(ModelFailure::cut_off(
            "Model stream failed: connection reset",
        ));
        self
    }
}

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
