//! Callable methods: what a connected client may call by name with
//! `agent.call(method, args)` or `agent.stub.method(...args)`. One builder,
//! `Callable::new`, whose closure takes the call's arguments as one typed
//! value read from the JSON array of arguments (a tuple: `|(a, b): (String,
//! i64)|`), and optionally the call's [`CallContext`]; its `Ok` value is the
//! reply's result, its `Err`'s text the error the caller's promise rejects
//! with. An optional access check decides per call.

use std::rc::Rc;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::typed_handler::{erase, Erasure, JsonFuture, TypedHandler};

#[cfg(target_arch = "wasm32")]
use super::connection::Connection;
#[cfg(target_arch = "wasm32")]
use super::handle::AgentHandle;

/// A type-erased call: the result as JSON, or the error text the caller reads.
pub type CallFuture = JsonFuture;

/// What one call gets besides its arguments.
#[derive(Clone)]
pub struct CallContext {
    /// The calling connection (its id, its per-connection state).
    #[cfg(target_arch = "wasm32")]
    pub connection: Connection,
    /// The agent itself (its state, submissions, …).
    #[cfg(target_arch = "wasm32")]
    pub agent: AgentHandle,
}

/// Decides whether a call may run: `Err(reason)` is the caller's error.
pub type AccessCheck = Rc<dyn Fn(&CallContext) -> Result<(), String>>;

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
    name: String,
    run: Rc<dyn Fn(Value, CallContext) -> CallFuture>,
    allow: Option<AccessCheck>,
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
        let how = Erasure {
            read: read_args::<A>,
            unreadable: |method, e| format!("Invalid arguments for method {method}: {e}"),
            unserializable: |method, e| {
                format!("Method {method} returned an unserializable result: {e}")
            },
        };
        Callable {
            name: name.to_string(),
            run: erase(name, run, how),
            allow: None,
        }
    }

    /// Runs `check` before each call; its `Err` text is the caller's error.
    pub fn allow(mut self, check: impl Fn(&CallContext) -> Result<(), String> + 'static) -> Self {
        self.allow = Some(Rc::new(check));
        self
    }

    /// The method's name, as clients call it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The access check, then the method.
    pub fn call_with(&self, args: Value, ctx: CallContext) -> CallFuture {
        if let Some(check) = &self.allow {
            if let Err(reason) = check(&ctx) {
                return Box::pin(async move { Err(reason) });
            }
        }
        (self.run)(args, ctx)
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

    fn run(callable: &Callable, args: Value) -> Result<Value, String> {
        futures::executor::block_on(callable.call_with(args, CallContext {}))
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
    fn an_error_and_a_refused_access_check_are_the_callers_error() {
        let failing = Callable::new("fail", |(): ()| async move { Err::<(), _>("no luck") });
        assert_eq!(run(&failing, json!([])), Err("no luck".to_string()));
        let guarded = Callable::new("secret", |(): ()| async move { Ok::<_, String>(1) })
            .allow(|_| Err("not for you".into()));
        assert_eq!(run(&guarded, json!([])), Err("not for you".to_string()));
    }
}
