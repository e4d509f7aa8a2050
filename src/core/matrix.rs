//! The retry decision matrix (DESIGN §3): one deterministic function from what is
//! known about an operation at an instant to one recommendation with its reason.
//! The console shows it on every hold; the guards stay in force whatever it says.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use std::fmt;

use super::clock::{format_instant, human_instant};
use super::contract::Contract;
use super::detail::OperationDetail;
use super::lookup::{self, Finding, LookupSpec, Verdict};
use super::model::{
    Attempt, FailureMode, Item, ItemState, Observation, ObservationSource, Operation, Outcome,
    Phase,
};

/// What to do about a repeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "decision", content = "at", rename_all = "snake_case")]
pub enum Decision {
    RetryNow,
    RetryAfter(DateTime<Utc>),
    ReconcileFirst,
    HoldForOwner,
    DoNotRetry,
}

impl Decision {
    /// The stable name (`retry_after`).
    pub fn name(self) -> &'static str {
        match self {
            Decision::RetryNow => "retry_now",
            Decision::RetryAfter(_) => "retry_after",
            Decision::ReconcileFirst => "reconcile_first",
            Decision::HoldForOwner => "hold_for_owner",
            Decision::DoNotRetry => "do_not_retry",
        }
    }

    /// Whether a repeat made now would follow this recommendation.
    pub fn permits_retry_at(self, at: DateTime<Utc>) -> bool {
        match self {
            Decision::RetryNow => true,
            Decision::RetryAfter(t) => at >= t,
            _ => false,
        }
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Decision::RetryAfter(t) => write!(f, "retry_after({})", format_instant(*t)),
            other => f.write_str(other.name()),
        }
    }
}

/// The matrix's answer: a decision and the reason in words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Recommendation {
    #[serde(flatten)]
    pub decision: Decision,
    pub reason: String,
}

fn rec(decision: Decision, reason: impl Into<String>) -> Recommendation {
    Recommendation {
        decision,
        reason: reason.into(),
    }
}

/// What the newest observation after the last request showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Observed {
    /// Nothing observed since the last request.
    Nothing,
    /// Not found (proof of non-application when from the provider or after the
    /// observation window).
    NotApplied,
    /// Found, every field matching, one effect.
    Applied,
    /// Found more than one effect.
    Duplicated,
    /// Found, but some field does not match.
    Mismatch,
}

/// The matrix's inputs: (mode, phase reached, write or read, contract idempotency,
/// budget left, observations) and the few facts they are made of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RetryInput {
    pub mode: Option<FailureMode>,
    /// Phase and outcome of the last request attempt, if any was made.
    pub phase: Option<Phase>,
    pub outcome: Option<Outcome>,
    pub write: bool,
    /// The contract documents idempotency and the key is set and within retention.
    pub idempotent: bool,
    pub key_expired: bool,
    pub key_conflict: bool,
    pub status_lookup: bool,
    /// The last failure is on the contract's allowlist of retryable conditions.
    pub retryable: bool,
    pub retry_after: Option<DateTime<Utc>>,
    pub deadline: Option<DateTime<Utc>>,
    /// Why the budget is spent, when it is.
    pub budget_exhausted: Option<String>,
    pub observed: Observed,
    pub items_unknown: usize,
    /// The last request was refused with an expired token (`error_type`
    /// `token_expired`) and no earlier one was: the approved refresh path for the
    /// same identity and scope may run once.
    pub token_expired_once: bool,
    pub now: DateTime<Utc>,
}

