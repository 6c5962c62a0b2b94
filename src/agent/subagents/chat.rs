//! Sub-agents, the parent's side: a parent agent calls a child agent's
//! `chat()` over Durable Object RPC, runs the child's calls to its client
//! tools, and hands the child's turn to a callback. The child is any class
//! with Think's `chat(message, callback, options)`: an agent of this crate
//! (its generated RPC class) or a `@cloudflare/think` agent, in this worker
//! or another one. The call itself is `rpc_chat.rs`; what the child sends is
//! relayed by `child_events.rs`.

use futures::channel::oneshot;
use worker::Env;

pub use crate::protocol::channel::ChatMessage;
use crate::protocol::ClientToolSchema;

use crate::agent::subagents::child_calls::{acquire_child_call, current_scope};
pub use crate::agent::subagents::child_events::{ChatCallback, ClientToolCall, ClientToolExecutor};
use crate::agent::subagents::rpc_chat::{chat_over_rpc, RpcCall};
use crate::agent::subagents::stub::RpcStub;

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

/// Runs one turn of the child agent `name` of Durable Object binding
/// `binding` and returns when it ended. Plain text is sent as such: the
/// child mints the message id. A name outside the agent-name rule fails
/// before anything is sent.
///
/// Made from a server tool (or the agent's routes, alarm or schedules),
/// the call counts toward the agent's caps on child calls in flight
/// (`MAX_CHILD_CALLS_PER_TURN`, `MAX_CHILD_CALLS_PER_AGENT`) from the
/// moment `chat` is called until its future ends or is dropped; over a cap
/// it fails at once, before anything is sent, with an error that says so.
/// The call carries its delegation depth to the child (this turn's plus
/// one, `delegationDepth` in the options); made from a turn already at
/// `MAX_DELEGATION_DEPTH` it fails the same way.
pub fn chat<'a>(
    env: &'a Env,
    binding: &'a str,
    name: &'a str,
    message: impl Into<ChatMessage> + 'a,
    callback: &'a mut dyn ChatCallback,
    options: ChatOptions,
) -> impl std::future::Future<Output = worker::Result<()>> + 'a {
    // Taken now, in the caller's scope, not when the future is first polled.
    let slot = acquire_child_call();
    let scope = current_scope();
    async move {
        let slot = slot.map_err(worker::Error::RustError)?;
        // Outside any turn (the worker's own code) the child is the first hop.
        let depth = slot.as_ref().map_or(1, |s| s.child_depth());
        let stub = RpcStub::new(env, binding, name)?;
        let call = RpcCall {
            client_tools: options.client_tools,
            executor: options.on_client_tool_call,
            abort: options.signal.map(|AbortSignal(rx)| rx),
            timeout_ms: options.timeout_ms.unwrap_or(DEFAULT_CHAT_TIMEOUT_MS),
            scope,
            depth,
        };
        let _slot = slot;
        chat_over_rpc(&stub, message.into(), callback, call).await
    }
}
