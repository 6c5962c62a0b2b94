//! A parent's `chat()` to a child over Durable Object RPC: calls the
//! child's `chat(message, callback, {clientTools, onClientToolCall})` (the
//! shape of Think's sub-agent entry point) with a callback object and an
//! executor built here as JS functions, relays what the child sends to the
//! author's `ChatCallback` through `EventRelay`, and cancels with the
//! child's `cancelChat(requestId)`. What the child sends is bounded as
//! its answers are (`gate::AGENT_REPLY`): a chunk past it is an error.
//!
//! The JS functions only queue events; the author's callback is called
//! from this function's own loop, so it may borrow. They live until the
//! call has settled and are dropped with it. No `AbortSignal` is sent: the
//! runtime serialises one over RPC only under an experimental flag.

use futures::channel::mpsc;
use futures::{FutureExt, StreamExt};
use js_sys::{Object, Promise, Reflect};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::{future_to_promise, JsFuture};

use futures::channel::oneshot;

use crate::protocol::channel::ChatMessage;
use crate::protocol::ClientToolSchema;

use crate::agent::subagents::child_calls::ChildCallScope;
use crate::agent::subagents::child_events::{
    CallEnd, ChatCallback, ChildEvent, ClientToolCall, ClientToolExecutor, EventRelay,
};
use crate::agent::subagents::stub::{error_text, from_js, to_js, RpcStub};

/// One call's options, as `subagent::chat` resolved them.
pub(crate) struct RpcCall {
    pub client_tools: Vec<ClientToolSchema>,
    pub executor: Option<ClientToolExecutor>,
    /// Fires to cancel the child's turn.
    pub abort: Option<oneshot::Receiver<()>>,
    /// 0: no deadline.
    pub timeout_ms: u64,
    /// Where the call was made: the executor's runs count their own child
    /// calls there too.
    pub scope: Option<ChildCallScope>,
    /// The child's turn's delegation depth (`delegationDepth`).
    pub depth: u32,
}

/// The option that carries a call's delegation depth to the child (Think
/// ignores options it does not know).
pub(crate) const DELEGATION_DEPTH: &str = "delegationDepth";

/// How long a call is still awaited after its deadline cancelled it, so
/// that the child's last calls find the callback alive.
const SETTLE_AFTER_CANCEL_MS: u64 = 10_000;

/// The JS functions handed to the child; dropping them ends their use.
struct CallbackFunctions {
    object: Object,
    _start: Closure<dyn FnMut(JsValue)>,
    _event: Closure<dyn FnMut(JsValue)>,
    _done: Closure<dyn FnMut()>,
    _error: Closure<dyn FnMut(JsValue)>,
    _interrupted: Closure<dyn FnMut(JsValue)>,
}

fn callback_functions(
    events: mpsc::UnboundedSender<ChildEvent>,
) -> worker::Result<CallbackFunctions> {
    let send = move |tx: &mpsc::UnboundedSender<ChildEvent>, event| {
        let _ = tx.unbounded_send(event);
    };
    let tx = events.clone();
    let start = Closure::<dyn FnMut(JsValue)>::new(move |event: JsValue| {
        let id = Reflect::get(&event, &JsValue::from_str("requestId"))
            .ok()
            .and_then(|v| v.as_string())
            .unwrap_or_default();
        send(&tx, ChildEvent::Start(id));
    });
    let tx = events.clone();
    let event = Closure::<dyn FnMut(JsValue)>::new(move |json: JsValue| {
        // A chunk's length is checked before its text is copied into wasm.
        let budget = crate::protocol::gate::AGENT_REPLY;
        let units = json
            .dyn_ref::<js_sys::JsString>()
            .map_or(0, |s| s.length() as usize);
        if let Err(over) = crate::protocol::gate::check_bytes(units, &budget) {
            send(
                &tx,
                ChildEvent::Error(format!("the child agent's stream: {over}")),
            );
            return;
        }
        let text = json.as_string().unwrap_or_else(|| error_text(&json));
        send(&tx, ChildEvent::Chunk(text));
    });
    let tx = events.clone();
    let done = Closure::<dyn FnMut()>::new(move || send(&tx, ChildEvent::Done));
    let tx = events.clone();
    let error = Closure::<dyn FnMut(JsValue)>::new(move |text: JsValue| {
        send(&tx, ChildEvent::Error(error_text(&text)));
    });
    let tx = events;
    let interrupted = Closure::<dyn FnMut(JsValue)>::new(move |_info: JsValue| {
        send(&tx, ChildEvent::Interrupted)
    });
    let object = Object::new();
    for (name, function) in [
        ("onStart", start.as_ref()),
        ("onEvent", event.as_ref()),
        ("onDone", done.as_ref()),
        ("onError", error.as_ref()),
        ("onInterrupted", interrupted.as_ref()),
    ] {
        Reflect::set(&object, &JsValue::from_str(name), function)
            .map_err(crate::agent::subagents::stub::js_error)?;
    }
    Ok(CallbackFunctions {
        object,
        _start: start,
        _event: event,
        _done: done,
        _error: error,
        _interrupted: interrupted,
    })
}

