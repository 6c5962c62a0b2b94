//! Frames out to the sockets: one frame's text crosses into JS once and is
//! sent to every listed socket as the same JS string, and a transcript
//! frame's older part is read from SQLite as a JS string and joined with the
//! rest in JS, never copied into (or out of) wasm memory.

use wasm_bindgen::JsValue;

use crate::core::ConnId;
use crate::core::TranscriptFrame;

use super::AgentHost;

impl AgentHost {
    /// Sends one frame to each listed socket (a broadcast to N tabs would
    /// otherwise decode the UTF-8 N times).
    pub(super) fn send_frame(&self, to: &[ConnId], frame: &str) {
        for conn in to {
            self.rpc.deliver(conn, frame);
        }
        if let [conn] = to {
            if let Some(ws) = self.sockets.borrow().get(conn) {
                let _ = ws.send_with_str(frame);
            }
            return;
        }
        self.send_js(to, &JsValue::from_str(frame));
    }

    /// A transcript frame, its older part read as it is sent (an RPC call
    /// gets none: it follows only its own turn).
    pub(super) fn send_transcript_frame(&self, to: &[ConnId], frame: &TranscriptFrame) {
        let sockets: Vec<ConnId>;
        let to = if to.iter().any(|c| self.rpc.is_call(c)) {
            sockets = to
                .iter()
                .filter(|c| !self.rpc.is_call(c))
                .cloned()
                .collect();
            &sockets[..]
        } else {
            to
        };
        let older = frame
            .older
            .and_then(|part| self.store.older_part_js(part.before_seq, part.max_bytes));
        let Some(older) = older else {
            return self.send_frame(to, &frame.with_older(""));
        };
        let mut text = js_sys::JsString::from(frame.head()).concat(&older);
        if !frame.window.is_empty() {
            text = text
                .concat(&JsValue::from_str(","))
                .concat(&JsValue::from_str(&frame.window));
        }
        let text: JsValue = text.concat(&JsValue::from_str(frame.tail())).into();
        self.send_js(to, &text);
    }

    /// Sends a string already in JS to each listed socket.
    fn send_js(&self, to: &[ConnId], text: &JsValue) {
        let sockets = self.sockets.borrow();
        for conn in to {
            if let Some(ws) = sockets.get(conn) {
                let _ = send_js_string(ws.as_ref(), text);
            }
        }
    }
}

#[wasm_bindgen::prelude::wasm_bindgen]
extern "C" {
    /// A WebSocket seen only through `send`, so a string already in JS can be sent.
    type JsSocket;

    #[wasm_bindgen(method, catch, js_name = send)]
    fn send(this: &JsSocket, data: &JsValue) -> Result<(), JsValue>;
}

fn send_js_string(
    socket: &worker::worker_sys::web_sys::WebSocket,
    text: &JsValue,
) -> Result<(), JsValue> {
    use wasm_bindgen::JsCast;
    socket.unchecked_ref::<JsSocket>().send(text)
}
