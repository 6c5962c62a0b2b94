//! What the agent's handle offers for the author's own storage and
//! schedules: `storage()` (the author's SQL tables and key-value store) and
//! named schedules (`schedule`, `schedules`, `cancel_schedule`), whose
//! timing the core decides and whose callbacks the definition registers.

use serde::Serialize;

use crate::core::{ScheduleError, ScheduleRequest, ScheduleRow, ScheduleWhen};

use crate::agent::handle::AgentHandle;
use crate::agent::storage::AuthorStorage;

/// A schedule as listed (`{name, callback, payload, repeat, nextAt}`).
pub type Schedule = ScheduleRow;

impl AgentHandle {
    /// The author's own storage on the agent's SQLite.
    pub fn storage(&self) -> AuthorStorage {
        self.author_storage()
    }

    /// Schedules `callback` (a name from the definition's
    /// `schedule_callbacks`) to run with `payload` `when` it is due, under
    /// `name` (replacing a schedule of that name). Stored: it fires after an
    /// eviction or restart too; a run cut by an eviction is not run again,
    /// and periods missed while the agent was away fire once.
    pub fn schedule(
        &self,
        name: &str,
        callback: &str,
        when: ScheduleWhen,
        payload: impl Serialize,
    ) -> Result<Schedule, ScheduleError> {
        let payload =
            serde_json::to_value(payload).map_err(|e| ScheduleError::BadPayload(e.to_string()))?;
        let request = ScheduleRequest {
            name: name.to_string(),
            callback: callback.to_string(),
            payload,
            when,
        };
        self.with_core(|core, now| core.schedule(request, now))
    }

    /// Every schedule, soonest first.
    pub fn schedules(&self) -> Vec<Schedule> {
        self.with_core(|core, _| core.schedules())
    }

    /// Cancels schedule `name`; `false` if there was none.
    pub fn cancel_schedule(&self, name: &str) -> bool {
        self.with_core(|core, now| core.cancel_schedule(name, now))
    }
}
