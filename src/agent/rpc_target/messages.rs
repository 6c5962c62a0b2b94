//! The conversation over RPC, under Think's names: `getMessages()`,
//! `clearMessages()`, `addMessages(messages, {parentId, mode})` (stored
//! without a turn), `saveMessages(messages, {signal})` (stored, a turn run on
//! them, resolved with `{requestId, status, error?}` when it ended; the
//! signal aborting ends it `aborted`) and `continueLastTurn()` (a turn
//! continuing the last assistant message, resolved the same way).
//!
//! The agent keeps one linear conversation, not Think's tree: `addMessages`
//! appends after the last message, so a `parentId` must name the last
//! message (or be `null` while there is none); any other is refused.
//! `mode: "append"` (the default) leaves a message whose id is stored as it
//! is, `"upsert"` replaces it. Added messages always reach every tab.

use std::rc::Rc;

use wasm_bindgen::JsValue;

use crate::protocol::gate;
use crate::protocol::UIMessage;

use super::js;
use super::turns::{continue_turn, run_messages, signal_of};
use crate::agent::host::AgentHost;

/// The conversation as `get-messages` answers it (bounded the same way),
/// parsed in JS: the older part never enters wasm memory.
pub(super) fn get(host: &Rc<AgentHost>) -> Result<JsValue, JsValue> {
    js::parse_js(&host.messages_json_js())
}

pub(super) fn clear(host: &Rc<AgentHost>) -> Result<JsValue, JsValue> {
    host.clear_messages();
    Ok(JsValue::UNDEFINED)
}

/// Where `addMessages` may attach, checked against the linear conversation.
fn check_parent(host: &Rc<AgentHost>, options: &JsValue) -> Result<(), JsValue> {
    let parent = js::field(options, "parentId");
    if parent.is_undefined() {
        return Ok(());
    }
    let agent = host.handle();
    let last = agent.with_core(|core, _| core.last_message_id().map(str::to_string));
    if parent.is_null() {
        return match last {
            None => Ok(()),
            Some(_) => Err(js::error(
                "addMessages: parentId null (a new root) is not supported: this agent keeps one \
                 linear conversation, and it has messages",
            )),
        };
    }
    let Some(parent) = js::string_arg(&parent, "addMessages: parentId")? else {
        return Err(js::error("addMessages: parentId must be a string or null"));
    };
    if agent.with_core(|core, _| core.message(&parent)).is_none() {
        return Err(js::error(&format!(
            "addMessages: parentId \"{parent}\" does not exist in this session"
        )));
    }
    match last.as_deref() == Some(parent.as_str()) {
        true => Ok(()),
        false => Err(js::error(&format!(
            "addMessages: parentId \"{parent}\" is not the last message: this agent keeps one \
             linear conversation and appends after its last message"
        ))),
    }
}

pub(super) fn add(
    host: &Rc<AgentHost>,
    messages: &JsValue,
    options: &JsValue,
) -> Result<JsValue, JsValue> {
    if messages.is_function() {
        return Err(js::error(
            "addMessages: a function is not supported over RPC (send the messages)",
        ));
    }
    let limits = host.handle().limits();
    let messages: Vec<UIMessage> = js::read(messages, &limits.budget(), "addMessages: messages")?;
    let mode: Option<String> = js::read(
        &js::field(options, "mode"),
        &gate::RPC_ARGUMENT,
        "addMessages: mode",
    )?;
    let upsert = match mode.as_deref() {
        None | Some("append") => false,
        Some("upsert") => true,
        Some(_) => {
            return Err(js::error(
                "addMessages: mode must be \"append\" or \"upsert\"",
            ))
        }
    };
    check_parent(host, options)?;
    let agent = host.handle();
    let messages: Vec<UIMessage> = match upsert {
        true => messages,
        // Appending is idempotent by id: a stored message stays as it is.
        false => messages
            .into_iter()
            .filter(|m| m.id.is_empty() || agent.with_core(|core, _| core.message(&m.id)).is_none())
            .collect(),
    };
    if messages.is_empty() {
        return Ok(JsValue::UNDEFINED);
    }
    agent.save_messages(messages).map_err(|e| js::error(&e.0))?;
    Ok(JsValue::UNDEFINED)
}

pub(super) async fn save(
    host: Rc<AgentHost>,
    messages: JsValue,
    options: JsValue,
) -> Result<JsValue, JsValue> {
    let limits = host.handle().limits();
    let messages: Vec<UIMessage> = js::read(&messages, &limits.budget(), "saveMessages: messages")?;
    let signal = signal_of(&options);
    let (result, _) = run_messages(&host, messages, None, signal.as_ref(), "saveMessages").await?;
    js::from_json(&result)
}

pub(super) async fn continue_last(host: Rc<AgentHost>) -> Result<JsValue, JsValue> {
    js::from_json(&continue_turn(&host).await?)
}
