//! The author's hooks as the core sees them: `on_chat_error` (may classify a
//! failed turn as worth another model call), `before_tool_call` (allow,
//! block, substitute the input or the result) and `after_tool_call` (observe
//! or rewrite a result), for server and client tools alike. Each is either an
//! inline closure here (`Hooks`) or, with the matching `CoreConfig` switch,
//! an effect the host answers once the author's awaited hook returned; the
//! turn waits for it either way.
//! What ended turns report (`ChatResponse`) and ended steps (`StepReport`)
//! goes out as an effect; message metadata the author writes on the answer
//! (`MessageMetadata`) is asked for inline, where the chunk carrying it is
//! made (see `message_metadata.rs`).

use std::fmt;

use serde_json::Value;

use crate::model::Usage;
use crate::protocol::{Outcome, UIMessage};

use crate::core::vocab::turn_config::TurnTrigger;

/// A tool's result as the model reads it: output, or error text.
pub type ToolOutcome = Result<Value, String>;

/// A turn that failed, as `on_chat_error` sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatError {
    pub request_id: String,
    pub trigger: TurnTrigger,
    /// What the tabs are told (and the turn's stored error).
    pub error: String,
    /// The provider called the failure transient (rate limit, overload, network).
    pub transient: bool,
    /// Whether `ErrorDisposition::Retry` is honoured: the failed model call
    /// streamed nothing (so nothing is repeated) and the step's retry budget
    /// (`CoreSettings::model_retry`) is not spent.
    pub retryable: bool,
    /// How many times this step's model call was sent again so far.
    pub retries: u32,
}

/// What to do with a failed turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ErrorDisposition {
    /// The turn ends with the error (the default).
    #[default]
    Fail,
    /// Send the step's model call again after `after_ms` (at least the
    /// retry policy's backoff), counted against the same retry budget.
    Retry { after_ms: u64 },
}

/// A tool call the model made, as the tool hooks see it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The running turn's request id (empty for a tab's result that arrives
    /// after the turn that made the call ended).
    pub request_id: String,
    pub tool_call_id: String,
    pub tool_name: String,
    pub input: Value,
    /// A client tool (a tab or a parent agent runs it), not a server tool.
    pub client: bool,
}

/// What `before_tool_call` decides for one call.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum ToolCallDecision {
    /// Run the call as the model made it.
    #[default]
    Allow,
    /// Do not run it: the model reads this text as the call's (error) result.
    Block(String),
    /// Run it with this input instead (what tabs see and the transcript keeps).
    Input(Value),
    /// Do not run it: this is its result.
    Result(Value),
}

/// How a turn ended, for `on_chat_response`: sent once its answer is stored
/// (or, for an aborted or failed turn, once it is settled). Kept in storage
/// until the hook returns, so it is delivered at least once.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatResponse {
    pub request_id: String,
    pub trigger: TurnTrigger,
    pub continuation: bool,
    pub outcome: Outcome,
    /// The ids of the user messages the turn answered.
    pub message_ids: Vec<String>,
    /// The id of the stored assistant message, if anything was stored.
    pub answer_id: Option<String>,
    /// The error text of a failed turn.
    pub error: Option<String>,
    /// Tokens the turn's model calls used, summed over its steps (as far as
    /// the provider reported them; `None`: it reported none).
    pub usage: Option<Usage>,
    /// Model steps the turn began.
    pub steps: u32,
}

/// The synchronous hooks of one agent (`None`: the default behaviour);
/// `before_turn`, the tool hooks and `on_chat_error` are always asked of the
/// host as effect round trips.
#[derive(Clone, Default)]
pub struct Hooks {
    /// Changes one model step's model, prompt or tools (`step_config.rs`).
    pub before_step: Option<crate::core::vocab::step_config::BeforeStep>,
    /// Writes metadata on the answer (`None`: none is written).
    pub message_metadata: Option<crate::core::vocab::message_metadata::MessageMetadata>,
}

impl fmt::Debug for Hooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hooks")
            .field("before_step", &self.before_step.is_some())
            .field("message_metadata", &self.message_metadata.is_some())
            .finish()
    }
}

/// A [`SummaryRequest`] borrowed (`SummaryRequest::input`): what plain,
/// synchronous summary code reads.
#[derive(Debug, Clone, Copy)]
pub struct CompactionInput<'a> {
    /// The summary made last time, if any.
    pub previous: Option<&'a str>,
    /// The messages to fold into it (those left out since the previous
    /// summary), oldest first.
    pub dropped: &'a [UIMessage],
}

/// What the agent's summarizer is given (`Effect::Summarize`,
/// `AgentDefinition::summarize`): the previous summary and the messages to
/// fold into it.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryRequest {
    /// The summary made last time, if any.
    pub previous: Option<String>,
    /// The messages to fold into it, oldest first.
    pub dropped: Vec<UIMessage>,
}

impl SummaryRequest {
    /// The request borrowed, for a summary written by plain code: an
    /// `async fn summarize` that computes its summary at once returns
    /// `my_summary(&request.input())`.
    pub fn input(&self) -> CompactionInput<'_> {
        CompactionInput {
            previous: self.previous.as_deref(),
            dropped: &self.dropped,
        }
    }
}
