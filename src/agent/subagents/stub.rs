//! A Durable Object stub as JavaScript sees it, for calling the methods a
//! class exposes over Durable Object RPC (a Think agent's `chat`,
//! `submitMessages`, …): the named object of a binding, one method call
//! awaited, and the JSON crossings between serde values and JS values (what
//! another agent answers is read through the gate, `gate::AGENT_REPLY`, its
//! length checked before its text is copied into wasm). The binding may
//! name a class of another worker (`script_name`).

use js_sys::{Array, Function, Promise, Reflect, JSON};
use serde::de::DeserializeOwned;
use serde::Serialize;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use worker::Env;

/// The object `name` of Durable Object binding `binding`, reached over RPC.
pub(crate) struct RpcStub {
    stub: JsValue,
}

impl RpcStub {
    pub(crate) fn new(env: &Env, binding: &str, name: &str) -> worker::Result<RpcStub> {
        // The one rule an instance name follows, as for routing and `chat()`.
        crate::routing::check_agent_name(name).map_err(worker::Error::RustError)?;
        let stub = env.durable_object(binding)?.get_by_name(name)?;
        Ok(RpcStub {
            stub: stub.into_rpc::<JsValue>(),
        })
    }

    /// Starts `method(...args)` on the object; the promise of its result.
    pub(crate) fn start(&self, method: &str, args: &[JsValue]) -> worker::Result<Promise> {
        let target = Reflect::get(&self.stub, &JsValue::from_str(method)).map_err(js_error)?;
        if !target.is_function() {
            return Err(worker::Error::RustError(format!(
                "the object has no RPC method '{method}'"
            )));
        }
        let arguments: Array = args.iter().collect();
        let pending = Reflect::apply(target.unchecked_ref::<Function>(), &self.stub, &arguments)
            .map_err(js_error)?;
        // An RPC call answers with a thenable: make it a real promise.
        Ok(Promise::resolve(&pending))
    }

    /// `method(...args)`, awaited.
    pub(crate) async fn call(&self, method: &str, args: &[JsValue]) -> worker::Result<JsValue> {
        JsFuture::from(self.start(method, args)?)
            .await
            .map_err(js_error)
    }
}

/// A serde value as the JS value `JSON.parse` makes of it.
pub(crate) fn to_js(value: &impl Serialize) -> worker::Result<JsValue> {
    let text = serde_json::to_string(value).map_err(|e| worker::Error::RustError(e.to_string()))?;
    JSON::parse(&text).map_err(js_error)
}

/// A JS value another agent answered, read through its JSON form within
/// `gate::AGENT_REPLY` (`undefined` reads as `null`).
pub(crate) fn from_js<T: DeserializeOwned>(value: &JsValue) -> Result<T, String> {
    use crate::protocol::gate::{self, AGENT_REPLY};
    let text = if value.is_undefined() {
        "null".to_string()
    } else {
        let json = JSON::stringify(value).map_err(|e| error_text(&e))?;
        // UTF-16 units: never more than the UTF-8 bytes they become.
        gate::check_bytes(json.length() as usize, &AGENT_REPLY)?;
        json.as_string().unwrap_or_else(|| "null".to_string())
    };
    Ok(gate::read_json(&text, &AGENT_REPLY)?)
}

/// The message of a thrown JS value.
pub(crate) fn error_text(value: &JsValue) -> String {
    if let Some(error) = value.dyn_ref::<js_sys::Error>() {
        return String::from(error.message());
    }
    if let Some(text) = value.as_string() {
        return text;
    }
    JSON::stringify(value)
        .ok()
        .and_then(|s| s.as_string())
        .unwrap_or_else(|| "an unreadable error".to_string())
}

pub(crate) fn js_error(value: JsValue) -> worker::Error {
    worker::Error::RustError(error_text(&value))
}