/// The decision function.
pub fn recommend(input: &RetryInput) -> Recommendation {
    use Decision::*;
    if input.key_conflict {
        return rec(
            DoNotRetry,
            "the idempotency key was used with a different payload (G3): no retry, no automated repair",
        );
    }
    let Some(mode) = input.mode else {
        return rec(DoNotRetry, "no failure is recorded: nothing to repeat");
    };
    if let Some(why) = &input.budget_exhausted {
        return rec(
            HoldForOwner,
            format!("{why}: a new session never resets it; no retry remains, the owner decides"),
        );
    }
    match mode {
        FailureMode::AuthDenied if input.token_expired_once => rec(
            RetryNow,
            "the token expired: refresh it through the approved path for the same identity and scope, then resend once; any other denial goes to the owner",
        ),
        FailureMode::AuthDenied => rec(
            HoldForOwner,
            "authorization was denied: route to the owner; another credential, tenant or scope is never a retry",
        ),
        FailureMode::ValidationFailed => rec(
            DoNotRetry,
            "validation failed before execution: repair the input and revalidate; a network retry cannot fix it",
        ),
        FailureMode::UnsafeOutput => rec(
            DoNotRetry,
            "the output failed validation (malformed, stale or hostile): it is quarantined data and selects nothing; route review",
        ),
        FailureMode::PartialWrite if input.items_unknown > 0 => rec(
            ReconcileFirst,
            format!(
                "{} items are unknown: reconcile them before resume, compensation or acceptance",
                input.items_unknown
            ),
        ),
        FailureMode::PartialWrite => rec(
            HoldForOwner,
            "a subset committed: resume only the uncommitted items, compensate, or accept; never replay the batch",
        ),
        FailureMode::DuplicateReplay if input.key_expired => rec(
            ReconcileFirst,
            "the idempotency key's retention has passed (G12): reconcile by business key before anything repeats",
        ),
        FailureMode::DuplicateReplay => rec(
            DoNotRetry,
            "a replay of an existing intent: reference the existing result, do not repeat downstream work",
        ),
        FailureMode::TimeoutUnknown | FailureMode::TransientError | FailureMode::RateLimited => {
            transport(mode, input)
        }
    }
}

fn transport(mode: FailureMode, input: &RetryInput) -> Recommendation {
    use Decision::*;
    match input.observed {
        Observed::Applied => {
            return rec(
                DoNotRetry,
                "the target shows the effect once, matching: resolve to SUCCEEDED; a repeat would duplicate it",
            );
        }
        Observed::Duplicated => {
            return rec(
                HoldForOwner,
                "the target shows more than one effect: contain the duplicate; the owner decides",
            );
        }
        Observed::Mismatch => {
            return rec(
                HoldForOwner,
                "the target shows a record that does not match the intent: the owner decides",
            );
        }
        Observed::NotApplied | Observed::Nothing => {}
    }
    let crossed = input.phase.is_some_and(Phase::may_have_crossed_boundary)
        && input.outcome.is_some_and(ambiguous);
    if input.write && crossed && input.observed != Observed::NotApplied {
        return if input.status_lookup {
            rec(
                ReconcileFirst,
                "the write may have crossed the execution boundary: query the provider or target by stable identity before any repeat (G2)",
            )
        } else {
            rec(
                HoldForOwner,
                "the write may have crossed the execution boundary and the contract has no status lookup: the owner decides",
            )
        };
    }
    if mode == FailureMode::RateLimited {
        return match input.retry_after {
            Some(t) if input.deadline.is_none_or(|d| t <= d) => rec(
                RetryAfter(t.max(input.now)),
                format!(
                    "throttled with a usable Retry-After: wait until {}, within the deadline",
                    human_instant(t)
                ),
            ),
            Some(t) => rec(
                HoldForOwner,
                format!(
                    "Retry-After {} falls past the deadline: drop or revalidate",
                    human_instant(t)
                ),
            ),
            None => rec(
                HoldForOwner,
                "throttled without a retry window: may be a hard quota; no automated loop",
            ),
        };
    }
    if input.observed == Observed::NotApplied {
        return rec(
            RetryNow,
            "reconciled: the original was not applied; retry with the same operation, payload and key",
        );
    }
    if !input.write {
        return rec(RetryNow, "a read: repeating it is safe within the budget");
    }
    if !crossed {
        return if input.retryable || mode == FailureMode::TimeoutUnknown {
            rec(
                RetryNow,
                "the request never crossed the execution boundary: no effect is possible",
            )
        } else {
            rec(
                HoldForOwner,
                "an error not on the contract's allowlist: held for investigation",
            )
        };
    }
    rec(
        HoldForOwner,
        "an error not on the contract's allowlist: held for investigation",
    )
}

/// The `error_type` of a request refused because its token had expired.
pub const TOKEN_EXPIRED: &str = "token_expired";

