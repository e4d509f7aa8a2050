//! What one lookup's observation proves, and when the next lookup is due: plain
//! functions over observations and instants, the rules' only view of a lookup.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use std::fmt;

use crate::core::clock::human_instant;
use crate::core::model::Observation;

/// Something an answer showed that refuses `resolve --to SUCCEEDED`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Finding {
    /// The record found is for another target.
    TargetMismatch,
    /// The record found carries another payload: not the approved call.
    PayloadMismatch,
    /// The record found belongs to another tenant: never a match (G7).
    WrongTenant,
    /// More than one effect: a duplicate.
    DuplicateEffect(u32),
}

impl Finding {
    /// The stable name (`wrong_tenant`).
    pub fn name(self) -> &'static str {
        match self {
            Finding::TargetMismatch => "target_mismatch",
            Finding::PayloadMismatch => "payload_mismatch",
            Finding::WrongTenant => "wrong_tenant",
            Finding::DuplicateEffect(_) => "duplicate_effect",
        }
    }

    /// The guard the finding invokes: another tenant's record is a scope breach
    /// (G7); the rest leave the evidence G1 demands for SUCCEEDED missing.
    pub fn rule(self) -> &'static str {
        match self {
            Finding::WrongTenant => "G7",
            _ => "G1",
        }
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Finding::TargetMismatch => f.write_str("found for another target"),
            Finding::PayloadMismatch => f.write_str("found with another payload hash"),
            Finding::WrongTenant => f.write_str("found under another tenant"),
            Finding::DuplicateEffect(n) => write!(f, "found {n} effects: a duplicate"),
        }
    }
}

/// What one observation proves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// Found once, target and payload hash matching, tenant not different: the
    /// evidence resolve needs for SUCCEEDED.
    Applied,
    /// Not found after the lag window: non-application proved.
    NotApplied,
    /// Not found inside the lag window: proves nothing yet.
    NotYetVisible { visible_after: DateTime<Utc> },
    /// Found, but something refuses SUCCEEDED.
    Findings { findings: Vec<Finding> },
    /// Found, but a field SUCCEEDED needs was not compared (the contract names no
    /// pointer for it, or the count is unknown).
    Incomplete { missing: Vec<&'static str> },
}

impl Verdict {
    /// Whether the question is answered: no further lookup can change it.
    pub fn settles(&self) -> bool {
        !matches!(self, Verdict::NotYetVisible { .. })
    }

    /// What the answer proves, in words. What it then allows is the rules'
    /// to say ([`crate::core::rules::options`]), once it is recorded.
    pub fn proves(&self) -> String {
        match self {
            Verdict::Applied => "found, all fields match → the effect, once".into(),
            Verdict::NotApplied => "not found, lag window passed → non-application proved".into(),
            Verdict::NotYetVisible { visible_after } => format!(
                "not found inside the lag window → not yet visible, proves nothing; ask again after {}",
                human_instant(*visible_after)
            ),
            Verdict::Findings { findings } => {
                let named: Vec<String> = findings
                    .iter()
                    .map(|f| {
                        format!(
                            "{f} → {} finding ({})",
                            f.name().replace('_', "-"),
                            f.rule()
                        )
                    })
                    .collect();
                format!("{}: not the intended effect once", named.join("; "))
            }
            Verdict::Incomplete { missing } => format!(
                "found, but {} not compared → proves nothing about SUCCEEDED",
                missing.join(", ")
            ),
        }
    }
}

/// Judges a lookup's observation: `since` is the end of the last request attempt
/// (the lag window counts from it), `lag_seconds` the contract's lag.
pub fn judge(obs: &Observation, since: Option<DateTime<Utc>>, lag_seconds: u32) -> Verdict {
    let not_found = !obs.found || obs.effect_count == Some(0);
    if not_found {
        let visible_after = since.map(|s| s + Duration::seconds(i64::from(lag_seconds)));
        return match visible_after {
            Some(v) if obs.observed_at < v => Verdict::NotYetVisible { visible_after: v },
            _ => Verdict::NotApplied,
        };
    }
    let m = obs.matches.clone().unwrap_or_default();
    let mut findings = Vec::new();
    if m.owner == Some(false) {
        findings.push(Finding::WrongTenant);
    }
    if m.target == Some(false) {
        findings.push(Finding::TargetMismatch);
    }
    if m.payload_hash == Some(false) {
        findings.push(Finding::PayloadMismatch);
    }
    if let Some(n) = obs.effect_count.filter(|n| *n > 1) {
        findings.push(Finding::DuplicateEffect(n));
    }
    if !findings.is_empty() {
        return Verdict::Findings { findings };
    }
    let mut missing = Vec::new();
    if m.target.is_none() {
        missing.push("target");
    }
    if m.payload_hash.is_none() {
        missing.push("payload hash");
    }
    if obs.effect_count.is_none() {
        missing.push("effect count");
    }
    if missing.is_empty() {
        Verdict::Applied
    } else {
        Verdict::Incomplete { missing }
    }
}

