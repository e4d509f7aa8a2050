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
    fn durations_read_like_a_human_wrote_them() {
        assert_eq!(human_duration(45), "45s");
        assert_eq!(human_duration(185), "3m05s");
        assert_eq!(human_duration(7800), "2h10m");
        assert_eq!(human_duration(-90), "-1m30s");
        assert_eq!(human_duration(356_400), "4d03h");
    }
}
