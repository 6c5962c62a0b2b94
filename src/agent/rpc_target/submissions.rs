//! The durable submissions over RPC, in Think's shapes:
//! `submitMessages(messages, {idempotencyKey, metadata})` →
//! `{accepted, submissionId, status, …}`, `inspectSubmission(id)` → the
//! inspection or `null`, `cancelSubmission(id)` → `{outcome, submissionId,
//! …}`. Statuses map `queued`→`pending`, `failed`→`error`,
//! `cancelled`→`aborted`; `metadata` is the custom body `before_turn` sees.
//! Idempotency keys sent over RPC belong to the caller `rpc`, apart from
//! the agent's own code and its HTTP routes.

use std::rc::Rc;

use serde_json::{json, Map, Value};
use wasm_bindgen::JsValue;

use crate::core::SubmissionStatus;
use crate::protocol::gate;
use crate::protocol::UIMessage;

use super::super::handle::{Submission, SubmitOptions};
use super::super::host::AgentHost;
use super::js;

/// The caller RPC submissions' idempotency keys belong to.
pub(super) const RPC_CALLER: &str = "rpc";

/// Think's name of a status.
pub(super) fn status_name(status: SubmissionStatus) -> &'static str {
    match status {
        SubmissionStatus::Queued => "pending",
        SubmissionStatus::Running => "running",
        SubmissionStatus::Completed => "completed",
        SubmissionStatus::Failed => "error",
        SubmissionStatus::Cancelled => "aborted",
        SubmissionStatus::Skipped => "skipped",
    }
}

/// A submission as Think's `ThinkSubmissionInspection`.
fn inspection(submission: &Submission) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("submissionId".into(), json!(submission.id));
    if let Some(key) = &submission.idempotency_key {
        out.insert("idempotencyKey".into(), json!(key));
    }
    let request_id = submission
        .turn_request_id
        .as_ref()
        .unwrap_or(&submission.id);
    out.insert("requestId".into(), json!(request_id));
    out.insert("status".into(), json!(status_name(submission.status)));
    if let Some(error) = &submission.error {
        out.insert("error".into(), json!(error));
    }
    out.insert("createdAt".into(), json!(submission.submitted_at));
    if submission.status.is_final() {
        out.insert("completedAt".into(), json!(submission.updated_at));
    }
    if let Some(id) = &submission.answer_message_id {
        out.insert("messageId".into(), json!(id));
    }
    out
}

fn id_of(value: &JsValue, method: &str) -> Result<String, JsValue> {
    js::string_arg(value, method)?
        .ok_or_else(|| js::error(&format!("{method}: the submission id must be a string")))
}

pub(super) fn submit(
    host: &Rc<AgentHost>,
    messages: &JsValue,
    options: &JsValue,
) -> Result<JsValue, JsValue> {
    let limits = host.handle().limits();
    let budget = limits.budget();
    let messages: Vec<UIMessage> = js::read(messages, &budget, "submitMessages: messages")?;
    let idempotency_key: Option<String> = js::read(
        &js::field(options, "idempotencyKey"),
        &gate::RPC_ARGUMENT,
        "idempotencyKey",
    )?;
    let body: Option<Map<String, Value>> =
        js::read(&js::field(options, "metadata"), &budget, "metadata")?;
    let depth = js::delegation_depth(options);
    let agent = host.handle();
    let asked_at = agent.now_ms();
    let options = SubmitOptions {
        idempotency_key,
        caller: Some(RPC_CALLER.into()),
        body,
    };
    let submission = agent
        .submit_messages(messages, options)
        .map_err(|e| js::error(&e.0))?;
    let mut result = inspection(&submission);
    // A repeat of a key answers the first submission, made before this call.
    let accepted = submission.submitted_at >= asked_at;
    if accepted {
        host.submitted_at_depth(&submission.id, depth);
    }
    result.insert("accepted".into(), json!(accepted));
    js::from_json(&result)
}

pub(super) fn inspect(host: &Rc<AgentHost>, id: &JsValue) -> Result<JsValue, JsValue> {
    let id = id_of(id, "inspectSubmission")?;
    match host.handle().submission_status(&id) {
        Some(submission) => js::from_json(&inspection(&submission)),
        None => Ok(JsValue::NULL),
    }
}

pub(super) fn cancel(host: &Rc<AgentHost>, id: &JsValue) -> Result<JsValue, JsValue> {
    let id = id_of(id, "cancelSubmission")?;
    let agent = host.handle();
    let Some(before) = agent.submission_status(&id) else {
        return js::from_json(&json!({ "outcome": "not_found", "submissionId": id }));
    };
    if before.status.is_final() {
        return js::from_json(&json!({
            "outcome": "already_terminal",
            "submissionId": id,
            "submission": inspection(&before),
        }));
    }
    let after = agent.cancel_submission(&id).unwrap_or(before.clone());
    js::from_json(&json!({
        "outcome": "cancelled",
        "submissionId": id,
        "previousStatus": status_name(before.status),
        // A submission's messages are stored when it is accepted.
        "messagesApplied": true,
        "submission": inspection(&after),
    }))
}
