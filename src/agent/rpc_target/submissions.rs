//! The durable submissions over RPC, in Think's shapes:
//! `submitMessages(messages, {idempotencyKey, metadata})` →
//! `{accepted, submissionId, status, …}`, `inspectSubmission(id)` → the
//! inspection or `null`, `cancelSubmission(id)` → `{outcome, submissionId,
//! …}`, `listSubmissions({status, limit})` → inspections newest first,
//! `deleteSubmission(id)` → whether a finished one went,
//! `deleteSubmissions({status, completedBefore, limit})` → how many went. Statuses map `queued`→`pending`, `failed`→`error`,
//! `cancelled`→`aborted`; `metadata` is the custom body `before_turn` sees.
//! Idempotency keys sent over RPC belong to the caller `rpc`, apart from
//! the agent's own code and its HTTP routes. `submissionId` is not taken
//! (the agent mints its ids): it serves as the idempotency key when none is
//! given, so a repeat still answers the first submission.

use std::rc::Rc;

use serde_json::{json, Map, Value};
use wasm_bindgen::{JsCast, JsValue};

use crate::core::{SubmissionFilter, SubmissionStatus};
use crate::protocol::gate;
use crate::protocol::UIMessage;

use super::js;
use crate::agent::handle::{Submission, SubmitOptions};
use crate::agent::host::AgentHost;
use crate::agent::subagents::think_submissions::status_of;

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
pub(super) fn inspection(submission: &Submission) -> Map<String, Value> {
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

pub(super) fn id_of(value: &JsValue, method: &str) -> Result<String, JsValue> {
    js::string_arg(value, method)?
        .ok_or_else(|| js::error(&format!("{method}: the submission id must be a string")))
}

pub(super) fn submit(
    host: &Rc<AgentHost>,
    messages: &JsValue,
    options: &JsValue,
) -> Result<JsValue, JsValue> {
    let budget = host.handle().limits().budget();
    let messages: Vec<UIMessage> = js::read(messages, &budget, "submitMessages: messages")?;
    submit_read(host, messages, options)
}

/// `submitMessages` once its messages are read: the options, then Think's
/// `SubmitMessagesResult`. `accepted` is whether this call made the
/// submission (a known key answers the earlier one with `false`).
pub(super) fn submit_read(
    host: &Rc<AgentHost>,
    messages: Vec<UIMessage>,
    options: &JsValue,
) -> Result<JsValue, JsValue> {
    let budget = host.handle().limits().budget();
    let key = |name: &str| {
        js::read::<Option<String>>(&js::field(options, name), &gate::RPC_ARGUMENT, name)
    };
    let idempotency_key = key("idempotencyKey")?.or(key("submissionId")?);
    let body: Option<Map<String, Value>> =
        js::read(&js::field(options, "metadata"), &budget, "metadata")?;
    let depth = js::delegation_depth(options);
    let agent = host.handle();
    let known = idempotency_key.as_deref().is_some_and(|k| {
        agent.with_core(|core, _| core.submission_by_key(Some(RPC_CALLER), k).is_some())
    });
    let options = SubmitOptions {
        idempotency_key,
        caller: Some(RPC_CALLER.into()),
        body,
    };
    let submission = agent
        .submit_messages_at_depth(messages, options, depth)
        .map_err(|e| js::error(&e.0))?;
    let mut result = inspection(&submission);
    // A repeat of a key answers the first submission: not accepted again.
    let accepted = !known;
    result.insert("accepted".into(), json!(accepted));
    js::from_json(&result)
}

/// Think's `status` filter: one status or a list of them.
fn statuses(options: &JsValue, method: &str) -> Result<Vec<SubmissionStatus>, JsValue> {
    let value = js::to_json(&js::field(options, "status"), &gate::RPC_ARGUMENT, method)?;
    let names = match value {
        None => return Ok(Vec::new()),
        Some(Value::String(name)) => vec![name],
        Some(Value::Array(list)) => list
            .into_iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| js::error(&format!("{method}: status must be a string or a list")))?,
        Some(_) => {
            return Err(js::error(&format!(
                "{method}: status must be a string or a list"
            )))
        }
    };
    names
        .iter()
        .map(|name| {
            status_of(name).ok_or_else(|| js::error(&format!("{method}: unknown status `{name}`")))
        })
        .collect()
}

/// `limit` clamped to `1..=most`, `default` when absent.
fn limit(options: &JsValue, default: usize, most: usize) -> usize {
    match js::field(options, "limit").as_f64() {
        Some(n) if n.is_finite() => (n.max(1.0) as usize).min(most),
        _ => default,
    }
}

pub(super) fn list(host: &Rc<AgentHost>, options: &JsValue) -> Result<JsValue, JsValue> {
    let filter = SubmissionFilter {
        statuses: statuses(options, "listSubmissions")?,
        finished_before: None,
        limit: Some(limit(options, 50, 100)),
    };
    let found = host.handle().list_submissions(&filter);
    js::from_json(&found.iter().map(inspection).collect::<Vec<_>>())
}

pub(super) fn delete(host: &Rc<AgentHost>, id: &JsValue) -> Result<JsValue, JsValue> {
    let id = id_of(id, "deleteSubmission")?;
    Ok(JsValue::from_bool(host.handle().delete_submission(&id)))
}

pub(super) fn delete_many(host: &Rc<AgentHost>, options: &JsValue) -> Result<JsValue, JsValue> {
    let before = js::field(options, "completedBefore");
    let finished_before = match before.dyn_ref::<js_sys::Date>() {
        Some(date) => Some(date.get_time()),
        None => before.as_f64(),
    };
    let filter = SubmissionFilter {
        statuses: statuses(options, "deleteSubmissions")?,
        finished_before: finished_before
            .filter(|ms| ms.is_finite())
            .map(|ms| ms.max(0.0) as u64),
        limit: Some(limit(options, 100, 500)),
    };
    let gone = host.handle().delete_submissions(&filter);
    Ok(JsValue::from_f64(gone as f64))
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
