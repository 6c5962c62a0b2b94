//! Turns over RPC under Think's names: `runTurn(options)` in its three modes
//! (`wait`: the turn run and its result with the stored answer; `submit`: a
//! durable submission; `stream`: `chat()`'s callback), `waitForSubmission(id,
//! {timeoutMs})` and `cancelAllChats()`. A turn awaited here ends `aborted`
//! when the caller's `signal` aborts.

use std::rc::Rc;
use std::time::Duration;

use futures::FutureExt;
use serde_json::{json, Map, Value};
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;

use crate::protocol::UIMessage;

use super::submissions::{id_of, inspection, status_name, RPC_CALLER};
use super::{chat, js, submissions};
use crate::agent::handle::{AgentHandle, Submission, SubmitOptions};
use crate::agent::host::AgentHost;

/// How a `runTurn` wants its turn.
enum Mode {
    Wait,
    Submit,
    Stream,
}

fn mode_of(options: &JsValue) -> Result<Mode, JsValue> {
    match js::field(options, "mode").as_string().as_deref() {
        None if js::field(options, "mode").is_undefined() => Ok(Mode::Wait),
        Some("wait") => Ok(Mode::Wait),
        Some("submit") => Ok(Mode::Submit),
        Some("stream") => Ok(Mode::Stream),
        _ => Err(js::error(
            "runTurn: mode must be \"wait\", \"submit\", or \"stream\"",
        )),
    }
}

/// Think's turn input (text, a message, or a list of them) read through the
/// gate as user messages; empty text or an empty list is no message.
pub(super) fn input_messages(
    input: &JsValue,
    host: &Rc<AgentHost>,
    what: &str,
) -> Result<Vec<UIMessage>, JsValue> {
    if input.is_function() {
        return Err(js::error(&format!(
            "{what}: a function input is not supported over RPC (send the messages)"
        )));
    }
    let budget = host.handle().limits().budget();
    if input.is_string() {
        return match js::to_json(input, &budget, what)? {
            Some(Value::String(text)) if !text.is_empty() => {
                Ok(vec![UIMessage::user_text("", text)])
            }
            _ => Ok(Vec::new()),
        };
    }
    if js_sys::Array::is_array(input) {
        return js::read(input, &budget, what);
    }
    if input.is_object() {
        return Ok(vec![js::read(input, &budget, what)?]);
    }
    Err(js::error(&format!(
        "{what}: the input must be text, a UIMessage or a list of them"
    )))
}

/// The caller's `signal`, when it is one.
pub(super) fn signal_of(options: &JsValue) -> Option<JsValue> {
    Some(js::field(options, "signal")).filter(|s| s.is_object())
}

fn aborted(signal: Option<&JsValue>) -> bool {
    signal.is_some_and(|s| js::field(s, "aborted").as_bool() == Some(true))
}

/// Waits for submission `id` to end; the signal aborting cancels it first.
pub(super) async fn follow(
    agent: &AgentHandle,
    id: &str,
    signal: Option<&JsValue>,
) -> Option<Submission> {
    if aborted(signal) {
        agent.cancel_submission(id);
        return agent.wait_for_submission(id).await;
    }
    let Some(signal) = signal else {
        return agent.wait_for_submission(id).await;
    };
    let abort = JsFuture::from(js::abort_of(signal)).fuse();
    let wait = agent.wait_for_submission(id).fuse();
    futures::pin_mut!(abort, wait);
    futures::select! {
        ended = wait => ended,
        _ = abort => {
            agent.cancel_submission(id);
            agent.wait_for_submission(id).await
        }
    }
}

/// Submits `messages` for an RPC caller and waits for the turn's end: Think's
/// `SaveMessagesResult` (`{requestId, status, error?}`) and the submission.
pub(super) async fn run_messages(
    host: &Rc<AgentHost>,
    messages: Vec<UIMessage>,
    body: Option<Map<String, Value>>,
    signal: Option<&JsValue>,
    what: &str,
) -> Result<(Map<String, Value>, Submission), JsValue> {
    let agent = host.handle();
    let options = SubmitOptions {
        caller: Some(RPC_CALLER.into()),
        body,
        ..SubmitOptions::default()
    };
    let submitted = agent
        .submit_messages(messages, options)
        .map_err(|e| js::error(&e.0))?;
    let Some(ended) = follow(&agent, &submitted.id, signal).await else {
        return Err(js::error(&format!("{what}: the submission was forgotten")));
    };
    let mut result = Map::new();
    result.insert("requestId".into(), json!(ended.id));
    result.insert("status".into(), json!(status_name(ended.status)));
    if let Some(error) = &ended.error {
        result.insert("error".into(), json!(error));
    }
    Ok((result, ended))
}

