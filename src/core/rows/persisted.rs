//! Every shape the core writes to durable storage, typed: the config rows
//! (their keys and JSON bodies), the write-ahead record of a streaming turn,
//! and `StoredState`, what a starting core reads back. Rows written by older
//! releases are read here too (a bare recovery budget; an owed continuation
//! recorded inside the recovery row), so the rest of the core sees one shape.
//! The rules for decoding stored rows live here too, shared by every store:
//! the stream record and the turn-state config rows carry a shape version
//! (`shape.rs`), and a row that does not decode is reported back with the
//! reason so the store moves it to its quarantine.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::protocol::{ClientToolSchema, UIMessage};

use crate::core::vocab::hooks::ChatResponse;
use crate::core::vocab::turn_config::TurnTrigger;

pub use super::submission_row::{SubmissionRecord, SubmissionStatus};

/// Names of the config rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigKey {
    ClientTools,
    CustomBody,
    TerminalError,
    /// The `<name>` the agent is addressed by (for the identity frame).
    InstanceName,
    /// The budget of the recovery in progress.
    Recovery,
    /// An automatic continuation was asked for and has not started yet.
    Continuation,
    /// Turns accepted but not started yet.
    Queue,
    /// Approvals given for calls in the answer still streaming (no chunk
    /// records them), until that answer is stored.
    StreamApprovals,
    /// When the alarm the agent's own code scheduled is due.
    AuthorAlarm,
    /// The compaction summary (`compaction.rs`).
    Summary,
    /// The agent's synced state (`synced_state/`).
    AgentState,
    /// The author's schedules (`schedule_row.rs`).
    Schedules,
    /// Ended turns whose `on_chat_response` has not returned yet
    /// (`response_outbox.rs`).
    OwedResponses,
    /// Tool results from tabs waiting on `after_tool_call`
    /// (`turn/tool_results.rs`), so an eviction meanwhile loses none.
    PendingToolResults,
    /// The tokens spent in the current hour and day (`data/token_budget.rs`).
    TokenLedger,
    /// The text of the context blocks written so far (`turn/context_blocks.rs`).
    ContextBlocks,
    /// The request-rate windows (`request_rate_row.rs`), so an eviction or
    /// a clear resets no rate.
    RequestRates,
    /// The delegation depth of the turn started last (absent: 0), which a
    /// recovery of that turn and a continuation of its answer run at.
    TurnDepth,
    /// The tokens each caller spent today (`token_ledger_row.rs`).
    CallerTokenLedgers,
}

impl ConfigKey {
    /// Every key, in the order `read_config` reads them.
    pub const ALL: [ConfigKey; 19] = [
        ConfigKey::ClientTools,
        ConfigKey::CustomBody,
        ConfigKey::TerminalError,
        ConfigKey::InstanceName,
        ConfigKey::Recovery,
        ConfigKey::Continuation,
        ConfigKey::Queue,
        ConfigKey::StreamApprovals,
        ConfigKey::AuthorAlarm,
        ConfigKey::Summary,
        ConfigKey::AgentState,
        ConfigKey::Schedules,
        ConfigKey::OwedResponses,
        ConfigKey::PendingToolResults,
        ConfigKey::TokenLedger,
        ConfigKey::ContextBlocks,
        ConfigKey::RequestRates,
        ConfigKey::TurnDepth,
        ConfigKey::CallerTokenLedgers,
    ];

    /// What is not chat state and so survives a clear of the history: the
    /// name the agent is addressed by, the author's alarm, the synced state,
    /// the schedules, the reports owed to `on_chat_response`, the tokens
    /// spent by the agent and its callers (a clear gives no budget back) and
    /// the request rates (a clear resets no rate). A clear deletes every
    /// other row (`StoreOp::ClearAll`).
    pub const SURVIVES_CLEAR: [ConfigKey; 8] = [
        ConfigKey::InstanceName,
        ConfigKey::AuthorAlarm,
        ConfigKey::AgentState,
        ConfigKey::Schedules,
        ConfigKey::OwedResponses,
        ConfigKey::TokenLedger,
        ConfigKey::RequestRates,
        ConfigKey::CallerTokenLedgers,
    ];

