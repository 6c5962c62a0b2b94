//! The author's schedules in memory: each named schedule with the instant it
//! is next due, and the runs of their callbacks not yet reported ended.
//! Decides which are due at an instant and when each is due again (a cron
//! schedule on its next minute after now, an interval one period after now,
//! a one-off never), so schedules missed while the agent was away fire
//! once, not once per missed period; and which runs start again (a run cut
//! by an eviction, or one that failed, up to `MAX_SCHEDULE_ATTEMPTS`, after
//! a growing pause). The earliest due time is what the Durable Object's
//! alarm must cover.

use std::collections::BTreeMap;

use crate::core::data::cron::Cron;
use crate::core::data::zoned_cron::{self, ZonedCron};
use crate::core::rows::schedule_row::{Repeat, ScheduleRow, ScheduleRun};
use crate::core::vocab::schedule::{
    ScheduleError, ScheduleRequest, ScheduleWhen, MAX_SCHEDULES, MAX_SCHEDULE_NAME_BYTES,
    MAX_SCHEDULE_PAYLOAD_BYTES,
};

/// How many times one run of a callback is started at most (the first
/// attempt included): a run cut by an eviction or ended with an error is
/// started again until then.
pub const MAX_SCHEDULE_ATTEMPTS: u32 = 3;

/// The pause before attempt `attempt + 1` of a run that failed: 10 s, then
/// 60 s.
pub fn retry_delay_ms(attempt: u32) -> u64 {
    if attempt <= 1 {
        10_000
    } else {
        60_000
    }
}

#[derive(Debug, Default)]
pub struct ScheduleTable {
    by_name: BTreeMap<String, ScheduleRow>,
    runs: Vec<ScheduleRun>,
}

/// How a run's end was taken.
#[derive(Debug, PartialEq)]
pub enum RunEnded {
    /// It succeeded, or was not known: nothing more.
    Done,
    /// It failed and runs again (at its `retry_at`).
    Retry(ScheduleRun),
    /// It failed its last attempt and is given up.
    GivenUp(ScheduleRun),
}

impl ScheduleTable {
    pub fn restore(rows: Vec<ScheduleRow>, runs: Vec<ScheduleRun>) -> ScheduleTable {
        let by_name = rows.into_iter().map(|r| (r.name.clone(), r)).collect();
        ScheduleTable { by_name, runs }
    }

    /// Adds (or replaces) the schedule `request` names, checked against the
    /// bounds, at `now`.
    /// A cron expression without a zone is read in `default_zone` (UTC
    /// when `None`).
    pub fn add(
        &mut self,
        request: ScheduleRequest,
        now: u64,
        default_zone: Option<&str>,
    ) -> Result<ScheduleRow, ScheduleError> {
        let name_ok = |s: &str| !s.is_empty() && s.len() <= MAX_SCHEDULE_NAME_BYTES;
        if !name_ok(&request.name) || !name_ok(&request.callback) {
            return Err(ScheduleError::BadName);
        }
        let payload_bytes = serde_json::to_string(&request.payload)
            .map(|s| s.len())
            .unwrap_or(usize::MAX);
        if payload_bytes > MAX_SCHEDULE_PAYLOAD_BYTES {
            return Err(ScheduleError::PayloadTooLarge(payload_bytes));
        }
        if !self.by_name.contains_key(&request.name) && self.by_name.len() >= MAX_SCHEDULES {
            return Err(ScheduleError::TooMany);
        }
        let (repeat, next_at) = match request.when {
            ScheduleWhen::At(at) => (Repeat::Once, at),
            ScheduleWhen::Delay(ms) => (Repeat::Once, now.saturating_add(ms)),
            ScheduleWhen::Every(0) => return Err(ScheduleError::ZeroInterval),
            ScheduleWhen::Every(secs) => (Repeat::Every(secs), now.saturating_add(secs * 1000)),
            ScheduleWhen::Cron(expr) => {
                let repeat = match default_zone.filter(|z| *z != "UTC") {
                    Some(zone) => Repeat::ZonedCron {
                        cron: expr,
                        time_zone: zone.to_string(),
                    },
                    None => Repeat::Cron(expr),
                };
                first_due(repeat, now)?
            }
            ScheduleWhen::ZonedCron { cron, time_zone } => {
                first_due(Repeat::ZonedCron { cron, time_zone }, now)?
            }
        };
        let row = ScheduleRow {
            name: request.name,
            callback: request.callback,
            payload: request.payload,
            repeat,
            next_at,
            declared: false,
        };
        self.by_name.insert(row.name.clone(), row.clone());
        Ok(row)
    }

    /// Schedule `name`, if there is one.
    pub fn get(&self, name: &str) -> Option<&ScheduleRow> {
        self.by_name.get(name)
    }

    /// Marks schedule `name` as declared by the definition.
    pub fn mark_declared(&mut self, name: &str) {
        if let Some(row) = self.by_name.get_mut(name) {
            row.declared = true;
        }
    }

    /// Removes schedule `name`; `false` if there was none.
    pub fn cancel(&mut self, name: &str) -> bool {
        let pending = self.runs.len();
        self.runs.retain(|r| r.name != name || r.retry_at.is_none());
        self.by_name.remove(name).is_some() || self.runs.len() != pending
    }

