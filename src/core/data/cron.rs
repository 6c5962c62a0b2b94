//! Five-field cron expressions (minute, hour, day of month, month, day of
//! week), read in UTC: `*`, numbers, ranges `a-b`, lists `a,b` and steps
//! `*/n` or `a-b/n`; day of week 0-7 with 0 and 7 both Sunday. Months and
//! days of the week may also be named by their first three letters in any
//! case (`JAN`-`DEC`, `SUN`-`SAT`, ranges such as `MON-FRI` too), and
//! `@yearly` (`@annually`), `@monthly`, `@weekly`, `@daily` (`@midnight`)
//! and `@hourly` stand for their usual expressions. As in the
//! classic cron, when both day fields are restricted a day matching either
//! one is due. `next_after` finds the first due minute strictly after an
//! instant, so a schedule is never due twice for the same minute.

/// A parsed cron expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cron {
    minutes: u64,
    hours: u64,
    days_of_month: u64,
    months: u64,
    days_of_week: u64,
    any_day_of_month: bool,
    any_day_of_week: bool,
}

const MINUTE_MS: u64 = 60_000;
/// How far ahead a due minute is looked for (a 29 February falls on a given
/// weekday within 28 years).
const SEARCH_DAYS: i64 = 366 * 29;

impl Cron {
    /// Reads `expr`; the error says which field is wrong and why.
    pub fn parse(expr: &str) -> Result<Cron, String> {
        let expr = match expr.trim().to_ascii_lowercase().as_str() {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            other if other.starts_with('@') => {
                return Err(format!("unknown cron shorthand `{}`", expr.trim()))
            }
            _ => expr,
        };
        let fields: Vec<&str> = expr.split_whitespace().collect();
        if fields.len() != 5 {
            return Err(format!(
                "a cron expression has 5 fields (minute hour day-of-month month day-of-week), found {}",
                fields.len()
            ));
        }
        let mut days_of_week = field(fields[4], "day of week", 0, 7, &DAY_NAMES)?;
        if days_of_week & (1 << 7) != 0 {
            days_of_week = (days_of_week & !(1 << 7)) | 1;
        }
        Ok(Cron {
            minutes: field(fields[0], "minute", 0, 59, &[])?,
            hours: field(fields[1], "hour", 0, 23, &[])?,
            days_of_month: field(fields[2], "day of month", 1, 31, &[])?,
            months: field(fields[3], "month", 1, 12, &MONTH_NAMES)?,
            days_of_week,
            any_day_of_month: fields[2].starts_with('*'),
            any_day_of_week: fields[4].starts_with('*'),
        })
    }

    /// The first due minute strictly after `after_ms` (ms since the epoch,
    /// UTC), or `None` if none comes (e.g. `0 0 31 2 *`).
    pub fn next_after(&self, after_ms: u64) -> Option<u64> {
        let start_minute = after_ms / MINUTE_MS + 1;
        let first_day = (start_minute / 1440) as i64;
        let first_minute_of_day = start_minute % 1440;
        for day in first_day..first_day + SEARCH_DAYS {
            if !self.day_is_due(day) {
                continue;
            }
            let from = if day == first_day {
                first_minute_of_day
            } else {
                0
            };
            for hour in from / 60..24 {
                if self.hours & (1 << hour) == 0 {
                    continue;
                }
                let first = if hour == from / 60 { from % 60 } else { 0 };
                if let Some(minute) = (first..60).find(|m| self.minutes & (1 << m) != 0) {
                    let at = (day as u64 * 1440 + hour * 60 + minute) * MINUTE_MS;
                    return Some(at);
                }
            }
        }
        None
    }

    /// Whether every hour of the day is allowed (the hour field is `*`).
    pub fn every_hour(&self) -> bool {
        self.hours == (1 << 24) - 1
    }

    fn day_is_due(&self, day: i64) -> bool {
        let (_, month, day_of_month) = civil_from_days(day);
        if self.months & (1 << month) == 0 {
            return false;
        }
        let weekday = (day + 4).rem_euclid(7) as u32; // 1970-01-01 was a Thursday
        let by_month = self.days_of_month & (1 << day_of_month) != 0;
        let by_week = self.days_of_week & (1 << weekday) != 0;
        match (self.any_day_of_month, self.any_day_of_week) {
            (false, false) => by_month || by_week,
            _ => by_month && by_week,
        }
    }
}

/// Day-of-week names, Sunday (0) first.
const DAY_NAMES: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
/// Month names, January (1) first.
const MONTH_NAMES: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];

/// One field as a bit set of the values it allows; `names` name the values
/// from `low` on.
fn field(text: &str, name: &str, low: u32, high: u32, names: &[&str]) -> Result<u64, String> {
    let value_of = |text: &str| -> Result<u32, String> {
        let lower = text.to_ascii_lowercase();
        match names.iter().position(|n| *n == lower) {
            Some(at) => Ok(low + at as u32),
            None => number(text, name),
        }
    };
    let mut bits = 0u64;
    for part in text.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((range, step)) => {
                let step: u32 = number(step, name)?;
                if step == 0 {
                    return Err(format!("the {name} field has a step of 0"));
                }
                (range, step)
            }
            None => (part, 1),
        };
        let (from, to) = if range == "*" {
            (low, high)
        } else if let Some((a, b)) = range.split_once('-') {
            (value_of(a)?, value_of(b)?)
        } else {
            let value = value_of(range)?;
            // `5/15` means from 5 to the end in steps of 15.
            (value, if part.contains('/') { high } else { value })
        };
        if from < low || to > high || from > to {
            return Err(format!(
                "the {name} field allows {low}-{high}, found `{part}`"
            ));
        }
        let mut value = from;
        while value <= to {
            bits |= 1 << value;
            value += step;
        }
    }
    Ok(bits)
}

fn number(text: &str, name: &str) -> Result<u32, String> {
    text.parse()
        .map_err(|_| format!("the {name} field has `{text}`, not a number"))
}

/// (year, month 1-12, day 1-31) of a day counted from 1970-01-01.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}
