//! Values across the RPC boundary: JavaScript values read as JSON through
//! the gate, each under a budget (and back), callback methods called and
//! awaited, errors as `Error` objects.

use js_sys::{Array, Function, JsString, Promise, Reflect};
use serde::de::DeserializeOwned;
use serde::Serialize;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

use crate::protocol::gate::{self, Budget};

/// A JavaScript `Error` with `message`.
pub(super) fn error(message: &str) -> JsValue {
    js_sys::Error::new(message).into()
}

pub(super) fn rejected(message: &str) -> Promise {
    Promise::reject(&error(message))
}

/// `value`'s JSON text (`None`: `undefined` or `null`), through the gate:
/// its length is measured while it is still a JavaScript string, so text
/// over `budget` never crosses into wasm memory; `what` names it in the
/// refusal.
fn gated_text(value: &JsValue, budget: &Budget, what: &str) -> Result<Option<String>, String> {
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    let not_json = || format!("{what}: a value that is not JSON");
    let text: JsString = js_sys::JSON::stringify(value).map_err(|_| not_json())?;
    // UTF-16 units: at least one byte each, at most three in UTF-8.
    gate::check_bytes_as(text.length() as usize, budget, what)?;
    let text = text.as_string().ok_or_else(not_json)?;
    gate::check_as(&text, budget, what)?;
    Ok(Some(text))
}

/// `value` as JSON (`None`: `undefined` or `null`), read through the gate
/// under `budget`.
pub(super) fn to_json(
    value: &JsValue,
    budget: &Budget,
    what: &str,
) -> Result<Option<serde_json::Value>, JsValue> {
    match gated_text(value, budget, what).map_err(|e| error(&e))? {
        None => Ok(None),
        Some(text) => gate::read_json_as(&text, budget, what)
            .map(Some)
            .map_err(|e| error(&e.to_string())),
    }
}

/// `value` read as a `T` from its JSON text (`undefined` reads as `null`),
/// through the gate under `budget`; `what` names it in the error.
pub(super) fn read<T: DeserializeOwned>(
    value: &JsValue,
    budget: &Budget,
    what: &str,
) -> Result<T, JsValue> {
    let text = gated_text(value, budget, what)
        .map_err(|e| error(&e))?
        .unwrap_or_else(|| "null".into());
    gate::read_json_as(&text, budget, what).map_err(|e| error(&e.to_string()))
}

/// A string argument (an id), its length checked against
/// `gate::RPC_ARGUMENT` before it is copied into wasm; `None`: not a string.
pub(super) fn string_arg(value: &JsValue, what: &str) -> Result<Option<String>, JsValue> {
    let Some(text) = value.dyn_ref::<JsString>() else {
        return Ok(None);
    };
    gate::check_bytes_as(text.length() as usize, &gate::RPC_ARGUMENT, what)
        .map_err(|e| error(&e.to_string()))?;
    Ok(text.as_string())
}

#[wasm_bindgen::prelude::wasm_bindgen]
extern "C" {
    /// `JSON.parse` of a string already in JS (parsed there, not copied in).
    #[wasm_bindgen(catch, js_namespace = JSON, js_name = parse)]
    pub(super) fn parse_js(text: &JsString) -> Result<JsValue, JsValue>;
}

/// A Rust value as the JavaScript value of its JSON.
pub(super) fn from_json(value: &impl Serialize) -> Result<JsValue, JsValue> {
    let text = serde_json::to_string(value).map_err(|e| error(&e.to_string()))?;
    js_sys::JSON::parse(&text)
}

/// Property `name` of `object` (`undefined` when missing or `object` is no
/// object; an RPC stub is a function, and its properties are its methods).
pub(super) fn field(object: &JsValue, name: &str) -> JsValue {
    if !object.is_object() && !object.is_function() {
        return JsValue::UNDEFINED;
    }
    Reflect::get(object, &JsValue::from_str(name)).unwrap_or(JsValue::UNDEFINED)
}

/// Calls `target.name(...args)` and awaits what it returns; a method left
/// out (`undefined`) is skipped. An RPC stub's methods are called alike.
pub(super) async fn call_method(
    target: &JsValue,
    name: &str,
    args: &[JsValue],
) -> Result<JsValue, JsValue> {
    let method = field(target, name);
    if method.is_undefined() || method.is_null() {
        return Ok(JsValue::UNDEFINED);
    }
    // `Reflect.apply`: an RPC stub would take `method.apply` for a remote method.
    let returned = Reflect::apply(
        method.unchecked_ref::<Function>(),
        target,
        &args.iter().collect::<Array>(),
    )?;
    JsFuture::from(Promise::resolve(&returned)).await
}

/// Calls function `f(arg)` and awaits what it returns.
pub(super) async fn call_function(f: &JsValue, arg: &JsValue) -> Result<JsValue, JsValue> {
    let args = Array::of1(arg);
    let returned = Reflect::apply(f.unchecked_ref::<Function>(), &JsValue::UNDEFINED, &args)?;
    JsFuture::from(Promise::resolve(&returned)).await
}

/// The text of a thrown value: an `Error`'s message, else its string form.
pub(super) fn error_text(thrown: &JsValue) -> String {
    if let Some(message) = field(thrown, "message").as_string() {
        return message;
    }
    thrown.as_string().unwrap_or_else(|| format!("{thrown:?}"))
}

/// A promise that resolves when `signal` (an `AbortSignal`) aborts.
pub(super) fn abort_of(signal: &JsValue) -> Promise {
    let signal = signal.clone();
    Promise::new(&mut |resolve, _reject| {
        let add = field(&signal, "addEventListener");
        if add.is_undefined() {
            return;
        }
        let add: Function = add.unchecked_into();
        let _ = add.call2(&signal, &JsValue::from_str("abort"), &resolve);
    })
}

/// The depth a parent of this crate gives its call (`delegationDepth`): a
/// whole number, capped; anything else (a Think parent sends none) is 0.
pub(super) fn delegation_depth(options: &JsValue) -> u32 {
    let depth = field(options, crate::agent::subagents::rpc_chat::DELEGATION_DEPTH).as_f64();
    match depth {
        Some(d) if d.is_finite() && d >= 0.0 => d.min(f64::from(u16::MAX)) as u32,
        _ => 0,
    }
}
