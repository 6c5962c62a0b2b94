//! Reading a model's streamed body: a small loop on the JS side reads the
//! body and hands each chunk to wasm in one synchronous call, instead of a
//! Rust stream whose every read is a promise turned into a future and woken
//! through the microtask queue (that glue cost about as much as the agent's
//! own work per streamed token). When the reader says it has what it needs
//! (the reply finished, or a chunk did not decode), the loop reads the rest
//! aside for at most `DRAIN_MS` and then cancels, so the stream ends by
//! itself (its connection can serve the next call) and nothing of the call
//! is held on to.

use js_sys::{Function, Object, Promise, Reflect, Uint8Array};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use worker::web_sys::ReadableStream;

/// How long the rest of a stream the reader no longer needs may take to end
/// before it is cancelled.
const DRAIN_MS: u32 = 5_000;

#[wasm_bindgen(inline_js = r#"
export function pumpBody(body, control, drainMs) {
  const reader = body.getReader();
  return (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return true;
      if (control.dropped || !control.onChunk(value)) {
        readAside(reader, drainMs);
        return false;
      }
    }
  })();
}
function readAside(reader, drainMs) {
  const timer = setTimeout(() => { reader.cancel().catch(() => {}); }, drainMs);
  const stop = () => clearTimeout(timer);
  const next = () => reader.read().then(({ done }) => (done ? stop() : next()), stop);
  next();
}
"#)]
extern "C" {
    #[wasm_bindgen(js_name = pumpBody)]
    fn pump_body(body: &ReadableStream, control: &Object, drain_ms: u32) -> Promise;
}

/// How a pumped body ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PumpEnd {
    /// The body ended: every chunk was handed over.
    Ended,
    /// The reader said stop; the rest is read aside.
    Stopped,
}

/// Hands every chunk of `body` to `on_chunk` as it arrives (a buffer reused
/// from chunk to chunk); `on_chunk` returns whether it wants more. `Err`: the
/// body failed while being read (the call was aborted or cut), with the
/// runtime's message.
pub(super) async fn pump(
    body: &ReadableStream,
    mut on_chunk: impl FnMut(&[u8]) -> bool + 'static,
) -> Result<PumpEnd, String> {
    let mut buffer = Vec::new();
    let closure = Closure::<dyn FnMut(JsValue) -> bool>::new(move |chunk: JsValue| {
        let Some(chunk) = chunk.dyn_ref::<Uint8Array>() else {
            // A body of anything but bytes is not a model's stream.
            return false;
        };
        buffer.resize(chunk.length() as usize, 0);
        chunk.copy_to(&mut buffer);
        on_chunk(&buffer)
    });
    let control = Control::new(closure);
    match JsFuture::from(pump_body(body, &control.object, DRAIN_MS)).await {
        Ok(ended) if ended.as_bool() == Some(true) => Ok(PumpEnd::Ended),
        Ok(_) => Ok(PumpEnd::Stopped),
        Err(error) => Err(crate::agent::binding_model::thrown_message(&error)
            .unwrap_or_else(|| "the body could not be read".to_string())),
    }
}

/// The object the JS loop reads its callback from. Dropped (with the
/// future that owns it) before the loop is done, it tells the loop so
/// first: the loop then reads the rest aside and never calls the freed
/// callback.
struct Control {
    object: Object,
    _closure: Closure<dyn FnMut(JsValue) -> bool>,
}

impl Control {
    fn new(closure: Closure<dyn FnMut(JsValue) -> bool>) -> Control {
        let object = Object::new();
        let callback: &Function = closure.as_ref().unchecked_ref();
        let _ = Reflect::set(&object, &JsValue::from_str("onChunk"), callback);
        Control {
            object,
            _closure: closure,
        }
    }
}

impl Drop for Control {
    fn drop(&mut self) {
        let _ = Reflect::set(&self.object, &JsValue::from_str("dropped"), &JsValue::TRUE);
    }
}
