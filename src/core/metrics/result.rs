//! The result types of the seven figures: which figure, its fraction with the
//! operations behind both halves, the percentage rounding, and the whole report.

use chrono::{DateTime, Utc};
use serde::{Serialize, Serializer};
use std::fmt;

use super::facts::Verdict;
use super::operational::Operational;
use super::release::Release;
use crate::core::ids::OperationId;

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

/// One figure: numerator ÷ denominator with the operations behind both.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Metric {
    pub id: MetricId,
    pub numerator: u32,
    pub denominator: u32,
    /// Rounded to two decimals; `None` when nothing is in the denominator.
    pub percent: Option<f64>,
    pub numerator_ids: Vec<OperationId>,
    pub denominator_ids: Vec<OperationId>,
    /// Operations of the denominator left out of the numerator because no record
    /// verifies them either way; listed only when there are some.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unverified_ids: Vec<OperationId>,
    /// Why each operation of the denominator is missing from the numerator.
    #[serde(skip)]
    pub shortfalls: Vec<(OperationId, String)>,
    /// Set when the lists above hold only their first entries, this many at
    /// most: `numerator` and `denominator` still count every operation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listed_at_most: Option<u32>,
}

impl Metric {
    /// The figure over its denominator's operations, each with its verdict.
    pub(super) fn build(id: MetricId, rows: Vec<(OperationId, Verdict)>) -> Metric {
        let denominator_ids: Vec<OperationId> = rows.iter().map(|(op, _)| op.clone()).collect();
        let numerator_ids: Vec<OperationId> = rows
            .iter()
            .filter(|(_, verdict)| *verdict == Verdict::Counted)
            .map(|(op, _)| op.clone())
            .collect();
        let unverified_ids: Vec<OperationId> = rows
            .iter()
            .filter(|(_, verdict)| matches!(verdict, Verdict::Unverified(_)))
            .map(|(op, _)| op.clone())
            .collect();
        let shortfalls = rows
            .into_iter()
            .filter_map(|(op, verdict)| verdict.shortfall().map(|why| (op, why)))
            .collect();
        let numerator = count(numerator_ids.len());
        let denominator = count(denominator_ids.len());
        Metric {
            id,
            numerator,
            denominator,
            percent: percent(numerator, denominator),
            numerator_ids,
            denominator_ids,
            unverified_ids,
            shortfalls,
            listed_at_most: None,
        }
    }

    /// `26/32 = 81.25 %`.
    pub fn fraction(&self) -> String {
        match self.percent {
            Some(p) => format!("{}/{} = {} %", self.numerator, self.denominator, p),
            None => format!(
                "{}/{} (nothing to measure)",
                self.numerator, self.denominator
            ),
        }
    }
}

pub(super) fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// `part ÷ whole × 100`, rounded half up to two decimals in integer arithmetic so
/// that 29/32 reads 90.63 and not a float artefact.
pub fn percent(part: u32, whole: u32) -> Option<f64> {
    scaled(part, whole, 100)
}

/// `part ÷ whole × scale`, rounded half up to two decimals.
pub(super) fn scaled(part: u32, whole: u32, scale: u64) -> Option<f64> {
    if whole == 0 {
        return None;
    }
    let whole = u64::from(whole);
    let hundredths = (u64::from(part) * scale * 200 + whole) / (2 * whole);
    Some(hundredths as f64 / 100.0)
}

/// Everything `holdfast report` shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub now: DateTime<Utc>,
    pub metrics: Vec<Metric>,
    pub release: Release,
    pub operational: Operational,
}

impl Report {
    pub fn metric(&self, id: MetricId) -> Option<&Metric> {
        self.metrics.iter().find(|m| m.id == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn percentages_round_half_up_to_two_decimals() {
        assert_eq!(percent(29, 32), Some(90.63));
        assert_eq!(percent(2, 3), Some(66.67));
        assert_eq!(percent(1, 8), Some(12.5));
        assert_eq!(percent(0, 5), Some(0.0));
        assert_eq!(percent(3, 0), None);
        assert_eq!(scaled(47, 32, 1), Some(1.47));
    }

    #[test]
    fn every_metric_has_a_stable_id() {
        let ids: BTreeSet<&str> = MetricId::ALL.iter().map(|m| m.as_str()).collect();
        assert_eq!(ids.len(), 7);
        assert!(ids.contains("safe_retry_precision"));
    }
}
