//! Sub-agents: a parent agent calls a child agent's `chat()` over a
//! Durable-Object-to-Durable-Object WebSocket (the "channel").
//!
//! The channel carries a small framed protocol (types in protocol/types.rs):
//! parent → child `cf_agent_rpc_chat {message, clientTools, executor}` opens
//! the turn, `cf_agent_rpc_tool_result {callId, toolCallId, output|error}`
//! answers a tool call, `cf_agent_chat_request_cancel {id}` aborts; child →
//! parent `cf_agent_rpc_started {requestId}`, `cf_agent_rpc_tool_call`, and the
//! same `cf_agent_use_chat_response` frames a tab receives. The channel is not
//! hibernatable on the parent's side: it lives while `chat()` is awaited.

use std::rc::Rc;

use futures::channel::oneshot;
use futures::{FutureExt, StreamExt};
use serde_json::{json, Value};
use worker::{Env, Headers, Request, RequestInit, WebsocketEvent};

use crate::core::{ConnId, Event};
use crate::protocol::{types, ClientToolSchema, UIMessage};

use super::definition::ToolFuture;

/// A client tool call the child's model made, for the parent's executor.
#[derive(Debug, Clone)]
pub struct ClientToolCall {
    pub tool_name: String,
    pub tool_call_id: String,
    pub input: Value,
}

pub type ClientToolExecutor = Rc<dyn Fn(ClientToolCall) -> ToolFuture>;

/// Receives the child's turn as it happens.
pub trait ChatCallback {
    fn on_start(&mut self, _request_id: &str) {}
    /// Each `UIMessageChunk`, as the same JSON a tab receives.
    fn on_event(&mut self, _chunk_json: &str) {}
    fn on_done(&mut self) {}
    fn on_error(&mut self, _text: &str) {}
}

/// Aborts a running `chat()` (the child's turn ends `aborted`).
pub struct AbortHandle(oneshot::Sender<()>);
pub struct AbortSignal(oneshot::Receiver<()>);

impl AbortHandle {
    pub fn abort(self) {
        let _ = self.0.send(());
    }
}

pub fn abort_pair() -> (AbortHandle, AbortSignal) {
    let (tx, rx) = oneshot::channel();
    (AbortHandle(tx), AbortSignal(rx))
}

#[derive(Default)]
pub struct ChatOptions {
    /// Client tools for this turn only, merged after the child's server tools.
    pub client_tools: Vec<ClientToolSchema>,
    /// Runs the child's calls to `client_tools`; without it they are left dangling.
    pub on_client_tool_call: Option<ClientToolExecutor>,
    pub signal: Option<AbortSignal>,
}

/// What the parent sends: plain text or a whole message.
pub enum ChatMessage {
    Text(String),
    Message(UIMessage),
}

impl From<&str> for ChatMessage {
    fn from(text: &str) -> Self {
        ChatMessage::Text(text.to_string())
    }
}

impl From<String> for ChatMessage {
    fn from(text: String) -> Self {
        ChatMessage::Text(text)
    }
}

impl From<UIMessage> for ChatMessage {
    fn from(message: UIMessage) -> Self {
        ChatMessage::Message(message)
    }
}

