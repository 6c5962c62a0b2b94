//! The running turn's state: its queued request, the answer being written,
//! its settings, its phase (preparing, running approved calls, calling the
//! model, waiting to retry, running tools) with what each phase needs, the
//! tool runs in flight and its chunk log. Transitions between phases are
//! made in `phases.rs`.

use std::collections::BTreeMap;
use std::rc::Rc;

use crate::model::{FinishReason, Usage};
use crate::protocol::UIMessage;

use crate::core::data::queue::QueuedTurn;
use crate::core::vocab::hooks::ToolCall;
use crate::core::vocab::ids::{CallId, ConnId};
use crate::core::vocab::turn_config::TurnSettings;

/// A tool call the model made in the current step.
#[derive(Debug)]
pub(in crate::core) struct StepCall {
    pub(in crate::core) id: String,
    pub(in crate::core) name: String,
    pub(in crate::core) arguments: String,
}

/// How a step's request to the model is built, and how many times it was
/// sent again so far. The request itself goes to the host and is not kept:
/// a retry builds it again from the transcript (which a call that streamed
/// nothing leaves as it was), so a long context is not held in memory for
/// the length of the call.
#[derive(Debug, Clone)]
pub(in crate::core) struct StepRequest {
    /// The context budget the request is built within (bytes; 0: no bound).
    pub(in crate::core) budget: usize,
    /// The estimated size of the messages the last call sent.
    pub(in crate::core) sent_bytes: usize,
    pub(in crate::core) retries: u32,
    /// The request was built again with less context after the provider
    /// refused it as too long (which happens at most once a step).
    pub(in crate::core) narrowed: bool,
    /// The last call sent files (a user's `file` parts).
    pub(in crate::core) sent_files: bool,
    /// The request is built with every file as a text note: the provider
    /// refused it with its files (which happens at most once a step).
    pub(in crate::core) without_files: bool,
}

/// The step's model call in flight.
#[derive(Debug)]
pub(in crate::core) struct ModelCall {
    pub(in crate::core) id: CallId,
    pub(in crate::core) request: StepRequest,
    /// The call produced at least one event: it is never sent again.
    pub(in crate::core) streamed: bool,
    /// Tool calls streamed so far, by the provider's index.
    pub(in crate::core) calls: BTreeMap<u32, StepCall>,
}

/// How the model ended a step, known once its stream finished.
#[derive(Debug, Clone)]
pub(in crate::core) struct StepEnd {
    pub(in crate::core) finish_reason: FinishReason,
    /// The model called tools, so another step may follow.
    pub(in crate::core) called_tools: bool,
    /// The names of the tools it called, in order.
    pub(in crate::core) tool_names: Vec<String>,
    /// What the provider reported for the step's call.
    pub(in crate::core) usage: Option<Usage>,
    /// A call waits for a person (a browser tool or an approval): the turn
    /// ends after this step and resumes as a continuation.
    pub(in crate::core) waits_on_person: bool,
}

/// What the running turn is doing. Each phase holds exactly what it needs.
#[derive(Debug)]
pub(in crate::core) enum TurnPhase {
    /// The host runs the agent's `before_turn` (`Effect::PrepareTurn` with
    /// this id); nothing else happens until `Event::TurnPrepared` answers.
    Preparing(CallId),
    /// A continuation first runs the calls a person approved; the model
    /// speaks once they are done.
    RunningApprovedCalls,
    /// The step's model call streams.
    CallingModel(ModelCall),
    /// The host's summarizer writes a summary of what the context policy
    /// leaves out (`Effect::Summarize` with this id) before the step's model
    /// call; `Event::Summarized` answers, then the call is made.
    Summarizing {
        call: CallId,
        request: StepRequest,
        through_seq: u64,
    },
    /// The step's model call failed transiently; `Timer::ModelRetry` sends it again.
    WaitingToRetry(StepRequest),
    /// The model finished the step; its tool calls run and the step ends
    /// when the last one is done.
    RunningTools(StepEnd),
}

