//! The core's timer table: every timer the core arms lives here, keyed by its
//! closed kind, with the instant it is due. Hosts never keep their own table:
//! they ask for the next deadline (`Core::poll_timeout`, and
//! `Core::durable_deadline` for the Durable Object alarm) and hand expiries
//! back (`Core::handle_timeout`, or `Event::Timer` when the alarm fires).
//! Moving a deadline is a map write, so a deadline that follows every model
//! event (the stall check) costs the host nothing until it is due.

use std::collections::BTreeMap;

use crate::core::contract::effects::Timer;

#[derive(Debug, Default)]
pub struct TimerTable {
    due: BTreeMap<Timer, u64>,
}

impl TimerTable {
    /// Arms `timer` at `at_ms`, replacing an earlier arming of the same kind.
    pub fn set(&mut self, timer: Timer, at_ms: u64) {
        self.due.insert(timer, at_ms);
    }

    pub fn clear(&mut self, timer: Timer) {
        self.due.remove(&timer);
    }

    pub fn is_armed(&self, timer: Timer) -> bool {
        self.due.contains_key(&timer)
    }

    /// Every armed timer with its due time.
    pub fn iter(&self) -> impl Iterator<Item = (Timer, u64)> + '_ {
        self.due.iter().map(|(t, at)| (*t, *at))
    }

    /// The earliest due time of the in-isolate timers.
    pub fn next_deadline(&self) -> Option<u64> {
        self.iter()
            .filter(|(t, _)| !t.is_durable())
            .map(|(_, at)| at)
            .min()
    }

    /// The due time of the timer that must survive the isolate.
    pub fn durable_deadline(&self) -> Option<u64> {
        self.iter()
            .filter(|(t, _)| t.is_durable())
            .map(|(_, at)| at)
            .min()
    }

    /// Disarms and returns the earliest in-isolate timer due at or before
    /// `now` (ties in the order of the kinds), if any.
    pub fn pop_expired(&mut self, now: u64) -> Option<Timer> {
        let (timer, _) = self
            .iter()
            .filter(|(t, at)| !t.is_durable() && *at <= now)
            .min_by_key(|(t, at)| (*at, *t))?;
        self.due.remove(&timer);
        Some(timer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_earliest_expired_timer_fires_first_and_only_once() {
        let mut table = TimerTable::default();
        table.set(Timer::ModelStall, 500);
        table.set(Timer::FlushChunks, 100);
        table.set(Timer::Heartbeat, 50);
        assert_eq!(table.next_deadline(), Some(100));
        assert_eq!(table.durable_deadline(), Some(50));
        assert_eq!(table.pop_expired(99), None, "the alarm is not fired here");
        assert_eq!(table.pop_expired(600), Some(Timer::FlushChunks));
        assert_eq!(table.pop_expired(600), Some(Timer::ModelStall));
        assert_eq!(table.pop_expired(600), None);
        assert!(table.is_armed(Timer::Heartbeat));
    }

    #[test]
    fn re_arming_moves_the_deadline() {
        let mut table = TimerTable::default();
        table.set(Timer::ModelStall, 500);
        table.set(Timer::ModelStall, 900);
        assert_eq!(table.pop_expired(600), None);
        assert_eq!(table.next_deadline(), Some(900));
        table.clear(Timer::ModelStall);
        assert_eq!(table.next_deadline(), None);
    }
}
