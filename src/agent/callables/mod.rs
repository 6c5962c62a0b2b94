//! Callable methods: what a connected client may call by name with
//! `agent.call(method, args)` or `agent.stub.method(...args)`. One builder,
//! `Callable::new`, whose closure takes the call's arguments as one typed
//! value read from the JSON array of arguments (a tuple: `|(a, b): (String,
//! i64)|`), and optionally the call's [`CallContext`]; its `Ok` value is the
//! reply's result, its `Err`'s text the error the caller's promise rejects
//! with. An optional access check decides per call.
//!
//! Each callable carries a [`CallableSpec`] (its name, description and
//! flags: streaming, `.readonly_safe()`, `.over_rpc()`), what the agent hands
//! the core, as a tool hands its `ToolSpec`; the closure stays here.
//!
//! `Callable::streaming` declares a method that streams: its closure also
//! gets a [`CallStream`] and sends chunks through it while it runs (the
//! client's `onChunk`); its `Ok` value is the last reply (`onDone`), its
//! `Err` the caller's error. A streaming method is cancelled (its future
//! dropped at its next await) when the caller's socket closes.
//!
//! `.over_rpc()` also exposes a (non-streaming) callable to other Workers and
//! agents over Durable Object RPC (`stub.method(...args)`), and
//! `AgentDefinition::rpc_methods` declares methods reached only that way;
//! over RPC the call's connection is the RPC caller's (no socket, no state).

#[cfg_attr(
    not(any(target_arch = "wasm32", feature = "test-kit")),
    allow(dead_code)
)]
pub(crate) mod call_runs;
pub mod rpc_methods;

use std::rc::Rc;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::agent::typed_handler::{erase, Erasure, FromContext, JsonFuture, TypedHandler};
use crate::core::CallableSpec;

use crate::agent::connections::Connection;
use crate::agent::handle::AgentHandle;

/// A type-erased call: the result as JSON, or the error text the caller reads.
pub type CallFuture = JsonFuture;

/// What one call gets besides its arguments.
#[derive(Clone)]
pub struct CallContext {
    /// The calling connection (its id, its per-connection state).
    pub connection: Connection,
    /// The agent itself (its state, submissions, …).
    pub agent: AgentHandle,
}

/// Decides whether a call may run: `Err(reason)` is the caller's error.
pub type AccessCheck = Rc<dyn Fn(&CallContext) -> Result<(), String>>;

/// A streaming call's way back to its caller: each `send` is one reply with
/// `done: false` (the client's `onChunk`). Clones are the same stream.
#[derive(Clone)]
pub struct CallStream {
    send: Rc<dyn Fn(Value) -> Result<(), String>>,
}

impl CallStream {
    /// A stream that delivers each chunk through `send`.
    pub(crate) fn new(send: impl Fn(Value) -> Result<(), String> + 'static) -> CallStream {
        CallStream {
            send: Rc::new(send),
        }
    }

    /// A stream for a method that does not stream: every send is refused.
    pub(crate) fn none() -> CallStream {
        CallStream::new(|_| Err("this method does not stream".to_string()))
    }

    /// Sends one chunk to the caller. `Err`: not sent — the caller is gone
    /// (the method is about to be cancelled), the call has ended, or the
    /// chunk's frame is over 1 MiB (`MAX_CHUNK_BYTES`; the stream goes on).
    pub fn send(&self, chunk: impl Serialize) -> Result<(), String> {
        let chunk =
            serde_json::to_value(chunk).map_err(|e| format!("unserializable chunk: {e}"))?;
        (self.send)(chunk)
    }
}

/// A method a connected client may call.
///
/// ```ignore
/// Callable::new("echo", |(value,): (Value,)| async move { Ok::<_, String>(value) });
/// Callable::new("rename", |(name,): (String,), ctx: CallContext| async move {
///     ctx.agent.set_state(json!({ "name": name }))
/// })
/// .allow(|ctx| if ctx.connection.state().is_some() { Ok(()) } else { Err("sign in first".into()) });
/// ```
#[derive(Clone)]
pub struct Callable {
    spec: CallableSpec,
    run: Rc<dyn Fn(Value, CallContext, CallStream) -> CallFuture>,
    allow: Option<AccessCheck>,
}

