//! What the core asks its host to do, and what the host tells the core.
//!
//! The core never performs I/O: every socket send, storage write, model call,
//! tool run and timer is an `Effect`; every result comes back as an `Event`.

use std::rc::Rc;

use serde_json::Value;

use crate::model::{ModelEvent, ModelFailure};
use crate::protocol::UIMessage;

/// A connection id: the `_pk` the client chose (kept in the socket attachment).
pub type ConnId = Rc<str>;
/// Identifies one model call or one tool run started by the core.
pub type CallId = u64;

#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A socket was accepted; the core answers with the connect frames.
    Connected {
        conn: ConnId,
    },
    /// A socket that was already open when this instance started (after hibernation).
    Adopted {
        conn: ConnId,
    },
    Frame {
        conn: ConnId,
        text: String,
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
    Timer(Timer),
    /// The instance started and adopted its open sockets: recover cut turns.
    Woke,
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
}

/// The closed set of timers the core arms. The host maps them onto in-isolate
/// timers (short) and the Durable Object alarm (anything that must survive eviction).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Timer {
    /// Coalesces tool results into one automatic continuation.
    Continuation,
    /// A debounced submit waits out its quiet window.
    Debounce,
    /// Buffered stream chunks are written to the chunk log.
    FlushChunks,
    /// Keeps a running turn's durable alarm ahead; the host maps it onto the
    /// Durable Object alarm, which also fires in a restarted process.
    Heartbeat,
    /// Checks that the running model stream is still producing events.
    ModelStall,
    /// A model call that failed transiently is tried again.
    ModelRetry,
}

impl Timer {
    /// Must survive the isolate (mapped onto the durable alarm).
    pub fn is_durable(self) -> bool {
        self == Timer::Heartbeat
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Send the same text to each listed connection.
    Send {
        to: Vec<ConnId>,
        frame: Rc<str>,
    },
    Store(StoreOp),
    /// POST this Chat Completions body and feed the stream back as `Event::Model`.
    CallModel {
        call: CallId,
        body: String,
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
    /// Ask the parent agent on channel `conn` to run one of this turn's client
    /// tools; its answer comes back as `Event::ToolDone`.
    CallRemoteTool {
        call: CallId,
        conn: ConnId,
        tool_call_id: String,
        tool_name: String,
        input: Value,
    },
    SetTimer {
        timer: Timer,
        at_ms: u64,
    },
    ClearTimer {
        timer: Timer,
    },
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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigKey {
    ClientTools,
    CustomBody,
    TerminalError,
    /// The `<name>` the agent is addressed by (for the identity frame).
    InstanceName,
    /// The budget of the recovery in progress.
    Recovery,
    /// Turns accepted but not started yet.
    Queue,
    /// Approvals given for calls in the answer still streaming (no chunk
    /// records them), until that answer is stored.
    StreamApprovals,
}

impl ConfigKey {
    pub fn as_str(self) -> &'static str {
        match self {
            ConfigKey::ClientTools => "last_client_tools",
            ConfigKey::CustomBody => "last_body",
            ConfigKey::TerminalError => "terminal_error",
            ConfigKey::InstanceName => "instance_name",
            ConfigKey::Recovery => "recovery",
            ConfigKey::Queue => "queue",
            ConfigKey::StreamApprovals => "stream_approvals",
        }
    }
}

/// The write-ahead record of a streaming turn.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StreamRecord {
    pub request_id: String,
    pub message_id: String,
    pub continuation: bool,
    pub origin_message_ids: Vec<String>,
    pub started_at: u64,
    /// The first interrupted request of a recovery chain, when this is a recovery turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_root: Option<String>,
}
