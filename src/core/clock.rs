//! The one clock every time-dependent rule and display reads. Frozen, it is the
//! seed's deterministic clock K02: tests, snapshots and the demo run on it.

use chrono::{DateTime, Datelike, SubsecRound, Utc};

/// Where "now" comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// The system clock.
    System,
    /// A fixed instant (`--now`, `HOLDFAST_NOW`, the demo packet's own instant).
    Frozen(DateTime<Utc>),
}

impl Clock {
    pub fn now(&self) -> DateTime<Utc> {
        match self {
            Clock::System => Utc::now(),
            Clock::Frozen(at) => *at,
        }
    }

    pub fn is_frozen(&self) -> bool {
        matches!(self, Clock::Frozen(_))
    }
}

/// Why a text is not an instant holdfast accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum InstantError {
    #[error("must be an RFC 3339 time with an offset, like 2026-09-05T10:00:00Z")]
    Format,
    #[error("has {0} fraction digits; at most 9 (nanoseconds) are allowed")]
    Fraction(usize),
    #[error("is outside the years 0001 to 9999 in UTC, the instants a store can keep")]
    Range,
    #[error(
        "is later than {HEADROOM_END}: holdfast computes instants up to ten years after now (time offsets, leases, backoff, deadlines) and a store keeps none past 9999-12-31T23:59:59Z"
    )]
    Headroom,
}

/// The latest "now" holdfast runs at: eleven years before the end of the last
/// year a store keeps, so that no instant computed from now (a `+3660d` offset at
/// most, a lease, a backoff, a deadline) can pass it.
pub const HEADROOM_END: &str = "9989-01-01T00:00:00Z";

/// Whether `at` is an instant a store keeps (years 0001 to 9999 in UTC).
pub fn checked(at: DateTime<Utc>) -> Result<DateTime<Utc>, InstantError> {
    if (1..=9999).contains(&at.year()) {
        Ok(at)
    } else {
        Err(InstantError::Range)
    }
}

/// `at + offset`, refused when the sum is not an instant a store keeps (instead of
/// a year-10000 instant written where only years up to 9999 are read back).
pub fn add(at: DateTime<Utc>, offset: chrono::Duration) -> Result<DateTime<Utc>, InstantError> {
    at.checked_add_signed(offset)
        .ok_or(InstantError::Range)
        .and_then(checked)
}

/// Whether `now` leaves the headroom every computed instant needs
/// ([`HEADROOM_END`]): `--now` and `HOLDFAST_NOW` are read through this.
pub fn check_now(now: DateTime<Utc>) -> Result<DateTime<Utc>, InstantError> {
    let end = parse_instant(HEADROOM_END).map_err(|_| InstantError::Headroom)?;
    if now > end {
        Err(InstantError::Headroom)
    } else {
        checked(now)
    }
}

/// Parses an RFC 3339 instant with an offset into UTC: `YYYY-MM-DDTHH:MM:SS`, an
/// optional fraction of 1 to 9 digits, then `Z` or `±HH:MM`. A space for `T`, a
/// longer fraction and any instant outside the years 0001..=9999 once in UTC are
/// refused, so that every accepted instant is written back by [`format_instant`]
/// in a form this function reads again.
pub fn parse_instant(text: &str) -> Result<DateTime<Utc>, InstantError> {
    let b = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| {
        b.get(range)
            .is_some_and(|part| part.iter().all(u8::is_ascii_digit))
    };
    let shape = digits(0..4)
        && b.get(4) == Some(&b'-')
        && digits(5..7)
        && b.get(7) == Some(&b'-')
        && digits(8..10)
        && matches!(b.get(10), Some(b'T' | b't'))
        && digits(11..13)
        && b.get(13) == Some(&b':')
        && digits(14..16)
        && b.get(16) == Some(&b':')
        && digits(17..19);
    if !shape {
        return Err(InstantError::Format);
    }
    let mut rest = 19;
    if b.get(rest) == Some(&b'.') {
        let count = b[rest + 1..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        if count == 0 {
            return Err(InstantError::Format);
        }
        if count > 9 {
            return Err(InstantError::Fraction(count));
        }
        rest += 1 + count;
    }
    let zone = &b[rest..];
    let zone_ok = matches!(zone, [b'Z' | b'z'])
        || matches!(zone, [b'+' | b'-', h1, h2, b':', m1, m2]
            if [h1, h2, m1, m2].iter().all(|c| c.is_ascii_digit()));
    if !zone_ok {
        return Err(InstantError::Format);
    }
    let at = DateTime::parse_from_rfc3339(text)
        .map_err(|_| InstantError::Format)?
        .with_timezone(&Utc);
    if !(1..=9999).contains(&at.year()) || text.starts_with("0000") {
        return Err(InstantError::Range);
    }
    Ok(at)
}

/// A time as a reviewer types it: an RFC 3339 instant, or an offset from now
/// (`+30m`, `-2h`, `+1h30m`, `now`). The one parser `--now`, `schedule --at` and
/// the console's time fields share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeSpec {
    At(DateTime<Utc>),
    FromNow(chrono::Duration),
}

