//! The running turn's state: its queued request, the answer being written,
//! its settings, its phase (preparing, running approved calls, calling the
//! model, waiting to retry, running tools) with what each phase needs, the
//! tool runs in flight and its chunk log. Transitions between phases are
//! made in `phases.rs`.

use std::collections::BTreeMap;
use std::rc::Rc;

use crate::model::{FinishReason, Usage};
use crate::protocol::{ClientToolSchema, UIMessage};

use crate::core::data::accumulator;
use crate::core::data::queue::QueuedTurn;
use crate::core::vocab::hooks::{ToolCall, ToolOutcome};
use crate::core::vocab::ids::{CallId, ConnId};
use crate::core::vocab::turn_config::TurnSettings;

/// A tool call the model made in the current step.
#[derive(Debug)]
pub(in crate::core) struct StepCall {
    pub(in crate::core::turn) id: String,
    pub(in crate::core::turn) name: String,
    pub(in crate::core::turn) arguments: String,
}

/// How a step's request to the model is built, and how many times it was
/// sent again so far. The request itself goes to the host and is not kept:
/// a retry builds it again from the transcript (which a call that streamed
/// nothing leaves as it was), so a long context is not held in memory for
/// the length of the call.
#[derive(Debug, Clone)]
pub(in crate::core) struct StepRequest {
    /// The context budget the request is built within (bytes; 0: no bound).
    pub(in crate::core::turn) budget: usize,
    /// The estimated size of the messages the last call sent.
    pub(in crate::core::turn) sent_bytes: usize,
    pub(in crate::core::turn) retries: u32,
    /// The request was built again with less context after the provider
    /// refused it as too long (which happens at most once a step).
    pub(in crate::core::turn) narrowed: bool,
    /// The last call sent files (a user's `file` parts).
    pub(in crate::core::turn) sent_files: bool,
    /// The request is built with every file as a text note: the provider
    /// refused it with its files (which happens at most once a step).
    pub(in crate::core::turn) without_files: bool,
}

/// The step's model call in flight.
#[derive(Debug)]
pub(in crate::core) struct ModelCall {
    pub(in crate::core::turn) id: CallId,
    pub(in crate::core::turn) request: StepRequest,
    /// The call produced at least one event: it is never sent again.
    pub(in crate::core::turn) streamed: bool,
    /// Tool calls streamed so far, by the provider's index.
    pub(in crate::core::turn) calls: BTreeMap<u32, StepCall>,
    /// The turn's streamed bytes when the call started (what it streamed
    /// estimates its output when the provider reports no usage).
    pub(in crate::core::turn) streamed_from: usize,
}

/// A step's model call that failed for good, while `on_chat_error` decides:
/// the request to send again, the error the turn ends with, and the
/// backoff a retry waits at least (`None`: it may not be sent again).
#[derive(Debug, Clone)]
pub(in crate::core) struct FailedCall {
    pub(in crate::core::turn) request: StepRequest,
    pub(in crate::core::turn) text: String,
    pub(in crate::core::turn) backoff: Option<u64>,
}

/// How the model ended a step, known once its stream finished.
#[derive(Debug, Clone)]
pub(in crate::core) struct StepEnd {
    pub(in crate::core::turn) finish_reason: FinishReason,
    /// The model called tools, so another step may follow.
    pub(in crate::core::turn) called_tools: bool,
    /// The names of the tools it called, in order.
    pub(in crate::core::turn) tool_names: Vec<String>,
    /// What the provider reported for the step's call.
    pub(in crate::core::turn) usage: Option<Usage>,
    /// A call waits for a person (a browser tool or an approval): the turn
    /// ends after this step and resumes as a continuation.
    pub(in crate::core::turn) waits_on_person: bool,
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
    /// The step's model call failed for good and the host runs the agent's
    /// `on_chat_error` (`Effect::DecideChatError` with this id);
    /// `Event::ChatErrorDecided` answers: the call is sent again or the turn
    /// ends with the error.
    DecidingError { call: CallId, failed: FailedCall },
    /// The model finished the step; its tool calls run and the step ends
    /// when the last one is done.
    RunningTools(StepEnd),
}