    /// Whether the row survives a clear (`SURVIVES_CLEAR`).
    pub fn survives_clear(self) -> bool {
        Self::SURVIVES_CLEAR.contains(&self)
    }

    /// The row is one of the core's own shapes, stored with a shape version
    /// (the client tools and the custom body keep the client's JSON; the
    /// instance name is plain text).
    pub fn is_versioned(self) -> bool {
        !matches!(
            self,
            ConfigKey::ClientTools | ConfigKey::CustomBody | ConfigKey::InstanceName
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ConfigKey::ClientTools => "last_client_tools",
            ConfigKey::CustomBody => "last_body",
            ConfigKey::TerminalError => "terminal_error",
            ConfigKey::InstanceName => "instance_name",
            ConfigKey::Recovery => "recovery",
            ConfigKey::Continuation => "continuation",
            ConfigKey::Queue => "queue",
            ConfigKey::StreamApprovals => "stream_approvals",
            ConfigKey::AuthorAlarm => "author_alarm",
            ConfigKey::Summary => "summary",
            ConfigKey::AgentState => "agent_state",
            ConfigKey::Schedules => "schedules",
            ConfigKey::OwedResponses => "owed_chat_responses",
            ConfigKey::PendingToolResults => "pending_tool_results",
            ConfigKey::TokenLedger => "token_ledger",
            ConfigKey::ContextBlocks => "context_blocks",
            ConfigKey::RequestRates => "request_rates",
            ConfigKey::TurnDepth => "turn_depth",
            ConfigKey::CallerTokenLedgers => "caller_token_ledgers",
        }
    }
}

/// The write-ahead record of a streaming turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

impl StreamRecord {
    /// The stored row: the record with its shape version.
    pub fn to_row(&self) -> String {
        crate::core::rows::shape::encode(self)
    }
}

/// A stored row that no longer decodes, with the reason; the store moves it
/// to its quarantine.
#[derive(Debug, Clone, PartialEq)]
pub struct Unreadable {
    pub key: ConfigKey,
    pub value: String,
    pub reason: String,
}

/// A stream left open by an instance that died mid-turn.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenStream {
    pub record: StreamRecord,
    pub chunks: Vec<String>,
}

/// The `TerminalError` row: the last turn ended in an error, kept so a
/// reconnecting tab learns of it.
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

/// The `Recovery` row: durable bookkeeping of one recovery chain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecoveryBudget {
    pub root: String,
    pub attempts: u32,
    pub interrupted: u32,
    pub last_progress_at: u64,
}

/// The `AuthorAlarm` row.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthorAlarmRow {
    pub at: u64,
}

/// The `TurnDepth` row.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnDepthRow {
    pub depth: u32,
}

/// The `Continuation` row.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContinuationRow {
    pub owed: bool,
}

/// The `StreamApprovals` row: approvals given for calls of the answer that
/// is still streaming, applied again if an eviction cuts it first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StreamApprovals {
    pub request_id: String,
    pub approved: Vec<String>,
}

/// The `Recovery` row as releases before the `Continuation` row wrote it:
/// the budget and the owed continuation together.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CombinedRecoveryRow {
    #[serde(default)]
    budget: Option<RecoveryBudget>,
    #[serde(default)]
    continuation_owed: bool,
}

