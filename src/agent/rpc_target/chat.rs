//! `chat(message, callback, options)` over RPC: one turn run as a parent's
//! channel turn is (the same frames, limits and core path), on an
//! in-isolate connection instead of a WebSocket. The callback gets Think's
//! `StreamCallback` calls: `onStart({requestId})`, then `onEvent(chunkJson)`
//! per chunk, and `onDone()` when the turn completed or `onError(text)` when
//! it failed (an aborted turn gets neither; a turn cut and left to its
//! recovery gets `onInterrupted()`). `options.clientTools` are
//! offered for this turn; `options.onClientToolCall({toolName, input,
//! toolCallId})` runs their calls, its value (or thrown error) continuing
//! the turn within the call; `options.signal` aborting cancels the turn, as
//! `cancelChat(requestId)` does. `options.delegationDepth` (sent by a
//! parent of this crate) is how many delegated calls deep the turn is.

use std::rc::Rc;

use futures::channel::mpsc::UnboundedReceiver;
use futures::future::LocalBoxFuture;
use futures::{FutureExt, StreamExt};
use serde_json::{json, Value};
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;

use crate::core::ConnId;
use crate::protocol::channel::{
    parse_child_frame, ChildFrame, ParentFrame, RpcToolCall, RpcToolResult,
};
use crate::protocol::gate::Budget;
use crate::protocol::{types, Outcome};

use super::js;
use crate::agent::host::AgentHost;

/// Runs one turn for an RPC caller and resolves when it ended.
pub(super) async fn chat(
    host: Rc<AgentHost>,
    message: JsValue,
    callback: JsValue,
    options: JsValue,
) -> Result<JsValue, JsValue> {
    let limits = host.handle().limits();
    let message = chat_message(&message, &limits.budget())?;
    let tools_budget = Budget {
        max_bytes: limits.max_client_tools_bytes,
        ..limits.budget()
    };
    let client_tools = js::to_json(
        &js::field(&options, "clientTools"),
        &tools_budget,
        "clientTools",
    )?
    .unwrap_or_else(|| json!([]));
    let executor =
        Some(js::field(&options, "onClientToolCall")).filter(|f| !f.is_undefined() && !f.is_null());
    let signal = Some(js::field(&options, "signal")).filter(|s| s.is_object());
    if signal
        .as_ref()
        .is_some_and(|s| js::field(s, "aborted").as_bool() == Some(true))
    {
        return Ok(JsValue::UNDEFINED);
    }
    let open = json!({
        "type": types::RPC_CHAT,
        "message": message,
        "clientTools": client_tools,
        "executor": executor.is_some(),
    });
    let (conn, mut frames) = host.open_rpc_call(js::delegation_depth(&options));
    host.rpc_frame(&conn, open.to_string());
    let call = Call {
        host: &host,
        conn: &conn,
        callback: &callback,
        executor: executor.as_ref(),
    };
    let result = call.follow(&mut frames, signal.as_ref()).await;
    host.close_rpc_call(&conn);
    result.map(|()| JsValue::UNDEFINED)
}

/// `cancelChat(requestId)`: ends the running `chat()` turn with that id
/// `aborted` (an unknown id is ignored, as Think does).
pub(super) fn cancel_chat(host: &Rc<AgentHost>, request_id: &JsValue) -> Result<JsValue, JsValue> {
    let Some(id) = js::string_arg(request_id, "cancelChat: request id")? else {
        return Err(js::error("cancelChat: the request id must be a string"));
    };
    if let Some(conn) = host.rpc_call_of(&id) {
        host.rpc_frame(&conn, ParentFrame::Cancel { id }.to_json());
    }
    Ok(JsValue::UNDEFINED)
}

/// The message as the channel carries it: text, one `UIMessage`, or several
/// (an array: stored in order, one turn answers them), read through the
/// gate under `budget`.
fn chat_message(message: &JsValue, budget: &Budget) -> Result<Value, JsValue> {
    if message.is_string() {
        let text = js::to_json(message, budget, "chat: message")?;
        return Ok(text.unwrap_or(Value::Null));
    }
    match js::to_json(message, budget, "chat: message")? {
        Some(Value::Array(mut list)) if list.len() == 1 => Ok(list.remove(0)),
        Some(Value::Array(list)) if !list.is_empty() => Ok(Value::Array(list)),
        Some(Value::Array(_)) => Err(js::error("chat: send at least one message")),
        Some(message @ Value::Object(_)) => Ok(message),
        _ => Err(js::error("chat: the message must be text or a UIMessage")),
    }
}

