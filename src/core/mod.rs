//! The agent's behaviour as plain Rust: no `worker` types, no I/O, no clock.
//!
//! `Core::handle(event, now_ms)` takes one event (a frame, a model chunk, a
//! tool result, the durable alarm) and queues effects (frames to send, rows
//! to write, model calls, tool runs) that the host drains with
//! `take_effects`. Timers live in the core's table: the host asks for the next
//! deadline (`poll_timeout`, `durable_deadline`) and hands expiries back
//! (`handle_timeout`). Durable facts are queued as `Store` effects before the
//! effects that depend on them, so a core rebuilt from the store after an
//! eviction carries on.
//!
//! Events and methods: whatever the core only reacts to, its caller waiting
//! for no answer, is an `Event` (frames, model output, tool results, timers,
//! the host's answers to round trips, and the agent's own `chat()`, clear,
//! alarm and MCP servers); a command whose caller needs its answer now
//! (`submit`, `cancel`, `set_state`, `schedule`, …) is a method, as is a read.
//! Every command runs through `command`, the epilogue an event has. The clock
//! is `handle_timeout` / `poll_timeout` / `durable_deadline`.
//!
//! Calls between the behaviour folders go one way, highest first:
//! `recovery` > `admit`, `callables` > `turn` > `synced_state`. A folder calls
//! only the face of a folder below it (listed in that folder's `mod.rs`); a
//! turn never calls up but hands back what happened (`turn/hand_back.rs`),
//! carried out by `settle` after each event and command. Admit's `pump` is
//! the one place that starts a turn. Both rules are checked by
//! `scripts/check-layers.py` (see `docs/design/architecture.md`).

// The layers, each importing only those below it (checked by
// `scripts/check-layers.py`): the vocabulary an author and a host speak, the
// durable row shapes, the host contract, data structures that never name
// `Core`, then the behaviours, one folder per concern, each with a face.
mod admit;
mod callables;
mod client_frames;
pub mod contract;
pub mod data;
mod logging;
mod mcp;
mod recovery;
pub mod rows;
mod settle;
mod synced_state;
mod turn;
pub mod vocab;

use std::rc::Rc;

use serde::Serialize;

use crate::protocol::UIMessage;

pub use crate::model::ToolChoice;
pub use callables::{
    MAX_CALLS_IN_FLIGHT, MAX_CALL_BYTES_IN_FLIGHT, MAX_CALL_FRAME_BYTES, MAX_CHUNK_BYTES,
};
pub use contract::author_calls::AuthorCall;
pub use contract::carry_out::{carry_out, Refused, Step};
pub use contract::effects::{Effect, Event, ScheduleOutcome, StoreOp, Timer};
pub use contract::history::{History, SNAPSHOT_BYTES, WINDOW_BYTES, WINDOW_MESSAGES};
pub use contract::log_event::{quoted, LogEvent, RecoveryStep, StartedBy, TurnEnd};
pub use contract::transcript_frame::TranscriptFrame;
pub use data::context::CONTINUE_INSTRUCTION;
pub use data::context_window::estimated_bytes;
pub use data::cron::Cron;
pub use data::schema_check::read_output as read_structured_output;
pub use data::submission_list::SubmissionFilter;
pub use rows::persisted::{
    AgentStateRow, ConfigKey, Entry, OpenStream, RecoveryBudget, StoredState, StreamApprovals,
    StreamRecord, SubmissionRecord, SubmissionStatus, TerminalError,
};
pub use rows::row_limits::{MAX_ROW_BYTES, PIECE_BYTES};
pub use rows::schedule_row::{Repeat, ScheduleRow, ScheduleRun};
pub use synced_state::MAX_STATE_FRAME_BYTES;
pub use vocab::agent_api::{AgentApi, StateSource, StateValidator};
pub use vocab::callable_spec::CallableSpec;
pub use vocab::config::{
    Concurrency, CoreConfig, CoreSettings, FlushPolicy, RecoveryConfig, RetryPolicy,
    DEFAULT_TOOL_TIMEOUT_MS,
};
pub use vocab::context_block::{ContextBlock, ContextBlockError, SET_CONTEXT_TOOL};
pub use vocab::context_policy::ContextPolicy;
pub use vocab::history_search::{HistoryHit, SEARCH_CONTEXT_TOOL};
pub use vocab::hooks::{
    ChatError, ChatResponse, CompactionInput, ErrorDisposition, Hooks, SummaryRequest, ToolCall,
    ToolCallDecision, ToolOutcome,
};
pub use vocab::ids::{CallId, ConnId, CountingIds, IdKind, IdSource};
pub use vocab::limits::{leading_request_id, Limits};
pub use vocab::log_level::LogLevel;
pub use vocab::message_metadata::{
    standard_message_metadata, usage_json, MessageMetadata, MetadataMoment, StepReport,
};
pub use vocab::schedule::{ScheduleError, ScheduleRequest, ScheduleWhen};
pub use vocab::step_config::{BeforeStep, StepConfig, StepContext};
pub use vocab::submit::{SubmitError, SubmitRequest, KEPT_SUBMISSIONS};
pub use vocab::tool_spec::{ApprovalRule, ToolSpec};
pub use vocab::turn_config::{
    StopWhen, TurnConfig, TurnContext, TurnSettings, TurnTrigger, TURN_CONTEXT_MESSAGES,
};