/// What a streaming method's closure may take besides its arguments: the
/// [`CallStream`] and the call's [`CallContext`] (`|args: A, stream:
/// CallStream|` or `|args: A, stream: CallStream, ctx: CallContext|`).
#[derive(Clone)]
pub struct StreamingCall {
    pub stream: CallStream,
    pub call: CallContext,
}

impl FromContext<StreamingCall> for CallStream {
    fn from_context(ctx: &StreamingCall) -> Self {
        ctx.stream.clone()
    }
}

impl FromContext<StreamingCall> for CallContext {
    fn from_context(ctx: &StreamingCall) -> Self {
        ctx.call.clone()
    }
}

impl Callable {
    /// `run` gets the call's arguments (the JSON array the client sent) read
    /// as `A`, usually a tuple; arguments that do not read as `A` are an
    /// error reply and `run` is not called.
    pub fn new<A, Shape, H>(name: &str, run: H) -> Self
    where
        A: DeserializeOwned + 'static,
        H: TypedHandler<A, CallContext, Shape>,
    {
        let run = erase(name, run, call_erasure::<A>());
        Callable::from_run(CallableSpec::new(name), move |args, ctx, _stream| {
            run(args, ctx)
        })
    }

    /// A method that streams (see the module header): `run` gets the typed
    /// arguments and a [`CallStream`] (and, if it takes a third argument,
    /// the call's [`CallContext`]); its result is the last reply.
    pub fn streaming<A, Shape, H>(name: &str, run: H) -> Self
    where
        A: DeserializeOwned + 'static,
        H: TypedHandler<A, StreamingCall, Shape>,
    {
        let run = erase(name, run, call_erasure::<A>());
        let spec = CallableSpec::new(name).streaming();
        Callable::from_run(spec, move |args, call, stream| {
            run(args, StreamingCall { stream, call })
        })
    }

    fn from_run(
        spec: CallableSpec,
        run: impl Fn(Value, CallContext, CallStream) -> CallFuture + 'static,
    ) -> Self {
        Callable {
            spec,
            run: Rc::new(run),
            allow: None,
        }
    }

    /// Runs `check` before each call; its `Err` text is the caller's error.
    pub fn allow(mut self, check: impl Fn(&CallContext) -> Result<(), String> + 'static) -> Self {
        self.allow = Some(Rc::new(check));
        self
    }

    /// A readonly connection may call this method too (it changes nothing
    /// that a viewer may not change); any other method is refused to one
    /// with `Connection is readonly`.
    pub fn readonly_safe(mut self) -> Self {
        self.spec = self.spec.readonly_safe();
        self
    }

    /// What the method does, for whoever lists the agent's methods.
    pub fn description(mut self, text: &str) -> Self {
        self.spec = self.spec.description(text);
        self
    }

    /// The method as the core sees it: its name, description and flags.
    pub fn spec(&self) -> &CallableSpec {
        &self.spec
    }

    /// Whether a readonly connection may call it (`Callable::readonly_safe`).
    pub fn is_readonly_safe(&self) -> bool {
        self.spec.readonly_safe
    }

    /// Also callable over Durable Object RPC as `stub.<name>(...args)`
    /// (a streaming method is not: RPC has no chunk channel).
    pub fn over_rpc(mut self) -> Self {
        self.spec = self.spec.over_rpc();
        self
    }

    /// Whether `.over_rpc()` exposed it.
    pub fn crosses_rpc(&self) -> bool {
        self.spec.over_rpc
    }

    /// The method's name, as clients call it.
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// Whether the method streams (`Callable::streaming`).
    pub fn is_streaming(&self) -> bool {
        self.spec.streaming
    }

    /// The access check, then the method (a streaming one sends nothing).
    pub fn call_with(&self, args: Value, ctx: CallContext) -> CallFuture {
        self.stream_with(args, ctx, CallStream::none())
    }

    /// The access check, then the method, its chunks through `stream`.
    pub fn stream_with(&self, args: Value, ctx: CallContext, stream: CallStream) -> CallFuture {
        if let Some(check) = &self.allow {
            if let Err(reason) = check(&ctx) {
                return Box::pin(async move { Err(reason) });
            }
        }
        (self.run)(args, ctx, stream)
    }
}

/// How a call's arguments are read and its two failures worded.
fn call_erasure<A: DeserializeOwned>() -> Erasure<A> {
    Erasure {
        read: read_args::<A>,
        unreadable: |method, e| format!("Invalid arguments for method {method}: {e}"),
        unserializable: |method, e| {
            format!("Method {method} returned an unserializable result: {e}")
        },
    }
}

