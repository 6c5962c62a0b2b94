//! Values across the RPC boundary: JavaScript values read as JSON (and
//! back), callback methods called and awaited, errors as `Error` objects.

use js_sys::{Array, Function, Promise, Reflect};
use serde::de::DeserializeOwned;
use serde::Serialize;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

/// A JavaScript `Error` with `message`.
pub(super) fn error(message: &str) -> JsValue {
    js_sys::Error::new(message).into()
}

pub(super) fn rejected(message: &str) -> Promise {
    Promise::reject(&error(message))
}

/// `value`'s JSON text (`None`: `undefined` or `null`).
fn to_text(value: &JsValue) -> Result<Option<String>, String> {
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    js_sys::JSON::stringify(value)
        .map_err(|_| "a value that is not JSON".to_string())?
        .as_string()
        .ok_or_else(|| "a value that is not JSON".to_string())
        .map(Some)
}

/// `value` as JSON (`None`: `undefined` or `null`).
pub(super) fn to_json(value: &JsValue) -> Result<Option<serde_json::Value>, String> {
    let Some(text) = to_text(value)? else {
        return Ok(None);
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| format!("a value that is not JSON: {e}"))
}

/// `value` read as a `T` from its JSON text, refused first when the text
/// holds more values or nesting than `limits` allow
/// (`Limits::max_message_values`, `max_message_depth`); `what` names it in
/// the error.
pub(super) fn read_bounded<T: DeserializeOwned>(
    value: &JsValue,
    what: &str,
    limits: &crate::core::Limits,
) -> Result<T, JsValue> {
    let text = to_text(value)
        .map_err(|e| error(&format!("{what}: {e}")))?
        .unwrap_or_else(|| "null".into());
    limits
        .check_json_shape(&text, what)
        .map_err(|e| error(&e))?;
    serde_json::from_str(&text).map_err(|e| error(&format!("{what}: {e}")))
}

/// `value` read as a `T` through JSON; `what` names it in the error.
pub(super) fn read<T: DeserializeOwned>(value: &JsValue, what: &str) -> Result<T, JsValue> {
    let json = to_json(value)
        .map_err(|e| error(&format!("{what}: {e}")))?
        .unwrap_or(serde_json::Value::Null);
    serde_json::from_value(json).map_err(|e| error(&format!("{what}: {e}")))
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
