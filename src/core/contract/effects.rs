//! What the core asks its host to do, and what the host tells the core.
//!
//! The core never performs I/O: every socket send, storage write, model call,
//! and tool run is an `Effect`; every result comes back as an `Event`. Timers
//! live in the core's own table (`timers.rs`).

use std::rc::Rc;

use serde_json::Value;

use crate::model::{ModelEvent, ModelFailure, ModelRequest};
use crate::protocol::UIMessage;

use crate::core::rows::persisted::{ConfigKey, StreamRecord, SubmissionRecord};
use crate::core::vocab::hooks::{
    ChatError, ChatResponse, ErrorDisposition, SummaryRequest, ToolCall, ToolCallDecision,
    ToolOutcome,
};
use crate::core::vocab::ids::{CallId, ConnId};
use crate::core::vocab::message_metadata::StepReport;
use crate::core::vocab::tool_spec::ToolSpec;
use crate::core::vocab::turn_config::{TurnConfig, TurnContext};

/// How a schedule's run ended, as the host reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScheduleOutcome {
    /// The callback returned (`Ok`).
    Done,
    /// The callback returned an error: tried again after a pause while
    /// attempts remain.
    Failed(String),
    /// It could not start (no callback of that name, a payload its type
    /// does not read): not tried again.
    Unrunnable(String),
}

