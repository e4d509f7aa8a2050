//! The seam between counting and judging: the plain facts each figure, the gate
//! and the operational figures are assembled from. A producer fills them (today
//! the in-memory one over a `Dataset`; a store may fill them with aggregates) and
//! `assemble` turns them into the report. The names the facts are written in
//! (which figure, which kind of veto, an operational row) live here too, so the
//! seam leans on nothing above it: every other module of `metrics` reads it.

use chrono::{DateTime, Utc};
use serde::{Serialize, Serializer};
use std::fmt;

use crate::core::ids::OperationId;
use crate::core::model::{Relation, State};

/// One operation's standing in one figure whose denominator it is in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// In the numerator.
    Counted,
    /// Left out of the numerator: a record shows the rule is not met.
    Short(String),
    /// Left out of the numerator: no record shows whether the rule is met.
    /// Missing evidence is never inferred.
    Unverified(String),
}

impl Verdict {
    /// `Counted` when `problems` is empty, else `Short` with the problems after
    /// `lead`.
    pub fn unless(lead: &str, problems: Vec<String>) -> Verdict {
        if problems.is_empty() {
            Verdict::Counted
        } else {
            Verdict::Short(format!("{lead}{}", problems.join("; ")))
        }
    }

    /// Why the operation is out of the numerator, if it is.
    pub fn shortfall(self) -> Option<String> {
        match self {
            Verdict::Counted => None,
            Verdict::Short(why) | Verdict::Unverified(why) => Some(why),
        }
    }
}

impl From<Result<(), String>> for Verdict {
    fn from(result: Result<(), String>) -> Verdict {
        match result {
            Ok(()) => Verdict::Counted,
            Err(why) => Verdict::Short(why),
        }
    }
}

/// The input of one figure: every operation of its denominator with its verdict,
/// in operation id order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FigureFacts {
    pub id: MetricId,
    pub rows: Vec<(OperationId, Verdict)>,
}

/// One finding that vetoes a release; findings on one operation make one veto.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub operation: OperationId,
    pub kind: VetoKind,
    /// Attempt, observation and operation ids that show it.
    pub evidence: Vec<String>,
    /// One sentence.
    pub reason: String,
}

/// The counts and short listings the operational figures are derived from. Each
/// field is one aggregate over stored records (a `GROUP BY`, a `COUNT`, or a
/// listing of the few held rows); the rules that pick the rows are in
/// `operational` (`unknown_since`, `is_overdue`, `is_throttled`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OperationalFacts {
    pub logical_operations: u32,
    /// Operations per state, states with none left out.
    pub by_state: Vec<(State, u32)>,
    /// Each UNKNOWN operation with the instant it became unknown.
    pub unknown_since: Vec<(OperationId, DateTime<Utc>)>,
    /// Held operations whose next observation time has passed, in id order.
    pub overdue: Vec<OperationId>,
    /// Attempt counts per layer, in layer order (attempts whose layer is
    /// unrecorded first).
    pub by_layer: Vec<LayerFigure>,
    /// Requests the throttle rule matches, by attempt id.
    pub throttled: Vec<String>,
    pub partial_in_progress: Vec<PartialProgress>,
    pub pending_proposals: Vec<PendingProposal>,
    /// The failed and held operations by owner × root-cause layer × tool, each
    /// operation counted at the report's instant (`repeated`).
    pub repeated: Vec<RepeatedError>,
}

/// Everything the report is assembled from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Facts {
    /// One entry per figure; a figure without an entry measures nothing.
    pub figures: Vec<FigureFacts>,
    /// In the order their reasons are listed.
    pub findings: Vec<Finding>,
    pub operational: OperationalFacts,
}

/// The operations of one owner × root-cause layer × tool that failed or are
/// held.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RepeatedError {
    pub owner: String,
    /// A root-cause layer's name, or `unclassified`.
    pub layer: String,
    pub tool: String,
    /// How many entered their state in the last day before the report's instant
    /// (or after it).
    pub last_day: u32,
    /// How many in the last week.
    pub last_week: u32,
    /// How many in all.
    pub total: u32,
    /// The newest of them: the latest to enter its state (the greatest id among
    /// equals).
    pub newest: OperationId,
    pub newest_since: DateTime<Utc>,
}

/// The groups of repeated errors, most frequent first.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Repeated {
    /// The first groups (a report keeps 100 at most): most in the last week first, then most in
    /// all, then the newest.
    pub groups: Vec<RepeatedError>,
    /// Set when `groups` holds only the first of this many.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups_total: Option<u32>,
}

/// The seven figures, in the order the seed reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MetricId {
    ContractPassRate,
    OutcomeClassificationCompleteness,
    SafeRetryPrecision,
    ReconcileBeforeRepeatRate,
    DuplicateEffectContainment,
    PartialRecoveryCompleteness,
    AttemptEvidenceCompleteness,
}

