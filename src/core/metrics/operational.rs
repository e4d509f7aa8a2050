//! The operational figures: the health of the queue now (held by state, unknown
//! age, overdue observations, retry amplification, throttling, partial recovery in
//! progress, pending proposals), their rules and their assembly from counts.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::facts::{LayerFigure, OperationalFacts, PartialProgress, PendingProposal, Repeated};
use super::ratio::{count, percent, scaled};
use super::repeated::Groups;
use crate::core::audit::AuditRow;
use crate::core::clock::human_duration;
use crate::core::ids::OperationId;
use crate::core::model::{Attempt, AttemptKind, Operation, State};

/// How long the UNKNOWN operations have been unknown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnknownAge {
    pub count: u32,
    pub oldest: Option<OperationId>,
    pub oldest_seconds: Option<i64>,
    pub median_seconds: Option<i64>,
    pub histogram: Vec<AgeBucket>,
    /// Held operations whose next observation time has passed.
    pub overdue: Vec<OperationId>,
    /// Set when `overdue` holds only the first of this many.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overdue_total: Option<u32>,
}

impl UnknownAge {
    /// The figure in words, its parts joined by `sep`: `2 unknown; oldest F27
    /// (2h38m); median 2h08m`, or `none` when nothing is UNKNOWN — no dashes
    /// standing for an oldest and a median that do not exist.
    pub fn summary(&self, sep: &str) -> String {
        let Some(oldest) = &self.oldest else {
            return "none".to_owned();
        };
        let age = |s: Option<i64>| s.map_or_else(|| "?".to_owned(), human_duration);
        let mut parts = vec![
            format!("{} unknown", self.count),
            format!("oldest {oldest} ({})", age(self.oldest_seconds)),
        ];
        if let Some(median) = self.median_seconds {
            parts.push(format!("median {}", human_duration(median)));
        }
        parts.join(sep)
    }
}

/// One bar of the unknown-age histogram: ages below `below_seconds` (the last bar
/// has no upper bound).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgeBucket {
    pub label: &'static str,
    pub below_seconds: Option<i64>,
    pub count: u32,
}

/// Retry amplification: physical interactions per logical operation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Amplification {
    pub logical_operations: u32,
    pub physical_attempts: u32,
    pub requests: u32,
    pub status_queries: u32,
    /// Physical attempts ÷ logical operations, two decimals.
    pub per_logical: Option<f64>,
    pub by_layer: Vec<LayerFigure>,
    /// The product of `max_per_operation` over the layers: how many calls one
    /// logical operation could cost if each layer's retries nested in the next
    /// (three layers of three attempts make twenty-seven).
    pub compound_worst_case: u64,
}

/// The share of requests the provider throttled.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Throttled {
    pub throttled: u32,
    pub requests: u32,
    pub percent: Option<f64>,
    pub attempt_ids: Vec<String>,
}

/// The health of the queue now.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Operational {
    pub logical_operations: u32,
    /// Every state that has operations, in lifecycle order.
    pub by_state: Vec<(State, u32)>,
    pub held: u32,
    pub unknown_age: UnknownAge,
    pub amplification: Amplification,
    pub throttled: Throttled,
    pub partial_in_progress: Vec<PartialProgress>,
    pub pending_proposals: Vec<PendingProposal>,
    /// Set when `partial_in_progress` holds only the first of this many.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partial_total: Option<u32>,
    /// Set when `pending_proposals` holds only the first of this many.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending_total: Option<u32>,
    /// The failed and held operations by owner × root-cause layer × tool.
    pub repeated: Repeated,
}

/// The HTTP status of a throttled request.
pub const THROTTLE_STATUS: u16 = 429;

/// The error types of a throttled request.
pub const THROTTLE_ERRORS: &[&str] = &["rate_limited", "quota_exceeded", "throttled"];

/// Whether `attempt` is a request the provider throttled.
pub fn is_throttled(attempt: &Attempt) -> bool {
    attempt.kind == AttemptKind::Request
        && (attempt.http_status == Some(THROTTLE_STATUS)
            || attempt
                .error_type
                .as_deref()
                .is_some_and(|e| THROTTLE_ERRORS.contains(&e)))
}

