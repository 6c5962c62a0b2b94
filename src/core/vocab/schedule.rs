//! The vocabulary of the author's schedules: when one is due
//! (`ScheduleWhen`), what the author asks for (`ScheduleRequest`), how a
//! request is refused (`ScheduleError`) and the bounds that keep every
//! schedule in one stored row under production's row limit.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// At most this many schedules at once.
pub const MAX_SCHEDULES: usize = 100;
/// A schedule's payload, as JSON, is at most this many bytes.
pub const MAX_SCHEDULE_PAYLOAD_BYTES: usize = 16 * 1024;
/// A schedule's name and its callback's name are at most this many bytes.
pub const MAX_SCHEDULE_NAME_BYTES: usize = 128;

/// When a schedule is due.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ScheduleWhen {
    /// Once, at this instant (ms since the epoch).
    At(u64),
    /// Once, this many ms from now.
    Delay(u64),
    /// On a five-field cron expression, in the agent's default time zone
    /// (`SCHEDULE_TIME_ZONE`; UTC when unset).
    Cron(String),
    /// On a five-field cron expression read in `time_zone` (an IANA name
    /// such as `Europe/Paris`; see `ZonedCron` for daylight saving time).
    #[serde(rename_all = "camelCase")]
    ZonedCron { cron: String, time_zone: String },
    /// Every this many seconds, the first time one period from now.
    Every(u64),
}

/// A named schedule: `callback` (a name the definition registers) runs with
/// `payload` when it is due. A schedule of a name already used replaces it.
#[derive(Debug, Clone, PartialEq)]
pub struct ScheduleRequest {
    pub name: String,
    pub callback: String,
    pub payload: Value,
    pub when: ScheduleWhen,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    #[error("a schedule name or callback name is 1-{MAX_SCHEDULE_NAME_BYTES} bytes")]
    BadName,
    #[error("a schedule's payload is at most {MAX_SCHEDULE_PAYLOAD_BYTES} bytes of JSON, this one is {0}")]
    PayloadTooLarge(usize),
    #[error("at most {MAX_SCHEDULES} schedules at once")]
    TooMany,
    #[error("an interval is at least 1 second")]
    ZeroInterval,
    #[error("the payload does not serialise: {0}")]
    BadPayload(String),
    #[error("bad cron expression: {0}")]
    BadCron(String),
    #[error("{0}")]
    BadTimeZone(String),
    #[error("the cron expression `{0}` is never due")]
    NeverDue(String),
}
