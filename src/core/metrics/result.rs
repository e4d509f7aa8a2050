//! The result types of the seven figures: a figure's fraction with the
//! operations behind both halves, and the whole report.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::facts::{MetricId, Verdict};
use super::operational::Operational;
use super::ratio::{count, percent};
use super::release::Release;
use crate::core::ids::OperationId;

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
