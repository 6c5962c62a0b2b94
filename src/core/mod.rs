//! The agent's behaviour as plain Rust: no `worker` types, no I/O, no clock.
//!
//! `Core::handle(event, now_ms)` takes one event (a frame, a model chunk, a
//! tool result, a timer) and queues effects (frames to send, rows to write,
//! model calls, tool runs, timers) that the host drains with `take_effects`.
//! Durable facts are queued as `Store` effects before the effects that depend
//! on them, so a core rebuilt from the store after an eviction carries on.

pub mod accumulator;
pub mod channel;
mod chat;
pub mod config;
pub mod connections;
pub mod context;
pub mod effects;
pub mod ids;
pub mod limits;
mod model_call;
mod recovery;
mod resume;
mod stream;
mod tool_results;
pub mod transcript;
pub mod turns;

use std::rc::Rc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::protocol::{
    parse_client_frame, server, ClientFrame, ClientToolSchema, FrameError, UIMessage,
};

pub use config::{
    ApprovalRule, Concurrency, CoreConfig, FlushPolicy, RecoveryConfig, RetryPolicy, ToolSpec,
    TurnConfig, TurnContext, TurnTrigger,
};
pub use effects::{CallId, ConfigKey, ConnId, Effect, Event, StoreOp, StreamRecord, Timer};
pub use ids::{CountingIds, IdKind, IdSource};
pub use limits::Limits;
pub use transcript::Entry;

use connections::Connections;
use stream::ActiveTurn;
use transcript::Transcript;
use turns::TurnQueue;

/// The last turn ended in an error: kept so a reconnecting tab learns of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TerminalError {
    pub request_id: String,
    pub text: String,
    pub message_ids: Vec<String>,
    /// What the failed stream sent before the error, replayed before it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chunks: Vec<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub continuation: bool,
}

/// A stream left open by an instance that died mid-turn.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenStream {
    pub record: StreamRecord,
    pub chunks: Vec<String>,
}

/// Everything the core needs from storage to start (or restart).
#[derive(Debug, Clone, Default)]
pub struct StoredState {
    pub messages: Vec<Entry>,
    pub client_tools: Vec<ClientToolSchema>,
    pub body: Map<String, Value>,
    pub terminal_error: Option<TerminalError>,
    pub open_streams: Vec<OpenStream>,
    /// The budget of a recovery in progress and whether an automatic
    /// continuation is owed (JSON), if any.
    pub recovery: Option<String>,
    /// Turns accepted but not started (JSON), if any.
    pub queue: Option<String>,
    /// Approvals given while the answer holding them streamed (JSON), if any.
    pub stream_approvals: Option<String>,
}

impl StoredState {
    /// Fills the config-backed fields from `value(key)`, the stored text of
    /// each [`ConfigKey`]. Values that no longer parse are dropped (a
    /// missing config is the same as a fresh agent's), never fatal.
    pub fn read_config<E>(
        &mut self,
        mut value: impl FnMut(ConfigKey) -> Result<Option<String>, E>,
    ) -> Result<(), E> {
        if let Some(tools) = value(ConfigKey::ClientTools)? {
            self.client_tools = serde_json::from_str(&tools).unwrap_or_default();
        }
        if let Some(body) = value(ConfigKey::CustomBody)? {
            if let Ok(Value::Object(map)) = serde_json::from_str(&body) {
                self.body = map;
            }
        }
        if let Some(record) = value(ConfigKey::TerminalError)? {
            self.terminal_error = serde_json::from_str(&record).ok();
        }
        self.recovery = value(ConfigKey::Recovery)?;
        self.queue = value(ConfigKey::Queue)?;
        self.stream_approvals = value(ConfigKey::StreamApprovals)?;
        Ok(())
    }
}

/// An automatic continuation that has been asked for but not yet queued.
#[derive(Debug, Clone)]
struct PendingContinuation {
    request_id: String,
    owner: Option<ConnId>,
}

