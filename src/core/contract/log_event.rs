//! What the core has to say about a turn's life, as structured log events:
//! a turn started or ended (with its outcome, steps, duration and size),
//! a model call retried, the context trimmed or refused as too long, a
//! recovery begun, continued, parked or out of budget, a frame refused. The
//! core keeps the events at or above its `LOG_LEVEL` until the host takes
//! them (`Core::take_log`) and writes each as one line; nothing is logged
//! per chunk.

use std::fmt;

use crate::core::vocab::ids::ConnId;
use crate::core::vocab::log_level::LogLevel;

/// How a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnEnd {
    Completed,
    /// Cancelled by a tab, or abandoned by a clear.
    Aborted,
    Failed,
    /// A call waits for a person (a browser tool or an approval); the turn
    /// resumes as a continuation once they answer.
    WaitingForPerson,
    /// The model stream broke off; a recovery turn continues the answer.
    Recovering,
}

impl TurnEnd {
    fn as_str(self) -> &'static str {
        match self {
            TurnEnd::Completed => "completed",
            TurnEnd::Aborted => "aborted",
            TurnEnd::Failed => "failed",
            TurnEnd::WaitingForPerson => "waiting-for-person",
            TurnEnd::Recovering => "recovering",
        }
    }
}

/// A step of a recovery chain (after an eviction, or a cut model stream).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecoveryStep {
    /// The first attempt of the chain.
    Begun,
    /// A later attempt of the same chain.
    Continued,
    /// The cut turn waits for a person: nothing runs until they answer.
    Parked,
    /// The chain's budget is spent: the turn fails.
    Exhausted,
}

impl RecoveryStep {
    /// The step an attempt of a chain is: spent, its first, or a later one.
    pub fn of_attempt(exhausted: bool, attempt: u32) -> RecoveryStep {
        match (exhausted, attempt) {
            (true, _) => RecoveryStep::Exhausted,
            (false, 1) => RecoveryStep::Begun,
            (false, _) => RecoveryStep::Continued,
        }
    }
}

/// Who started a turn, as its log line names them.
#[derive(Debug, Clone, PartialEq)]
pub enum StartedBy {
    /// A tab's chat request (its connection id).
    Tab(String),
    /// A parent agent's `chat()` (its call's connection id).
    Parent(String),
    /// A submission that names its caller (a route's, a stub's).
    Caller(String),
    /// The agent's own code: a submission without a caller, a continuation,
    /// its alarm and schedules.
    Agent,
    /// The recovery of an interrupted turn.
    Recovery,
}

impl fmt::Display for StartedBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartedBy::Tab(conn) => write!(f, "tab:{}", Id(conn)),
            StartedBy::Parent(conn) => write!(f, "parent:{}", Id(conn)),
            StartedBy::Caller(caller) => write!(f, "caller:{}", Id(caller)),
            StartedBy::Agent => f.write_str("agent"),
            StartedBy::Recovery => f.write_str("recovery"),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum LogEvent {
    TurnStarted {
        request_id: String,
        /// `submit`, `regenerate`, `continuation`, `chat` (the agent's own),
        /// `sub-agent` (a parent's), `recovery-continue` or `recovery-retry`.
        trigger: &'static str,
        /// Turns still waiting behind this one.
        queued: usize,
        /// How long it waited in the queue, in ms.
        waited_ms: u64,
        /// Who started it.
        by: StartedBy,
    },
    TurnEnded {
        request_id: String,
        end: TurnEnd,
        steps: u32,
        duration_ms: u64,
        /// Bytes of text, reasoning and tool input the model streamed.
        model_bytes: usize,
        /// The tokens the turn's calls used, as the provider reported them;
        /// with cached input tokens reported, the line shows the cached share.
        usage: Option<crate::model::Usage>,
        reason: Option<String>,
    },
    StepStarted {
        request_id: String,
        step: u32,
        /// Estimated size of the request's messages.
        context_bytes: usize,
    },
    ModelRetry {
        request_id: String,
        /// The retry's number (1 = the first retry).
        attempt: u32,
        delay_ms: u64,
        reason: String,
    },
    ContextTrimmed {
        request_id: String,
        omitted: usize,
        kept_bytes: usize,
        budget: usize,
    },
    /// The provider refused the request as too long: asked again with `budget`.
    ContextOverflow {
        request_id: String,
        sent_bytes: usize,
        budget: usize,
        reason: String,
    },
    Recovery {
        step: RecoveryStep,
        /// `eviction` or `cut-stream`.
        cause: &'static str,
        /// The first interrupted request of the chain.
        root: String,
        attempt: u32,
        max_attempts: u32,
    },
    FrameRefused {
        conn: ConnId,
        reason: String,
    },
    /// A state change was refused (`conn`: the tab that sent it; `None`:
    /// the agent's own code), or its write failed and it was undone.
    StateRefused {
        conn: Option<ConnId>,
        reason: String,
    },
    /// An ended turn's report was dropped undelivered: too many newer ones
    /// were owed to `on_chat_response`.
    ResponseDropped {
        request_id: String,
    },
    /// A schedule's run failed or was cut, and starts again.
    ScheduleRetry {
        name: String,
        /// The attempt that starts next (2 = the first retry).
        attempt: u32,
        delay_ms: u64,
        reason: String,
    },
    /// A schedule's run failed (or was cut) on its last attempt.
    ScheduleGivenUp {
        name: String,
        attempts: u32,
        reason: String,
    },
}