/// Outcomes after which the provider's verdict is unknown to the client.
pub fn ambiguous(outcome: Outcome) -> bool {
    matches!(
        outcome,
        Outcome::Timeout | Outcome::ConnectionReset | Outcome::InvalidResponse
    )
}

/// What the rules need to know about an operation at an instant, derived once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Assessment {
    pub write: bool,
    /// The last request may have crossed the execution boundary with its outcome
    /// unknown to the client.
    pub crossed_boundary: bool,
    pub attempts_used: u32,
    pub max_attempts: Option<u32>,
    pub deadline: Option<DateTime<Utc>>,
    pub now: DateTime<Utc>,
    /// The newest observation after the last request.
    pub fresh_observation: Option<String>,
    /// An observation proving non-application after the last request.
    pub non_application: Option<String>,
    pub key_expired_at: Option<DateTime<Utc>>,
    /// What the newest observation proves, when it is a lookup holdfast made.
    pub lookup: Option<Verdict>,
    /// A not-found lookup by business key after the key expired.
    pub business_key_check: Option<String>,
    pub recommendation: Recommendation,
}

impl Assessment {
    /// Why the retry budget is spent, if it is (G5).
    pub fn budget_exhausted(&self) -> Option<String> {
        if let Some(max) = self.max_attempts
            && self.attempts_used >= max
        {
            return Some(format!(
                "attempt budget exhausted ({} of {max} used)",
                self.attempts_used
            ));
        }
        match self.deadline {
            Some(d) if self.now >= d => Some(format!(
                "time budget exhausted (deadline {} passed)",
                human_instant(d)
            )),
            _ => None,
        }
    }
}

/// Assesses the operation in `detail` at `now`.
pub fn assess_detail(detail: &OperationDetail, now: DateTime<Utc>) -> Assessment {
    assess(
        &detail.row.operation,
        detail.contract.as_ref(),
        &detail.attempts,
        &detail.observations,
        &detail.items,
        !detail.key_conflicts.is_empty(),
        now,
    )
}

