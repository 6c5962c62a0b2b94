//! The core's log buffer: events at or above the configured level are kept
//! until the host takes them and writes one line each.

use crate::core::contract::log_event::{LogEvent, StartedBy};
use crate::core::data::queue::QueuedTurn;
use crate::core::vocab::log_level::LogLevel;
use crate::core::vocab::turn_config::TurnTrigger;
use crate::core::Core;

/// Events kept for a host that never takes them (a test, a fuzzer): the oldest go first.
const MAX_KEPT: usize = 256;

impl Core {
    /// Keeps `event` for the host when the configured level shows it.
    pub(in crate::core) fn log(&mut self, event: LogEvent) {
        if !event.level().shown_at(self.config.settings.log_level) {
            return;
        }
        if self.log.len() == MAX_KEPT {
            self.log.remove(0);
        }
        self.log.push(event);
    }

    /// Whether events of `level` are kept (to skip building ones that are not).
    pub(in crate::core) fn logs(&self, level: LogLevel) -> bool {
        level.shown_at(self.config.settings.log_level)
    }

    /// Who started `turn`, for its log line: a tab, a parent's call, a
    /// submission's named caller, the agent's own code, or a recovery.
    pub(in crate::core) fn started_by(&self, turn: &QueuedTurn) -> StartedBy {
        if turn.is_recovery() {
            return StartedBy::Recovery;
        }
        if let Some(conn) = &turn.executor {
            return StartedBy::Parent(conn.to_string());
        }
        match &turn.requester {
            Some(conn) if turn.trigger == TurnTrigger::Programmatic => {
                StartedBy::Parent(conn.to_string())
            }
            Some(conn) => StartedBy::Tab(conn.to_string()),
            None => match self
                .submissions
                .get(&turn.request_id)
                .and_then(|s| s.caller.clone())
            {
                Some(caller) => StartedBy::Caller(caller),
                None => StartedBy::Agent,
            },
        }
    }

    /// Log events so far, oldest first; the host writes one line each.
    pub fn take_log(&mut self) -> Vec<LogEvent> {
        std::mem::take(&mut self.log)
    }
}

/// How a turn's trigger reads in a log line.
pub(in crate::core) fn trigger_label(turn: &QueuedTurn) -> &'static str {
    match turn.trigger {
        TurnTrigger::Submit => "submit",
        TurnTrigger::Regenerate => "regenerate",
        TurnTrigger::AutoContinuation => "continuation",
        TurnTrigger::Programmatic if turn.requester.is_some() => "sub-agent",
        TurnTrigger::Programmatic => "chat",
        TurnTrigger::RecoveryContinue => "recovery-continue",
        TurnTrigger::RecoveryRetry => "recovery-retry",
    }
}