pub(super) async fn run_turn(host: Rc<AgentHost>, options: JsValue) -> Result<JsValue, JsValue> {
    if !options.is_object() {
        return Err(js::error("runTurn: options must be an object"));
    }
    let mode = mode_of(&options)?;
    let input = js::field(&options, "input");
    let has_input = !input.is_undefined();
    let continuation = js::field(&options, "continuation").as_bool() == Some(true);
    match mode {
        Mode::Wait if has_input && continuation => Err(js::error(
            "runTurn: supply either input or continuation: true, not both",
        )),
        Mode::Wait if continuation => {
            let mut result = continue_turn(&host).await?;
            result.insert("continuation".into(), json!(true));
            js::from_json(&result)
        }
        Mode::Wait if !has_input => Err(js::error(
            "runTurn: supply either input or continuation: true",
        )),
        _ if continuation => Err(js::error(
            "runTurn: continuation is only supported with mode: \"wait\"",
        )),
        Mode::Wait => {
            let messages = input_messages(&input, &host, "runTurn: input")?;
            if messages.is_empty() {
                return js::from_json(
                    &json!({"requestId": "", "status": "skipped", "continuation": false}),
                );
            }
            let budget = host.handle().limits().budget();
            let body = js::read(&js::field(&options, "body"), &budget, "runTurn: body")?;
            let signal = signal_of(&options);
            let (mut result, ended) =
                run_messages(&host, messages, body, signal.as_ref(), "runTurn").await?;
            let answer = (ended.answer_message_id.as_deref())
                .filter(|_| ended.status == crate::core::SubmissionStatus::Completed)
                .and_then(|id| host.handle().with_core(|core, _| core.message(id)));
            if let Some(message) = answer {
                result.insert("message".into(), json!(message));
            }
            result.insert("continuation".into(), json!(false));
            js::from_json(&result)
        }
        Mode::Submit if !has_input => Err(js::error("runTurn: mode \"submit\" requires input")),
        Mode::Submit => {
            let messages = input_messages(&input, &host, "runTurn: input")?;
            submissions::submit_read(&host, messages, &options)
        }
        Mode::Stream if !has_input => Err(js::error("runTurn: mode \"stream\" requires input")),
        Mode::Stream => {
            let callback = js::field(&options, "callback");
            if callback.is_undefined() || callback.is_null() {
                return Err(js::error("runTurn: mode \"stream\" requires callback"));
            }
            let messages = input_messages(&input, &host, "runTurn: input")?;
            if messages.is_empty() {
                let start =
                    js::from_json(&json!({ "requestId": crate::agent::ids::random_token(16) }))?;
                js::call_method(&callback, "onStart", &[start]).await?;
                js::call_method(&callback, "onDone", &[]).await?;
                return Ok(JsValue::UNDEFINED);
            }
            chat::chat(host, input, callback, options).await
        }
    }
}

/// Runs a continuation of the last assistant message and waits for its end:
/// `{requestId, status, error?}`.
pub(super) async fn continue_turn(host: &Rc<AgentHost>) -> Result<Map<String, Value>, JsValue> {
    let request_id = host
        .handle()
        .continue_last_turn_from_outside()
        .map_err(|e| js::error(&e.0))?;
    let ended = host
        .wait_for_turn(&request_id)
        .await
        .map_err(|_| js::error("continueLastTurn: the agent stopped before the turn ended"))?;
    let mut result = Map::new();
    result.insert("requestId".into(), json!(request_id));
    result.insert("status".into(), json!(ended.outcome));
    if let Some(error) = ended.error {
        result.insert("error".into(), Value::String(error));
    }
    Ok(result)
}

/// `waitForSubmission(id, {timeoutMs})`: the inspection once the submission
/// is final, as it stands when `timeoutMs` passed first, `null` for an
/// unknown (or deleted) one.
pub(super) async fn wait(
    host: Rc<AgentHost>,
    id: JsValue,
    options: JsValue,
) -> Result<JsValue, JsValue> {
    let id = id_of(&id, "waitForSubmission")?;
    let timeout = js::field(&options, "timeoutMs").as_f64();
    let agent = host.handle();
    let ended = match timeout {
        None => agent.wait_for_submission(&id).await,
        Some(ms) => {
            let ms = if ms.is_finite() && ms > 0.0 {
                ms as u64
            } else {
                0
            };
            let delay = worker::Delay::from(Duration::from_millis(ms)).fuse();
            let wait = agent.wait_for_submission(&id).fuse();
            futures::pin_mut!(delay, wait);
            futures::select! {
                ended = wait => ended,
                () = delay => agent.submission_status(&id),
            }
        }
    };
    match ended {
        Some(submission) => js::from_json(&inspection(&submission)),
        None => Ok(JsValue::NULL),
    }
}

pub(super) fn cancel_all(host: &Rc<AgentHost>) -> Result<JsValue, JsValue> {
    host.handle().cancel_all_chats();
    Ok(JsValue::UNDEFINED)
}
