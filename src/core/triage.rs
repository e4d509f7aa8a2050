//! Bulk triage: a selection of holds split by what is safe for each, before anything
//! is applied, and the per-operation decision for the action about to be applied.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::detail::OperationDetail;
use super::ids::OperationId;
use super::matrix::{self, Decision};
use super::model::{FailureMode, State};
use super::rules::{self, Action, Actor, Effect, Rationale, Refusal};

/// The group an operation falls into on a dry run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Bucket {
    /// The matrix says a repeat is safe now (or after a wait).
    RetryEligible,
    /// A status query must come first.
    NeedsReconciliation,
    /// A partial commit: resume, compensate or accept.
    NeedsCompensation,
    /// Nothing automatic is safe: owner decision, budget spent, key conflict, …
    Blocked,
}

impl Bucket {
    pub fn title(self) -> &'static str {
        match self {
            Bucket::RetryEligible => "retry eligible",
            Bucket::NeedsReconciliation => "needs reconciliation",
            Bucket::NeedsCompensation => "needs compensation",
            Bucket::Blocked => "blocked",
        }
    }
}

/// One operation of a dry run: its bucket and what the chosen action would do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TriageLine {
    pub id: OperationId,
    pub state: State,
    pub bucket: Bucket,
    /// Why it is in that bucket (the matrix's reason).
    pub why: String,
    /// The chosen action's effect, or its refusal.
    pub outcome: Result<Effect, Refusal>,
}

/// Which bucket an operation belongs to now.
pub fn classify(detail: &OperationDetail, now: DateTime<Utc>) -> (Bucket, String) {
    let assessment = matrix::assess_detail(detail, now);
    let rec = assessment.recommendation;
    let op = &detail.row.operation;
    // Where nothing automatic is safe, the hold is filed by its own state: an
    // UNKNOWN one still needs its outcome reconciled, whoever decides next, and
    // only a BLOCKED one is filed as blocked.
    let bucket = match rec.decision {
        Decision::RetryNow | Decision::RetryAfter(_) => Bucket::RetryEligible,
        Decision::ReconcileFirst => Bucket::NeedsReconciliation,
        _ if op.state == State::Unknown => Bucket::NeedsReconciliation,
        _ if op.state == State::Partial || op.failure_mode == Some(FailureMode::PartialWrite) => {
            Bucket::NeedsCompensation
        }
        _ => Bucket::Blocked,
    };
    (bucket, format!("{}: {}", rec.decision, rec.reason))
}

/// One operation's dry-run line: its bucket and the action's effect or refusal.
pub fn line(
    detail: &OperationDetail,
    action: &Action,
    actor: &Actor,
    rationale: &Rationale,
    now: DateTime<Utc>,
) -> TriageLine {
    let (bucket, why) = classify(detail, now);
    TriageLine {
        id: detail.row.operation.id.clone(),
        state: detail.row.operation.state,
        bucket,
        why,
        outcome: rules::decide(detail, action, actor, rationale, detail.row.version, now),
    }
}

/// The dry run's order: by bucket, then id.
pub fn order(a: &TriageLine, b: &TriageLine) -> std::cmp::Ordering {
    (a.bucket, &a.id).cmp(&(b.bucket, &b.id))
}

/// The dry run: every selected operation with its bucket and the action's effect
/// or refusal, sorted by bucket then id. Nothing is written.
pub fn dry_run(
    details: &[OperationDetail],
    action: &Action,
    actor: &Actor,
    rationale: &Rationale,
    now: DateTime<Utc>,
) -> Vec<TriageLine> {
    let mut lines: Vec<TriageLine> = details
        .iter()
        .map(|d| line(d, action, actor, rationale, now))
        .collect();
    lines.sort_by(order);
    lines
}
