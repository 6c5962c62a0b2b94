//! Carries out a model call through a binding of the Worker's environment
//! (Workers AI's `env.AI.run(model, input, options)`, the options naming an
//! AI Gateway when one is set): the input is passed as a plain
//! JS object parsed from the provider's JSON text (so tool schemas stay
//! objects; `serde_wasm_bindgen` would turn them into `Map`s), and the
//! streamed reply comes back as the byte stream the provider decodes.

use js_sys::{Function, Promise, Reflect, JSON};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use worker::web_sys;
use worker::Env;

use crate::model::workers_ai::binding_failure;
use crate::model::BindingCall;
use crate::model::ModelFailure;

/// Calls `run` on the binding and returns its streamed body.
pub async fn run_binding(
    env: &Env,
    call: &BindingCall,
) -> Result<web_sys::ReadableStream, ModelFailure> {
    let binding = Reflect::get(env, &JsValue::from_str(&call.binding))
        .ok()
        .filter(|b| !b.is_undefined() && !b.is_null())
        .ok_or_else(|| {
            ModelFailure::permanent(format!(
                "No `{}` binding: add `[ai] binding = \"{}\"` to wrangler.toml.",
                call.binding, call.binding
            ))
        })?;
    let run: Function = Reflect::get(&binding, &JsValue::from_str("run"))
        .ok()
        .and_then(|f| f.dyn_into().ok())
        .ok_or_else(|| {
            ModelFailure::permanent(format!("The `{}` binding has no run().", call.binding))
        })?;
    let input = JSON::parse(&call.input)
        .map_err(|e| ModelFailure::permanent(format!("Workers AI input is not JSON: {e:?}")))?;
    // `Reflect.apply`, not `run.call(…)`: on an RPC stub every property,
    // `call` included, names a remote method.
    let args = js_sys::Array::of2(&JsValue::from_str(&call.model), &input);
    if let Some(options) = &call.options {
        let options = JSON::parse(options).map_err(|e| {
            ModelFailure::permanent(format!("Workers AI options are not JSON: {e:?}"))
        })?;
        args.push(&options);
    }
    let returned =
        Reflect::apply(&run, &binding, &args).map_err(|e| binding_failure(&describe(&e)))?;
    let output = JsFuture::from(Promise::resolve(&returned))
        .await
        .map_err(|e| binding_failure(&describe(&e)))?;
    if !output.is_instance_of::<web_sys::ReadableStream>() {
        return Err(ModelFailure::permanent(
            "Workers AI did not stream its reply (is `stream: true` supported by this model?)",
        ));
    }
    Ok(output.unchecked_into::<web_sys::ReadableStream>())
}

/// The most UTF-16 units of a thrown value's message copied into wasm.
const MAX_MESSAGE_UNITS: u32 = 4096;

/// A thrown value's message (its start, cut in JS before it is copied).
fn describe(error: &JsValue) -> String {
    thrown_message(error).unwrap_or_else(|| "the binding failed".to_string())
}

/// The message of a thrown value or rejection (its start, cut in JS before
/// it is copied); `None` when it has none.
pub(crate) fn thrown_message(error: &JsValue) -> Option<String> {
    let message = Reflect::get(error, &JsValue::from_str("message"))
        .ok()
        .filter(JsValue::is_string)
        .unwrap_or_else(|| error.clone());
    message
        .dyn_into::<js_sys::JsString>()
        .ok()
        .map(|text| String::from(text.slice(0, MAX_MESSAGE_UNITS)))
}