use admit::TabInputs;
use contract::history;
use data::connections::Connections;
use data::queue::PendingContinuation;
use data::queue::TurnQueue;
use data::timers::TimerTable;
use data::transcript::Transcript;
use recovery::RecoveryState;
use rows::shape;
use turn::{ActiveTurn, CompactionState};

pub struct Core {
    config: CoreConfig,
    ids: Box<dyn IdSource>,
    now: u64,
    transcript: Transcript,
    conns: Connections,
    queue: TurnQueue,
    active: Option<ActiveTurn>,
    continuation: Option<PendingContinuation>,
    /// The client tools and custom body the tabs last sent.
    inputs: TabInputs,
    /// Cut streams, the recovery in progress and its budget.
    recovery: RecoveryState,
    /// Approvals of calls in the streaming answer, written down until it is stored.
    stream_approvals: Option<StreamApprovals>,
    /// Tabs' tool results the host's `after_tool_call` looks at, by the call
    /// that asked it (`turn/tool_results.rs`).
    tab_results_rewriting: Vec<(CallId, ConnId, crate::protocol::ToolResult)>,
    /// Tabs' results that were waiting on `after_tool_call` when the
    /// previous instance stopped, asked about again on waking.
    restored_tab_results: Vec<crate::core::rows::persisted::PendingToolResult>,
    /// The last failed turn, the last turn closed and the last few ended requests.
    ended: turn::EndedTurns,
    /// Submissions of the agent's own code, oldest first.
    submissions: data::submission_list::Submissions,
    /// The compaction summary in use, whether the summarizer declined to make one,
    /// and the context cut last logged.
    compaction: CompactionState,
    next_call: CallId,
    timers: TimerTable,
    /// The agent's synced state.
    synced: synced_state::SyncedState,
    /// Callable methods running, per connection.
    calls: callables::CallsInFlight,
    request_rate: admit::RequestRate,
    /// The tokens the agent's model calls spent this hour and day.
    token_ledger: data::token_budget::TokenLedger,
    /// The tokens each caller spent today and each open socket so far.
    caller_budgets: data::token_budget::CallerBudgets,
    /// The text of each context block written so far, by name.
    context_texts: std::collections::BTreeMap<String, String>,
    /// The author's schedules (`admit/schedules.rs`).
    schedules: data::schedule_table::ScheduleTable,
    effects: Vec<Effect>,
    /// Log events for the host (see `log.rs`).
    log: Vec<LogEvent>,
    /// The MCP servers' frame and tools, as the host last set them.
    mcp: mcp::McpView,
    /// Ended turns' reports `on_chat_response` has not returned for
    /// (`turn/response_outbox.rs`).
    owed_responses: Vec<ChatResponse>,
    /// What turns handed back for the folders above them, carried out by
    /// `settle` at the end of the event or command (`turn/hand_back.rs`).
    handed_back: turn::HandBack,
    /// The delegation depth of the turn started last (`turn/delegation.rs`).
    turn_depth: u32,
}

