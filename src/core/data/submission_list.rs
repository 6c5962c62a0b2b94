//! The submissions the core still remembers (the agent's own work, by id,
//! idempotency key and the request its turn runs under), oldest first, and
//! every change of their status. Each change returns the record to store.

use crate::core::rows::persisted::{SubmissionRecord, SubmissionStatus};
use crate::core::vocab::submit::KEPT_SUBMISSIONS;

/// Every submission the core still remembers, oldest first.
#[derive(Debug, Default)]
pub struct Submissions {
    records: Vec<SubmissionRecord>,
}

impl Submissions {
    pub fn restore(mut records: Vec<SubmissionRecord>) -> Submissions {
        records.sort_by_key(|r| r.submitted_at);
        Submissions { records }
    }

    pub fn get(&self, id: &str) -> Option<&SubmissionRecord> {
        self.records.iter().find(|r| r.id == id)
    }

    /// The submission `caller` made under idempotency key `key`.
    pub fn by_key(&self, caller: Option<&str>, key: &str) -> Option<&SubmissionRecord> {
        self.records.iter().find(|r| {
            r.idempotency_key.as_deref() == Some(key)
                && r.caller.as_deref().filter(|c| !c.is_empty()) == caller
        })
    }

    /// The unfinished submission whose turn is request `request_id`.
    fn live_for_request(&mut self, request_id: &str) -> Option<&mut SubmissionRecord> {
        self.records.iter_mut().find(|r| {
            !r.status.is_final()
                && (r.id == request_id || r.turn_request_id.as_deref() == Some(request_id))
        })
    }

    /// The id of the unfinished submission whose turn is request `request_id`.
    pub fn live_id_for_request(&mut self, request_id: &str) -> Option<String> {
        self.live_for_request(request_id).map(|r| r.id.clone())
    }

    /// The unfinished submissions, oldest first.
    pub fn live(&self) -> impl Iterator<Item = &SubmissionRecord> {
        self.records.iter().filter(|r| !r.status.is_final())
    }

    /// The submission `owner` names started running as request `request_id`,
    /// whose answer is message `answer`.
    pub fn start(
        &mut self,
        owner: &str,
        request_id: &str,
        answer: String,
        now: u64,
    ) -> Option<SubmissionRecord> {
        let record = self.live_for_request(owner)?;
        record.status = SubmissionStatus::Running;
        record.turn_request_id = (record.id != request_id).then(|| request_id.to_string());
        record.answer_message_id = Some(answer);
        record.updated_at = now;
        Some(record.clone())
    }

    /// The error text of a failing turn, kept for its submission.
    pub fn note_error(&mut self, request_id: &str, text: &str) {
        if let Some(record) = self.live_for_request(request_id) {
            record.error = Some(text.to_string());
        }
    }

    /// Submission `id`, unfinished, ends with `status` (and an error text, or
    /// the one its failing turn reported); its answer is kept when
    /// `answered` says it is in the transcript.
    pub fn settle(
        &mut self,
        id: &str,
        status: SubmissionStatus,
        error: Option<&str>,
        answered: impl Fn(&str) -> bool,
        now: u64,
    ) -> Option<SubmissionRecord> {
        let record = self
            .records
            .iter_mut()
            .find(|r| r.id == id && !r.status.is_final())?;
        let keep_answer = record.answer_message_id.as_deref().is_some_and(answered);
        record.status = status;
        if !keep_answer {
            record.answer_message_id = None;
        }
        if let Some(error) = error {
            record.error = Some(error.to_string());
        }
        if status != SubmissionStatus::Failed && error.is_none() {
            record.error = None;
        }
        record.updated_at = now;
        Some(record.clone())
    }

    /// Keeps a new submission and at most `KEPT_SUBMISSIONS` in all (the
    /// oldest finished ones go); returns the ids of those that went.
    pub fn remember(&mut self, record: SubmissionRecord) -> Vec<String> {
        self.records.push(record);
        let mut gone = Vec::new();
        while self.records.len() > KEPT_SUBMISSIONS {
            let Some(oldest) = self.records.iter().position(|r| r.status.is_final()) else {
                break;
            };
            gone.push(self.records.remove(oldest).id);
        }
        gone
    }
}

/// Which submissions `list` and `forget` take: any of `statuses` (empty:
/// every status for a list, every final status for a delete), finished
/// before `finished_before` (ms, deletes only), at most `limit`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SubmissionFilter {
    pub statuses: Vec<SubmissionStatus>,
    pub finished_before: Option<u64>,
    pub limit: Option<usize>,
}

impl SubmissionFilter {
    fn takes(&self, record: &SubmissionRecord) -> bool {
        (self.statuses.is_empty() || self.statuses.contains(&record.status))
            && self
                .finished_before
                .is_none_or(|before| record.status.is_final() && record.updated_at < before)
    }
}

impl Submissions {
    /// The submissions `filter` takes, newest first.
    pub(in crate::core) fn list(&self, filter: &SubmissionFilter) -> Vec<SubmissionRecord> {
        let limit = filter.limit.unwrap_or(usize::MAX);
        self.records
            .iter()
            .rev()
            .filter(|r| filter.takes(r))
            .take(limit)
            .cloned()
            .collect()
    }

    /// Forgets the final submissions `filter` takes, those that finished
    /// first going first; a submission still queued or running is never
    /// forgotten; `also` narrows the choice. Returns the ids that went.
    pub(in crate::core) fn forget_where(
        &mut self,
        filter: &SubmissionFilter,
        also: impl Fn(&SubmissionRecord) -> bool,
    ) -> Vec<String> {
        let mut chosen: Vec<&SubmissionRecord> = self
            .records
            .iter()
            .filter(|r| r.status.is_final() && filter.takes(r) && also(r))
            .collect();
        chosen.sort_by_key(|r| (r.updated_at, r.submitted_at));
        let ids: Vec<String> = chosen
            .into_iter()
            .take(filter.limit.unwrap_or(usize::MAX))
            .map(|r| r.id.clone())
            .collect();
        self.records.retain(|r| !ids.contains(&r.id));
        ids
    }
}
