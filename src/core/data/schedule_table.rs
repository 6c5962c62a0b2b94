//! The author's schedules in memory: each named schedule with the instant it
//! is next due. Decides which are due at an instant and when each is due
//! again (a cron schedule on its next minute after now, an interval one
//! period after now, a one-off never), so schedules missed while the agent
//! was away fire once, not once per missed period. The earliest due time
//! is what the Durable Object's alarm must cover.

use std::collections::BTreeMap;

use crate::core::data::cron::Cron;
use crate::core::rows::schedule_row::{Repeat, ScheduleRow};
use crate::core::vocab::schedule::{
    ScheduleError, ScheduleRequest, ScheduleWhen, MAX_SCHEDULES, MAX_SCHEDULE_NAME_BYTES,
    MAX_SCHEDULE_PAYLOAD_BYTES,
};

#[derive(Debug, Default)]
pub struct ScheduleTable {
    by_name: BTreeMap<String, ScheduleRow>,
}

impl ScheduleTable {
    pub fn restore(rows: Vec<ScheduleRow>) -> ScheduleTable {
        let by_name = rows.into_iter().map(|r| (r.name.clone(), r)).collect();
        ScheduleTable { by_name }
    }

    /// Adds (or replaces) the schedule `request` names, checked against the
    /// bounds, at `now`.
    pub fn add(
        &mut self,
        request: ScheduleRequest,
        now: u64,
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
                let cron = Cron::parse(&expr).map_err(ScheduleError::BadCron)?;
                let next = cron
                    .next_after(now)
                    .ok_or_else(|| ScheduleError::NeverDue(expr.clone()))?;
                (Repeat::Cron(expr), next)
            }
        };
        let row = ScheduleRow {
            name: request.name,
            callback: request.callback,
            payload: request.payload,
            repeat,
            next_at,
        };
        self.by_name.insert(row.name.clone(), row.clone());
        Ok(row)
    }

    /// Removes schedule `name`; `false` if there was none.
    pub fn cancel(&mut self, name: &str) -> bool {
        self.by_name.remove(name).is_some()
    }

    /// Every schedule, soonest first.
    pub fn list(&self) -> Vec<ScheduleRow> {
        let mut rows: Vec<ScheduleRow> = self.by_name.values().cloned().collect();
        rows.sort_by(|a, b| (a.next_at, &a.name).cmp(&(b.next_at, &b.name)));
        rows
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// The earliest due time.
    pub fn next_due(&self) -> Option<u64> {
        self.by_name.values().map(|r| r.next_at).min()
    }

    /// Takes every schedule due at `now` (soonest first) and moves repeating
    /// ones to their next due time after `now`; one-offs are removed.
    pub fn take_due(&mut self, now: u64) -> Vec<ScheduleRow> {
        let due: Vec<ScheduleRow> = self
            .list()
            .into_iter()
            .filter(|r| r.next_at <= now)
            .collect();
        for fired in &due {
            let next = match &fired.repeat {
                Repeat::Once => None,
                Repeat::Every(secs) => Some(now.saturating_add(secs * 1000)),
                Repeat::Cron(expr) => Cron::parse(expr).ok().and_then(|c| c.next_after(now)),
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