/// Whether an observation shows exactly one effect that is the intended one: for a
/// lookup holdfast made, [`judge`] says [`Verdict::Applied`]; for any other source,
/// found with target, payload hash, owner and version all matching and one effect.
pub fn proves_single_effect(obs: &Observation) -> bool {
    if obs.source == super::SOURCE {
        return judge(obs, None, 0) == Verdict::Applied;
    }
    obs.found && obs.matches.as_ref().is_some_and(|m| m.all()) && obs.effect_count == Some(1)
}

/// The fields of `matches` an observation of this source must carry to count as
/// complete evidence: a lookup compares target, payload hash and tenant (in
/// `owner`); other sources all four.
pub fn compared_fields(obs: &Observation) -> Vec<Option<bool>> {
    let m = obs.matches.clone().unwrap_or_default();
    if obs.source == super::SOURCE {
        vec![m.target, m.payload_hash, m.owner]
    } else {
        vec![m.target, m.payload_hash, m.owner, m.version]
    }
}

/// When to look again after a lookup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "next", content = "at", rename_all = "snake_case")]
pub enum Next {
    /// Look again, no earlier than this.
    At(DateTime<Utc>),
    /// The answer settles the question: no more scheduled lookups.
    Settled,
    /// The deadline leaves no time for another lookup: route to the owner.
    Exhausted(String),
}

/// The first wait after a lookup without an answer, doubled per failure in a row.
const BACKOFF_BASE_SECONDS: i64 = 15;
/// The longest wait between two lookups without an answer.
const BACKOFF_MAX_SECONDS: i64 = 1_800;
/// The longest a `Retry-After` is honoured: a provider cannot park a hold for
/// longer than a day.
const RETRY_AFTER_MAX_SECONDS: i64 = 86_400;

/// The wait after `failures` lookups in a row without an answer (1 = the first),
/// with `jitter` in `[0, 1)` spreading it over its upper half.
pub fn backoff(failures: u32, jitter: f64) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    let full = (BACKOFF_BASE_SECONDS << doublings).min(BACKOFF_MAX_SECONDS) * 1_000;
    let spread = jitter.clamp(0.0, 1.0) * 0.5;
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_precision_loss,
        reason = "a wait of at most 30 minutes in milliseconds is exact in f64"
    )]
    let ms = (full as f64 * (0.5 + spread)) as i64;
    Duration::milliseconds(ms)
}

/// A number in `[0, 1)` that spreads the backoffs of different holds apart: a
/// hash of the operation and the instant, so the core stays deterministic.
pub fn jitter(operation: &str, at: DateTime<Utc>) -> f64 {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(format!("{operation}@{}", at.timestamp_millis()).as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    #[allow(
        clippy::cast_precision_loss,
        reason = "53 bits of a hash are plenty for a jitter fraction"
    )]
    let fraction = (u64::from_be_bytes(first) >> 11) as f64 / (1u64 << 53) as f64;
    fraction
}