/// One call in flight.
struct Call<'a> {
    host: &'a Rc<AgentHost>,
    conn: &'a ConnId,
    callback: &'a JsValue,
    executor: Option<&'a JsValue>,
}

impl Call<'_> {
    /// Follows the turn's frames to its end. A callback that throws (its
    /// caller is gone) ends the call with that error; the turn goes on.
    async fn follow(
        &self,
        frames: &mut UnboundedReceiver<String>,
        signal: Option<&JsValue>,
    ) -> Result<(), JsValue> {
        let mut abort: LocalBoxFuture<'_, ()> = match signal {
            Some(signal) => JsFuture::from(js::abort_of(signal))
                .map(|_| ())
                .boxed_local(),
            None => futures::future::pending().boxed_local(),
        };
        let mut aborted = false;
        let mut request_id: Option<String> = None;
        loop {
            let text = futures::select! {
                frame = frames.next() => match frame {
                    Some(text) => text,
                    None => return Ok(()),
                },
                () = (&mut abort).fuse() => {
                    aborted = true;
                    abort = futures::future::pending().boxed_local();
                    if let Some(id) = &request_id {
                        self.cancel(id);
                    }
                    continue;
                }
            };
            // The core's own frames; one that does not parse is not ours.
            let Ok(frame) = parse_child_frame(&text) else {
                continue;
            };
            match frame {
                ChildFrame::Started { request_id: id } => {
                    self.host.rpc_call_started(self.conn, &id);
                    if aborted {
                        self.cancel(&id);
                    }
                    request_id = Some(id.clone());
                    let start = js::from_json(&json!({ "requestId": id }))?;
                    js::call_method(self.callback, "onStart", &[start]).await?;
                }
                ChildFrame::ToolCall(call) => {
                    let reply = self.run_tool_call(call).await;
                    self.host.rpc_frame(self.conn, reply.to_json());
                }
                ChildFrame::Response(response) if request_id.as_ref() == Some(&response.id) => {
                    let body = JsValue::from_str(&response.body);
                    if response.error {
                        js::call_method(self.callback, "onError", &[body]).await?;
                    } else if !response.done {
                        js::call_method(self.callback, "onEvent", &[body]).await?;
                    } else if response.outcome == Some(Outcome::Completed) {
                        js::call_method(self.callback, "onDone", &[]).await?;
                    } else if response.outcome == Some(Outcome::Recovering) {
                        // Cut in this isolate; the recovery that finishes it
                        // runs without this call. Optional in Think's
                        // callback, so a callback without it is no failure.
                        let _ = js::call_method(self.callback, "onInterrupted", &[]).await;
                    }
                    if response.done {
                        return Ok(());
                    }
                }
                // The core refused the call (a limit, a full queue, a
                // malformed message): the turn cannot go on.
                ChildFrame::Refused { error } => {
                    let text = JsValue::from_str(&error);
                    js::call_method(self.callback, "onError", &[text]).await?;
                    return Ok(());
                }
                ChildFrame::Response(_) | ChildFrame::Other => {}
            }
        }
    }

    fn cancel(&self, request_id: &str) {
        let frame = ParentFrame::Cancel {
            id: request_id.to_string(),
        };
        self.host.rpc_frame(self.conn, frame.to_json());
    }

    /// Runs one of the turn's client tool calls through `onClientToolCall`.
    async fn run_tool_call(&self, call: RpcToolCall) -> ParentFrame {
        let RpcToolCall {
            call_id,
            tool_call_id,
            tool_name,
            input,
        } = call;
        let result = match self.executor {
            Some(executor) => {
                let request = json!({
                    "toolName": tool_name,
                    "input": input,
                    "toolCallId": tool_call_id,
                });
                let budget = self.host.handle().limits().tool_result_budget();
                match js::from_json(&request) {
                    Ok(arg) => match js::call_function(executor, &arg).await {
                        Ok(output) => js::to_json(&output, &budget, "tool result")
                            .map(|v| v.unwrap_or(Value::Null))
                            .map_err(|e| js::error_text(&e)),
                        Err(thrown) => Err(js::error_text(&thrown)),
                    },
                    Err(thrown) => Err(js::error_text(&thrown)),
                }
            }
            None => Err("no executor for client tools".to_string()),
        };
        ParentFrame::ToolResult(RpcToolResult {
            call_id,
            tool_call_id,
            result,
        })
    }
}
