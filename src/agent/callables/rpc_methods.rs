//! The agent's methods over Durable Object RPC, by name: the built-in ones
//! (Think's names, answered by `rpc_target`) and the author's own
//! (`AgentDefinition::rpc_methods` and callables marked `.over_rpc()`),
//! whose names are checked here: a JavaScript identifier that shadows
//! neither a built-in method nor a Durable Object handler.

use std::collections::HashMap;
use std::rc::Rc;

use serde_json::Value;

use crate::agent::callables::{CallContext, CallFuture, Callable};
use crate::agent::connections::{Connection, ConnectionSocket};
use crate::agent::handle::AgentHandle;

/// The built-in RPC methods, named and shaped as `@cloudflare/think`'s
/// (the generated bridge class forwards each by name).
pub const BUILT_IN_RPC_METHODS: &[&str] = &[
    "chat",
    "cancelChat",
    "cancelAllChats",
    "runTurn",
    "submitMessages",
    "inspectSubmission",
    "waitForSubmission",
    "listSubmissions",
    "cancelSubmission",
    "deleteSubmission",
    "deleteSubmissions",
    "getMessages",
    "clearMessages",
    "addMessages",
    "saveMessages",
    "continueLastTurn",
    "destroy",
];

/// Names the Durable Object class and JavaScript objects already use.
const TAKEN: &[&str] = &[
    "constructor",
    "fetch",
    "alarm",
    "webSocketMessage",
    "webSocketClose",
    "webSocketError",
    "connect",
    "dup",
    "then",
    "toString",
    "toJSON",
    "valueOf",
    "hasOwnProperty",
    "isPrototypeOf",
    "propertyIsEnumerable",
    "toLocaleString",
];

/// Why `name` cannot be an author's RPC method (`None`: it can).
pub fn name_refusal(name: &str) -> Option<String> {
    let mut chars = name.chars();
    let starts = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$');
    let rest = chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if !starts || !rest || name.len() > 64 {
        return Some(format!(
            "RPC method `{name}`: a name must be a JavaScript identifier of at most 64 characters"
        ));
    }
    if BUILT_IN_RPC_METHODS.contains(&name) || TAKEN.contains(&name) {
        return Some(format!(
            "RPC method `{name}`: the name is taken by the agent's own methods"
        ));
    }
    if name.starts_with("durableChat") || name.starts_with("__") {
        return Some(format!("RPC method `{name}`: the name is reserved"));
    }
    None
}

/// The author's RPC methods by name: `rpc_methods`, then the callables
/// marked `.over_rpc()` (a streaming one cannot cross). A refused name,
/// and a name declared twice, are skipped and reported in `refused`.
pub fn author_rpc_methods(
    methods: Vec<Callable>,
    callables: &HashMap<String, Callable>,
    refused: &mut Vec<String>,
) -> HashMap<String, Callable> {
    let marked = (callables.values()).filter(|c| c.crosses_rpc()).cloned();
    let mut out = HashMap::new();
    for method in methods.into_iter().chain(marked) {
        let name = method.name().to_string();
        if let Some(reason) = name_refusal(&name) {
            refused.push(reason);
        } else if method.is_streaming() {
            refused.push(format!(
                "RPC method `{name}`: a streaming callable cannot cross RPC"
            ));
        } else if let std::collections::hash_map::Entry::Vacant(slot) = out.entry(name.clone()) {
            slot.insert(method);
        } else {
            refused.push(format!("RPC method `{name}`: declared twice"));
        }
    }
    refused.sort();
    out
}

/// The connection an RPC caller's call sees: no socket to send to, no
/// per-connection state (an access check that wants either refuses).
struct RpcCaller;

impl ConnectionSocket for RpcCaller {
    fn tags(&self) -> Vec<String> {
        Vec::new()
    }
    fn readonly(&self) -> bool {
        false
    }
    fn set_readonly(&self, _readonly: bool) -> Result<(), String> {
        Err("an RPC caller is not a connection that can be made readonly".into())
    }
    fn state_text(&self) -> Option<String> {
        None
    }
    fn set_state_text(&self, _text: Option<String>) -> Result<(), String> {
        Err("an RPC caller has no connection state".into())
    }
    fn send_text(&self, _text: &str) -> Result<(), String> {
        Err("an RPC caller has no socket to send to".into())
    }
    fn close(&self, _code: u16, _reason: &str) {}
}

/// The id of the connection every RPC call sees.
pub const RPC_CALLER_ID: &str = "rpc";

/// Runs the author's RPC method `name` with `args` (the JSON array of the
/// caller's arguments); `None`: the agent has no such method.
#[cfg_attr(
    not(any(target_arch = "wasm32", feature = "test-kit")),
    allow(dead_code)
)]
pub(crate) fn call(
    methods: &HashMap<String, Callable>,
    name: &str,
    args: Value,
    agent: AgentHandle,
) -> Option<CallFuture> {
    let method = methods.get(name)?;
    let connection = Connection::with_socket(RPC_CALLER_ID, Rc::new(RpcCaller));
    Some(method.call_with(args, CallContext { connection, agent }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_shadow_the_agent_or_are_no_identifier_are_refused() {
        assert_eq!(name_refusal("greet"), None);
        assert_eq!(name_refusal("_count$2"), None);
        for taken in [
            "chat",
            "runTurn",
            "destroy",
            "fetch",
            "alarm",
            "then",
            "durableChatRpc",
        ] {
            assert!(name_refusal(taken).is_some(), "{taken}");
        }
        for odd in ["", "2fast", "with space", "a-b", &"x".repeat(65)] {
            assert!(name_refusal(odd).is_some(), "{odd:?}");
        }
    }

    #[test]
    fn marked_callables_join_the_rpc_methods_and_streaming_ones_do_not() {
        let plain = Callable::new("plain", |(): ()| async { Ok::<_, String>(1) });
        let shared = Callable::new("shared", |(): ()| async { Ok::<_, String>(2) }).over_rpc();
        let streams = Callable::streaming(
            "streams",
            |(): (), _s: crate::agent::callables::CallStream| async { Ok::<_, String>(3) },
        )
        .over_rpc();
        let callables: HashMap<String, Callable> = [plain, shared, streams]
            .into_iter()
            .map(|c| (c.name().to_string(), c))
            .collect();
        let own = Callable::new("greet", |(): ()| async { Ok::<_, String>(4) });
        let clash = Callable::new("chat", |(): ()| async { Ok::<_, String>(5) });
        let mut refused = Vec::new();
        let methods = author_rpc_methods(vec![own, clash], &callables, &mut refused);
        let mut names: Vec<&String> = methods.keys().collect();
        names.sort();
        assert_eq!(names, ["greet", "shared"]);
        assert_eq!(refused.len(), 2, "{refused:?}");
    }
}
