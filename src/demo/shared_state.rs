//! The demo agent's synced state and callable methods: the state starts as
//! `{}`; `echo(value)` answers its argument unchanged (a readonly tab may
//! call it too); `setStateField(key,
//! value)` sets one top-level field of the state (every tab sees it) and
//! answers the new state. A state that is not a JSON object is refused.
//! Over Durable Object RPC, another Worker or agent may call
//! `setStateField` too (it is marked `.over_rpc()`) and `stateField(key)`,
//! an RPC-only method answering one field (`null` when unset).

use serde_json::{Map, Value};

use crate::agent::{CallContext, Callable};

pub fn initial_state() -> Value {
    Value::Object(Map::new())
}

/// The demo's state stays a JSON object.
pub fn validate(next: &Value) -> Result<(), String> {
    match next.is_object() {
        true => Ok(()),
        false => Err("the state must be a JSON object".to_string()),
    }
}

pub fn callables() -> Vec<Callable> {
    vec![
        // Changes nothing: a readonly viewer may call it too.
        Callable::new("echo", |(value,): (Value,)| async move {
            Ok::<_, String>(value)
        })
        .readonly_safe(),
        Callable::new("setStateField", set_state_field).over_rpc(),
    ]
}

/// The methods only other Workers and agents call.
pub fn rpc_methods() -> Vec<Callable> {
    vec![Callable::new(
        "stateField",
        |(key,): (String,), ctx: CallContext| async move {
            let field = ctx.agent.state().and_then(|s| s.get(&key).cloned());
            Ok::<_, String>(field.unwrap_or(Value::Null))
        },
    )]
}

async fn set_state_field((key, value): (String, Value), ctx: CallContext) -> Result<Value, String> {
    let mut state = match ctx.agent.state() {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    };
    state.insert(key, value);
    let state = Value::Object(state);
    ctx.agent.set_state(state.clone())?;
    Ok(state)
}