/// The arguments as `A`; no arguments also read as `()` (a method without any).
fn read_args<A: DeserializeOwned>(args: Value) -> Result<A, serde_json::Error> {
    let none = args.as_array().is_some_and(Vec::is_empty);
    match none {
        true => serde_json::from_value(Value::Null).or_else(|_| serde_json::from_value(args)),
        false => serde_json::from_value(args),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Plain;
    impl crate::agent::AgentDefinition for Plain {}

    /// A call's context from a tab of an agent with no callables of its own.
    fn context() -> CallContext {
        crate::test_kit::TestAgent::new(Plain)
            .connect()
            .call_context()
    }

    fn run(callable: &Callable, args: Value) -> Result<Value, String> {
        futures::executor::block_on(callable.call_with(args, context()))
    }

    #[test]
    fn arguments_are_read_as_a_typed_tuple_and_the_result_serialised() {
        let echo = Callable::new("echo", |(value,): (Value,)| async move {
            Ok::<_, String>(value)
        });
        let add = Callable::new("add", |(a, b): (i64, i64), _ctx: CallContext| async move {
            Ok::<_, String>(a + b)
        });
        assert_eq!(run(&echo, json!([{"x": [1]}])), Ok(json!({"x": [1]})));
        assert_eq!(run(&add, json!([2, 3])), Ok(json!(5)));
        let bad = run(&add, json!(["two", 3]));
        assert!(
            matches!(&bad, Err(e) if e.starts_with("Invalid arguments for method add")),
            "{bad:?}"
        );
        assert!(run(&add, json!([1])).is_err(), "too few arguments");
    }

    #[test]
    fn a_streaming_method_sends_chunks_then_its_result_is_the_last_reply() {
        let count = Callable::streaming("count", |(n,): (u32,), stream: CallStream| async move {
            for i in 1..=n {
                stream.send(i)?;
            }
            Ok::<_, String>(format!("counted to {n}"))
        });
        assert!(count.is_streaming());
        let sent = Rc::new(std::cell::RefCell::new(Vec::new()));
        let into = sent.clone();
        let stream = CallStream::new(move |chunk| {
            into.borrow_mut().push(chunk);
            Ok(())
        });
        let result = futures::executor::block_on(count.stream_with(json!([3]), context(), stream));
        assert_eq!(result, Ok(json!("counted to 3")));
        assert_eq!(*sent.borrow(), [json!(1), json!(2), json!(3)]);
        // A send the host refuses (the caller went) is the method's error to handle.
        let gone = CallStream::new(|_| Err("call c1 is no longer streaming".into()));
        let result = futures::executor::block_on(count.stream_with(json!([2]), context(), gone));
        assert_eq!(result, Err("call c1 is no longer streaming".to_string()));
        // Called as a plain method, its sends are refused.
        assert!(run(&count, json!([1])).is_err());
        let plain = Callable::new("plain", |(): ()| async move { Ok::<_, String>(1) });
        assert!(!plain.is_streaming());
    }

    #[test]
    fn a_streaming_method_may_take_the_calls_context_after_its_stream() {
        let whoami = Callable::streaming(
            "whoami",
            |(): (), stream: CallStream, ctx: CallContext| async move {
                stream.send(ctx.connection.id())?;
                Ok::<_, String>(ctx.connection.id().to_string())
            },
        );
        let sent = Rc::new(std::cell::RefCell::new(Vec::new()));
        let into = sent.clone();
        let stream = CallStream::new(move |chunk| {
            into.borrow_mut().push(chunk);
            Ok(())
        });
        let ctx = context();
        let id = ctx.connection.id().to_string();
        let result = futures::executor::block_on(whoami.stream_with(json!([]), ctx, stream));
        assert_eq!(result, Ok(json!(id)));
        assert_eq!(*sent.borrow(), [json!(id)]);
    }

    #[test]
    fn an_error_and_a_refused_access_check_are_the_callers_error() {
        let failing = Callable::new("fail", |(): ()| async move { Err::<(), _>("no luck") });
        assert_eq!(run(&failing, json!([])), Err("no luck".to_string()));
        let guarded = Callable::new("secret", |(): ()| async move { Ok::<_, String>(1) })
            .allow(|_| Err("not for you".into()));
        assert_eq!(run(&guarded, json!([])), Err("not for you".to_string()));
    }
}
