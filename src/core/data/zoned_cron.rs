//! A cron expression read in a time zone (an IANA name such as
//! `Europe/Paris`, from the time zone database bundled into the build): the
//! expression's fields are wall-clock times there. Daylight saving time:
//! a wall time the clocks skip (spring forward, 02:30 when 02:00 jumps to
//! 03:00) fires once, shifted by the gap (03:30); a wall time that occurs
//! twice (fall back) fires once, at its first occurrence, except that an
//! expression due every hour keeps firing hourly through the repeated hour.
//! `UTC` (and an absent zone) is plain UTC.

use jiff::tz::{AmbiguousOffset, Offset, TimeZone};
use jiff::Timestamp;

use crate::core::data::cron::Cron;

/// How many due wall times are tried before giving up on a next instant
/// (each is tried at most once; a zone's transitions make a few fail).
const MAX_CANDIDATES: usize = 64;

/// A cron expression and the zone it is read in.
#[derive(Debug, Clone)]
pub struct ZonedCron {
    cron: Cron,
    zone: TimeZone,
}

/// The zone named `name`, or why not.
pub fn time_zone(name: &str) -> Result<TimeZone, String> {
    TimeZone::get(name)
        .map_err(|_| format!("unknown time zone `{name}` (an IANA name such as Europe/Paris)"))
}

impl ZonedCron {
    /// Reads `expr` in zone `zone` (an IANA name).
    pub fn parse(expr: &str, zone: &str) -> Result<ZonedCron, String> {
        Ok(ZonedCron {
            cron: Cron::parse(expr)?,
            zone: time_zone(zone)?,
        })
    }

    /// The first due instant strictly after `after_ms` (ms since the
    /// epoch), or `None` if none comes.
    pub fn next_after(&self, after_ms: u64) -> Option<u64> {
        let offset_ms = |ms: u64| -> Option<i64> {
            let at = Timestamp::from_millisecond(i64::try_from(ms).ok()?).ok()?;
            Some(i64::from(self.zone.to_offset(at).seconds()) * 1000)
        };
        // The search runs on wall-clock time written as if it were UTC; it
        // starts a minute before `after`'s wall time so the second pass of
        // a repeated hour is seen.
        let wall_after = after_ms as i64 + offset_ms(after_ms)?;
        let mut from = u64::try_from(wall_after - 60_000).ok()?;
        for _ in 0..MAX_CANDIDATES {
            let wall = self.cron.next_after(from)?;
            if let Some(at) = self.instants(wall).into_iter().find(|at| *at > after_ms) {
                return Some(at);
            }
            from = wall;
        }
        None
    }

    /// The instants wall time `wall` (ms, written as UTC) fires at.
    fn instants(&self, wall: u64) -> Vec<u64> {
        let Some(datetime) = i64::try_from(wall)
            .ok()
            .and_then(|ms| Timestamp::from_millisecond(ms).ok())
            .map(|at| Offset::UTC.to_datetime(at))
        else {
            return Vec::new();
        };
        let instant =
            |offset: Offset| u64::try_from(wall as i64 - i64::from(offset.seconds()) * 1000).ok();
        match self.zone.to_ambiguous_timestamp(datetime).offset() {
            AmbiguousOffset::Unambiguous { offset } => instant(offset).into_iter().collect(),
            // Skipped: shifted forward by the gap (read with the offset before it).
            AmbiguousOffset::Gap { before, .. } => instant(before).into_iter().collect(),
            AmbiguousOffset::Fold { before, after } => {
                let mut at: Vec<u64> = instant(before).into_iter().collect();
                if self.cron.every_hour() {
                    at.extend(instant(after));
                }
                at
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ms since the epoch of a UTC instant written `YYYY-MM-DDTHH:MM:SSZ`.
    fn ms(text: &str) -> u64 {
        text.parse::<Timestamp>().unwrap().as_millisecond() as u64
    }

    fn next(expr: &str, zone: &str, after: &str) -> String {
        let at = ZonedCron::parse(expr, zone)
            .unwrap()
            .next_after(ms(after))
            .unwrap();
        Timestamp::from_millisecond(at as i64).unwrap().to_string()
    }

    #[test]
    fn wall_times_are_read_in_the_zone() {
        // 09:00 in Paris is 08:00 UTC in winter, 07:00 in summer.
        assert_eq!(
            next("0 9 * * *", "Europe/Paris", "2026-01-10T12:00:00Z"),
            "2026-01-11T08:00:00Z"
        );
        assert_eq!(
            next("0 9 * * *", "Europe/Paris", "2026-07-10T12:00:00Z"),
            "2026-07-11T07:00:00Z"
        );
        assert_eq!(
            next(
                "30 8 * * MON-FRI",
                "America/New_York",
                "2026-03-06T20:00:00Z"
            ),
            "2026-03-09T12:30:00Z"
        );
        assert_eq!(
            next("0 9 * * *", "UTC", "2026-01-10T12:00:00Z"),
            "2026-01-11T09:00:00Z"
        );
        assert_eq!(
            next("0 0 * * *", "Asia/Kolkata", "2026-01-10T12:00:00Z"),
            "2026-01-10T18:30:00Z"
        );
    }

    #[test]
    fn a_skipped_wall_time_fires_once_shifted_by_the_gap() {
        // Paris, 2026-03-29: 02:00 jumps to 03:00 (01:00 UTC).
        assert_eq!(
            next("30 2 * * *", "Europe/Paris", "2026-03-28T12:00:00Z"),
            "2026-03-29T01:30:00Z"
        );
        // Hourly at :30: 01:30 CET, then 03:30 CEST (the shifted 02:30 is the same instant).
        let hourly = ZonedCron::parse("30 * * * *", "Europe/Paris").unwrap();
        let first = hourly.next_after(ms("2026-03-29T00:00:00Z")).unwrap();
        assert_eq!(first, ms("2026-03-29T00:30:00Z"));
        let second = hourly.next_after(first).unwrap();
        assert_eq!(second, ms("2026-03-29T01:30:00Z"));
        assert_eq!(
            hourly.next_after(second).unwrap(),
            ms("2026-03-29T02:30:00Z")
        );
    }

    #[test]
    fn a_repeated_wall_time_fires_once_unless_due_every_hour() {
        // Paris, 2026-10-25: 03:00 CEST falls back to 02:00 CET (01:00 UTC).
        let daily = ZonedCron::parse("30 2 * * *", "Europe/Paris").unwrap();
        let first = daily.next_after(ms("2026-10-24T12:00:00Z")).unwrap();
        assert_eq!(first, ms("2026-10-25T00:30:00Z"), "the first 02:30 (CEST)");
        assert_eq!(
            daily.next_after(first).unwrap(),
            ms("2026-10-26T01:30:00Z"),
            "not again at 02:30 CET"
        );
        let hourly = ZonedCron::parse("30 * * * *", "Europe/Paris").unwrap();
        let first = hourly.next_after(ms("2026-10-25T00:00:00Z")).unwrap();
        assert_eq!(first, ms("2026-10-25T00:30:00Z"));
        assert_eq!(
            hourly.next_after(first).unwrap(),
            ms("2026-10-25T01:30:00Z"),
            "02:30 CET too"
        );
        assert_eq!(
            hourly.next_after(ms("2026-10-25T01:30:00Z")).unwrap(),
            ms("2026-10-25T02:30:00Z")
        );
    }

    #[test]
    fn an_unknown_zone_is_refused_by_name() {
        let error = ZonedCron::parse("0 9 * * *", "Mars/Olympus").unwrap_err();
        assert!(error.contains("Mars/Olympus"), "{error}");
    }
}