impl ScheduleOutcome {
    /// How a callback that started ended: returned, or failed with its error.
    pub fn of(result: Result<(), String>) -> ScheduleOutcome {
        match result {
            Ok(()) => ScheduleOutcome::Done,
            Err(e) => ScheduleOutcome::Failed(e),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// Schedule run `run` (`Effect::RunSchedule`) ended.
    ScheduleRan {
        run: String,
        outcome: ScheduleOutcome,
    },
    /// A socket was accepted; the core answers with the connect frames.
    Connected {
        conn: ConnId,
        /// Who opened it (the client's address), when the host knows: a
        /// new socket of a client starts from the request-rate window its
        /// closed sockets left.
        client: Option<String>,
    },
    /// A socket that was already open when this instance started (after hibernation).
    Adopted {
        conn: ConnId,
        /// What the core last noted for it (`Effect::NoteListMatches`):
        /// its message list was the store's. `false` when never noted.
        list_matches: bool,
    },
    Frame {
        conn: ConnId,
        text: String,
    },
    /// A text frame from a readonly connection (`Connection::set_readonly`):
    /// it watches every stream and state change, and whatever would change
    /// the agent (a chat request, a tool result or approval, a clear, a
    /// cancel, a state set, a callable not marked readonly-safe) is refused
    /// with the protocol's error frame; nothing changes.
    ReadonlyFrame {
        conn: ConnId,
        text: String,
    },
    /// A frame over the frame limit, refused before its text was copied in:
    /// its size and its first bytes (for the request id to answer on).
    FrameTooLarge {
        conn: ConnId,
        bytes: usize,
        head: String,
    },
    /// A text frame from a parent agent's channel `conn` (already `Adopted`):
    /// a sub-agent turn, a tool result or a cancel (see protocol/channel.rs).
    ChannelFrame {
        conn: ConnId,
        text: String,
    },
    Disconnected {
        conn: ConnId,
    },
    Model {
        call: CallId,
        event: ModelEvent,
    },
    /// The model call failed before or during streaming.
    ModelFailed {
        call: CallId,
        failure: ModelFailure,
    },
    ToolDone {
        call: CallId,
        tool_call_id: String,
        result: Result<Value, String>,
    },
    /// The durable alarm fired (in-isolate timers come back through
    /// `Core::handle_timeout`).
    Timer(Timer),
    /// The instance started and adopted its open sockets: recover cut turns.
    Woke,
    /// The agent's `on_chat_response` returned for the turn `request_id`
    /// (`Effect::TurnEnded`): it is no longer owed.
    ChatResponseDelivered {
        request_id: String,
    },
    /// The host's answer to `Effect::DecideToolCall`: what `before_tool_call`
    /// decided for the call.
    ToolCallDecided {
        call: CallId,
        decision: ToolCallDecision,
    },
    /// The host's answer to `Effect::RewriteToolResult`: the result as
    /// `after_tool_call` left it.
    ToolResultRewritten {
        call: CallId,
        result: ToolOutcome,
    },
    /// The host's answer to `Effect::DecideChatError`: what `on_chat_error`
    /// decided for the failed turn.
    ChatErrorDecided {
        call: CallId,
        disposition: ErrorDisposition,
    },
    /// The host's answer to `Effect::Summarize`: the summary, or `None` to
    /// leave messages out without one.
    Summarized {
        call: CallId,
        summary: Option<String>,
    },
    /// A programmatic turn: the agent's own `chat()` (no channel) or a parent
    /// agent's over channel `conn` (what a `ChannelFrame` chat becomes).
    /// `tools` are client tools for this turn only; with `executor` their
    /// calls are sent back on the channel to run.
    ProgrammaticChat {
        conn: Option<ConnId>,
        message: UIMessage,
        tools: Vec<crate::protocol::ClientToolSchema>,
        executor: bool,
    },
    /// The agent's own `clear_messages()`: like a tab's clear, told to every tab.
    ClearHistory,
    /// The instance name a request's path names (`/agents/<class>/<name>`).
    Named {
        name: String,
    },
    /// The host's answer to `Effect::PrepareTurn`: what `before_turn` chose
    /// (boxed: a turn's config is many times the size of any other event).
    TurnPrepared {
        turn: CallId,
        config: Box<TurnConfig>,
    },
    /// A run of `Store` effects could not be committed and was rolled back
    /// whole (`ops`, in order); the host held back the frames queued after
    /// it up to the next write.
    StoreWriteFailed {
        ops: Vec<StoreOp>,
        error: String,
    },
    /// The host's answer to `AuthorCall::RunCallable`: the callable's result
    /// or the error its caller is told.
    CallableDone {
        conn: ConnId,
        id: String,
        result: Result<Value, String>,
    },
    /// The agent's own alarm is due at `at_ms` from now on (replacing one
    /// already scheduled), or cancelled (`None`).
    AuthorAlarmSet {
        at_ms: Option<u64>,
    },
    /// The MCP servers changed: `frame` is the `cf_agent_mcp_servers` frame
    /// tabs get, `tools` the servers' tools offered from the next model call.
    McpServersChanged {
        frame: String,
        tools: Vec<ToolSpec>,
    },
}

/// The closed set of timers the core arms (in its own table, see `timers.rs`).
/// The host wakes the core for in-isolate ones and maps the durable one onto
/// the Durable Object alarm, which also fires in a restarted process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Timer {
    /// Coalesces tool results into one automatic continuation.
    Continuation,
    /// A debounced submit waits out its quiet window.
    Debounce,
    /// Buffered stream chunks are written to the chunk log.
    FlushChunks,
    /// Keeps a running turn's durable alarm ahead, so an evicted turn is
    /// woken and recovered without any client. `Event::Timer(Heartbeat)` is
    /// what a host sends whenever the durable alarm fires.
    Heartbeat,
    /// The alarm the agent's own code scheduled (`author_alarm.rs`); durable,
    /// fired when the durable alarm finds it due.
    AuthorAlarm,
    /// The earliest of the author's schedules (`admit/schedules.rs`);
    /// durable, fired when the durable alarm finds it due.
    Schedules,
    /// Checks that the running model stream is still producing events.
    ModelStall,
    /// A model call that failed transiently is tried again.
    ModelRetry,
    /// A model call still streaming this long ends the turn (a provider that
    /// trickles forever never trips the stall check).
    ModelDeadline,
    /// The deadline of tool run `CallId` (a server tool, or a client tool a
    /// parent agent runs): when it fires first, the call ends as a tool error.
    ToolDeadline(CallId),
}

impl Timer {
    /// Must survive the isolate (mapped onto the durable alarm).
    pub fn is_durable(self) -> bool {
        matches!(
            self,
            Timer::Heartbeat | Timer::AuthorAlarm | Timer::Schedules
        )
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Send the same text to each listed connection.
    Send {
        to: Vec<ConnId>,
        frame: Rc<str>,
    },
    /// Keep with the socket whether its message list is the store's, so
    /// that it outlives hibernation (given back in `Event::Adopted`).
    NoteListMatches {
        conn: ConnId,
        matches: bool,
    },
    /// Send a transcript frame to each listed connection, its older part
    /// read from the store as it is sent (`TranscriptFrame::read`), after
    /// the writes before it in the same run.
    SendTranscript {
        to: Vec<ConnId>,
        frame: crate::core::contract::transcript_frame::TranscriptFrame,
    },
    Store(StoreOp),
    /// Ask the model and feed its streamed reply back as `Event::Model`.
    /// (The request is boxed: it is many times the size of any other effect.)
    CallModel {
        call: CallId,
        request: Box<ModelRequest>,
    },
    AbortModel {
        call: CallId,
    },
    RunTool {
        call: CallId,
        tool_call_id: String,
        tool_name: String,
        input: Value,
    },
    /// The alarm the agent's own code scheduled is due: run its `on_alarm`
    /// (once; its stored row is already gone).
    AuthorAlarm,
    /// Schedule `name` is due: run the definition's callback `callback`
    /// with `payload` (its stored row already moved on), then answer
    /// `Event::ScheduleRan` with `run`. A run the host never answers (the
    /// isolate stopped) starts again after a restart, up to
    /// `MAX_SCHEDULE_ATTEMPTS` in all. `attempt` counts the tries of this
    /// run, this one included (1 for the first; stored with the run, so a
    /// run cut by an eviction starts again with the next number).
    RunSchedule {
        run: String,
        name: String,
        callback: String,
        payload: Value,
        attempt: u32,
    },
    /// Ask the parent agent on channel `conn` to run one of this turn's client
    /// tools; its answer comes back as `Event::ToolDone`.
    CallRemoteTool {
        call: CallId,
        conn: ConnId,
        tool_call_id: String,
        tool_name: String,
        input: Value,
    },
    /// Run the agent's `before_turn` for the turn starting and answer with
    /// `Event::TurnPrepared { turn }`; the turn calls no model until then.
    PrepareTurn {
        turn: CallId,
        context: TurnContext,
    },
    /// Run the agent's `before_tool_call` on `tool` and answer with
    /// `Event::ToolCallDecided { call }` (`CoreConfig::decide_tool_calls`).
    DecideToolCall {
        call: CallId,
        tool: ToolCall,
    },
    /// Run the agent's `after_tool_call` on `tool`'s `result` and answer with
    /// `Event::ToolResultRewritten { call }` (`CoreConfig::rewrite_tool_results`).
    RewriteToolResult {
        call: CallId,
        tool: ToolCall,
        result: Box<ToolOutcome>,
    },
    /// Run the agent's `on_chat_error` on `error` and answer with
    /// `Event::ChatErrorDecided { call }` (`CoreConfig::decide_chat_errors`).
    DecideChatError {
        call: CallId,
        error: ChatError,
    },
    /// Summarize what the context policy leaves out before the step's model
    /// call, and answer with `Event::Summarized { call }`
    /// (`CoreConfig::summarize_by_host`).
    Summarize {
        call: CallId,
        request: SummaryRequest,
    },
    /// A turn ended (its answer stored first): the agent's `on_chat_response`.
    /// Answer with `Event::ChatResponseDelivered` once the hook returned;
    /// until then the report is stored and sent again after a restart.
    TurnEnded(ChatResponse),
    /// A model step ended: the agent's `on_step_end`.
    StepEnded(StepReport),
    /// These server tool runs were given up (their turn was cancelled or
    /// cleared, or their deadline passed): fire their abort signals.
    AbortTools {
        calls: Vec<CallId>,
    },
    /// Run the author's code for the agent as a whole (`author_calls.rs`).
    Author(crate::core::contract::author_calls::AuthorCall),
}

/// Durable writes, in order. Writes produced by one event belong together.
#[derive(Debug, Clone, PartialEq)]
pub enum StoreOp {
    /// Insert or replace a message; `seq` orders the transcript.
    PutMessage {
        seq: u64,
        message: UIMessage,
    },
    DeleteMessage {
        id: String,
    },
    /// Forget every message placed before `seq` (the history cap: the
    /// oldest messages beyond it go, with their tool call index rows).
    DropMessagesBefore {
        seq: u64,
    },
    /// Forget history, streams, config and turn state.
    ClearAll,
    OpenStream(StreamRecord),
    AppendChunks {
        request_id: String,
        first_seq: u64,
        bodies: Vec<Rc<str>>,
    },
    /// The stream ended: its chunk log is no longer needed.
    CloseStream {
        request_id: String,
    },
    PutConfig {
        key: ConfigKey,
        value: String,
    },
    DeleteConfig {
        key: ConfigKey,
    },
    /// Insert or replace a submission's row (`chat_submissions`).
    PutSubmission(SubmissionRecord),
    /// Forget a finished submission (the oldest beyond the kept number).
    DeleteSubmission {
        id: String,
    },
    /// Insert or replace the custom body (JSON object text) of the queued
    /// turn `request_id` (`chat_queued_bodies`; the queue row only says
    /// that it has one).
    PutQueuedBody {
        request_id: String,
        body: String,
    },
    /// The queued turn `request_id` left the queue: its body row goes.
    DeleteQueuedBody {
        request_id: String,
    },
}