/// `onClientToolCall`: runs the author's executor; its `Err` text is thrown
/// to the child as an `Error` (the child's model reads it as the tool's
/// error).
fn executor_function(
    executor: ClientToolExecutor,
    scope: Option<ChildCallScope>,
) -> Closure<dyn FnMut(JsValue) -> Promise> {
    Closure::new(move |call: JsValue| -> Promise {
        let call = from_js::<ClientToolCall>(&call);
        let run = executor.clone();
        let answer = async move {
            let call =
                call.map_err(|e| js_sys::Error::new(&format!("malformed tool call: {e}")))?;
            match run(call).await {
                Ok(output) => to_js(&output).map_err(|e| js_sys::Error::new(&e.to_string()).into()),
                Err(text) => Err(js_sys::Error::new(&text).into()),
            }
        };
        match scope.clone() {
            Some(scope) => future_to_promise(scope.run(answer)),
            None => future_to_promise(answer),
        }
    })
}

/// One turn of the child behind `stub`; returns when the call settled.
pub(crate) async fn chat_over_rpc(
    stub: &RpcStub,
    message: ChatMessage,
    callback: &mut dyn ChatCallback,
    options: RpcCall,
) -> worker::Result<()> {
    let (tx, mut events) = mpsc::unbounded();
    let functions = callback_functions(tx)?;
    let scope = options.scope.clone();
    let executor = options
        .executor
        .clone()
        .map(|run| executor_function(run, scope));
    let call_options = Object::new();
    if !options.client_tools.is_empty() {
        Reflect::set(
            &call_options,
            &"clientTools".into(),
            &to_js(&options.client_tools)?,
        )
        .map_err(crate::agent::subagents::stub::js_error)?;
    }
    if let Some(executor) = &executor {
        Reflect::set(&call_options, &"onClientToolCall".into(), executor.as_ref())
            .map_err(crate::agent::subagents::stub::js_error)?;
    }
    Reflect::set(
        &call_options,
        &DELEGATION_DEPTH.into(),
        &JsValue::from(options.depth),
    )
    .map_err(super::stub::js_error)?;
    let promise = stub.start(
        "chat",
        &[
            to_js(&message)?,
            functions.object.clone().into(),
            call_options.into(),
        ],
    )?;
    let mut call = JsFuture::from(promise).fuse();
    let mut abort = match options.abort {
        Some(rx) => rx.map(|r| r.is_ok()).boxed_local(),
        None => futures::future::pending().boxed_local(),
    };
    let timeout = options.timeout_ms;
    let mut deadline = delay_or_never(timeout);
    let mut relay = EventRelay::default();
    let mut abort_wanted = false;
    let mut cancel_sent = false;
    let mut timed_out = false;
    loop {
        futures::select! {
            event = events.next() => {
                if let Some(event) = event {
                    relay.relay(event, callback);
                }
            }
            settled = call => {
                while let Ok(event) = events.try_recv() {
                    relay.relay(event, callback);
                }
                if let Err(e) = settled {
                    relay.finish(CallEnd::Failed(error_text(&e)), callback);
                }
                relay.finish(CallEnd::Returned, callback);
                break;
            }
            fired = (&mut abort).fuse() => {
                abort_wanted = fired;
                abort = futures::future::pending().boxed_local();
            }
            () = (&mut deadline).fuse() => {
                if timed_out {
                    break; // the child never settled after the cancel
                }
                timed_out = true;
                abort_wanted = true;
                relay.finish(CallEnd::TimedOut(timeout), callback);
                deadline = delay_or_never(SETTLE_AFTER_CANCEL_MS);
            }
        }
        if abort_wanted && !cancel_sent {
            if let Some(id) = relay.request_id() {
                cancel_sent = true;
                // The turn ends `aborted` and the call returns; an error here
                // (the turn already ended) changes nothing.
                let _ = stub.call("cancelChat", &[JsValue::from_str(id)]).await;
            }
        }
    }
    drop(executor);
    drop(functions);
    Ok(())
}

fn delay_or_never(ms: u64) -> futures::future::LocalBoxFuture<'static, ()> {
    match ms {
        0 => futures::future::pending().boxed_local(),
        ms => worker::Delay::from(std::time::Duration::from_millis(ms)).boxed_local(),
    }
}