/// Assesses an operation from its records as they stood at `at`: attempts started
/// and observations made at or before `at` count, later ones do not. To judge a
/// repeat as it was made, pass an instant just before it (see [`assess_before`]).
pub fn assess(
    op: &Operation,
    contract: Option<&Contract>,
    attempts: &[Attempt],
    observations: &[Observation],
    items: &[Item],
    key_conflict: bool,
    at: DateTime<Utc>,
) -> Assessment {
    let requests: Vec<&Attempt> = attempts
        .iter()
        .filter(|a| a.spends_budget() && a.started_at <= at)
        .collect();
    let last = requests
        .iter()
        .max_by_key(|a| (a.started_at, a.seq))
        .copied();
    let first_request = requests.iter().map(|a| a.started_at).min();
    let write = contract.is_none_or(Contract::is_write);
    let crossed_boundary =
        last.is_some_and(|a| a.phase.may_have_crossed_boundary() && ambiguous(a.outcome));
    let since = last.map(Attempt::last_instant);
    let mut seen: Vec<&Observation> = observations
        .iter()
        .filter(|o| o.observed_at <= at && since.is_none_or(|s| o.observed_at > s))
        .collect();
    seen.sort_by_key(|o| o.observed_at);
    let fresh = seen.last().copied();
    let window_end = op.next_observation_at.or(since);
    let lag = contract
        .and_then(|c| c.status_lookup.spec())
        .map_or(0, LookupSpec::lag_seconds);
    let lookup = fresh
        .filter(|o| o.source == lookup::SOURCE)
        .map(|o| lookup::judge(o, since, lag));
    let non_application = fresh
        .filter(|o| match &lookup {
            Some(verdict) => *verdict == Verdict::NotApplied,
            None => {
                !o.found
                    && (o.source == ObservationSource::ProviderStatus
                        || window_end.is_none_or(|w| o.observed_at >= w))
            }
        })
        .map(|o| o.id.clone());
    let key_expired_at = match (contract, &op.idempotency_key, first_request) {
        (Some(c), Some(_), Some(first)) => c
            .idempotency
            .retention_hours
            .and_then(|h| first.checked_add_signed(Duration::hours(i64::from(h))))
            .filter(|expiry| *expiry <= at),
        _ => None,
    };
    let business_key_check = key_expired_at.and_then(|expiry| {
        observations
            .iter()
            .filter(|o| {
                o.source == ObservationSource::BusinessKey
                    && !o.found
                    && o.observed_at >= expiry
                    && o.observed_at <= at
            })
            .max_by_key(|o| o.observed_at)
            .map(|o| o.id.clone())
    });
    let observed = match (fresh, &lookup) {
        (_, Some(Verdict::Applied)) => Observed::Applied,
        (_, Some(Verdict::NotApplied)) => Observed::NotApplied,
        (_, Some(Verdict::NotYetVisible { .. } | Verdict::Incomplete { .. })) => Observed::Nothing,
        (_, Some(Verdict::Findings { findings })) => {
            if findings
                .iter()
                .any(|f| matches!(f, Finding::DuplicateEffect(_)))
            {
                Observed::Duplicated
            } else {
                Observed::Mismatch
            }
        }
        (fresh, None) => match fresh {
            None => Observed::Nothing,
            Some(o) if !o.found => {
                if non_application.is_some() {
                    Observed::NotApplied
                } else {
                    Observed::Nothing
                }
            }
            Some(o) if o.effect_count.is_some_and(|n| n > 1) => Observed::Duplicated,
            Some(o) if o.matches.as_ref().is_some_and(|m| m.all()) => Observed::Applied,
            Some(_) => Observed::Mismatch,
        },
    };
    let max_attempts = op.max_attempts.or(contract.map(|c| c.max_attempts));
    let deadline = op.deadline.or_else(|| {
        contract.map(|c| op.created_at + Duration::seconds(i64::from(c.budget_seconds)))
    });
    let retryable = last.is_some_and(|a| {
        contract.is_some_and(|c| {
            c.retryable.iter().any(|r| {
                r == a.outcome.as_str()
                    || a.error_type.as_deref() == Some(r.as_str())
                    || a.http_status.is_some_and(|s| r == &format!("http_{s}"))
            })
        })
    });
    let attempts_used = u32::try_from(requests.len()).unwrap_or(u32::MAX);
    let mut assessment = Assessment {
        write,
        crossed_boundary,
        attempts_used,
        max_attempts,
        deadline,
        now: at,
        fresh_observation: fresh.map(|o| o.id.clone()),
        non_application,
        lookup,
        key_expired_at,
        business_key_check,
        recommendation: rec(Decision::DoNotRetry, ""),
    };
    let input = RetryInput {
        mode: op.failure_mode,
        phase: last.map(|a| a.phase),
        outcome: last.map(|a| a.outcome),
        write,
        idempotent: contract.is_some_and(|c| c.idempotency.supported)
            && op.idempotency_key.is_some()
            && key_expired_at.is_none(),
        key_expired: key_expired_at.is_some() && assessment.business_key_check.is_none(),
        key_conflict,
        status_lookup: contract.is_some_and(|c| c.status_lookup.exists()),
        retryable,
        retry_after: last.and_then(|a| a.retry_after),
        deadline,
        budget_exhausted: assessment.budget_exhausted(),
        observed,
        items_unknown: items
            .iter()
            .filter(|i| i.state == ItemState::Unknown)
            .count(),
        token_expired_once: last.is_some_and(|a| a.error_type.as_deref() == Some(TOKEN_EXPIRED))
            && requests
                .iter()
                .filter(|a| a.error_type.as_deref() == Some(TOKEN_EXPIRED))
                .count()
                == 1,
        now: at,
    };
    assessment.recommendation = recommend(&input);
    assessment
}

/// Assesses an operation as it stood just before `at` (one millisecond earlier):
/// how a repeat made at `at` is judged.
pub fn assess_before(
    op: &Operation,
    contract: Option<&Contract>,
    attempts: &[Attempt],
    observations: &[Observation],
    items: &[Item],
    key_conflict: bool,
    at: DateTime<Utc>,
) -> Assessment {
    assess(
        op,
        contract,
        attempts,
        observations,
        items,
        key_conflict,
        at - Duration::milliseconds(1),
    )
}