/// The next observation after a lookup at `now`: `verdict` when an answer came,
/// `retry_after` when the provider asked to wait, `failures` lookups in a row
/// without an answer (this one included). No earlier than the provider asked,
/// never past the `deadline`.
pub fn next_observation(
    now: DateTime<Utc>,
    verdict: Option<&Verdict>,
    retry_after: Option<DateTime<Utc>>,
    deadline: Option<DateTime<Utc>>,
    failures: u32,
    jitter: f64,
) -> Next {
    let at = match verdict {
        Some(Verdict::NotYetVisible { visible_after }) => (*visible_after).max(now),
        Some(_) => return Next::Settled,
        // A Retry-After in the past asks nothing: the backoff decides.
        None => match retry_after.filter(|t| *t > now) {
            Some(t) => t.min(now + Duration::seconds(RETRY_AFTER_MAX_SECONDS)),
            None => now + backoff(failures.max(1), jitter),
        },
    };
    match deadline {
        Some(d) if at > d => Next::Exhausted(format!(
            "the next lookup would be at {}, past the deadline {}",
            human_instant(at),
            human_instant(d)
        )),
        _ => Next::At(at),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::model::Matches;

    fn at(s: &str) -> DateTime<Utc> {
        crate::core::clock::parse_instant(s).unwrap()
    }

    fn obs(found: bool, m: Matches, count: Option<u32>, when: &str) -> Observation {
        let mut o = Observation::bare("F1", at(when), found);
        o.source = super::super::SOURCE;
        o.matches = Some(m);
        o.effect_count = count;
        o
    }

    fn matching() -> Matches {
        Matches {
            target: Some(true),
            payload_hash: Some(true),
            owner: Some(true),
            version: None,
        }
    }

    #[test]
    fn a_single_matching_effect_is_applied() {
        let o = obs(true, matching(), Some(1), "2026-09-05T10:10:00Z");
        assert_eq!(judge(&o, None, 60), Verdict::Applied);
        assert!(judge(&o, None, 60).proves().contains("the effect, once"));
    }

    #[test]
    fn not_found_proves_nothing_inside_the_lag_window() {
        let since = Some(at("2026-09-05T10:00:00Z"));
        let early = obs(false, Matches::default(), None, "2026-09-05T10:00:30Z");
        assert_eq!(
            judge(&early, since, 60),
            Verdict::NotYetVisible {
                visible_after: at("2026-09-05T10:01:00Z")
            }
        );
        let late = obs(false, Matches::default(), None, "2026-09-05T10:01:00Z");
        assert_eq!(judge(&late, since, 60), Verdict::NotApplied);
        let zero = obs(true, matching(), Some(0), "2026-09-05T10:05:00Z");
        assert_eq!(judge(&zero, since, 60), Verdict::NotApplied);
    }

    #[test]
    fn mismatches_other_tenants_and_duplicates_are_findings() {
        let when = "2026-09-05T10:10:00Z";
        let other_tenant = Matches {
            owner: Some(false),
            ..matching()
        };
        let payload = Matches {
            payload_hash: Some(false),
            ..matching()
        };
        assert_eq!(
            judge(&obs(true, other_tenant, Some(1), when), None, 0),
            Verdict::Findings {
                findings: vec![Finding::WrongTenant]
            }
        );
        assert_eq!(
            judge(&obs(true, payload, Some(1), when), None, 0),
            Verdict::Findings {
                findings: vec![Finding::PayloadMismatch]
            }
        );
        let dup = judge(&obs(true, matching(), Some(2), when), None, 0);
        assert_eq!(
            dup,
            Verdict::Findings {
                findings: vec![Finding::DuplicateEffect(2)]
            }
        );
        assert!(dup.proves().contains("duplicate-effect finding"));
        assert_eq!(
            judge(&obs(true, Matches::default(), None, when), None, 0),
            Verdict::Incomplete {
                missing: vec!["target", "payload hash", "effect count"]
            }
        );
    }

    #[test]
    fn retry_after_is_honoured_and_capped_by_the_deadline() {
        let now = at("2026-09-05T10:00:00Z");
        let later = at("2026-09-05T10:02:00Z");
        assert_eq!(
            next_observation(now, None, Some(later), None, 1, 0.5),
            Next::At(later)
        );
        assert!(matches!(
            next_observation(
                now,
                None,
                Some(later),
                Some(at("2026-09-05T10:01:00Z")),
                1,
                0.5
            ),
            Next::Exhausted(_)
        ));
        assert_eq!(
            next_observation(now, Some(&Verdict::Applied), None, None, 0, 0.5),
            Next::Settled
        );
        // A Retry-After in the past asks nothing: the backoff decides.
        let past = at("2026-09-05T09:00:00Z");
        assert_eq!(
            next_observation(now, None, Some(past), None, 1, 1.0),
            Next::At(now + Duration::seconds(15))
        );
        // One far ahead is honoured for at most a day.
        let far = at("2036-09-05T10:00:00Z");
        assert_eq!(
            next_observation(now, None, Some(far), None, 1, 1.0),
            Next::At(now + Duration::seconds(RETRY_AFTER_MAX_SECONDS))
        );
    }

    #[test]
    fn backoff_doubles_with_jitter_in_its_upper_half() {
        assert_eq!(backoff(1, 0.0), Duration::milliseconds(7_500));
        assert_eq!(backoff(1, 1.0), Duration::seconds(15));
        assert_eq!(backoff(2, 1.0), Duration::seconds(30));
        assert_eq!(backoff(40, 1.0), Duration::seconds(BACKOFF_MAX_SECONDS));
        let now = at("2026-09-05T10:00:00Z");
        let Next::At(t) = next_observation(now, None, None, None, 3, 0.3) else {
            panic!("expected a time")
        };
        assert!(t >= now + Duration::seconds(30) && t <= now + Duration::seconds(60));
    }
}
