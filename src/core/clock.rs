//! The one clock every time-dependent rule and display reads. Frozen, it is the
//! seed's deterministic clock K02: tests, snapshots and the demo run on it.

use chrono::{DateTime, Utc};

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

/// Parses an RFC 3339 instant with an offset into UTC.
pub fn parse_instant(text: &str) -> Result<DateTime<Utc>, chrono::ParseError> {
    DateTime::parse_from_rfc3339(text).map(|t| t.with_timezone(&Utc))
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
            Err(_) if text.contains('T') || text.starts_with(|c: char| c.is_ascii_digit()) => Err(
                format!("{text:?} is not a valid RFC 3339 instant: {TIME_HELP}"),
            ),
            Err(_) => Err(format!("{text:?} is not a time: {TIME_HELP}")),
        }
    }

    /// The instant meant, with `now` as the origin of a relative time.
    pub fn resolve(self, now: DateTime<Utc>) -> DateTime<Utc> {
        match self {
            TimeSpec::At(at) => at,
            TimeSpec::FromNow(offset) => now + offset,
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
        let at = |t: &str| TimeSpec::parse(t).map(|s| format_instant(s.resolve(now)));
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
    fn durations_read_like_a_human_wrote_them() {
        assert_eq!(human_duration(45), "45s");
        assert_eq!(human_duration(185), "3m05s");
        assert_eq!(human_duration(7800), "2h10m");
        assert_eq!(human_duration(-90), "-1m30s");
        assert_eq!(human_duration(356_400), "4d03h");
    }
}