/// Whether a held operation's next observation time is at or before `now`.
pub fn is_overdue(op: &Operation, now: DateTime<Utc>) -> bool {
    op.state.is_held() && op.next_observation_at.is_some_and(|t| t <= now)
}

/// The instant an UNKNOWN operation became unknown: its newest transition into
/// UNKNOWN from another state (`audit` in `seq` order), else its creation (it was
/// ingested in UNKNOWN).
pub fn unknown_since<'a>(
    op: &Operation,
    audit: impl DoubleEndedIterator<Item = &'a AuditRow>,
) -> DateTime<Utc> {
    audit
        .rev()
        .find(|r| r.draft.to == Some(State::Unknown) && r.draft.from.is_some())
        .map_or(op.created_at, |r| r.draft.at)
}

/// The bars of the unknown-age histogram: a label and the age in seconds the bar
/// stops below (the last has no bound).
const AGE_BUCKETS: &[(&str, Option<i64>)] = &[
    ("< 15m", Some(15 * 60)),
    ("15m–1h", Some(3600)),
    ("1h–4h", Some(4 * 3600)),
    ("4h–24h", Some(24 * 3600)),
    ("≥ 24h", None),
];

/// The operational figures from their facts at `now`.
pub(super) fn assemble(facts: OperationalFacts, now: DateTime<Utc>) -> Operational {
    let held = facts
        .by_state
        .iter()
        .filter(|(state, _)| state.is_held())
        .map(|(_, n)| n)
        .sum();
    Operational {
        logical_operations: facts.logical_operations,
        by_state: facts.by_state,
        held,
        unknown_age: unknown_age(facts.unknown_since, facts.overdue, now),
        amplification: amplification(facts.logical_operations, &facts.by_layer),
        throttled: throttled(facts.throttled, &facts.by_layer),
        partial_in_progress: facts.partial_in_progress,
        pending_proposals: facts.pending_proposals,
        partial_total: None,
        pending_total: None,
        repeated: facts.repeated.into_iter().collect::<Groups>().finish(None),
    }
}

fn unknown_age(
    since: Vec<(OperationId, DateTime<Utc>)>,
    overdue: Vec<OperationId>,
    now: DateTime<Utc>,
) -> UnknownAge {
    let mut ages: Vec<(i64, OperationId)> = since
        .into_iter()
        .map(|(id, since)| ((now - since).num_seconds().max(0), id))
        .collect();
    ages.sort();
    let median = match ages.len() {
        0 => None,
        n if n % 2 == 1 => Some(ages[n / 2].0),
        n => Some((ages[n / 2 - 1].0 + ages[n / 2].0) / 2),
    };
    let mut lower = 0;
    let histogram = AGE_BUCKETS
        .iter()
        .map(|(label, below)| {
            let n = ages
                .iter()
                .filter(|(age, _)| *age >= lower && below.is_none_or(|b| *age < b))
                .count();
            lower = below.unwrap_or(i64::MAX);
            AgeBucket {
                label,
                below_seconds: *below,
                count: count(n),
            }
        })
        .collect();
    let oldest = ages.last().cloned();
    UnknownAge {
        count: count(ages.len()),
        oldest: oldest.as_ref().map(|(_, id)| id.clone()),
        oldest_seconds: oldest.map(|(age, _)| age),
        median_seconds: median,
        histogram,
        overdue,
        overdue_total: None,
    }
}

fn amplification(logical: u32, by_layer: &[LayerFigure]) -> Amplification {
    let physical: u32 = by_layer.iter().map(|l| l.attempts).sum();
    let requests: u32 = by_layer.iter().map(|l| l.requests).sum();
    let compound_worst_case = by_layer
        .iter()
        .filter(|l| l.max_per_operation > 0)
        .map(|l| u64::from(l.max_per_operation))
        .product();
    Amplification {
        logical_operations: logical,
        physical_attempts: physical,
        requests,
        status_queries: physical - requests,
        per_logical: scaled(physical, logical, 1),
        by_layer: by_layer.to_vec(),
        compound_worst_case,
    }
}

fn throttled(attempt_ids: Vec<String>, by_layer: &[LayerFigure]) -> Throttled {
    let throttled = count(attempt_ids.len());
    let requests = by_layer.iter().map(|l| l.requests).sum();
    Throttled {
        throttled,
        requests,
        percent: percent(throttled, requests),
        attempt_ids,
    }
}