impl Core {
    pub fn new(
        config: CoreConfig,
        stored: StoredState,
        history: Rc<dyn History>,
        ids: Box<dyn IdSource>,
        now_ms: u64,
    ) -> Core {
        let mut ids = ids;
        // A continuation asked for before the restart is still owed.
        let continuation = stored
            .continuation_owed
            .then(|| PendingContinuation::restored(ids.new_id(IdKind::Request)));
        let mut queue = TurnQueue::default();
        queue.restore(stored.queue, stored.queued_bodies);
        let mut timers = TimerTable::default();
        if let Some(at) = stored.author_alarm {
            timers.set(Timer::AuthorAlarm, at);
        }
        let schedules =
            data::schedule_table::ScheduleTable::restore(stored.schedules, stored.schedule_runs);
        if let Some(at) = schedules.next_due() {
            timers.set(Timer::Schedules, at);
        }
        let mut transcript = Transcript::load(history);
        let origins = queue
            .iter()
            .map(|t| (t.request_id.as_str(), t.message_ids.as_slice()));
        transcript.restore_reservations(origins);
        let synced = synced_state::SyncedState::restored(
            stored.agent_state,
            config.agent_api.initial_state.as_ref(),
        );
        Core {
            config,
            ids,
            now: now_ms,
            transcript,
            conns: Connections::default(),
            queue,
            active: None,
            continuation,
            inputs: TabInputs::restored(stored.client_tools, stored.body),
            ended: turn::EndedTurns::restored(stored.terminal_error),
            recovery: RecoveryState::restored(stored.open_streams, stored.recovery),
            stream_approvals: stored.stream_approvals,
            tab_results_rewriting: Vec::new(),
            restored_tab_results: stored.pending_tool_results,
            compaction: CompactionState::restored(stored.summary),
            submissions: data::submission_list::Submissions::restore(stored.submissions),
            next_call: 1,
            timers,
            synced,
            calls: Default::default(),
            request_rate: admit::RequestRate::restored(stored.request_rates),
            token_ledger: stored.token_ledger.unwrap_or_default(),
            caller_budgets: data::token_budget::CallerBudgets::restored(
                stored.caller_token_ledgers,
            ),
            context_texts: stored.context_blocks.unwrap_or_default().blocks,
            schedules,
            effects: Vec::new(),
            log: Vec::new(),
            mcp: mcp::McpView::default(),
            owed_responses: stored.owed_responses,
            handed_back: Default::default(),
            turn_depth: stored.turn_depth,
        }
    }

    pub fn handle(&mut self, event: Event, now_ms: u64) {
        self.now = self.now.max(now_ms);
        self.trim_window();
        match event {
            Event::Connected { conn, client } => {
                self.rate_connect(&conn, client.as_deref());
                let caller = data::token_budget::tab_caller(client.as_deref());
                self.caller_budgets.connect(&conn, caller);
                self.on_connect(conn)
            }
            Event::Adopted { conn, list_matches } => {
                self.request_rate.adopt(&conn);
                let caller = data::token_budget::tab_caller(self.request_rate.client_of(&conn));
                self.caller_budgets.connect(&conn, caller);
                self.conns.adopt(conn, list_matches)
            }
            Event::Frame { conn, text } => self.on_frame(conn, &text),
            Event::ReadonlyFrame { conn, text } => self.on_readonly_frame(conn, &text),
            Event::FrameTooLarge { conn, bytes, head } => {
                self.refuse_large_frame(conn, bytes, &head)
            }
            Event::ChannelFrame { conn, text } => self.on_channel_frame(conn, &text),
            Event::Disconnected { conn } => {
                self.conns.remove(&conn);
                self.rate_forget(&conn);
                self.caller_budgets.forget(&conn);
                self.fail_remote_calls(&conn);
                self.drop_calls_of(&conn);
            }
            Event::Model { call, event } => self.on_model_event(call, event),
            Event::ModelFailed { call, failure } => self.on_model_failure(call, failure),
            Event::ToolDone {
                call,
                tool_call_id,
                result,
            } => self.on_tool_done(call, &tool_call_id, result),
            Event::Timer(timer) => {
                // The author's alarm and schedules are disarmed when they
                // fire (if they are due).
                if !matches!(timer, Timer::AuthorAlarm | Timer::Schedules) {
                    self.timers.clear(timer);
                }
                self.on_timer(timer);
            }
            Event::Woke => {
                // What the previous instance owed first: a turn that waking
                // ends (a recovery given up on) is reported once, by itself.
                self.request_rate.woke(self.now);
                self.redeliver_owed_responses();
                self.resume_pending_tab_results();
                self.on_woke();
                self.settle_orphaned_submissions();
                self.restart_cut_schedule_runs();
            }
            Event::ChatResponseDelivered { request_id } => self.on_response_delivered(&request_id),
            Event::ScheduleRan { run, outcome } => self.on_schedule_ran(&run, outcome),
            Event::ToolCallDecided { call, decision } => self.on_tool_decided(call, decision),
            Event::ToolResultRewritten { call, result } => self.on_result_rewritten(call, result),
            Event::ChatErrorDecided { call, disposition } => {
                self.on_chat_error_decided(call, disposition)
            }
            Event::Summarized { call, summary } => self.on_summarized(call, summary),
            Event::ProgrammaticChat {
                conn,
                message,
                tools,
                executor,
            } => self.on_programmatic_chat(conn, vec![message], tools, executor),
            Event::ClearHistory => self.on_clear(None),
            Event::Named { name } => self.on_named(name),
            Event::TurnPrepared { turn, config } => self.on_turn_prepared(turn, *config),
            Event::StoreWriteFailed { ops, error } => self.on_store_write_failed(&ops, &error),
            Event::CallableDone { conn, id, result } => self.on_callable_done(conn, id, result),
            Event::AuthorAlarmSet { at_ms } => self.schedule_author_alarm(at_ms),
            Event::McpServersChanged { frame, tools } => self.on_mcp_servers_changed(frame, tools),
        }
        self.settle();
        self.write_down_queue();
        self.keep_history_within_cap();
        self.note_list_matches();
    }

