//! The submissions the core still remembers (the agent's own work, by id,
//! idempotency key and the request its turn runs under), oldest first.

use crate::core::rows::persisted::SubmissionRecord;

/// Every submission the core still remembers, oldest first.
#[derive(Debug, Default)]
pub(in crate::core) struct Submissions {
    pub(in crate::core::admit) records: Vec<SubmissionRecord>,
}

impl Submissions {
    pub(in crate::core) fn restore(mut records: Vec<SubmissionRecord>) -> Submissions {
        records.sort_by_key(|r| r.submitted_at);
        Submissions { records }
    }

    pub(in crate::core::admit) fn get(&self, id: &str) -> Option<&SubmissionRecord> {
        self.records.iter().find(|r| r.id == id)
    }

    /// The submission `caller` made under idempotency key `key`.
    pub(in crate::core::admit) fn by_key(
        &self,
        caller: Option<&str>,
        key: &str,
    ) -> Option<&SubmissionRecord> {
        self.records.iter().find(|r| {
            r.idempotency_key.as_deref() == Some(key)
                && r.caller.as_deref().filter(|c| !c.is_empty()) == caller
        })
    }

    /// The unfinished submission whose turn is request `request_id`.
    pub(in crate::core::admit) fn live_for_request(
        &mut self,
        request_id: &str,
    ) -> Option<&mut SubmissionRecord> {
        self.records.iter_mut().find(|r| {
            !r.status.is_final()
                && (r.id == request_id || r.turn_request_id.as_deref() == Some(request_id))
        })
    }
}