/// How to write a time, for every message about one that could not be read.
pub const TIME_HELP: &str = "use RFC 3339 with an offset (2026-09-05T10:30:00Z) or a time relative to now (+30m, -2h, +1h30m, +2d, now)";

impl TimeSpec {
    /// Reads `text`; the error says what was wrong and how to write a time.
    pub fn parse(text: &str) -> Result<TimeSpec, String> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("now") {
            return Ok(TimeSpec::FromNow(chrono::Duration::zero()));
        }
        if let Some(rest) = text.strip_prefix('+').or_else(|| text.strip_prefix('-')) {
            let seconds = offset_seconds(rest)
                .ok_or_else(|| format!("{text:?} is not a time offset: {TIME_HELP}"))?;
            let seconds = if text.starts_with('-') {
                -seconds
            } else {
                seconds
            };
            return Ok(TimeSpec::FromNow(chrono::Duration::seconds(seconds)));
        }
        match parse_instant(text) {
            Ok(at) => Ok(TimeSpec::At(at)),
            Err(e) if text.starts_with(|c: char| c.is_ascii_digit()) => Err(format!(
                "{text:?} {e}; or a time relative to now (+30m, -2h, +1h30m, +2d, now)"
            )),
            Err(_) => Err(format!("{text:?} is not a time: {TIME_HELP}")),
        }
    }

    /// The instant meant, with `now` as the origin of a relative time; an offset
    /// that lands outside the years a store keeps is refused.
    pub fn resolve(self, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
        match self {
            TimeSpec::At(at) => Ok(at),
            // `+30m` means thirty minutes from now to the second: the instant
            // kept has no fraction the person never typed.
            TimeSpec::FromNow(offset) => {
                add(now, offset).map(|at| at.trunc_subsecs(0)).map_err(|e| {
                    format!(
                        "{} {} from {} {e}",
                        if offset < chrono::Duration::zero() {
                            "-"
                        } else {
                            "+"
                        },
                        human_duration(offset.num_seconds()).trim_start_matches('-'),
                        human_instant(now)
                    )
                })
            }
        }
    }
}

/// Reads `1h30m`, `45s`, `2d`: numbers each followed by `d`, `h`, `m` or `s`, at
/// most ten years in all.
fn offset_seconds(text: &str) -> Option<i64> {
    const MAX_SECONDS: i64 = 10 * 366 * 86_400;
    if text.is_empty() {
        return None;
    }
    let mut total: i64 = 0;
    let mut digits = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let unit = match c {
            'd' => 86_400,
            'h' => 3_600,
            'm' => 60,
            's' => 1,
            _ => return None,
        };
        let n: i64 = digits.parse().ok()?;
        digits.clear();
        total = total.checked_add(n.checked_mul(unit)?)?;
        if total > MAX_SECONDS {
            return None;
        }
    }
    digits.is_empty().then_some(total)
}

/// How far `at` is from `now` in words: `in 2m00s`, `3m05s ago`, or `now` within
/// a second either way. A past instant never reads as `in 0s`.
pub fn relative(at: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let millis = (at - now).num_milliseconds();
    if millis.abs() < 1_000 {
        "now".to_owned()
    } else if millis > 0 {
        format!("in {}", human_duration(millis / 1_000))
    } else {
        format!("{} ago", human_duration(-millis / 1_000))
    }
}

