//! Metrics and the release gate (DESIGN §6): the seven figures of a run, each as
//! numerator ÷ denominator with the operations behind both; the operational figures
//! of the queue; and the release disposition, decided apart from the averages by
//! vetoes. Everything is computed from stored records and one `now`. The rule behind
//! each figure is written out in docs/metrics.md; a retry
//! is judged by the same retry matrix and guards the console uses, as they stood
//! when it was made.
//!
//! # The seam: the core judges, a producer counts
//!
//! The report is built in two steps with plain data between them ([`Facts`]):
//!
//! 1. **A producer fills the facts.** Today that is the in-memory producer
//!    (`dataset.rs`), which gathers every record of a `Dataset` per operation and
//!    walks them: over a whole dataset for [`report`], or over one keyset page of
//!    operations with their relatives' records for [`page_facts`], whose facts a
//!    [`Tally`] folds into counts with bounded lists (`tally.rs`; `src/report.rs`
//!    reads the pages). A store may fill the same types itself:
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
//! producer; `tally` the paged fold; `stored` the rows a store keeps per
//! operation and the report from their sums.

mod classification;
mod contract;
mod dataset;
mod facts;
mod figures;
mod findings;
mod operational;
mod prohibition;
mod ratio;
mod release;
mod repeated;
mod result;
mod stored;
mod tally;
pub mod text;
mod view;

use chrono::{DateTime, Utc};

pub use facts::{
    Facts, FigureFacts, Finding, LayerFigure, MetricId, OperationalFacts, PartialProgress,
    PendingProposal, Repeated, RepeatedError, Verdict, VetoKind,
};
pub use operational::{
    AgeBucket, Amplification, Operational, THROTTLE_ERRORS, THROTTLE_STATUS, Throttled, UnknownAge,
    is_overdue, is_throttled, unknown_since,
};
pub use prohibition::Prohibition;
pub use ratio::percent;
pub use release::{Disposition, NOT_EVALUATED_WHY, Release, Veto};
pub use repeated::{DAY_MS, GroupKey, Groups, WEEK_MS, windows};
pub use result::{Metric, Report};
pub use stored::{
    FactRow, Judged, Stored, cause_kind, cause_kinds, cause_reason, figure_kinds, instant_ms,
    is_cause_kind, judge, repeated_group, verdict_kind,
};
pub use tally::{LISTED, Tally, page_facts};
pub use view::RetryVerdict;

use crate::core::detail::Dataset;

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
        .collect::<Vec<Metric>>();
    let evaluated = evaluated(&metrics);
    Report {
        now,
        metrics,
        release: release::assemble(facts.findings, evaluated),
        operational: operational::assemble(facts.operational, now),
    }
}

/// How many cases the release gate rests on: the operations whose expectation
/// was judged (the contract pass rate's denominator).
fn evaluated(metrics: &[Metric]) -> u32 {
    metrics
        .iter()
        .find(|m| m.id == MetricId::ContractPassRate)
        .map_or(0, |m| m.denominator)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ids::OperationId;
    use crate::core::model::State;

    #[test]
    fn an_empty_store_measures_nothing_and_vetoes_nothing() {
        let r = report(&Dataset::default(), Utc::now());
        assert!(
            r.metrics
                .iter()
                .all(|m| m.denominator == 0 && m.percent.is_none())
        );
        assert!(r.release.vetoes.is_empty());
        assert_eq!(r.release.disposition, Disposition::NotEvaluated);
        assert_eq!(r.operational.unknown_age.median_seconds, None);
    }

    fn op(text: &str) -> OperationId {
        OperationId::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn layer(name: &str, attempts: u32, requests: u32, max: u32) -> LayerFigure {
        LayerFigure {
            layer: name.into(),
            attempts,
            requests,
            repeats: requests.saturating_sub(1),
            operations: 1,
            max_per_operation: max,
        }
    }

    /// Facts filled by hand, as a store counting with aggregates would fill them,
    /// give the report the in-memory producer would: nothing in the assembly reads
    /// a record.
    #[test]
    fn facts_from_any_producer_assemble_into_the_report() {
        let Ok(now) = crate::core::clock::parse_instant("2026-09-05T12:00:00Z") else {
            panic!("a fixed instant parses");
        };
        let facts = Facts {
            figures: vec![FigureFacts {
                id: MetricId::DuplicateEffectContainment,
                rows: vec![
                    (op("F1"), Verdict::Counted),
                    (op("F2"), Verdict::Short("twice".into())),
                    (op("F3"), Verdict::Unverified("unobserved".into())),
                ],
            }],
            findings: vec![
                Finding {
                    operation: op("F2"),
                    kind: VetoKind::DuplicatePrimaryEffect,
                    evidence: vec!["O1".into()],
                    reason: "twice".into(),
                },
                Finding {
                    operation: op("F2"),
                    kind: VetoKind::ExpectationFailed,
                    evidence: vec!["O1".into()],
                    reason: "expected once".into(),
                },
            ],
            operational: OperationalFacts {
                logical_operations: 4,
                by_state: vec![(State::Unknown, 2), (State::Succeeded, 2)],
                unknown_since: vec![
                    (op("F3"), now - chrono::Duration::minutes(5)),
                    (op("F4"), now - chrono::Duration::hours(2)),
                ],
                overdue: vec![op("F4")],
                by_layer: vec![layer("sdk", 3, 3, 3), layer("gateway", 3, 2, 2)],
                throttled: vec!["A1".into()],
                ..OperationalFacts::default()
            },
        };
        let r = assemble(facts, now);
        let ids: Vec<MetricId> = r.metrics.iter().map(|m| m.id).collect();
        assert_eq!(ids, MetricId::ALL);
        let Some(m) = r.metric(MetricId::DuplicateEffectContainment) else {
            panic!("every figure is reported");
        };
        assert_eq!((m.numerator, m.denominator, m.percent), (1, 3, Some(33.33)));
        assert_eq!(m.unverified_ids, vec![op("F3")]);
        assert_eq!(m.shortfalls.len(), 2);
        assert!(
            r.metrics
                .iter()
                .filter(|m| m.id != MetricId::DuplicateEffectContainment)
                .all(|m| m.denominator == 0)
        );
        assert_eq!(r.release.disposition, Disposition::NotDeployed);
        assert_eq!(r.release.vetoes.len(), 1);
        assert_eq!(
            r.release.vetoes[0].kinds,
            [
                VetoKind::ExpectationFailed,
                VetoKind::DuplicatePrimaryEffect
            ]
        );
        assert_eq!(r.release.vetoes[0].evidence, ["O1"]);
        let o = &r.operational;
        assert_eq!(o.held, 2);
        assert_eq!(o.unknown_age.oldest, Some(op("F4")));
        assert_eq!(o.unknown_age.median_seconds, Some((300 + 7200) / 2));
        let bars: Vec<u32> = o.unknown_age.histogram.iter().map(|b| b.count).collect();
        assert_eq!(bars, [1, 0, 1, 0, 0]);
        assert_eq!(o.amplification.physical_attempts, 6);
        assert_eq!(o.amplification.status_queries, 1);
        assert_eq!(o.amplification.per_logical, Some(1.5));
        assert_eq!(o.amplification.compound_worst_case, 6);
        assert_eq!((o.throttled.throttled, o.throttled.requests), (1, 5));
        assert_eq!(o.throttled.percent, Some(20.0));
    }
}
