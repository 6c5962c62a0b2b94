//! Frames of the agent as a whole rather than of its chat: the synced state
//! (`cf_agent_state` both ways, `cf_agent_state_error` for a refused change)
//! and callable methods (`rpc` requests and their replies). Parsing never
//! panics: a malformed frame of these types is an `AgentFrameError` the
//! agent answers, never a silent drop. Each is read through the gate under
//! its own budget (`gate::STATE`, `gate::CALL`): over its bytes, values or
//! nesting, it is refused before any of it is built.

use serde::Serialize;
use serde_json::{json, Map, Value};

use super::client::MAX_ID_BYTES;
use super::gate::{self, GateError};
use super::types;

/// A client frame of the agent's own (not chat) protocol.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentFrame {
    /// A tab's `setState`: the whole new state.
    SetState { state: Value },
    /// A call of a callable method: exactly one reply on `id`.
    Call {
        id: String,
        method: String,
        args: Value,
    },
}

/// Why a state or rpc frame could not be read; `rpc_id` is the id to answer
/// on when the frame had one.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentFrameError {
    pub kind: &'static str,
    pub rpc_id: Option<String>,
    pub reason: String,
}

/// Reads a frame whose `type` (already read) is `kind`; `None` when the type
/// is not one of the agent's own.
pub fn parse_agent_frame(kind: &str, text: &str) -> Option<Result<AgentFrame, AgentFrameError>> {
    if kind != types::STATE && kind != types::RPC {
        return None;
    }
    let error = |rpc_id: Option<String>, reason: &str| AgentFrameError {
        kind: if kind == types::RPC {
            types::RPC
        } else {
            types::STATE
        },
        rpc_id,
        reason: reason.to_string(),
    };
    let budget = match kind == types::RPC {
        true => &gate::CALL,
        false => &gate::STATE,
    };
    let mut obj = match gate::read_value(text, budget) {
        Ok(Value::Object(obj)) => obj,
        Ok(_) | Err(GateError::Invalid(_)) => {
            return Some(Err(error(None, "frame is not a JSON object")))
        }
        Err(GateError::OverBudget(reason)) => {
            let id = (kind == types::RPC).then(|| call_id(text)).flatten();
            return Some(Err(error(id, &reason)));
        }
    };
    if kind == types::STATE {
        return Some(match obj.remove("state") {
            Some(state) => Ok(AgentFrame::SetState { state }),
            None => Err(error(None, "`state` is missing")),
        });
    }
    Some(parse_call(&mut obj).map_err(|(id, reason)| error(id, &reason)))
}

/// The `id` of a call frame, read without building anything else of it (for
/// the refusal of a frame too large to parse); `None` when it has no usable one.
pub fn call_id(text: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Head<'a> {
        #[serde(borrow, default)]
        id: Option<std::borrow::Cow<'a, str>>,
    }
    let id = gate::read_head::<Head>(text)?.id?;
    (!id.is_empty() && id.len() <= MAX_ID_BYTES).then(|| id.into_owned())
}

fn parse_call(obj: &mut Map<String, Value>) -> Result<AgentFrame, (Option<String>, String)> {
    let id = match obj.remove("id") {
        Some(Value::String(id)) if !id.is_empty() && id.len() <= MAX_ID_BYTES => id,
        Some(Value::String(id)) if id.len() > MAX_ID_BYTES => {
            return Err((
                None,
                format!("`id` is too long (limit {MAX_ID_BYTES} bytes)"),
            ))
        }
        _ => return Err((None, "`id` must be a non-empty string".into())),
    };
    let method = match obj.remove("method") {
        Some(Value::String(method)) if !method.is_empty() => method,
        _ => return Err((Some(id), "`method` must be a non-empty string".into())),
    };
    let args = match obj.remove("args") {
        None | Some(Value::Null) => Value::Array(Vec::new()),
        Some(args @ Value::Array(_)) => args,
        Some(_) => return Err((Some(id), "`args` must be an array".into())),
    };
    Ok(AgentFrame::Call { id, method, args })
}

/// The identity frame when a state frame follows it (the client waits for
/// the state before it reports itself ready).
pub fn identity_with_state(name: &str, agent: &str) -> String {
    json!({"type": types::IDENTITY, "name": name, "agent": agent, "stateFollows": true}).to_string()
}

