//! Leveled console output: one line per call, written when its level is
//! within the threshold (`LOG_LEVEL`, set by the host from the agent's
//! settings; `info` until then). In a Worker a line goes to `console.error`
//! / `console.warn` / `console.log` (what `wrangler tail` and the
//! `wrangler dev` console show), in order. `write` writes it at once (the
//! Worker's router, the store's rare warnings); `write_after_event`, for an
//! agent's lines about its events (a turn started, ended, retried), writes
//! it 50 ms later (`FLUSH_DELAY_MS`): a console line crosses into the
//! runtime's log pipe, and one written within the event would hold back
//! that event's commit, its frames and its model call, which wait for the
//! event's code to end (one written a few ms after it would meet a fast
//! model's first words). Only a Durable Object defers: its timers outlive
//! the event, where a stateless request's end would drop the timer. A line
//! written at once first writes the deferred ones, so the order holds.
//! Natively every line goes to stderr at once.

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

/// Writes `line` at once when `level` is within the threshold.
pub fn write(level: LogLevel, line: &str) {
    write_when(level, line, false);
}

/// Writes a Durable Object's `line` about the event it is handling
/// `FLUSH_DELAY_MS` after that event, when `level` is within the threshold
/// (see the module header; only a Durable Object's timers outlive its event).
pub fn write_after_event(level: LogLevel, line: &str) {
    write_when(level, line, true);
}

/// Writes `line` when `level` is within the threshold: in a Worker at once
/// or, `after_event`, deferred; natively always at once.
fn write_when(level: LogLevel, line: &str, after_event: bool) {
    if !level.shown_at(threshold()) {
        return;
    }
    #[cfg(target_arch = "wasm32")]
    {
        let method = console_method(level);
        match after_event {
            true => console::write_later(method, line),
            false => console::write_now(method, line),
        }
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = after_event;
        eprintln!("{} {line}", level.as_str());
    }
}

#[cfg(target_arch = "wasm32")]
fn console_method(level: LogLevel) -> &'static str {
    match level {
        LogLevel::Error => "error",
        LogLevel::Warn => "warn",
        LogLevel::Info | LogLevel::Debug => "log",
    }
}

/// The prefix of an agent's lines: its class and instance name.
pub fn agent_prefix(agent: &str, name: &str) -> String {
    format!("[{agent} {name}]")
}

/// The Worker's console. Deferred lines are kept on the JS side (so a
/// panic in wasm after them cannot lose them) and written in order, once
/// per batch, `FLUSH_DELAY_MS` after the first of the batch; a line written
/// at once writes them first.
#[cfg(target_arch = "wasm32")]
mod console {
    use wasm_bindgen::prelude::wasm_bindgen;

    #[wasm_bindgen(inline_js = r#"
const FLUSH_DELAY_MS = 50;
const pending = [];
function flush() {
  for (const [method, line] of pending.splice(0)) console[method](line);
}
export function writeLater(method, line) {
  if (pending.push([method, line]) === 1) setTimeout(flush, FLUSH_DELAY_MS);
}
export function writeNow(method, line) {
  flush();
  console[method](line);
}
"#)]
    extern "C" {
        #[wasm_bindgen(js_name = writeLater)]
        pub(super) fn write_later(method: &str, line: &str);
        #[wasm_bindgen(js_name = writeNow)]
        pub(super) fn write_now(method: &str, line: &str);
    }
}