/// Everything the core needs from storage to start (or restart).
#[derive(Debug, Clone, Default)]
pub struct StoredState {
    pub client_tools: Vec<ClientToolSchema>,
    pub body: Map<String, Value>,
    pub terminal_error: Option<TerminalError>,
    pub open_streams: Vec<OpenStream>,
    /// The budget of a recovery in progress.
    pub recovery: Option<RecoveryBudget>,
    /// A tool result or approval asked for a continuation that had not started.
    pub continuation_owed: bool,
    /// Turns accepted but not started, in their order.
    pub queue: Vec<DurableTurn>,
    /// The custom bodies of queued turns, by request id (`chat_queued_bodies`).
    pub queued_bodies: std::collections::BTreeMap<String, Map<String, Value>>,
    pub stream_approvals: Option<StreamApprovals>,
    /// Submissions, oldest first (`chat_submissions`).
    pub submissions: Vec<SubmissionRecord>,
    /// When the alarm the agent's own code scheduled is due.
    pub author_alarm: Option<u64>,
    /// The compaction summary in use.
    pub summary: Option<Summary>,
    /// The author's schedules.
    pub schedules: Vec<crate::core::rows::schedule_row::ScheduleRow>,
    /// Their runs not yet reported ended.
    pub schedule_runs: Vec<crate::core::rows::schedule_row::ScheduleRun>,
    /// The agent's synced state, once one was set.
    pub agent_state: Option<Value>,
    /// Ended turns whose `on_chat_response` has not returned, oldest first.
    pub owed_responses: Vec<ChatResponse>,
    /// Tabs' tool results that were waiting on `after_tool_call`.
    pub pending_tool_results: Vec<PendingToolResult>,
    /// The tokens spent in the current hour and day.
    pub token_ledger: Option<crate::core::rows::token_ledger_row::TokenLedger>,
    /// The text of the context blocks written so far.
    pub context_blocks: Option<crate::core::rows::context_blocks_row::ContextBlocksRow>,
    /// The request-rate windows, when any were stored.
    pub request_rates: Option<crate::core::rows::request_rate_row::RequestRatesRow>,
    /// The delegation depth of the turn started last (`TurnDepth`).
    pub turn_depth: u32,
    /// The callers' token ledgers, when any were stored.
    pub caller_token_ledgers: Option<crate::core::rows::token_ledger_row::CallerLedgersRow>,
}

/// A tab's tool result that waits on `after_tool_call`, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingToolResult {
    /// The connection that sent it (it may be gone after a restart).
    pub conn: String,
    pub tool_call_id: String,
    pub output: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_text: Option<String>,
    pub auto_continue: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_tools: Option<Vec<crate::protocol::ClientToolSchema>>,
}

/// The `PendingToolResults` row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingToolResultsRow {
    pub results: Vec<PendingToolResult>,
}

/// The `OwedResponses` row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OwedResponsesRow {
    pub responses: Vec<ChatResponse>,
}

/// The stored row of the agent's synced state (`{"v":1,"state":…}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentStateRow {
    pub state: Value,
}

impl StoredState {
    /// Fills the config-backed fields from `row(key)`, the stored text of
    /// each [`ConfigKey`]. A row that no longer decodes leaves its field as a
    /// fresh agent's and is returned with the reason (never fatal).
    pub fn read_config<E>(
        &mut self,
        mut row: impl FnMut(ConfigKey) -> Result<Option<String>, E>,
    ) -> Result<Vec<Unreadable>, E> {
        let mut unreadable = Vec::new();
        for key in ConfigKey::ALL {
            let Some(value) = row(key)? else {
                continue;
            };
            if let Err(reason) = self.read_config_row(key, &value) {
                unreadable.push(Unreadable { key, value, reason });
            }
        }
        Ok(unreadable)
    }