/// The state frame a tab receives (on connect and on every change).
pub fn state(state: &Value) -> String {
    json!({"type": types::STATE, "state": state}).to_string()
}

/// A tab's state change was refused; nothing was stored.
pub fn state_error(error: &str) -> String {
    json!({"type": types::STATE_ERROR, "error": error}).to_string()
}

#[derive(Serialize)]
struct RpcSuccess<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    id: &'a str,
    success: bool,
    done: bool,
    result: &'a Value,
}

/// A call's one successful reply.
pub fn rpc_result(id: &str, result: &Value) -> String {
    serde_json::to_string(&RpcSuccess {
        kind: types::RPC,
        id,
        success: true,
        done: true,
        result,
    })
    .unwrap_or_default()
}

/// One chunk of a streaming call, before its last reply (`done: false`).
pub fn rpc_chunk(id: &str, chunk: &Value) -> String {
    serde_json::to_string(&RpcSuccess {
        kind: types::RPC,
        id,
        success: true,
        done: false,
        result: chunk,
    })
    .unwrap_or_default()
}

/// A call's error reply (the client's promise rejects with `error`).
pub fn rpc_error(id: &str, error: &str) -> String {
    json!({"type": types::RPC, "id": id, "success": false, "error": error}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_frame_carries_the_whole_state() {
        let frame = parse_agent_frame(
            "cf_agent_state",
            r#"{"type":"cf_agent_state","state":{"n":1}}"#,
        );
        assert_eq!(
            frame,
            Some(Ok(AgentFrame::SetState {
                state: json!({"n": 1})
            }))
        );
        let missing = parse_agent_frame("cf_agent_state", r#"{"type":"cf_agent_state"}"#);
        assert!(matches!(missing, Some(Err(e)) if e.reason.contains("missing")));
    }

    #[test]
    fn a_call_needs_an_id_and_a_method_and_args_default_to_none() {
        let call = parse_agent_frame("rpc", r#"{"type":"rpc","id":"1","method":"echo"}"#);
        assert_eq!(
            call,
            Some(Ok(AgentFrame::Call {
                id: "1".into(),
                method: "echo".into(),
                args: json!([])
            }))
        );
        let no_method = parse_agent_frame("rpc", r#"{"type":"rpc","id":"2"}"#);
        assert!(matches!(no_method, Some(Err(e)) if e.rpc_id.as_deref() == Some("2")));
        let bad_args =
            parse_agent_frame("rpc", r#"{"type":"rpc","id":"3","method":"m","args":{}}"#);
        assert!(matches!(bad_args, Some(Err(e)) if e.reason.contains("array")));
        let no_id = parse_agent_frame("rpc", r#"{"type":"rpc","method":"m"}"#);
        assert!(matches!(no_id, Some(Err(e)) if e.rpc_id.is_none()));
        assert_eq!(parse_agent_frame("other", "{}"), None);
    }

    #[test]
    fn frames_of_many_tiny_values_are_refused_before_they_are_built() {
        let zeros = "0,".repeat(60_000);
        let state = format!(r#"{{"type":"cf_agent_state","state":{{"a":[{zeros}0]}}}}"#);
        let refused = parse_agent_frame("cf_agent_state", &state);
        assert!(
            matches!(&refused, Some(Err(e)) if e.reason.contains("too many JSON values")),
            "{refused:?}"
        );
        let call = format!(r#"{{"type":"rpc","id":"9","method":"m","args":[[{zeros}0]]}}"#);
        let refused = parse_agent_frame("rpc", &call);
        assert!(
            matches!(&refused, Some(Err(e)) if e.rpc_id.as_deref() == Some("9")
                && e.reason.contains("too many JSON values")),
            "{refused:?}"
        );
    }

    #[test]
    fn replies_have_the_clients_fields() {
        let ok: Value = serde_json::from_str(&rpc_result("7", &json!([1]))).unwrap();
        assert_eq!(
            ok,
            json!({"type":"rpc","id":"7","success":true,"done":true,"result":[1]})
        );
        let err: Value = serde_json::from_str(&rpc_error("7", "no")).unwrap();
        assert_eq!(
            err,
            json!({"type":"rpc","id":"7","success":false,"error":"no"})
        );
    }
}
