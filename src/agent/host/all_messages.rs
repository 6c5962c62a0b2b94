//! `GET …/get-messages`: the conversation as a JSON array, newest first
//! within a bound, as the transcript frame carries it: the whole history
//! while its messages come to at most `GET_MESSAGES_BYTES` of JSON, else the
//! newest that fit (always with the newest user message and what follows
//! it). The window's messages are serialized by the core; the older part is
//! the stored JSON joined by SQLite and in JS, never copied into or parsed
//! in wasm memory (which never shrinks), a message split in pieces (one over
//! the 2 MB row limit) included. The stock client replaces its list with the
//! connect transcript right after, which is bounded the same way. RPC
//! `getMessages` answers the same array, parsed in JS.

use js_sys::JsString;
use wasm_bindgen::{JsCast, JsValue};
use worker::worker_sys::web_sys;
use worker::Response;

use super::AgentHost;

#[wasm_bindgen::prelude::wasm_bindgen]
extern "C" {
    /// The runtime's `Response`, built from a body already in JS.
    #[wasm_bindgen(js_name = Response)]
    type JsResponse;

    #[wasm_bindgen(constructor, catch, js_class = "Response")]
    fn new(body: &JsValue, init: &JsValue) -> Result<JsResponse, JsValue>;
}

/// The most message JSON `get-messages` answers with (see the module header).
pub const GET_MESSAGES_BYTES: usize = 4 * 1024 * 1024;

impl AgentHost {
    /// The conversation as a JSON array, a string in JS (see the module
    /// header): what `get-messages` answers and RPC `getMessages` parses
    /// in JS.
    pub(crate) fn messages_json_js(&self) -> JsString {
        let frame = self.core.borrow().messages_frame(GET_MESSAGES_BYTES);
        let older = frame
            .older
            .and_then(|part| self.store.older_part_js(part.before_seq, part.max_bytes))
            .unwrap_or_else(|| JsString::from(""));
        let mut body = JsString::from("[").concat(&older);
        if older.length() > 0 && !frame.window.is_empty() {
            body = body.concat(&JsValue::from_str(","));
        }
        body.concat(&JsValue::from_str(&frame.window))
            .concat(&JsValue::from_str("]"))
    }

    pub(super) fn get_messages(&self) -> worker::Result<Response> {
        let body = self.messages_json_js();
        let headers = web_sys::Headers::new()?;
        headers.set("content-type", "application/json")?;
        let init = web_sys::ResponseInit::new();
        init.set_headers(&headers);
        let response = JsResponse::new(&body, &init)?;
        Ok(Response::from(
            response.unchecked_into::<web_sys::Response>(),
        ))
    }
}