/// Runs one turn of the child agent `binding`/`name` and returns when it ended.
pub async fn chat(
    env: &Env,
    binding: &str,
    name: &str,
    message: impl Into<ChatMessage>,
    callback: &mut dyn ChatCallback,
    options: ChatOptions,
) -> worker::Result<()> {
    let message = match message.into() {
        ChatMessage::Text(text) => UIMessage::user_text(super::ids::random_token(16), text),
        ChatMessage::Message(message) => message,
    };
    let stub = env
        .durable_object(binding)?
        .id_from_name(name)?
        .get_stub()?;
    let headers = Headers::new();
    headers.set("Upgrade", "websocket")?;
    let mut init = RequestInit::new();
    init.with_headers(headers);
    let namespace = crate::routing::kebab(binding);
    let url = format!(
        "https://agent/agents/{namespace}/{name}{}",
        super::host::CHANNEL_PATH
    );
    let response = stub
        .fetch_with_request(Request::new_with_init(&url, &init)?)
        .await?;
    let ws = response
        .websocket()
        .ok_or_else(|| worker::Error::RustError("the child agent refused the channel".into()))?;
    ws.accept()?;
    let mut events = ws.events()?;
    ws.send_with_str(
        json!({"type": types::RPC_CHAT, "message": message, "clientTools": options.client_tools,
               "executor": options.on_client_tool_call.is_some()})
        .to_string(),
    )?;
    let executor = options.on_client_tool_call;
    let mut abort = match options.signal {
        Some(AbortSignal(rx)) => rx.map(|r| r.is_ok()).boxed_local(),
        None => futures::future::pending().boxed_local(),
    };
    let mut aborted = false;
    let mut request_id: Option<String> = None;
    loop {
        let next = futures::select! {
            event = events.next().fuse() => event,
            fired = (&mut abort).fuse() => {
                if fired && !aborted {
                    aborted = true;
                    if let Some(id) = &request_id {
                        ws.send_with_str(json!({"type": types::CHAT_REQUEST_CANCEL, "id": id}).to_string())?;
                    }
                }
                abort = futures::future::pending().boxed_local();
                continue;
            }
        };
        let text = match next {
            Some(Ok(WebsocketEvent::Message(m))) => m.text().unwrap_or_default(),
            Some(Ok(WebsocketEvent::Close(_))) | None => {
                callback.on_error("the child agent closed the channel");
                return Ok(());
            }
            Some(Err(e)) => return Err(e),
        };
        let Ok(frame) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        match frame.get("type").and_then(Value::as_str) {
            Some(types::RPC_STARTED) => {
                let id = frame["requestId"].as_str().unwrap_or_default().to_string();
                callback.on_start(&id);
                if aborted {
                    ws.send_with_str(
                        json!({"type": types::CHAT_REQUEST_CANCEL, "id": id}).to_string(),
                    )?;
                }
                request_id = Some(id);
            }
            Some(types::RPC_TOOL_CALL) => {
                let call = ClientToolCall {
                    tool_name: frame["toolName"].as_str().unwrap_or_default().to_string(),
                    tool_call_id: frame["toolCallId"].as_str().unwrap_or_default().to_string(),
                    input: frame["input"].clone(),
                };
                let result = match &executor {
                    Some(run) => run(call.clone()).await,
                    None => Err("no executor for client tools".to_string()),
                };
                let mut reply = json!({"type": types::RPC_TOOL_RESULT, "callId": frame["callId"],
                                       "toolCallId": call.tool_call_id});
                match result {
                    Ok(output) => reply["output"] = output,
                    Err(error) => reply["error"] = json!(error),
                }
                ws.send_with_str(reply.to_string())?;
            }
            Some(types::USE_CHAT_RESPONSE) if request_id.as_deref() == frame["id"].as_str() => {
                let body = frame["body"].as_str().unwrap_or_default();
                let done = frame["done"].as_bool().unwrap_or(false);
                if frame["error"].as_bool() == Some(true) {
                    callback.on_error(body);
                    if done {
                        break;
                    }
                    continue;
                }
                if !done {
                    callback.on_event(body);
                    continue;
                }
                if frame["outcome"].as_str() == Some("completed") {
                    callback.on_done();
                }
                break;
            }
            _ => {}
        }
    }
    let _ = ws.close(Some(1000), Some("turn ended"));
    Ok(())
}

/// The child's side: a frame from a parent's channel as a core event.
pub fn channel_event(conn: ConnId, text: String) -> Event {
    let Ok(frame) = serde_json::from_str::<Value>(&text) else {
        return Event::Frame { conn, text };
    };
    match frame.get("type").and_then(Value::as_str) {
        Some(types::RPC_CHAT) => {
            let message = match &frame["message"] {
                Value::String(text) => Some(UIMessage::user_text(
                    super::ids::random_token(16),
                    text.clone(),
                )),
                other => serde_json::from_value::<UIMessage>(other.clone()).ok(),
            };
            let tools = serde_json::from_value(frame["clientTools"].clone()).unwrap_or_default();
            match message {
                Some(message) => Event::ProgrammaticChat {
                    conn: Some(conn),
                    message,
                    tools,
                    executor: frame["executor"].as_bool().unwrap_or(false),
                },
                None => Event::Frame { conn, text },
            }
        }
        Some(types::RPC_TOOL_RESULT) => {
            let result = match frame.get("error").and_then(Value::as_str) {
                Some(error) => Err(error.to_string()),
                None => Ok(frame.get("output").cloned().unwrap_or(Value::Null)),
            };
            Event::ToolDone {
                call: frame["callId"].as_u64().unwrap_or(0),
                tool_call_id: frame["toolCallId"].as_str().unwrap_or_default().to_string(),
                result,
            }
        }
        _ => Event::Frame { conn, text },
    }
}