/// Formats an instant the one way holdfast writes them (RFC 3339, UTC, `Z`).
pub fn format_instant(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

/// Formats an instant for a person to read: as [`format_instant`], but to the
/// millisecond at most (`10:00:01Z`, `10:00:01.250Z`). Records, hashes, JSON and
/// evidence keep the exact instant; a screen or a sentence has no use for the
/// nanoseconds of the system clock.
pub fn human_instant(at: DateTime<Utc>) -> String {
    at.trunc_subsecs(3)
        .to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

/// Whether `text`, an instant [`parse_instant`] accepted, is already written the
/// way [`format_instant`] writes it (`T`, `Z`, a fraction of 3, 6 or 9 digits
/// only when that many are needed), so that formatting it again can be skipped.
pub fn is_formatted_instant(text: &str) -> bool {
    let b = text.as_bytes();
    let fraction = b.get(20..b.len().saturating_sub(1)).unwrap_or_default();
    let minimal = match fraction.len() {
        0 => b.len() == 20,
        3 | 6 | 9 => b[19] == b'.' && !fraction.ends_with(b"000"),
        _ => false,
    };
    b.len() >= 20
        && b[10] == b'T'
        && b.get(17..19) != Some(b"60".as_slice())
        && b.last() == Some(&b'Z')
        && minimal
}

/// A short human duration: `45s`, `3m05s`, `2h10m`, `4d03h`; negative as `-…`.
pub fn human_duration(seconds: i64) -> String {
    let sign = if seconds < 0 { "-" } else { "" };
    let s = seconds.unsigned_abs();
    let body = if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else if s < 86_400 {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    } else {
        format!("{}d{:02}h", s / 86_400, (s % 86_400) / 3600)
    };
    format!("{sign}{body}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instant_is_taken_as_formatted_only_when_formatting_it_again_changes_nothing() {
        for text in [
            "2026-09-05T10:00:00Z",
            "2026-09-05T10:00:00.120Z",
            "2026-09-05T10:00:00.000Z",
            "2026-09-05T10:00:00.12Z",
            "2026-09-05T10:00:00.123456Z",
            "2026-09-05T10:00:00.123000Z",
            "2026-09-05T10:00:00.123456789Z",
            "2026-09-05T10:00:00.123456000Z",
            "2026-09-05t10:00:00Z",
            "2026-09-05T10:00:00z",
            "2026-09-05T12:00:00+02:00",
            "2026-09-05T10:00:00+00:00",
            "2016-12-31T23:59:60Z",
            "0001-01-01T00:00:00.5Z",
        ] {
            let Ok(at) = parse_instant(text) else {
                continue;
            };
            let formatted = format_instant(at) == text;
            // A leap second is formatted again, to be safe; any other instant
            // is recognised exactly.
            let leap = text.contains(":60");
            assert!(!is_formatted_instant(text) || formatted, "{text}");
            assert!(leap || is_formatted_instant(text) == formatted, "{text}");
        }
    }

    #[test]
    fn people_read_instants_to_the_millisecond_and_offsets_land_on_whole_seconds() {
        let at = parse_instant("2026-09-05T10:00:01.123456789Z").unwrap();
        assert_eq!(human_instant(at), "2026-09-05T10:00:01.123Z");
        assert_eq!(format_instant(at), "2026-09-05T10:00:01.123456789Z");
        let whole = parse_instant("2026-09-05T10:00:01Z").unwrap();
        assert_eq!(human_instant(whole), "2026-09-05T10:00:01Z");
        let later = TimeSpec::parse("+30m").unwrap().resolve(at).unwrap();
        assert_eq!(format_instant(later), "2026-09-05T10:30:01Z");
    }

    #[test]
    fn frozen_clock_never_moves_and_offsets_normalise_to_utc() {
        let at = parse_instant("2026-09-05T12:00:00+02:00").unwrap();
        let clock = Clock::Frozen(at);
        assert_eq!(clock.now(), clock.now());
        assert_eq!(format_instant(at), "2026-09-05T10:00:00Z");
        assert!(parse_instant("2026-09-05T10:00:00").is_err());
    }

    #[test]
    fn times_are_instants_or_offsets_from_now_and_words_are_refused_clearly() {
        let now = parse_instant("2026-09-05T10:00:00Z").unwrap();
        let at = |t: &str| TimeSpec::parse(t).and_then(|s| s.resolve(now).map(format_instant));
        assert_eq!(at("+30m").unwrap(), "2026-09-05T10:30:00Z");
        assert_eq!(at("-2h").unwrap(), "2026-09-05T08:00:00Z");
        assert_eq!(at("+1h30m").unwrap(), "2026-09-05T11:30:00Z");
        assert_eq!(at("now").unwrap(), "2026-09-05T10:00:00Z");
        assert_eq!(
            at("2026-09-05T12:00:00+02:00").unwrap(),
            "2026-09-05T10:00:00Z"
        );
        let err = at("yesterday").unwrap_err();
        assert!(
            err.contains("\"yesterday\" is not a time") && err.contains("+30m"),
            "{err}"
        );
        assert!(at("+30x").is_err());
        assert!(at("+").is_err());
        assert!(at("+30").is_err());
        assert!(at("2026-09-05").is_err());
    }

    #[test]
    fn relative_times_say_ago_for_the_past() {
        let now = parse_instant("2026-09-05T10:00:00Z").unwrap();
        let past = parse_instant("2026-09-05T09:57:00Z").unwrap();
        let soon = parse_instant("2026-09-05T10:02:00Z").unwrap();
        assert_eq!(relative(past, now), "3m00s ago");
        assert_eq!(relative(soon, now), "in 2m00s");
        assert_eq!(
            relative(now - chrono::Duration::milliseconds(400), now),
            "now"
        );
    }

    #[test]
    fn instants_outside_what_a_store_round_trips_are_refused() {
        for text in [
            "9999-12-31T23:59:59-23:59",
            "0000-06-01T00:00:00Z",
            "0001-01-01T00:30:00+01:00",
        ] {
            assert_eq!(parse_instant(text), Err(InstantError::Range), "{text}");
        }
        for text in ["9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z"] {
            let at = parse_instant(text).unwrap();
            assert_eq!(parse_instant(&format_instant(at)), Ok(at), "{text}");
        }
    }

    #[test]
    fn arithmetic_past_year_9999_is_refused_and_now_keeps_ten_years_of_headroom() {
        let last = parse_instant("9999-12-31T23:59:59Z").unwrap();
        let spec = TimeSpec::parse("+1d").unwrap();
        let err = spec.resolve(last).unwrap_err();
        assert!(err.contains("outside the years 0001 to 9999"), "{err}");
        assert_eq!(
            add(last, chrono::Duration::seconds(1)),
            Err(InstantError::Range)
        );
        assert_eq!(add(last, chrono::Duration::zero()), Ok(last));
        let first = parse_instant("0001-01-01T00:00:00Z").unwrap();
        assert!(TimeSpec::parse("-1s").unwrap().resolve(first).is_err());
        assert_eq!(check_now(last), Err(InstantError::Headroom));
        let end = parse_instant(HEADROOM_END).unwrap();
        assert_eq!(check_now(end), Ok(end));
        // The headroom covers the longest offset a reviewer can type.
        let longest = TimeSpec::parse("+3660d").unwrap().resolve(end);
        assert!(longest.is_ok(), "{longest:?}");
    }

    #[test]
    fn instants_keep_the_rfc_3339_shape_the_readme_names() {
        assert_eq!(
            parse_instant("2026-09-05 10:00:00Z"),
            Err(InstantError::Format)
        );
        assert_eq!(
            parse_instant("2026-09-05T10:00:00.1234567891Z"),
            Err(InstantError::Fraction(10))
        );
        assert_eq!(
            parse_instant("2026-09-05T10:00:00.Z"),
            Err(InstantError::Format)
        );
        assert_eq!(
            parse_instant("2026-09-05T10:00:00+0200"),
            Err(InstantError::Format)
        );
        let at = parse_instant("2026-09-05T10:00:00.123456789+02:00").unwrap();
        assert_eq!(format_instant(at), "2026-09-05T08:00:00.123456789Z");
    }

    #[test]
    fn durations_read_like_a_human_wrote_them() {
        assert_eq!(human_duration(45), "45s");
        assert_eq!(human_duration(185), "3m05s");
        assert_eq!(human_duration(7800), "2h10m");
        assert_eq!(human_duration(-90), "-1m30s");
        assert_eq!(human_duration(356_400), "4d03h");
    }
}
