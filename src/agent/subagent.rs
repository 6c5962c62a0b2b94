//! Sub-agents, the parent's side: a parent agent calls a child agent's
//! `chat()` over a Durable-Object-to-Durable-Object WebSocket (the
//! "channel"), runs the child's calls to its client tools, and hands the
//! child's turn to a callback. The frames are typed in protocol/channel.rs;
//! the child's side is the core (core/channel.rs). The channel is not
//! hibernatable on the parent's side: it lives while `chat()` is awaited.

use futures::channel::oneshot;
use futures::{FutureExt, StreamExt};
use worker::{Env, Headers, Request, RequestInit, WebSocket, WebsocketEvent};

use crate::protocol::channel::{
    parse_child_frame, ChildFrame, ParentFrame, RpcChat, RpcToolCall, RpcToolResult,
};
use crate::protocol::{ClientToolSchema, Outcome};

pub use crate::protocol::channel::ChatMessage;

pub use super::child_events::{ChatCallback, ClientToolCall, ClientToolExecutor};

use super::channel_auth::{channel_target, CHANNEL_AUTH_HEADER};
use super::rpc_chat::{chat_over_rpc, RpcCall};

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
    /// How long the whole `chat()` may take, in ms (`None`:
    /// [`DEFAULT_CHAT_TIMEOUT_MS`]; `Some(0)`: no deadline). When it passes,
    /// the child's turn is cancelled and `on_error` says so.
    pub timeout_ms: Option<u64>,
}

/// Default deadline of one `chat()`: five minutes, as a tool run's.
pub const DEFAULT_CHAT_TIMEOUT_MS: u64 = crate::core::DEFAULT_TOOL_TIMEOUT_MS;

/// Runs one turn of the child agent `binding`/`name` over Durable Object
/// RPC and returns when it ended: the child is any class with Think's
/// `chat(message, callback, options)` (a `@cloudflare/think` agent, in this
/// worker or another one named by the binding's `script_name`). The same
/// arguments and meaning as [`chat`].
pub async fn chat_rpc(
    env: &Env,
    binding: &str,
    name: &str,
    message: impl Into<ChatMessage>,
    callback: &mut dyn ChatCallback,
    options: ChatOptions,
) -> worker::Result<()> {
    let stub = super::rpc_stub::RpcStub::new(env, binding, name)?;
    let call = RpcCall {
        client_tools: options.client_tools,
        executor: options.on_client_tool_call,
        abort: options.signal.map(|AbortSignal(rx)| rx),
        timeout_ms: options.timeout_ms.unwrap_or(DEFAULT_CHAT_TIMEOUT_MS),
    };
    chat_over_rpc(&stub, message.into(), callback, call).await
}

/// Runs one turn of the child agent `binding`/`name` and returns when it
/// ended. Plain text is sent as such: the child mints the message id.
pub async fn chat(
    env: &Env,
    binding: &str,
    name: &str,
    message: impl Into<ChatMessage>,
    callback: &mut dyn ChatCallback,
    options: ChatOptions,
) -> worker::Result<()> {
    // The name goes into the channel's URL: one that could add a path
    // segment, a query or a fragment fails here, before anything is sent.
    let (stub, credential) = channel_target(env, binding, name)?;
    let headers = Headers::new();
    headers.set("Upgrade", "websocket")?;
    headers.set(CHANNEL_AUTH_HEADER, &credential)?;
    let mut init = RequestInit::new();
    init.with_headers(headers);
    let url = crate::routing::channel_url(binding, name);
    let response = stub
        .fetch_with_request(Request::new_with_init(&url, &init)?)
        .await?;
    let ws = response
        .websocket()
        .ok_or_else(|| worker::Error::RustError("the child agent refused the channel".into()))?;
    ws.accept()?;
    let mut events = ws.events()?;
    let open = ParentFrame::Chat(RpcChat {
        message: message.into(),
        client_tools: options.client_tools,
        executor: options.on_client_tool_call.is_some(),
    });
    ws.send_with_str(open.to_json())?;
    let executor = options.on_client_tool_call;
    let mut abort = match options.signal {
        Some(AbortSignal(rx)) => rx.map(|r| r.is_ok()).boxed_local(),
        None => futures::future::pending().boxed_local(),
    };
    let mut aborted = false;
    let mut request_id: Option<String> = None;
    let timeout = options.timeout_ms.unwrap_or(DEFAULT_CHAT_TIMEOUT_MS);
    let mut deadline = match timeout {
        0 => futures::future::pending().boxed_local(),
        ms => worker::Delay::from(std::time::Duration::from_millis(ms)).boxed_local(),
    };
    loop {
        let next = futures::select! {
            event = events.next().fuse() => event,
            () = (&mut deadline).fuse() => {
                if let Some(id) = &request_id {
                    let _ = send_cancel(&ws, id);
                }
                callback.on_error(&format!("the child agent did not finish within {timeout} ms"));
                break;
            }
            fired = (&mut abort).fuse() => {
                if fired && !aborted {
                    aborted = true;
                    if let Some(id) = &request_id {
                        send_cancel(&ws, id)?;
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
        let frame = match parse_child_frame(&text) {
            Ok(frame) => frame,
            Err(error) => {
                callback.on_error(&format!("the child agent sent a malformed frame: {error}"));
                break;
            }
        };
        match frame {
            ChildFrame::Started { request_id: id } => {
                callback.on_start(&id);
                if aborted {
                    send_cancel(&ws, &id)?;
                }
                request_id = Some(id);
            }
            ChildFrame::ToolCall(call) => {
                let reply = run_tool_call(executor.as_ref(), call).await;
                ws.send_with_str(reply.to_json())?;
            }
            ChildFrame::Response(response) if request_id.as_ref() == Some(&response.id) => {
                if response.error {
                    callback.on_error(&response.body);
                    if response.done {
                        break;
                    }
                    continue;
                }
                if !response.done {
                    callback.on_event(&response.body);
                    continue;
                }
                if response.outcome == Some(Outcome::Completed) {
                    callback.on_done();
                }
                break;
            }
            // The child refused a frame of ours: the turn cannot go on.
            ChildFrame::Refused { error } => {
                callback.on_error(&error);
                break;
            }
            ChildFrame::Response(_) | ChildFrame::Other => {}
        }
    }
    let _ = ws.close(Some(1000), Some("turn ended"));
    Ok(())
}

fn send_cancel(ws: &WebSocket, id: &str) -> worker::Result<()> {
    ws.send_with_str(ParentFrame::Cancel { id: id.to_string() }.to_json())
}

/// Runs one of the child's calls to the parent's client tools; the answer
/// for the channel.
async fn run_tool_call(executor: Option<&ClientToolExecutor>, call: RpcToolCall) -> ParentFrame {
    let RpcToolCall {
        call_id,
        tool_call_id,
        tool_name,
        input,
    } = call;
    let result = match executor {
        Some(run) => {
            run(ClientToolCall {
                tool_name,
                tool_call_id: tool_call_id.clone(),
                input,
            })
            .await
        }
        None => Err("no executor for client tools".to_string()),
    };
    ParentFrame::ToolResult(RpcToolResult {
        call_id,
        tool_call_id,
        result,
    })
}