    /// Every schedule, soonest first.
    pub fn list(&self) -> Vec<ScheduleRow> {
        let mut rows: Vec<ScheduleRow> = self.by_name.values().cloned().collect();
        rows.sort_by(|a, b| (a.next_at, &a.name).cmp(&(b.next_at, &b.name)));
        rows
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty() && self.runs.is_empty()
    }

    /// The runs not yet reported ended.
    pub fn runs(&self) -> &[ScheduleRun] {
        &self.runs
    }

    /// The earliest due time (a schedule's, or a run's next attempt).
    pub fn next_due(&self) -> Option<u64> {
        let retries = self.runs.iter().filter_map(|r| r.retry_at);
        self.by_name
            .values()
            .map(|r| r.next_at)
            .chain(retries)
            .min()
    }

    /// Starts every run due at `now`: each schedule due (a new run, moved
    /// on to its next due time) and each retry due. The runs to start.
    pub fn start_due(&mut self, now: u64) -> Vec<ScheduleRun> {
        let mut started = Vec::new();
        for run in self.runs.iter_mut() {
            if run.retry_at.is_some_and(|at| at <= now) {
                run.retry_at = None;
                run.attempt += 1;
                started.push(run.clone());
            }
        }
        for fired in self.take_due(now) {
            let run = ScheduleRun {
                id: format!("{}@{}", fired.name, fired.next_at),
                name: fired.name,
                callback: fired.callback,
                payload: fired.payload,
                attempt: 1,
                retry_at: None,
            };
            // A run of the same schedule still owed is replaced by the new
            // one (a missed period fires once).
            self.runs.retain(|r| r.name != run.name);
            self.runs.push(run.clone());
            started.push(run);
        }
        started
    }

    /// After a restart: every run that was running when the isolate stopped
    /// was cut; those with attempts left start again now, the others are
    /// given up (returned second).
    pub fn restart_cut_runs(&mut self) -> (Vec<ScheduleRun>, Vec<ScheduleRun>) {
        let (mut again, mut given_up) = (Vec::new(), Vec::new());
        self.runs.retain_mut(|run| {
            if run.retry_at.is_some() {
                return true;
            }
            if run.attempt >= MAX_SCHEDULE_ATTEMPTS {
                given_up.push(run.clone());
                return false;
            }
            run.attempt += 1;
            again.push(run.clone());
            true
        });
        (again, given_up)
    }

    /// Run `id` cannot run at all: it is given up at once.
    pub fn give_up(&mut self, id: &str) -> RunEnded {
        match self.runs.iter().position(|r| r.id == id) {
            Some(index) => RunEnded::GivenUp(self.runs.remove(index)),
            None => RunEnded::Done,
        }
    }

    /// Run `id` ended (`failed`: with an error) at `now`.
    pub fn run_ended(&mut self, id: &str, failed: bool, now: u64) -> RunEnded {
        let Some(index) = self.runs.iter().position(|r| r.id == id) else {
            return RunEnded::Done;
        };
        if !failed {
            self.runs.remove(index);
            return RunEnded::Done;
        }
        let run = &mut self.runs[index];
        if run.attempt >= MAX_SCHEDULE_ATTEMPTS {
            return RunEnded::GivenUp(self.runs.remove(index));
        }
        run.retry_at = Some(now.saturating_add(retry_delay_ms(run.attempt)));
        RunEnded::Retry(run.clone())
    }

    /// Takes every schedule due at `now` (soonest first) and moves repeating
    /// ones to their next due time after `now`; one-offs are removed.
    fn take_due(&mut self, now: u64) -> Vec<ScheduleRow> {
        let due: Vec<ScheduleRow> = self
            .list()
            .into_iter()
            .filter(|r| r.next_at <= now)
            .collect();
        for fired in &due {
            let next = match &fired.repeat {
                Repeat::Once => None,
                Repeat::Every(secs) => Some(now.saturating_add(secs * 1000)),
                cron => next_due_of(cron, now).ok().flatten(),
            };
            match next {
                Some(at) => {
                    if let Some(row) = self.by_name.get_mut(&fired.name) {
                        row.next_at = at;
                    }
                }
                None => {
                    self.by_name.remove(&fired.name);
                }
            }
        }
        due
    }
}

/// When a cron `repeat` is next due after `now`: `Ok(None)` when never,
/// `Err` when its expression or zone does not read.
fn next_due_of(repeat: &Repeat, now: u64) -> Result<Option<u64>, ScheduleError> {
    Ok(match repeat {
        Repeat::Cron(expr) => Cron::parse(expr)
            .map_err(ScheduleError::BadCron)?
            .next_after(now),
        Repeat::ZonedCron { cron, time_zone } => {
            zoned_cron::time_zone(time_zone).map_err(ScheduleError::BadTimeZone)?;
            ZonedCron::parse(cron, time_zone)
                .map_err(ScheduleError::BadCron)?
                .next_after(now)
        }
        Repeat::Once | Repeat::Every(_) => None,
    })
}

/// A cron `repeat` and its first due time, or why it cannot be scheduled.
fn first_due(repeat: Repeat, now: u64) -> Result<(Repeat, u64), ScheduleError> {
    let expr = match &repeat {
        Repeat::Cron(expr) | Repeat::ZonedCron { cron: expr, .. } => expr.clone(),
        _ => String::new(),
    };
    match next_due_of(&repeat, now)? {
        Some(next) => Ok((repeat, next)),
        None => Err(ScheduleError::NeverDue(expr)),
    }
}