    /// Runs a command of the host's (a method: see the rule in this file's
    /// header) at `now_ms`, with the epilogue every event has: what turns
    /// handed back is carried out, then the queue is written down.
    fn command<T>(&mut self, now_ms: u64, run: impl FnOnce(&mut Core) -> T) -> T {
        self.now = self.now.max(now_ms);
        let answer = run(self);
        self.settle();
        self.write_down_queue();
        self.note_list_matches();
        answer
    }

    /// Keeps with each socket whether its list is the store's, where that
    /// changed in this event (`turn/end_frames.rs` reads it; it outlives
    /// hibernation).
    fn note_list_matches(&mut self) {
        for (conn, matches) in self.conns.take_list_match_notes() {
            self.effects.push(Effect::NoteListMatches { conn, matches });
        }
    }

    /// Deletes the oldest stored messages beyond the agent's history cap
    /// (`Limits::max_stored_messages`): before a transcript frame is made,
    /// and last in an event's writes. Every tab may show what went, so each
    /// one's list no longer matches the store (`turn/end_frames.rs`).
    fn keep_history_within_cap(&mut self) {
        let keep = self.config.settings.limits.max_stored_messages;
        if keep == 0 {
            return;
        }
        let keep_from = self.active.as_ref().map(|a| a.seq());
        if let Some(seq) = self.transcript.drop_oldest_beyond(keep, keep_from) {
            self.store(StoreOp::DropMessagesBefore { seq });
            let all = self.conns.all();
            self.conns.lists_differ(&all);
        }
    }

    /// Stores the queue after an event changed it (in the same write batch as
    /// the messages it refers to).
    fn write_down_queue(&mut self) {
        let Some(write) = self.queue.take_changes() else {
            return;
        };
        for (request_id, body) in write.put_bodies {
            self.store(StoreOp::PutQueuedBody { request_id, body });
        }
        let turns = write.turns;
        self.put_config_or_delete(ConfigKey::Queue, &turns, turns.is_empty());
        for request_id in write.dropped_bodies {
            self.store(StoreOp::DeleteQueuedBody { request_id });
        }
    }

    /// Fires every in-isolate timer due at `now_ms`, earliest first.
    pub fn handle_timeout(&mut self, now_ms: u64) {
        self.now = self.now.max(now_ms);
        self.trim_window();
        while let Some(timer) = self.timers.pop_expired(self.now) {
            self.on_timer(timer);
            self.settle();
            self.write_down_queue();
            self.keep_history_within_cap();
        }
    }

    /// When the host must next call `handle_timeout`, if any timer is armed.
    pub fn poll_timeout(&self) -> Option<u64> {
        self.timers.next_deadline()
    }

    /// When the durable alarm must fire (`Event::Timer(Timer::Heartbeat)`),
    /// if it is armed. Survives the isolate: a restarted core does not
    /// know it, so a host keeps an alarm set by an earlier instance.
    pub fn durable_deadline(&self) -> Option<u64> {
        self.timers.durable_deadline()
    }

    /// Every armed timer with its due time.
    pub fn armed_timers(&self) -> Vec<(Timer, u64)> {
        self.timers.iter().collect()
    }

    /// Effects queued so far, in the order they must be carried out.
    pub fn take_effects(&mut self) -> Vec<Effect> {
        self.synced.writes_handed_over();
        std::mem::take(&mut self.effects)
    }

    /// The whole conversation, oldest first (older messages are read from
    /// the store). For the agent's own code only: what a tab or a caller
    /// reaches is bounded (`messages_frame`).
    pub fn messages(&self) -> Vec<UIMessage> {
        self.transcript.messages()
    }