    fn read_config_row(&mut self, key: ConfigKey, text: &str) -> Result<(), String> {
        use crate::core::rows::shape::decode;
        let plain = |text: &str| serde_json::from_str::<Value>(text).map_err(|e| e.to_string());
        match key {
            ConfigKey::ClientTools => {
                self.client_tools = serde_json::from_str(text).map_err(|e| e.to_string())?
            }
            ConfigKey::CustomBody => match plain(text)? {
                Value::Object(map) => self.body = map,
                _ => return Err("the custom body is not a JSON object".into()),
            },
            ConfigKey::InstanceName => {}
            ConfigKey::TerminalError => self.terminal_error = Some(decode(text)?),
            ConfigKey::Recovery => {
                let (budget, owed) = read_recovery_row(text)?;
                self.recovery = budget;
                self.continuation_owed |= owed;
            }
            ConfigKey::Continuation => {
                let row: ContinuationRow = decode(text)?;
                self.continuation_owed |= row.owed;
            }
            ConfigKey::Queue => self.queue = decode(text)?,
            ConfigKey::StreamApprovals => self.stream_approvals = Some(decode(text)?),
            ConfigKey::AuthorAlarm => {
                let row: AuthorAlarmRow = decode(text)?;
                self.author_alarm = Some(row.at);
            }
            ConfigKey::Summary => self.summary = Some(decode(text)?),
            ConfigKey::AgentState => {
                // Counted as a tab's state frame is: a row written before
                // that count and over it is quarantined, not built on wake.
                crate::protocol::gate::check(text, &crate::protocol::gate::STATE)?;
                let row: AgentStateRow = decode(text)?;
                self.agent_state = Some(row.state);
            }
            ConfigKey::Schedules => {
                let row: crate::core::rows::schedule_row::SchedulesRow = decode(text)?;
                self.schedules = row.schedules;
                self.schedule_runs = row.runs;
            }
            ConfigKey::OwedResponses => {
                let row: OwedResponsesRow = decode(text)?;
                self.owed_responses = row.responses;
            }
            ConfigKey::PendingToolResults => {
                let row: PendingToolResultsRow = decode(text)?;
                self.pending_tool_results = row.results;
            }
            ConfigKey::TokenLedger => self.token_ledger = Some(decode(text)?),
            ConfigKey::ContextBlocks => self.context_blocks = Some(decode(text)?),
            ConfigKey::RequestRates => self.request_rates = Some(decode(text)?),
            ConfigKey::TurnDepth => {
                let row: TurnDepthRow = decode(text)?;
                self.turn_depth = row.depth;
            }
            ConfigKey::CallerTokenLedgers => self.caller_token_ledgers = Some(decode(text)?),
        }
        Ok(())
    }
}

/// A bare budget, or the combined row of older releases.
fn read_recovery_row(text: &str) -> Result<(Option<RecoveryBudget>, bool), String> {
    let refused = match crate::core::rows::shape::decode::<RecoveryBudget>(text) {
        Ok(budget) => return Ok((Some(budget), false)),
        Err(refused) => refused,
    };
    if refused.contains("newer than this release") {
        return Err(refused);
    }
    let row: CombinedRecoveryRow = serde_json::from_str(text).map_err(|_| refused)?;
    Ok((row.budget, row.continuation_owed))
}

// ---- reading rows back: the decoding and skipping rules every store shares
// (the SQLite one and the in-memory one of the tests), so a restart reads back
// exactly the same state whichever store kept it. ----

impl StoredState {
    /// Adds one `chat_submissions` row; rows come in `submitted_at` order.
    /// An unreadable row is skipped; the error says why.
    pub fn push_submission_row(&mut self, record: &str) -> Result<(), serde_json::Error> {
        self.submissions.push(serde_json::from_str(record)?);
        Ok(())
    }
}

impl StoredState {
    /// Adds one `chat_queued_bodies` row; the error says why it cannot be
    /// read (the store quarantines it; its turn runs with the agent's last
    /// custom body, as a turn with none of its own does).
    pub fn push_queued_body_row(&mut self, request_id: &str, body: &str) -> Result<(), String> {
        match serde_json::from_str::<Value>(body).map_err(|e| e.to_string())? {
            Value::Object(map) => {
                self.queued_bodies.insert(request_id.to_string(), map);
                Ok(())
            }
            _ => Err("a queued body is not a JSON object".into()),
        }
    }
}

impl OpenStream {
    /// An open stream from its stored record (any shape up to this
    /// release's), with no chunks yet; the error says why the record cannot
    /// be read (the store quarantines it and settles the stream).
    pub fn from_record_row(record: &str) -> Result<OpenStream, String> {
        let record = crate::core::rows::shape::decode::<StreamRecord>(record)?;
        Ok(OpenStream {
            record,
            chunks: Vec::new(),
        })
    }