impl LogEvent {
    pub fn level(&self) -> LogLevel {
        match self {
            LogEvent::TurnEnded { end, .. } => match end {
                TurnEnd::Failed => LogLevel::Error,
                TurnEnd::Recovering => LogLevel::Warn,
                _ => LogLevel::Info,
            },
            LogEvent::Recovery { step, .. } => match step {
                RecoveryStep::Exhausted => LogLevel::Error,
                RecoveryStep::Parked => LogLevel::Info,
                _ => LogLevel::Warn,
            },
            LogEvent::TurnStarted { .. } | LogEvent::ContextTrimmed { .. } => LogLevel::Info,
            LogEvent::StepStarted { .. } => LogLevel::Debug,
            LogEvent::ModelRetry { .. }
            | LogEvent::ContextOverflow { .. }
            | LogEvent::FrameRefused { .. }
            | LogEvent::StateRefused { .. } => LogLevel::Warn,
            LogEvent::ResponseDropped { .. } => LogLevel::Warn,
            LogEvent::ScheduleRetry { .. } => LogLevel::Warn,
            LogEvent::ScheduleGivenUp { .. } => LogLevel::Error,
        }
    }
}

/// An id a client chose (a request id, a connection's `_pk`): written as is
/// when it holds only characters ids are made of, else quoted with its
/// control characters, quotes and spaces escaped, so an id can neither end
/// the line nor pass for another field.
struct Id<'a>(&'a str);

impl fmt::Display for Id<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plain = !self.0.is_empty()
            && self.0.chars().all(|c| {
                c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':' | '#' | '~')
            });
        match plain {
            true => f.write_str(self.0),
            false => write!(f, "{:?}", self.0),
        }
    }
}

/// Free text in a line: quoted, on one line, at most 200 characters.
struct Quoted<'a>(&'a str);

/// `text` (a remote server's words: an error, a name) as a log line may
/// carry it: quoted, on one line, at most 200 characters.
pub fn quoted(text: &str) -> String {
    Quoted(text).to_string()
}

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const MAX: usize = 200;
        let mut text: String = self
            .0
            .chars()
            .take(MAX)
            .map(|c| match c {
                '"' => '\'',
                c if c.is_control() => ' ',
                c => c,
            })
            .collect();
        if self.0.chars().count() > MAX {
            text.push_str("...");
        }
        write!(f, "\"{text}\"")
    }
}

