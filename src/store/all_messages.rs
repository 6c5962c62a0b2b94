//! Every stored message before a place, as their stored JSON joined by
//! commas as a JS string (each row's text stays in JS): what `get-messages` serves of
//! the history older than the core's window, without copying or parsing
//! it in wasm memory (whose size a long history would otherwise set for
//! good).

use js_sys::JsString;
use serde::Deserialize;
use wasm_bindgen::{JsCast, JsValue};

use super::reads::seq_value;
use super::SqlStore;

#[derive(Deserialize)]
struct Count {
    n: f64,
}

impl SqlStore {
    /// The stored JSON of every message placed before `before_seq`, oldest
    /// first, joined by commas ("" for none); rows that are not JSON are
    /// left out, as every read of the history leaves them out. `None` when
    /// the read failed or a message before it is split in pieces (the
    /// caller then reads the history through the core).
    pub fn all_json_before(&self, before_seq: u64) -> Option<JsString> {
        let split: Vec<Count> = self
            .sql
            .exec(
                "SELECT count(*) AS n FROM chat_messages WHERE seq < ? AND pieces <> 1",
                vec![seq_value(before_seq)],
            )
            .and_then(|c| c.to_array())
            .ok()?;
        if split.first().is_none_or(|c| c.n != 0.0) {
            return None;
        }
        // Row by row: one joined string of a long history would pass
        // SQLite's limit on a string's length.
        let cursor = self
            .sql
            .exec(
                "SELECT body FROM chat_messages WHERE seq < ? AND pieces = 1 AND json_valid(body) ORDER BY seq",
                vec![seq_value(before_seq)],
            )
            .ok()?;
        let body_key = JsValue::from_str("body");
        let comma = JsValue::from_str(",");
        let mut joined = JsString::from("");
        for row in cursor {
            let body = js_sys::Reflect::get(&row.ok()?, &body_key)
                .ok()?
                .dyn_into::<JsString>()
                .ok()?;
            if joined.length() > 0 {
                joined = joined.concat(&comma);
            }
            joined = joined.concat(&body);
        }
        Some(joined)
    }
}