    /// Adds one chunk-log row (a JSON array of chunk bodies); rows come in
    /// `first_seq` order. An unreadable row adds nothing and says why.
    pub fn push_chunk_row(&mut self, bodies: &str) -> Result<(), String> {
        let bodies = serde_json::from_str::<Vec<String>>(bodies).map_err(|e| e.to_string())?;
        self.chunks.extend(bodies);
        Ok(())
    }
}

/// What of a queued turn is written down, so accepted turns survive an
/// eviction. Connections do not outlive the isolate, so no requester is kept
/// (the delegation depth it asked at is); a sub-agent turn run by a parent's
/// executor is not kept either (the executor is a live reference).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DurableTurn {
    pub request_id: String,
    pub trigger: TurnTrigger,
    pub message_ids: Vec<String>,
    pub submitted_at: u64,
    #[serde(default)]
    pub overlapped: bool,
    /// The custom body inline, as releases before body rows wrote it (read
    /// only: a body is now kept in its own row, `chat_queued_bodies`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Map<String, Value>>,
    /// The turn has a custom body, kept in its own row.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stored_body: bool,
    /// How many delegated calls deep the turn was asked at (absent in rows
    /// of releases before it was kept, and for 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delegation_depth: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The stored summary: it stands for every message placed before `through_seq`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub through_seq: u64,
    pub text: String,
}

/// One stored message with its place in the conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub seq: u64,
    pub message: UIMessage,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state_from(rows: &[(ConfigKey, &str)]) -> StoredState {
        let mut state = StoredState::default();
        let found = |key: ConfigKey| {
            Ok::<_, ()>(
                rows.iter()
                    .find(|(k, _)| *k == key)
                    .map(|(_, v)| v.to_string()),
            )
        };
        state.read_config(found).unwrap_or_default();
        state
    }

    #[test]
    fn an_owed_continuation_written_inside_the_recovery_row_is_still_owed() {
        let state = state_from(&[(ConfigKey::Recovery, r#"{"continuationOwed":true}"#)]);
        assert!(state.continuation_owed);
        assert_eq!(state.recovery, None);
        let budget = r#"{"root":"r1","attempts":2,"interrupted":1,"lastProgressAt":5}"#;
        let state = state_from(&[(ConfigKey::Recovery, budget)]);
        assert_eq!(state.recovery.map(|b| b.attempts), Some(2));
        assert!(!state.continuation_owed);
    }

    #[test]
    fn a_queue_row_of_the_release_before_the_depth_was_kept_reads_at_depth_zero() {
        let old = r#"{"v":1,"items":[{"requestId":"r1","trigger":"submit","messageIds":["u1"],"submittedAt":5}]}"#;
        let state = state_from(&[(ConfigKey::Queue, old)]);
        assert_eq!(state.queue.len(), 1);
        assert_eq!(state.queue[0].delegation_depth, 0);
        // A depth-0 turn is written as before; a deeper one says its depth.
        let mut turn = state.queue[0].clone();
        let plain = serde_json::to_string(&turn).unwrap_or_default();
        assert!(!plain.contains("delegationDepth"), "{plain}");
        turn.delegation_depth = 2;
        let text = crate::core::rows::shape::encode(&vec![turn]);
        let state = state_from(&[
            (ConfigKey::Queue, &text),
            (ConfigKey::TurnDepth, r#"{"v":1,"depth":3}"#),
        ]);
        assert_eq!(state.queue[0].delegation_depth, 2);
        assert_eq!(state.turn_depth, 3);
    }

    #[test]
    fn unreadable_rows_read_as_absent() {
        let state = state_from(&[
            (ConfigKey::Queue, "not json"),
            (ConfigKey::TerminalError, "{}"),
            (ConfigKey::Continuation, r#"{"owed":true}"#),
        ]);
        assert!(state.queue.is_empty());
        assert_eq!(state.terminal_error, None);
        assert!(state.continuation_owed);
    }
}
