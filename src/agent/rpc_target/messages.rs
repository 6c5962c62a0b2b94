//! The conversation over RPC, under Think's names: `getMessages()`,
//! `clearMessages()`, `addMessages(messages)` (stored without a turn: the
//! handle's `save_messages`), `saveMessages(messages)` (stored, a turn run
//! on them, resolved with `{requestId, status, error?}` when it ended) and
//! `continueLastTurn()` (a turn continuing the last assistant message,
//! resolved the same way).

use std::rc::Rc;
use std::time::Duration;

use serde_json::{json, Map, Value};
use wasm_bindgen::JsValue;

use crate::protocol::UIMessage;

use super::super::handle::SubmitOptions;
use super::super::host::AgentHost;
use super::js;
use super::submissions::{status_name, RPC_CALLER};

/// How often `saveMessages` looks at its submission while the turn runs.
const SUBMISSION_POLL: Duration = Duration::from_millis(100);

/// The conversation as `get-messages` answers it (bounded the same way),
/// parsed in JS: the older part never enters wasm memory.
pub(super) fn get(host: &Rc<AgentHost>) -> Result<JsValue, JsValue> {
    js::parse_js(&host.messages_json_js())
}

pub(super) fn clear(host: &Rc<AgentHost>) -> Result<JsValue, JsValue> {
    host.clear_messages();
    Ok(JsValue::UNDEFINED)
}

pub(super) fn add(host: &Rc<AgentHost>, messages: &JsValue) -> Result<JsValue, JsValue> {
    let limits = host.handle().limits();
    let messages: Vec<UIMessage> = js::read(messages, &limits.budget(), "addMessages: messages")?;
    host.handle()
        .save_messages(messages)
        .map_err(|e| js::error(&e.0))?;
    Ok(JsValue::UNDEFINED)
}

pub(super) async fn save(
    host: Rc<AgentHost>,
    messages: JsValue,
    _options: JsValue,
) -> Result<JsValue, JsValue> {
    let limits = host.handle().limits();
    let messages: Vec<UIMessage> = js::read(&messages, &limits.budget(), "saveMessages: messages")?;
    let agent = host.handle();
    let options = SubmitOptions {
        caller: Some(RPC_CALLER.into()),
        ..SubmitOptions::default()
    };
    let submission = agent
        .submit_messages(messages, options)
        .map_err(|e| js::error(&e.0))?;
    loop {
        let Some(now) = agent.submission_status(&submission.id) else {
            return Err(js::error("saveMessages: the submission was forgotten"));
        };
        if now.status.is_final() {
            let mut result = Map::new();
            result.insert("requestId".into(), json!(now.id));
            result.insert("status".into(), json!(status_name(now.status)));
            if let Some(error) = now.error {
                result.insert("error".into(), json!(error));
            }
            return js::from_json(&result);
        }
        worker::Delay::from(SUBMISSION_POLL).await;
    }
}

pub(super) async fn continue_last(host: Rc<AgentHost>) -> Result<JsValue, JsValue> {
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
    js::from_json(&result)
}