/// A tool run in flight: its call and, for a client tool run by a parent
/// agent, the channel it went to. While the host's `before_tool_call`
/// decides (`Effect::DecideToolCall`), `deciding` holds the call as the hook
/// sees it and nothing runs yet.
#[derive(Debug, Clone)]
pub(in crate::core) struct RunningTool {
    pub(in crate::core) call: CallId,
    pub(in crate::core) tool_name: String,
    pub(in crate::core) remote: Option<ConnId>,
    pub(in crate::core) deciding: Option<ToolCall>,
}

/// The open text and reasoning parts of the answer and its part counter.
#[derive(Debug, Default)]
pub(in crate::core) struct OpenParts {
    pub(in crate::core) text: Option<String>,
    pub(in crate::core) reasoning: Option<String>,
    next_part: u32,
}

impl OpenParts {
    pub(in crate::core) fn new_id(&mut self, prefix: &str) -> String {
        self.next_part += 1;
        format!("{prefix}-{}", self.next_part)
    }
}

#[derive(Debug)]
pub(in crate::core) struct ActiveTurn {
    pub turn: QueuedTurn,
    pub message: UIMessage,
    /// The answer's place in the transcript, reserved when the turn starts so
    /// it follows the messages it answers even if newer ones arrive meanwhile.
    pub(in crate::core) seq: u64,
    pub(in crate::core) settings: TurnSettings,
    /// Model steps begun so far.
    pub(in crate::core) steps: u32,
    pub(in crate::core) phase: TurnPhase,
    pub(in crate::core) running_tools: BTreeMap<String, RunningTool>,
    pub(in crate::core) open: OpenParts,
    pub log: ChunkLog,
    /// Bytes of text, reasoning and tool arguments the model streamed in this turn.
    pub(in crate::core) model_bytes: usize,
    /// When the turn started (for its log line).
    pub(in crate::core) started_at: u64,
    /// Tokens the turn's steps used so far, as the provider reported them.
    pub(in crate::core) usage: Option<Usage>,
    /// The current step's settings, when `before_step` changed the turn's.
    pub(in crate::core) step_settings: Option<TurnSettings>,
    /// The tools the model called in the last step that ended.
    pub(in crate::core) last_step_tools: Vec<String>,
}

impl ActiveTurn {
    /// The settings of the current step: the turn's, with what
    /// `before_step` changed for it.
    pub(in crate::core) fn step_settings(&self) -> &TurnSettings {
        self.step_settings.as_ref().unwrap_or(&self.settings)
    }

    pub(in crate::core) fn continuation(&self) -> bool {
        self.turn.is_continuation()
    }

    /// The model call in flight, if the turn is calling the model.
    pub(in crate::core) fn model_call(&self) -> Option<&ModelCall> {
        match &self.phase {
            TurnPhase::CallingModel(call) => Some(call),
            _ => None,
        }
    }

    pub(in crate::core) fn model_call_mut(&mut self) -> Option<&mut ModelCall> {
        match &mut self.phase {
            TurnPhase::CallingModel(call) => Some(call),
            _ => None,
        }
    }

    /// Moves to `next`: the model call in flight (if any) is returned so it
    /// can be aborted.
    pub(in crate::core::turn) fn replace_phase(&mut self, next: TurnPhase) -> Option<CallId> {
        match std::mem::replace(&mut self.phase, next) {
            TurnPhase::CallingModel(call) => Some(call.id),
            _ => None,
        }
    }
}

/// What the core remembers of the last turn it closed, in case the batch
/// that closed it fails.
#[derive(Debug, Clone, PartialEq)]
pub struct ClosedTurn {
    pub request_id: String,
    pub message_ids: Vec<String>,
    pub continuation: bool,
}

/// Every logged chunk body of the running stream, and how much of it is durable.
#[derive(Debug, Default)]
pub struct ChunkLog {
    pub bodies: Vec<Rc<str>>,
    pub(in crate::core::turn) flushed: usize,
    /// A text or reasoning delta was streamed.
    pub(in crate::core) saw_delta: bool,
}