    /// One stored message by id, from the window or the store.
    pub fn message(&self, id: &str) -> Option<UIMessage> {
        self.transcript.get(id)
    }

    /// The newest messages whose JSON fits in `max_bytes` as a transcript
    /// frame (the whole conversation when it fits; always the newest user
    /// message and what follows it): the window's part serialized, the older
    /// part named by place and budget for the host to read as stored
    /// (`get-messages`).
    pub fn messages_frame(&self, max_bytes: usize) -> TranscriptFrame {
        self.transcript.snapshot(max_bytes, false)
    }

    /// How many messages the core keeps in memory (the recent window).
    pub fn window_len(&self) -> usize {
        self.transcript.window_len()
    }

    /// Forgets the oldest messages of the in-memory window (see
    /// `Transcript::trim`). Only between events whose writes the host has
    /// carried out (effects taken), so older messages read from the store
    /// are current.
    fn trim_window(&mut self) {
        if self.effects.is_empty() {
            let keep_from = self.active.as_ref().map(|a| a.seq());
            self.transcript.trim(keep_from);
        }
    }

    pub fn config(&self) -> &CoreConfig {
        &self.config
    }

    /// The instance name learned from a request path: sent in the identity
    /// frame, and stored so a start without a request (an alarm) knows it.
    fn on_named(&mut self, name: String) {
        if self.config.name != name {
            self.config.name = name.clone();
            self.store(StoreOp::PutConfig {
                key: ConfigKey::InstanceName,
                value: name,
            });
        }
    }

    /// True while a turn runs, waits in the queue, or a continuation is owed.
    pub fn is_busy(&self) -> bool {
        self.active.is_some() || !self.queue.is_empty() || self.continuation.is_some()
    }

    fn on_timer(&mut self, timer: Timer) {
        match timer {
            Timer::Continuation => self.try_start_continuation(),
            Timer::Debounce => self.pump(),
            Timer::FlushChunks => self.flush_chunks(),
            Timer::Heartbeat | Timer::AuthorAlarm | Timer::Schedules => {
                self.on_heartbeat();
                self.fire_author_alarm();
                self.fire_schedules();
            }
            Timer::ModelStall | Timer::ModelRetry | Timer::ModelDeadline => {
                self.on_model_timer(timer)
            }
            Timer::ToolDeadline(call) => self.on_tool_deadline(call),
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

    /// Sends a frame that edits or clears the message list of each of `to`
    /// (`cf_agent_message_updated`, `cf_agent_chat_clear`), counting it
    /// against each (`turn/end_frames.rs` reads the count).
    fn send_list_change(&mut self, to: Vec<ConnId>, frame: String) {
        self.conns.lists_changed(&to);
        self.send_to(to, frame);
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
        self.timers.set(timer, at_ms);
    }

    fn clear_timer(&mut self, timer: Timer) {
        self.timers.clear(timer);
    }

    fn put_entry(&mut self, entry: &Entry) {
        self.store(StoreOp::PutMessage {
            seq: entry.seq,
            message: entry.message.clone(),
        });
    }

    fn broadcast_transcript(&mut self, except: Option<&str>) {
        let to = match except {
            Some(conn) => self.conns.all_except(conn),
            None => self.conns.all(),
        };
        self.send_transcript(to, false);
    }

    /// The transcript frame to `to`: the whole conversation up to
    /// `history::SNAPSHOT_BYTES` of messages, else the newest that fit.
    fn send_transcript(&mut self, to: Vec<ConnId>, connect: bool) {
        if to.is_empty() {
            return;
        }
        // Messages beyond the history cap go first: the frame (whose older
        // part the host reads after this event's earlier writes) shows what
        // stays stored.
        self.keep_history_within_cap();
        self.conns.transcript_sent(&to);
        let frame = self.transcript.snapshot(history::SNAPSHOT_BYTES, connect);
        self.effects.push(Effect::SendTranscript { to, frame });
    }

    /// Stores `value` under `key`, or deletes the row when `empty` (nothing to keep).
    fn put_config_or_delete<T: Serialize>(&mut self, key: ConfigKey, value: &T, empty: bool) {
        if empty {
            self.store(StoreOp::DeleteConfig { key });
        } else {
            self.put_config(key, value);
        }
    }

    fn put_config<T: Serialize>(&mut self, key: ConfigKey, value: &T) {
        let value = match key.is_versioned() {
            true => shape::encode(value),
            false => serde_json::to_string(value).unwrap_or_default(),
        };
        self.store(StoreOp::PutConfig { key, value });
    }
}
