//! Think's submission shapes as they cross Durable Object RPC, read into
//! this crate's `Submission`: the options `submitMessages` takes, the
//! inspection `submitMessages` / `inspectSubmission` return and the result
//! of `cancelSubmission`. An `AgentStub` over RPC speaks these to any
//! agent with Think's methods.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::core::{SubmissionRecord, SubmissionStatus};

/// The second argument of `submitMessages(messages, options)`.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ThinkSubmitOptions {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// Kept with the submission and returned by every inspection.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// How many delegated calls deep the submitted turn is (a parent of this
    /// crate sends it; Think ignores it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delegation_depth: Option<u32>,
}

/// `ThinkSubmissionInspection` (also the body of `SubmitMessagesResult`,
/// which adds `accepted`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThinkInspection {
    pub submission_id: String,
    #[serde(default)]
    pub idempotency_key: Option<String>,
    #[serde(default)]
    pub request_id: Option<String>,
    pub status: String,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub created_at: f64,
    #[serde(default)]
    pub started_at: Option<f64>,
    #[serde(default)]
    pub completed_at: Option<f64>,
    #[serde(default)]
    pub message_id: Option<String>,
}

/// Think's submission status, in this crate's words; `None` for a word
/// Think does not define.
pub fn status_of(think: &str) -> Option<SubmissionStatus> {
    Some(match think {
        "pending" => SubmissionStatus::Queued,
        "running" => SubmissionStatus::Running,
        "completed" => SubmissionStatus::Completed,
        "aborted" => SubmissionStatus::Cancelled,
        "skipped" => SubmissionStatus::Skipped,
        "error" => SubmissionStatus::Failed,
        _ => return None,
    })
}

impl ThinkInspection {
    /// The submission as this crate describes one. Think does not list the
    /// submitted messages' ids, so `message_ids` stays empty.
    pub fn into_submission(self) -> Result<SubmissionRecord, String> {
        let status = status_of(&self.status)
            .ok_or_else(|| format!("unknown submission status '{}'", self.status))?;
        let updated = self
            .completed_at
            .or(self.started_at)
            .unwrap_or(self.created_at);
        let turn_request_id = self.request_id.filter(|id| *id != self.submission_id);
        Ok(SubmissionRecord {
            id: self.submission_id,
            idempotency_key: self.idempotency_key,
            caller: None,
            request_digest: None,
            status,
            message_ids: Vec::new(),
            answer_message_id: self.message_id,
            error: self.error,
            turn_request_id,
            submitted_at: millis(self.created_at),
            updated_at: millis(updated),
        })
    }
}

fn millis(ms: f64) -> u64 {
    if ms.is_finite() && ms > 0.0 {
        ms as u64
    } else {
        0
    }
}

/// What `cancelSubmission(id)` did.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThinkCancelResult {
    /// `not_found`, `already_terminal` or `cancelled`.
    pub outcome: String,
    #[serde(default)]
    pub submission: Option<ThinkInspection>,
}

impl ThinkCancelResult {
    /// `Ok(None)`: no submission has that id.
    pub fn into_submission(self) -> Result<Option<SubmissionRecord>, String> {
        match (self.outcome.as_str(), self.submission) {
            ("not_found", _) => Ok(None),
            (_, Some(s)) => s.into_submission().map(Some),
            (outcome, None) => Err(format!(
                "cancel answered '{outcome}' without the submission"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_inspection_reads_as_a_submission() {
        let think: ThinkInspection = serde_json::from_value(serde_json::json!({
            "submissionId": "s1", "idempotencyKey": "k", "requestId": "s1",
            "status": "completed", "createdAt": 1000.0, "startedAt": 1500.0,
            "completedAt": 2000.0, "messageId": "m9", "accepted": true,
        }))
        .unwrap();
        let s = think.into_submission().unwrap();
        assert_eq!(s.id, "s1");
        assert_eq!(s.idempotency_key.as_deref(), Some("k"));
        assert_eq!(s.status, SubmissionStatus::Completed);
        assert_eq!(s.answer_message_id.as_deref(), Some("m9"));
        assert_eq!(
            s.turn_request_id, None,
            "the request id is the submission's own"
        );
        assert_eq!((s.submitted_at, s.updated_at), (1000, 2000));
    }

    #[test]
    fn every_think_status_has_a_meaning_and_others_are_refused() {
        for (think, ours) in [
            ("pending", SubmissionStatus::Queued),
            ("running", SubmissionStatus::Running),
            ("completed", SubmissionStatus::Completed),
            ("aborted", SubmissionStatus::Cancelled),
            ("skipped", SubmissionStatus::Skipped),
            ("error", SubmissionStatus::Failed),
        ] {
            assert_eq!(status_of(think), Some(ours));
        }
        let odd: ThinkInspection = serde_json::from_value(
            serde_json::json!({"submissionId": "s", "status": "paused", "createdAt": 1}),
        )
        .unwrap();
        assert!(odd.into_submission().unwrap_err().contains("paused"));
    }

    #[test]
    fn cancel_results_map_to_found_or_not() {
        let not_found: ThinkCancelResult = serde_json::from_value(
            serde_json::json!({"outcome": "not_found", "submissionId": "x"}),
        )
        .unwrap();
        assert_eq!(not_found.into_submission().unwrap(), None);
        let cancelled: ThinkCancelResult = serde_json::from_value(serde_json::json!({
            "outcome": "cancelled", "submissionId": "s", "previousStatus": "pending",
            "messagesApplied": false,
            "submission": {"submissionId": "s", "status": "aborted", "createdAt": 5},
        }))
        .unwrap();
        let s = cancelled.into_submission().unwrap().unwrap();
        assert_eq!(s.status, SubmissionStatus::Cancelled);
    }

    #[test]
    fn submit_options_serialise_as_think_reads_them() {
        let o = ThinkSubmitOptions {
            idempotency_key: Some("k1".into()),
            metadata: None,
            delegation_depth: Some(2),
        };
        assert_eq!(
            serde_json::to_value(&o).unwrap(),
            serde_json::json!({"idempotencyKey": "k1", "delegationDepth": 2})
        );
    }
}
