//! Leveled console output for the host and the store: one line per call,
//! written when its level is within the threshold (`LOG_LEVEL`, set by the
//! host from the agent's settings; `info` until then). In a Worker the line
//! goes to `console.error` / `console.warn` / `console.log` (what
//! `wrangler tail` and the `wrangler dev` console show); natively to stderr.

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
    match level {
        LogLevel::Error => worker::console_error!("{line}"),
        LogLevel::Warn => worker::console_warn!("{line}"),
        LogLevel::Info | LogLevel::Debug => worker::console_log!("{line}"),
    }
    #[cfg(not(target_arch = "wasm32"))]
    eprintln!("{} {line}", level.as_str());
}

/// The prefix of an agent's lines: its class and instance name.
pub fn agent_prefix(agent: &str, name: &str) -> String {
    format!("[{agent} {name}]")
}