impl MetricId {
    pub const ALL: &'static [MetricId] = &[
        MetricId::ContractPassRate,
        MetricId::OutcomeClassificationCompleteness,
        MetricId::SafeRetryPrecision,
        MetricId::ReconcileBeforeRepeatRate,
        MetricId::DuplicateEffectContainment,
        MetricId::PartialRecoveryCompleteness,
        MetricId::AttemptEvidenceCompleteness,
    ];

    /// The stable id (`contract_pass_rate`).
    pub fn as_str(self) -> &'static str {
        match self {
            MetricId::ContractPassRate => "contract_pass_rate",
            MetricId::OutcomeClassificationCompleteness => "outcome_classification_completeness",
            MetricId::SafeRetryPrecision => "safe_retry_precision",
            MetricId::ReconcileBeforeRepeatRate => "reconcile_before_repeat_rate",
            MetricId::DuplicateEffectContainment => "duplicate_effect_containment",
            MetricId::PartialRecoveryCompleteness => "partial_recovery_completeness",
            MetricId::AttemptEvidenceCompleteness => "attempt_evidence_completeness",
        }
    }

    /// The name people read.
    pub fn title(self) -> &'static str {
        match self {
            MetricId::ContractPassRate => "Contract pass rate",
            MetricId::OutcomeClassificationCompleteness => "Outcome-classification completeness",
            MetricId::SafeRetryPrecision => "Safe-retry precision",
            MetricId::ReconcileBeforeRepeatRate => "Reconcile-before-repeat rate",
            MetricId::DuplicateEffectContainment => "Duplicate-effect containment",
            MetricId::PartialRecoveryCompleteness => "Partial-recovery completeness",
            MetricId::AttemptEvidenceCompleteness => "Attempt-evidence completeness",
        }
    }

    /// What the numerator counts, in one line.
    pub fn counts(self) -> &'static str {
        match self {
            MetricId::ContractPassRate => {
                "operations meeting every expected state, evidence and prohibition"
            }
            MetricId::OutcomeClassificationCompleteness => {
                "operations in a settled state backed by the evidence it needs"
            }
            MetricId::SafeRetryPrecision => {
                "retried operations whose every retry the matrix and guards allowed"
            }
            MetricId::ReconcileBeforeRepeatRate => "ambiguous writes reconciled before any repeat",
            MetricId::DuplicateEffectContainment => {
                "duplicate-risk operations with one primary effect at most"
            }
            MetricId::PartialRecoveryCompleteness => {
                "partial operations verified resumed, compensated or owner-accepted"
            }
            MetricId::AttemptEvidenceCompleteness => {
                "operations whose attempts and observations carry every required field"
            }
        }
    }
}

impl fmt::Display for MetricId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for MetricId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// What kind of failure vetoes a release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VetoKind {
    /// An expectation marked `veto` that the operation fails.
    ExpectationFailed,
    /// A write repeated while its last request may have applied and nothing proved
    /// it had not (G2).
    RetryBeforeReconcile,
    /// The target shows the intended effect more than once.
    DuplicatePrimaryEffect,
    /// Unsafe tool output fed an action that was proposed from it.
    HostileOutputToAction,
    /// An action that crossed from one tenant into another.
    CrossTenantAction,
}

impl VetoKind {
    pub fn as_str(self) -> &'static str {
        match self {
            VetoKind::ExpectationFailed => "expectation_failed",
            VetoKind::RetryBeforeReconcile => "retry_before_reconcile",
            VetoKind::DuplicatePrimaryEffect => "duplicate_primary_effect",
            VetoKind::HostileOutputToAction => "hostile_output_to_action",
            VetoKind::CrossTenantAction => "cross_tenant_action",
        }
    }
}

impl fmt::Display for VetoKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Physical calls made by one layer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LayerFigure {
    /// The layer's stable name, or `unrecorded`.
    pub layer: String,
    /// Requests and status queries.
    pub attempts: u32,
    pub requests: u32,
    /// Requests beyond the first that this layer made on one operation.
    pub repeats: u32,
    pub operations: u32,
    /// The most requests this layer made on one operation.
    pub max_per_operation: u32,
}

/// A partial operation still being recovered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PartialProgress {
    pub operation: OperationId,
    /// Linked recovery operations with their relation and state.
    pub children: Vec<(OperationId, Relation, State)>,
    /// What the recovery still lacks.
    pub waiting_for: String,
}

/// A proposal waiting for a second pair of eyes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PendingProposal {
    pub operation: OperationId,
    pub action: String,
    pub proposed_by: String,
    pub proposed_at: DateTime<Utc>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn every_metric_has_a_stable_id() {
        let ids: BTreeSet<&str> = MetricId::ALL.iter().map(|m| m.as_str()).collect();
        assert_eq!(ids.len(), 7);
        assert!(ids.contains("safe_retry_precision"));
    }
}