pub struct Core {
    config: CoreConfig,
    ids: Box<dyn IdSource>,
    now: u64,
    transcript: Transcript,
    conns: Connections,
    queue: TurnQueue,
    active: Option<ActiveTurn>,
    continuation: Option<PendingContinuation>,
    client_tools: Vec<ClientToolSchema>,
    body: Map<String, Value>,
    terminal_error: Option<TerminalError>,
    /// A stream cut by an eviction, replayable until a new turn streams.
    orphan: Option<OpenStream>,
    /// Streams found open at start, recovered on `Event::Woke`.
    cut_streams: Vec<OpenStream>,
    /// Root request id of the recovery in progress (tabs are told on connect).
    recovering: Option<String>,
    recovery_budget: Option<recovery::RecoveryBudget>,
    /// Approvals of calls in the streaming answer, written down until it is stored.
    stream_approvals: Option<tool_results::StreamApprovals>,
    /// Request ids of the last few ended turns with their `messageIds`.
    finished: std::collections::VecDeque<(String, Vec<String>)>,
    next_call: CallId,
    effects: Vec<Effect>,
}

impl Core {
    pub fn new(
        config: CoreConfig,
        stored: StoredState,
        ids: Box<dyn IdSource>,
        now_ms: u64,
    ) -> Core {
        let (recovery_budget, continuation_owed) = recovery::load(stored.recovery.as_deref());
        let mut ids = ids;
        // A continuation asked for before the restart is still owed.
        let continuation = continuation_owed.then(|| PendingContinuation {
            request_id: ids.new_id(IdKind::Request),
            owner: None,
        });
        Core {
            config,
            ids,
            now: now_ms,
            transcript: Transcript::from_entries(stored.messages),
            conns: Connections::default(),
            queue: restored_queue(stored.queue.as_deref()),
            active: None,
            continuation,
            client_tools: stored.client_tools,
            body: stored.body,
            terminal_error: stored.terminal_error,
            orphan: None,
            cut_streams: stored.open_streams,
            recovering: None,
            recovery_budget,
            stream_approvals: stored
                .stream_approvals
                .as_deref()
                .and_then(|v| serde_json::from_str(v).ok()),
            finished: Default::default(),
            next_call: 1,
            effects: Vec::new(),
        }
    }

    pub fn handle(&mut self, event: Event, now_ms: u64) {
        self.now = self.now.max(now_ms);
        match event {
            Event::Connected { conn } => self.on_connect(conn),
            Event::Adopted { conn } => self.conns.add(conn),
            Event::Frame { conn, text } => self.on_frame(conn, &text),
            Event::ChannelFrame { conn, text } => self.on_channel_frame(conn, &text),
            Event::Disconnected { conn } => {
                self.conns.remove(&conn);
                self.fail_remote_calls(&conn);
            }
            Event::Model { call, event } => self.on_model_event(call, event),
            Event::ModelFailed { call, failure } => self.on_model_failed(call, failure),
            Event::ToolDone {
                call,
                tool_call_id,
                result,
            } => self.on_tool_done(call, &tool_call_id, result),
            Event::Timer(timer) => self.on_timer(timer),
            Event::Woke => self.on_woke(),
            Event::ProgrammaticChat {
                conn,
                message,
                tools,
                executor,
            } => self.on_programmatic_chat(conn, message, tools, executor),
            Event::ClearHistory => self.on_clear(None),
        }
        self.write_down_queue();
    }

    /// Stores the queue after an event changed it (in the same write batch as
    /// the messages it refers to).
    fn write_down_queue(&mut self) {
        let Some(turns) = self.queue.take_changes() else {
            return;
        };
        if turns.is_empty() {
            self.store(StoreOp::DeleteConfig {
                key: ConfigKey::Queue,
            });
        } else {
            self.put_config(ConfigKey::Queue, &turns);
        }
    }

