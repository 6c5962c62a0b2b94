//! `GET …/get-messages`: the whole conversation as a JSON array, joined in
//! JS from the window's messages (serialized by the core) and the stored
//! JSON of every older message (read by SQLite as a JS string), so a long
//! history is never copied into or parsed in wasm memory, which never
//! shrinks. When the store cannot give the older part that way (a message
//! split in pieces), the history is read through the core as before.

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

impl AgentHost {
    pub(super) fn get_messages(&self) -> worker::Result<Response> {
        let frame = self.core.borrow().messages_frame();
        let older = match frame.older {
            Some(part) => match self.store.all_json_before(part.before_seq) {
                Some(older) => older,
                None => {
                    let messages = self.core.borrow().messages();
                    return Response::from_json(&messages);
                }
            },
            None => JsString::from(""),
        };
        let mut body = JsString::from("[").concat(&older);
        if older.length() > 0 && !frame.window.is_empty() {
            body = body.concat(&JsValue::from_str(","));
        }
        let body = body
            .concat(&JsValue::from_str(&frame.window))
            .concat(&JsValue::from_str("]"));
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
