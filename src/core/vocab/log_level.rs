//! How much the agent writes to the log (`LOG_LEVEL`).

/// How much is logged: each level includes the ones before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum LogLevel {
    /// Failed turns, exhausted recoveries, failed storage writes, quarantined rows.
    Error,
    /// Model retries, recoveries begun, context overflows, refused frames.
    Warn,
    /// Turns started and ended, trimmed context, parked turns (the default).
    #[default]
    Info,
    /// Each model step, too.
    Debug,
}

impl LogLevel {
    /// `error`, `warn` (or `warning`), `info` or `debug`, in any case.
    pub fn parse(text: &str) -> Option<LogLevel> {
        Some(match text.trim().to_ascii_lowercase().as_str() {
            "error" => LogLevel::Error,
            "warn" | "warning" => LogLevel::Warn,
            "info" => LogLevel::Info,
            "debug" => LogLevel::Debug,
            _ => return None,
        })
    }

    /// Whether a line of this level is written when `threshold` is set.
    pub fn shown_at(self, threshold: LogLevel) -> bool {
        self <= threshold
    }

    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Error => "error",
            LogLevel::Warn => "warn",
            LogLevel::Info => "info",
            LogLevel::Debug => "debug",
        }
    }
}
