//! The stored shape of the author's schedules: one `Schedules` config row
//! holding every schedule with the instant it is next due. Bounded by
//! `vocab::schedule` (count, payload, names) to stay one small row.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How a schedule repeats after it fired.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Repeat {
    /// Fires once, then is gone.
    Once,
    /// Due again on the next minute its cron expression allows (UTC).
    Cron(String),
    /// The same, the expression read in `time_zone` (an IANA name).
    #[serde(rename_all = "camelCase")]
    ZonedCron { cron: String, time_zone: String },
    /// Due again this many seconds after it fired.
    Every(u64),
}

/// One schedule (also what `Core::schedules` lists).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleRow {
    pub name: String,
    pub callback: String,
    pub payload: Value,
    pub repeat: Repeat,
    /// When it is next due (ms since the epoch).
    pub next_at: u64,
    /// Declared by the definition (`AgentDefinition::scheduled_tasks`): kept
    /// in step with it on every start, removed when no longer declared.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub declared: bool,
}

/// A run of a schedule's callback the host has not yet reported ended:
/// running now (or when the isolate stopped), or waiting to be tried again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleRun {
    /// `<name>@<due instant>`: the same for every attempt of one run.
    pub id: String,
    pub name: String,
    pub callback: String,
    pub payload: Value,
    /// Attempts started so far (1 for the first).
    pub attempt: u32,
    /// When the next attempt is due; `None` while an attempt runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_at: Option<u64>,
}

/// The `Schedules` config row.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SchedulesRow {
    pub schedules: Vec<ScheduleRow>,
    /// Runs not yet reported ended (absent in rows written before runs
    /// were kept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<ScheduleRun>,
}