/// A tool run in flight: its call and, for a client tool run by a parent
/// agent, the channel it went to. While the host's `before_tool_call`
/// decides (`Effect::DecideToolCall`), `deciding` holds the call as the hook
/// sees it and nothing runs yet. While the host's `after_tool_call` looks at
/// a result (`Effect::RewriteToolResult`), `rewriting` holds the result as it
/// came, and nothing is shown or stored yet.
#[derive(Debug, Clone)]
pub(in crate::core) struct RunningTool {
    pub(in crate::core::turn) call: CallId,
    pub(in crate::core::turn) tool_name: String,
    pub(in crate::core::turn) remote: Option<ConnId>,
    pub(in crate::core::turn) deciding: Option<ToolCall>,
    pub(in crate::core::turn) rewriting: Option<ToolOutcome>,
}

/// The open text and reasoning parts of the answer and its part counter.
#[derive(Debug, Default)]
pub(in crate::core) struct OpenParts {
    pub(in crate::core::turn) text: Option<String>,
    pub(in crate::core::turn) reasoning: Option<String>,
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
    pub(in crate::core::turn) turn: QueuedTurn,
    pub(in crate::core::turn) message: UIMessage,
    /// The answer's place in the transcript, reserved when the turn starts so
    /// it follows the messages it answers even if newer ones arrive meanwhile.
    pub(in crate::core::turn) seq: u64,
    pub(in crate::core::turn) settings: TurnSettings,
    /// Model steps begun so far.
    pub(in crate::core::turn) steps: u32,
    pub(in crate::core::turn) phase: TurnPhase,
    pub(in crate::core::turn) running_tools: BTreeMap<String, RunningTool>,
    pub(in crate::core::turn) open: OpenParts,
    pub(in crate::core::turn) log: ChunkLog,
    /// Bytes of text, reasoning and tool arguments the model streamed in this turn.
    pub(in crate::core::turn) model_bytes: usize,
    /// When the turn started (for its log line).
    pub(in crate::core::turn) started_at: u64,
    /// Tokens the turn's steps used so far, as the provider reported them.
    pub(in crate::core::turn) usage: Option<Usage>,
    /// The current step's settings, when `before_step` changed the turn's.
    pub(in crate::core::turn) step_settings: Option<TurnSettings>,
    /// The tools the model called in the last step that ended.
    pub(in crate::core::turn) last_step_tools: Vec<String>,
    /// Whose token budgets the turn's model calls spend.
    pub(in crate::core::turn) spender: crate::core::data::token_budget::Spender,
    /// The tokens the turn's model calls spent so far (its own budget).
    pub(in crate::core::turn) spent: crate::core::data::token_budget::TokenLedger,
    /// The requester was sent the messages it holds in another form than
    /// the stored one when the model began to answer (`turn/end_frames.rs`).
    pub(in crate::core::turn) requester_updated: bool,
}

impl ActiveTurn {
    /// The queued request the turn answers.
    pub(in crate::core) fn turn(&self) -> &QueuedTurn {
        &self.turn
    }

    /// The answer being written.
    pub(in crate::core) fn message(&self) -> &UIMessage {
        &self.message
    }

    /// The answer's place in the transcript.
    pub(in crate::core) fn seq(&self) -> u64 {
        self.seq
    }

    /// Every chunk body the stream logged so far, oldest first.
    pub(in crate::core) fn chunk_bodies(&self) -> &[Rc<str>] {
        &self.log.bodies
    }

    /// The tool call id of the running tool of `call` that `waits` says is
    /// waiting (for a decision, a rewrite), if any.
    pub(in crate::core::turn) fn running_tool_waiting(
        &self,
        call: CallId,
        waits: impl Fn(&RunningTool) -> bool,
    ) -> Option<String> {
        self.running_tools
            .iter()
            .find(|(_, run)| run.call == call && waits(run))
            .map(|(id, _)| id.clone())
    }

    /// The stream was cut: a server tool call whose run died gets an error
    /// result (calls waiting for a person are left as they are).
    pub(in crate::core) fn repair_dead_server_calls(&mut self, client_tools: &[ClientToolSchema]) {
        accumulator::repair_dead_server_calls(client_tools, &mut self.message);
    }

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
    pub(in crate::core::turn) bodies: Vec<Rc<str>>,
    pub(in crate::core::turn) flushed: usize,
    /// A text or reasoning delta was streamed.
    pub(in crate::core::turn) saw_delta: bool,
}