impl fmt::Display for LogEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LogEvent::ScheduleRetry {
                name,
                attempt,
                delay_ms,
                reason,
            } => write!(
                f,
                "schedule retry name={} attempt={attempt} delay_ms={delay_ms} reason={}",
                Id(name),
                Quoted(reason)
            ),
            LogEvent::ScheduleGivenUp {
                name,
                attempts,
                reason,
            } => write!(
                f,
                "schedule given up name={} attempts={attempts} reason={}",
                Id(name),
                Quoted(reason)
            ),
            LogEvent::ResponseDropped { request_id } => write!(
                f,
                "chat response dropped undelivered request={} (too many owed)",
                Id(request_id)
            ),
            LogEvent::TurnStarted {
                request_id,
                trigger,
                queued,
                waited_ms,
                by,
            } => write!(
                f,
                "turn started request={} trigger={trigger} queued={queued} waited_ms={waited_ms} by={by}",
                Id(request_id)
            ),
            LogEvent::TurnEnded {
                request_id,
                end,
                steps,
                duration_ms,
                model_bytes,
                usage,
                reason,
            } => {
                write!(
                    f,
                    "turn ended request={} outcome={} steps={steps} ms={duration_ms} streamed_bytes={model_bytes} tokens~{}",
                    Id(request_id),
                    end.as_str(),
                    model_bytes.div_ceil(4)
                )?;
                if let Some((usage, cached)) =
                    usage.and_then(|u| u.cached_tokens.map(|cached| (u, cached)))
                {
                    let share = match usage.prompt_tokens {
                        0 => 0,
                        input => cached.saturating_mul(100) / input,
                    };
                    write!(
                        f,
                        " input_tokens={} cached_tokens={cached} cached_share={share}%",
                        usage.prompt_tokens
                    )?;
                }
                match reason {
                    Some(reason) => write!(f, " reason={}", Quoted(reason)),
                    None => Ok(()),
                }
            }
            LogEvent::StepStarted {
                request_id,
                step,
                context_bytes,
            } => write!(
                f,
                "step started request={} step={step} context_bytes={context_bytes}",
                Id(request_id)
            ),
            LogEvent::ModelRetry {
                request_id,
                attempt,
                delay_ms,
                reason,
            } => write!(
                f,
                "model retry request={} attempt={attempt} delay_ms={delay_ms} reason={}",
                Id(request_id),
                Quoted(reason)
            ),
            LogEvent::ContextTrimmed {
                request_id,
                omitted,
                kept_bytes,
                budget,
            } => write!(
                f,
                "context trimmed request={} omitted_messages={omitted} kept_bytes={kept_bytes} budget={budget}",
                Id(request_id)
            ),
            LogEvent::ContextOverflow {
                request_id,
                sent_bytes,
                budget,
                reason,
            } => write!(
                f,
                "context overflow request={} sent_bytes={sent_bytes} retry_budget={budget} reason={}",
                Id(request_id),
                Quoted(reason)
            ),
            LogEvent::Recovery {
                step,
                cause,
                root,
                attempt,
                max_attempts,
            } => {
                let what = match step {
                    RecoveryStep::Begun => "recovery begun",
                    RecoveryStep::Continued => "recovery continued",
                    RecoveryStep::Parked => "recovery parked (waiting for a person)",
                    RecoveryStep::Exhausted => "recovery budget exhausted",
                };
                write!(f, "{what} cause={cause} root={}", Id(root))?;
                if *step != RecoveryStep::Parked {
                    write!(f, " attempt={attempt}/{max_attempts}")?;
                }
                Ok(())
            }
            LogEvent::FrameRefused { conn, reason } => {
                write!(f, "frame refused conn={} reason={}", Id(conn), Quoted(reason))
            }
            LogEvent::StateRefused { conn, reason } => {
                let from = conn.as_deref().unwrap_or("server");
                write!(f, "state change refused from={} reason={}", Id(from), Quoted(reason))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_parse_and_include_the_ones_before_them() {
        assert_eq!(LogLevel::parse(" WARN "), Some(LogLevel::Warn));
        assert_eq!(LogLevel::parse("warning"), Some(LogLevel::Warn));
        assert_eq!(LogLevel::parse("verbose"), None);
        assert_eq!(LogLevel::default(), LogLevel::Info);
        assert!(LogLevel::Error.shown_at(LogLevel::Warn));
        assert!(!LogLevel::Info.shown_at(LogLevel::Warn));
        assert!(LogLevel::Debug.shown_at(LogLevel::Debug));
    }

    #[test]
    fn free_text_stays_on_one_quoted_line_of_bounded_length() {
        let event = LogEvent::FrameRefused {
            conn: "tab".into(),
            reason: format!("bad \"frame\"\nnext line {}", "x".repeat(500)),
        };
        let line = event.to_string();
        assert!(!line.contains('\n'), "{line}");
        assert!(line.starts_with("frame refused conn=tab reason=\"bad 'frame' next line"));
        assert!(line.len() < 260 && line.ends_with("...\""), "{line}");
    }

    #[test]
    fn a_client_chosen_id_cannot_end_the_line_or_pass_for_a_field() {
        let forged = "r1 outcome=completed\n[chat-agent victim] turn ended request=x";
        let started = LogEvent::TurnStarted {
            request_id: forged.into(),
            trigger: "submit",
            queued: 0,
            waited_ms: 0,
            by: StartedBy::Tab("tab 1\nforged".into()),
        };
        let line = started.to_string();
        assert!(!line.contains('\n'), "{line}");
        assert!(line.starts_with("turn started request=\"r1 outcome=completed\\n[chat-agent"));
        let refused = LogEvent::FrameRefused {
            conn: "tab\r\nx".into(),
            reason: "r".into(),
        };
        assert!(refused
            .to_string()
            .starts_with("frame refused conn=\"tab\\r\\nx\" "));
        let plain = LogEvent::FrameRefused {
            conn: "V1StGXR8_Z5jdHi6B-myT#2".into(),
            reason: "r".into(),
        };
        assert!(plain
            .to_string()
            .starts_with("frame refused conn=V1StGXR8_Z5jdHi6B-myT#2 "));
    }
}
