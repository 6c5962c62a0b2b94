//! A `chat_submissions` row: one submission of the agent's own code
//! (`submit_messages`), where it stands and what answered it.

use serde::{Deserialize, Serialize};

/// Where a submission (the agent's own `submit_messages`) stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SubmissionStatus {
    /// Accepted, waiting in the turn queue.
    Queued,
    /// Its turn streams (or a recovery turn continues it after an eviction).
    Running,
    /// Its turn ended and the answer is stored.
    Completed,
    /// Its turn failed (`error` says why).
    Failed,
    /// Cancelled before or while it ran (`cancel_submission`, or a clear).
    Cancelled,
    /// Message concurrency skipped its turn: a later submit answers its
    /// messages (`latest`, `merge`, `debounce`), or, with `drop`, nothing
    /// of it was stored.
    Skipped,
}

impl SubmissionStatus {
    /// Nothing more will happen to it.
    pub fn is_final(self) -> bool {
        !matches!(self, SubmissionStatus::Queued | SubmissionStatus::Running)
    }
}

/// A `chat_submissions` row: one submission and where it stands. Its id is
/// the request id of its turn (the id tabs see in the turn's frames).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubmissionRecord {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// Who the idempotency key belongs to (`SubmitRequest::caller`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<String>,
    /// What the key was used for (`submission_digest`): a repeat must match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_digest: Option<String>,
    pub status: SubmissionStatus,
    /// Ids of the submitted messages, as stored.
    pub message_ids: Vec<String>,
    /// The answer's message id, once its turn started (kept when it completes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_message_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The request id of the turn now running for it (a recovery turn's
    /// after an eviction), when that is not `id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_request_id: Option<String>,
    pub submitted_at: u64,
    #[serde(default)]
    pub updated_at: u64,
}
