//! Leveled console output for the host and the store: one line per call,
//! written when its level is within the threshold (`LOG_LEVEL`, set by the
//! host from the agent's settings; `info` until then). In a Worker the line
//! goes to `console.error` / `console.warn` / `console.log` (what
//! `wrangler tail` and the `wrangler dev` console show), in order, a moment
//! after the event that wrote it (50 ms, `FLUSH_DELAY_MS`), once its wire
//! work is done and the next wire work of a turn is usually not yet due: a
//! console line crosses into the runtime's log pipe, and a line written
//! within the event would hold back that event's commit, its frames and its
//! model call, which wait for the event's code to end (one written a few ms
//! later would meet the model's first words). Natively the line goes to
//! stderr at once.

use std::cell::Cell;

pub use crate::core::LogLevel;

thread_local! {
    static THRESHOLD: Cell<LogLevel> = const { Cell::new(LogLevel::Info) };
}

/// Lines above `level` are no longer written (one Worker shares its vars,
/// so every agent of an isolate sets the same level).
pub fn set_threshold(level: LogLevel) {
    THRESHOLD.with(|t| t.set(level));
}

pub fn threshold() -> LogLevel {
    THRESHOLD.with(Cell::get)
}

/// Writes `line` when `level` is within the threshold.
pub fn write(level: LogLevel, line: &str) {
    if !level.shown_at(threshold()) {
        return;
    }
    #[cfg(target_arch = "wasm32")]
    console::write_soon(
        match level {
            LogLevel::Error => "error",
            LogLevel::Warn => "warn",
            LogLevel::Info | LogLevel::Debug => "log",
        },
        line,
    );
    #[cfg(not(target_arch = "wasm32"))]
    eprintln!("{} {line}", level.as_str());
}

/// The prefix of an agent's lines: its class and instance name.
pub fn agent_prefix(agent: &str, name: &str) -> String {
    format!("[{agent} {name}]")
}

/// The Worker's console, written a moment later: lines are kept on the JS
/// side (so a panic in wasm after them cannot lose them) and written in
/// order, once per batch, `FLUSH_DELAY_MS` after the first of the batch. By
/// then the event that wrote them has ended and the runtime has done what
/// waited on it (the event's writes committed, the frames they held sent,
/// its model call on its way). Only Durable Objects write lines (the
/// Worker's router writes none), and their timers run after their events end.
#[cfg(target_arch = "wasm32")]
mod console {
    use wasm_bindgen::prelude::wasm_bindgen;

    #[wasm_bindgen(inline_js = r#"
const FLUSH_DELAY_MS = 50;
const pending = [];
function flush() {
  for (const [method, line] of pending.splice(0)) console[method](line);
}
export function writeSoon(method, line) {
  if (pending.push([method, line]) === 1) setTimeout(flush, FLUSH_DELAY_MS);
}
"#)]
    extern "C" {
        #[wasm_bindgen(js_name = writeSoon)]
        pub(super) fn write_soon(method: &str, line: &str);
    }
}