    /// Effects queued so far, in the order they must be carried out.
    pub fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.effects)
    }

    pub fn messages(&self) -> Vec<UIMessage> {
        self.transcript.messages()
    }

    pub fn config(&self) -> &CoreConfig {
        &self.config
    }

    /// The instance name learned from the request path (sent in the identity frame).
    pub fn set_name(&mut self, name: &str) {
        self.config.name = name.to_string();
    }

    /// True while a turn runs, waits in the queue, or a continuation is owed.
    pub fn is_busy(&self) -> bool {
        self.active.is_some() || !self.queue.is_empty() || self.continuation.is_some()
    }

    fn on_frame(&mut self, conn: ConnId, text: &str) {
        let limits = self.config.limits;
        if text.len() > limits.max_frame_bytes {
            let error = format!(
                "frame too large: {} bytes (limit {})",
                text.len(),
                limits.max_frame_bytes
            );
            self.reject(conn, limits::leading_request_id(text), &error);
            return;
        }
        match parse_client_frame(text) {
            Ok(ClientFrame::ChatRequest { id, request }) => {
                match limits.check_chat_request(&request) {
                    Ok(()) => self.on_chat_request(conn, id, request),
                    Err(error) => self.reject(conn, Some(id), &error),
                }
            }
            Ok(ClientFrame::ToolResult(result)) => match limits.check_tool_result(&result) {
                Ok(()) => self.on_tool_result(conn, result),
                Err(error) => self.reject(conn, None, &error),
            },
            Ok(ClientFrame::Cancel { id }) => self.on_cancel(&id),
            Ok(ClientFrame::Clear) => self.on_clear(Some(conn)),
            Ok(ClientFrame::ToolApproval {
                tool_call_id,
                approved,
                auto_continue,
            }) => self.on_tool_approval(conn, &tool_call_id, approved, auto_continue),
            Ok(ClientFrame::ResumeRequest { probe_id }) => self.on_resume_probe(conn, probe_id),
            Ok(ClientFrame::ResumeAck { id }) => self.on_resume_ack(conn, &id),
            // Documented ignores: transcript pushes (the server owns history),
            // non-POST chat requests, and frames that are not chat frames.
            Ok(ClientFrame::MessagesPush)
            | Ok(ClientFrame::NotPost)
            | Err(FrameError::Unknown(_)) => {}
            Err(error) => self.reject_frame(conn, text, &error.to_string()),
        }
    }

    /// A malformed chat frame: answer on its request id when it has one, so
    /// the requesting tab's stream ends with the error; otherwise an error frame.
    fn reject_frame(&mut self, conn: ConnId, text: &str, error: &str) {
        let id = serde_json::from_str::<Value>(text)
            .ok()
            .and_then(|v| v.get("id").and_then(Value::as_str).map(str::to_string));
        self.reject(conn, id, error);
    }

    /// Refuses a frame: on its request id (the tab's stream ends with the
    /// error) or, without one, with a `cf_agent_chat_error` frame. Nothing is stored.
    pub(crate) fn reject(&mut self, conn: ConnId, id: Option<String>, error: &str) {
        let frame = match id {
            // An over-long id is not echoed (the refusal would amplify it).
            Some(id) if !id.is_empty() && id.len() <= crate::protocol::client::MAX_ID_BYTES => {
                crate::protocol::ResponseFrame {
                    done: true,
                    error: true,
                    ..crate::protocol::ResponseFrame::new(&id, error)
                }
                .to_json()
            }
            _ => server::chat_error(error),
        };
        self.send_to(vec![conn], frame);
    }

    fn on_timer(&mut self, timer: Timer) {
        match timer {
            Timer::Continuation => self.try_start_continuation(),
            Timer::Debounce => self.pump(),
            Timer::FlushChunks => self.flush_chunks(),
            Timer::Heartbeat => self.on_heartbeat(),
            Timer::ModelStall => self.on_model_stall_check(),
            Timer::ModelRetry => self.retry_model_call(),
        }
    }

    // ---- small shared helpers ----

    fn send_to(&mut self, to: Vec<ConnId>, frame: String) {
        if !to.is_empty() {
            self.effects.push(Effect::Send {
                to,
                frame: Rc::from(frame),
            });
        }
    }

    fn store(&mut self, op: StoreOp) {
        self.effects.push(Effect::Store(op));
    }

    fn new_id(&mut self, kind: IdKind) -> String {
        self.ids.new_id(kind)
    }

    fn next_call_id(&mut self) -> CallId {
        let id = self.next_call;
        self.next_call += 1;
        id
    }

    fn set_timer(&mut self, timer: Timer, at_ms: u64) {
        self.effects.push(Effect::SetTimer { timer, at_ms });
    }

    fn put_entry(&mut self, entry: &Entry) {
        self.store(StoreOp::PutMessage {
            seq: entry.seq,
            message: entry.message.clone(),
        });
    }

    fn broadcast_transcript(&mut self, except: Option<&str>) {
        let frame = server::chat_messages(&self.transcript.messages(), false);
        let to = match except {
            Some(conn) => self.conns.all_except(conn),
            None => self.conns.all(),
        };
        self.send_to(to, frame);
    }

    fn put_config<T: Serialize>(&mut self, key: ConfigKey, value: &T) {
        let value = serde_json::to_string(value).unwrap_or_default();
        self.store(StoreOp::PutConfig { key, value });
    }
}

fn restored_queue(stored: Option<&str>) -> TurnQueue {
    let mut queue = TurnQueue::default();
    if let Some(turns) = stored.and_then(|text| serde_json::from_str(text).ok()) {
        queue.restore(turns);
    }
    queue
}
