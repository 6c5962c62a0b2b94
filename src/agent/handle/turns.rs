//! What the agent's handle offers to run turns from code and follow them:
//! `run_turn` (submit and await the outcome with the stored answer),
//! `wait_for_submission`, `list_submissions` / `delete_submission(s)`,
//! `cancel_request` (any turn, by request id), `cancel_all_chats` and
//! `clear_messages`. A wait lives in the isolate's memory: an eviction ends
//! it, while the submission itself is durable (wait again after a restart).

use serde::Serialize;

use crate::core::{Event, SubmissionFilter, SubmissionStatus, SubmitError};
use crate::protocol::UIMessage;

use crate::agent::handle::{AgentHandle, Submission, SubmitOptions};

/// How a turn run with [`AgentHandle::run_turn`] ended
/// (`{"requestId", "status", "error"?, "message"?}`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnResult {
    /// The turn's request id (its submission's id).
    pub request_id: String,
    /// `completed`, `failed`, `cancelled` or `skipped`.
    pub status: SubmissionStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The stored answer, when the turn kept one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<UIMessage>,
}

impl TurnResult {
    /// The answer's structured output read as `T`: for a turn that asked
    /// for one (`TurnConfig::structured_output`), whose answer the agent
    /// already checked against the schema. `Err`: the turn did not complete
    /// with an answer, or the answer does not read as `T`.
    pub fn output<T: serde::de::DeserializeOwned>(&self) -> Result<T, String> {
        let message = self.message.as_ref().ok_or_else(|| match &self.error {
            Some(error) => format!("the turn has no answer: {error}"),
            None => "the turn has no answer".to_string(),
        })?;
        crate::core::read_structured_output(message)
    }
}

impl AgentHandle {
    /// Resolves once submission `id` is final (completed, failed, cancelled
    /// or skipped), with where it stands; at once for a final one, and with
    /// `None` for an id the agent does not know. Never await a submission
    /// from inside a turn (a tool, `before_turn`): it runs only after the
    /// current turn, so the wait would never end.
    pub async fn wait_for_submission(&self, id: &str) -> Option<Submission> {
        loop {
            let record = self.submission_status(id)?;
            if record.status.is_final() {
                return Some(record);
            }
            self.settled(id).await;
        }
    }

    /// Submits `messages` as a turn and waits for it to end: its status and
    /// its stored answer. The turn streams to every tab like any other and
    /// survives an eviction (this wait does not: ask
    /// `wait_for_submission` again). Not from inside a turn (see
    /// `wait_for_submission`): use `submit_messages` there.
    pub async fn run_turn(
        &self,
        messages: Vec<UIMessage>,
        options: SubmitOptions,
    ) -> Result<TurnResult, SubmitError> {
        let submitted = self.submit_messages(messages, options)?;
        let record = self
            .wait_for_submission(&submitted.id)
            .await
            .unwrap_or(submitted);
        let answer = record
            .answer_message_id
            .as_deref()
            .filter(|_| record.status == SubmissionStatus::Completed);
        let message = answer.and_then(|id| self.with_core(|core, _| core.message(id)));
        Ok(TurnResult {
            request_id: record.id,
            status: record.status,
            error: record.error,
            message,
        })
    }

    /// Cancels the turn with request id `request_id`, whoever asked for it
    /// (a tab's, a submission's, a parent's): queued, it never runs;
    /// running, it ends `aborted` and what streamed is kept, as with a
    /// tab's stop. Returns whether such a turn was queued or running.
    pub fn cancel_request(&self, request_id: &str) -> bool {
        self.with_core(|core, now| core.cancel_request(request_id, now))
    }

    /// Cancels every turn running, queued or owed (whoever asked for it),
    /// each as `cancel_request` would; the conversation is kept. Returns
    /// how many there were.
    pub fn cancel_all_chats(&self) -> usize {
        self.with_core(|core, now| core.cancel_all_turns(now))
    }

    /// The remembered submissions (the last 256) `filter` takes, newest
    /// first.
    pub fn list_submissions(&self, filter: &SubmissionFilter) -> Vec<Submission> {
        self.with_core(|core, _| core.list_submissions(filter))
    }

    /// Forgets finished submission `id` (its row is deleted; a wait on it
    /// resolves with `None`). A queued or running one is kept: `false`.
    pub fn delete_submission(&self, id: &str) -> bool {
        self.with_core(|core, _| core.delete_submission(id))
    }

    /// Forgets the finished submissions `filter` takes (by status, finished
    /// before a time, at most `limit`, those that finished first going
    /// first); queued and running ones are never taken. Returns how many.
    pub fn delete_submissions(&self, filter: &SubmissionFilter) -> usize {
        self.with_core(|core, _| core.delete_submissions(filter))
    }

    /// Forgets the conversation, as a tab's clear does: a running turn ends
    /// `aborted`, queued ones never run, every tab is told to clear.
    pub fn clear_messages(&self) {
        self.with_core(|core, now| core.handle(Event::ClearHistory, now));
    }
}
