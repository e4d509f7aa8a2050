//! Metrics and the release gate (DESIGN §6): the seven figures of a run, each as
//! numerator ÷ denominator with the operations behind both; the operational figures
//! of the queue; and the release disposition, decided apart from the averages by
//! vetoes. Everything is computed from stored records and one `now`. The rule behind
//! each figure is written out in the README (Metrics and the release gate); a retry
//! is judged by the same retry matrix and guards the console uses, as they stood
//! when it was made.
//!
//! # The seam: the core judges, a producer counts
//!
//! The report is built in two steps with plain data between them ([`Facts`]):
//!
//! 1. **A producer fills the facts.** Today that is [`report`]'s in-memory
//!    producer (`dataset.rs`), which gathers every record of a `Dataset` per
//!    operation and walks them. A store may fill the same types itself:
//!    - [`FigureFacts`]: per figure, the operations of its denominator, each with
//!      a [`Verdict`] (counted, short with a reason, or unverified). A verdict is a
//!      rule over one operation's records and those of its relatives (children,
//!      parent, dependents, operations sharing its idempotency key), so a store
//!      keeps one verdict per (operation, figure), recomputed by the core's rule
//!      whenever a record of that operation or a relative is written, and reads a
//!      figure back as `COUNT(*)`, `SUM(counted)` and the listed ids.
//!    - [`Finding`]: the release gate's findings, one row each; kept the same way.
//!    - [`OperationalFacts`]: counts by state (`GROUP BY state`), the instant each
//!      UNKNOWN operation became unknown ([`unknown_since`]), the overdue held
//!      operations ([`is_overdue`]), attempt counts per layer (`GROUP BY layer`
//!      over per-operation counts), the throttled requests ([`is_throttled`],
//!      [`THROTTLE_STATUS`], [`THROTTLE_ERRORS`]), and the short listings of
//!      partial operations in recovery and pending proposals.
//! 2. **[`assemble`] turns the facts into the [`Report`]:** fractions and rounded
//!    percentages, one veto per operation and the disposition, the unknown-age
//!    median and histogram, amplification and the compound worst case, the
//!    throttled share. Nothing in this step looks at a record, so every producer
//!    gets the same figures from the same facts.
//!
//! Only time-dependent facts read `now`: overdue observations, unknown age, and
//! FAILED proved by an observation window that has passed (which, once passed,
//! stays passed).
//!
//! # Where each piece lives
//! `result` the figures' result types and rounding; `facts` the seam; `figures`
//! the seven per-operation rules; `classification` the evidence each state needs;
//! `contract` the expectation check; `prohibition` what an expectation may forbid;
//! `findings` taints and cross-tenant actions; `release` the gate; `operational`
//! the queue's health; `view` one operation's records; `dataset` the in-memory
//! producer.

mod classification;
mod contract;
mod dataset;
mod facts;
mod figures;
mod findings;
mod operational;
mod prohibition;
mod release;
mod result;
mod view;

use chrono::{DateTime, Utc};

pub use facts::{Facts, FigureFacts, Finding, OperationalFacts, Verdict};
pub use operational::{
    AgeBucket, Amplification, LayerFigure, Operational, PartialProgress, PendingProposal,
    THROTTLE_ERRORS, THROTTLE_STATUS, Throttled, UnknownAge, is_overdue, is_throttled,
    unknown_since,
};
pub use prohibition::Prohibition;
pub use release::{Disposition, Release, Veto, VetoKind};
pub use result::{Metric, MetricId, Report, percent};
pub use view::RetryVerdict;

use crate::core::model::Dataset;

/// Computes the report over `dataset` at `now`.
pub fn report(dataset: &Dataset, now: DateTime<Utc>) -> Report {
    assemble(dataset::Index::new(dataset, now).facts(), now)
}

/// The report from facts a producer filled, at `now`. The seven figures come out
/// in the order the seed reports them, each measuring nothing when the facts hold
/// no entry for it.
pub fn assemble(facts: Facts, now: DateTime<Utc>) -> Report {
    let mut figures = facts.figures;
    let metrics = MetricId::ALL
        .iter()
        .map(|id| {
            let rows = figures
                .iter_mut()
                .find(|f| f.id == *id)
                .map(|f| std::mem::take(&mut f.rows))
                .unwrap_or_default();
            Metric::build(*id, rows)
        })
        .collect();
    Report {
        now,
        metrics,
        release: release::assemble(facts.findings),
        operational: operational::assemble(facts.operational, now),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_store_measures_nothing_and_vetoes_nothing() {
        let r = report(&Dataset::default(), Utc::now());
        assert!(
            r.metrics
                .iter()
                .all(|m| m.denominator == 0 && m.percent.is_none())
        );
        assert_eq!(r.release.disposition, Disposition::Deployable);
        assert_eq!(r.operational.unknown_age.median_seconds, None);
    }
}
