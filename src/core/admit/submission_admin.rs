//! Looking after the remembered submissions and the turns in flight from
//! outside a turn: listing submissions by status, forgetting finished ones
//! (one by id or many by a filter, their rows deleted), and cancelling every
//! turn the agent is running or has queued at once.

use crate::core::contract::effects::StoreOp;
use crate::core::data::submission_list::SubmissionFilter;
use crate::core::rows::persisted::SubmissionRecord;
use crate::core::Core;

impl Core {
    /// The remembered submissions `filter` takes, newest first.
    pub fn list_submissions(&self, filter: &SubmissionFilter) -> Vec<SubmissionRecord> {
        self.submissions.list(filter)
    }

    /// The submission `caller` made under idempotency key `key`, if it is
    /// remembered (a submit with that key answers it).
    pub fn submission_by_key(&self, caller: Option<&str>, key: &str) -> Option<&SubmissionRecord> {
        self.submissions.by_key(caller, key)
    }

    /// The id of the last stored message, if any.
    pub fn last_message_id(&self) -> Option<&str> {
        self.transcript.last().map(|m| m.id.as_str())
    }

    /// Forgets submission `id` and deletes its row when it is final (a
    /// queued or running one stays). Returns whether it went.
    pub fn delete_submission(&mut self, id: &str) -> bool {
        let gone = self
            .submissions
            .forget_where(&SubmissionFilter::default(), |r| r.id == id);
        self.forget_rows(gone) == 1
    }

    /// Forgets the final submissions `filter` takes (those that finished
    /// first go first) and deletes their rows. Returns how many went.
    pub fn delete_submissions(&mut self, filter: &SubmissionFilter) -> usize {
        let gone = self.submissions.forget_where(filter, |_| true);
        self.forget_rows(gone)
    }

    fn forget_rows(&mut self, ids: Vec<String>) -> usize {
        let count = ids.len();
        for id in ids {
            self.store(StoreOp::DeleteSubmission { id });
        }
        count
    }

    /// Cancels every turn the agent runs, has queued or owes (a tab's, a
    /// submission's, a parent's, a continuation): each ends `aborted` as
    /// with a tab's stop, what streamed is kept. Returns how many there were.
    pub fn cancel_all_turns(&mut self, now_ms: u64) -> usize {
        self.command(now_ms, |core| {
            let mut ids: Vec<String> = core
                .active
                .iter()
                .map(|a| a.turn().request_id.clone())
                .collect();
            ids.extend(core.queue.iter().map(|t| t.request_id.clone()));
            ids.extend(core.continuation.iter().map(|c| c.request_id.clone()));
            ids.dedup();
            ids.into_iter()
                .filter(|id| core.cancel_request(id, now_ms))
                .count()
        })
    }
}
