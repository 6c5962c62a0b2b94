//! Five-field cron expressions in UTC: which minute is next due.

use durable_chat::core::Cron;

const MINUTE: u64 = 60_000;
const HOUR: u64 = 60 * MINUTE;
const DAY: u64 = 24 * HOUR;
/// 2026-12-04 00:00 UTC, a Friday.
const FRIDAY: u64 = 1_796_342_400_000;

fn next(expr: &str, after: u64) -> Option<u64> {
    Cron::parse(expr)
        .map(|c| c.next_after(after))
        .unwrap_or(None)
}

#[test]
fn every_minute_is_due_on_the_next_minute_strictly_after() {
    assert_eq!(next("* * * * *", FRIDAY), Some(FRIDAY + MINUTE));
    assert_eq!(next("* * * * *", FRIDAY + 1), Some(FRIDAY + MINUTE));
    assert_eq!(
        next("* * * * *", FRIDAY + MINUTE - 1),
        Some(FRIDAY + MINUTE)
    );
}

#[test]
fn steps_ranges_and_lists() {
    assert_eq!(
        next("*/15 * * * *", FRIDAY + MINUTE),
        Some(FRIDAY + 15 * MINUTE)
    );
    assert_eq!(
        next("5/15 * * * *", FRIDAY + 6 * MINUTE),
        Some(FRIDAY + 20 * MINUTE)
    );
    assert_eq!(next("0 9-17/4 * * *", FRIDAY), Some(FRIDAY + 9 * HOUR));
    assert_eq!(
        next("0 9-17/4 * * *", FRIDAY + 9 * HOUR),
        Some(FRIDAY + 13 * HOUR)
    );
    assert_eq!(
        next("30 6,18 * * *", FRIDAY + 7 * HOUR),
        Some(FRIDAY + 18 * HOUR + 30 * MINUTE)
    );
}

#[test]
fn a_time_passed_today_is_due_tomorrow() {
    assert_eq!(
        next("0 8 * * *", FRIDAY + 9 * HOUR),
        Some(FRIDAY + DAY + 8 * HOUR)
    );
}

#[test]
fn days_of_week_count_from_sunday_and_seven_is_sunday_too() {
    let sunday = FRIDAY + 2 * DAY;
    assert_eq!(next("0 0 * * 0", FRIDAY), Some(sunday));
    assert_eq!(next("0 0 * * 7", FRIDAY), Some(sunday));
    assert_eq!(
        next("0 12 * * 1-5", FRIDAY + 13 * HOUR),
        Some(sunday + DAY + 12 * HOUR)
    );
}

#[test]
fn month_and_year_boundaries() {
    // The first of January 2027.
    assert_eq!(next("0 0 1 1 *", FRIDAY), Some(FRIDAY + 28 * DAY));
    // 29 February: the next is in 2028.
    let leap = next("0 0 29 2 *", FRIDAY).unwrap_or_default();
    assert_eq!((leap - FRIDAY) / DAY, 28 + 365 + 31 + 28);
}

#[test]
fn both_day_fields_restricted_means_either() {
    // The 10th of the month or a Sunday: Sunday the 6th comes first.
    assert_eq!(next("0 0 10 * 0", FRIDAY), Some(FRIDAY + 2 * DAY));
    // The 5th or a Monday: the 5th (Saturday) comes first.
    assert_eq!(next("0 0 5 * 1", FRIDAY), Some(FRIDAY + DAY));
}

#[test]
fn a_day_that_never_comes_is_never_due() {
    assert_eq!(next("0 0 31 2 *", FRIDAY), None);
}

#[test]
fn bad_expressions_are_refused_with_the_field_named() {
    let error = |e: &str| Cron::parse(e).err().unwrap_or_default();
    assert!(error("* * * *").contains("5 fields"));
    assert!(error("60 * * * *").contains("minute"));
    assert!(error("* 24 * * *").contains("hour"));
    assert!(error("* * 0 * *").contains("day of month"));
    assert!(error("* * * 13 *").contains("month"));
    assert!(error("* * * * 8").contains("day of week"));
    assert!(error("*/0 * * * *").contains("step of 0"));
    assert!(error("a * * * *").contains("not a number"));
    assert!(error("5-2 * * * *").contains("minute"));
}

#[test]
fn months_and_weekdays_may_be_named_in_any_case() {
    for (named, numbered) in [
        ("0 9 * * MON", "0 9 * * 1"),
        ("0 9 * * mon-fri", "0 9 * * 1-5"),
        ("0 9 * * Sat,SUN", "0 9 * * 6,0"),
        ("0 0 1 JAN *", "0 0 1 1 *"),
        ("0 0 1 jun-AUG *", "0 0 1 6-8 *"),
        ("0 0 * DEC FRI", "0 0 * 12 5"),
    ] {
        assert_eq!(Cron::parse(named), Cron::parse(numbered), "{named}");
        assert!(Cron::parse(named).is_ok(), "{named}");
    }
    // Friday 2026-12-04: the next Monday 09:00 is three days on.
    assert_eq!(
        next("0 9 * * MON", FRIDAY),
        Some(FRIDAY + 3 * DAY + 9 * HOUR)
    );
    let error = |e: &str| Cron::parse(e).err().unwrap_or_default();
    assert!(error("* * * * MONDAY").contains("day of week"));
    assert!(error("* * * FEB-JAN *").contains("month"));
    assert!(
        error("* * * * JAN").contains("day of week"),
        "a month is no weekday"
    );
}

#[test]
fn shorthands_stand_for_their_expressions() {
    for (short, long) in [
        ("@yearly", "0 0 1 1 *"),
        ("@annually", "0 0 1 1 *"),
        ("@monthly", "0 0 1 * *"),
        ("@weekly", "0 0 * * 0"),
        ("@daily", "0 0 * * *"),
        ("@midnight", "0 0 * * *"),
        ("@HOURLY", "0 * * * *"),
    ] {
        assert_eq!(Cron::parse(short), Cron::parse(long), "{short}");
    }
    assert_eq!(next("@daily", FRIDAY + 1), Some(FRIDAY + DAY));
    assert!(Cron::parse("@sometimes")
        .err()
        .unwrap_or_default()
        .contains("shorthand"));
}
