//! The author's own RPC methods (`AgentDefinition::rpc_methods` and the
//! callables marked `.over_rpc()`): their names for the bridge class, and a
//! call's arguments read through the gate under the agent's message limits,
//! the method run, its value (or error) handed back.

use std::rc::Rc;

use js_sys::Array;
use serde_json::Value;
use wasm_bindgen::JsValue;

use super::js;
use crate::agent::host::AgentHost;

/// The names the bridge class exposes on its prototype.
pub fn names(host: &Result<Rc<AgentHost>, String>) -> Array {
    match host {
        Ok(host) => host
            .author_rpc_names()
            .iter()
            .map(|name| JsValue::from_str(name))
            .collect(),
        Err(_) => Array::new(),
    }
}

pub(super) async fn call(
    host: Rc<AgentHost>,
    name: String,
    args: Array,
) -> Result<JsValue, JsValue> {
    let budget = host.handle().limits().budget();
    let what = format!("{name}: arguments");
    let args = js::to_json(&args.into(), &budget, &what)?.unwrap_or(Value::Array(Vec::new()));
    let Some(run) = host.call_author_rpc(&name, args) else {
        return Err(js::error(&format!("this agent has no RPC method `{name}`")));
    };
    let value = run.await.map_err(|e| js::error(&e))?;
    js::from_json(&value)
}
