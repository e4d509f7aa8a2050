//! The report over a store read page by page: each page's facts, for the
//! operations of that page only, are folded into counts as they come, and every
//! list of ids keeps its first [`LISTED`] entries beside the count it stands for.
//! The rules are the in-memory producer's, applied to one page's operations with
//! their relatives' records, so the figures are the ones [`super::report`] gives
//! over the whole dataset; only the listings are cut.

use chrono::{DateTime, Utc};
use std::collections::{BTreeMap, BTreeSet};

use super::dataset::Index;
use super::facts::{
    Facts, LayerFigure, MetricId, OperationalFacts, PartialProgress, PendingProposal, Verdict,
};
use super::ratio::{count, percent};
use super::release::{self, Disposition, Release, Veto};
use super::repeated::Groups;
use super::result::{Metric, Report};
use crate::core::detail::Dataset;
use crate::core::ids::OperationId;
use crate::core::model::{Layer, State};

/// How many ids, vetoes or rows a list of the report keeps at most.
pub const LISTED: usize = 100;

/// The facts of the `judged` operations of `dataset`, which also holds the
/// records of their relatives, at `now`.
pub fn page_facts(dataset: &Dataset, judged: BTreeSet<OperationId>, now: DateTime<Utc>) -> Facts {
    Index::new(dataset, now).judging(judged).facts()
}

/// A list cut to its first [`LISTED`] entries, with how many there were.
#[derive(Debug)]
pub(super) struct Listing<T> {
    pub(super) first: Vec<T>,
    pub(super) total: u32,
}

impl<T> Default for Listing<T> {
    fn default() -> Self {
        Listing {
            first: Vec::new(),
            total: 0,
        }
    }
}

impl<T> Listing<T> {
    fn push(&mut self, item: T) {
        self.total = self.total.saturating_add(1);
        if self.first.len() < LISTED {
            self.first.push(item);
        }
    }

    fn extend(&mut self, items: impl IntoIterator<Item = T>) {
        for item in items {
            self.push(item);
        }
    }

    fn cut(&self) -> bool {
        usize::try_from(self.total).unwrap_or(usize::MAX) > self.first.len()
    }

    /// The total when the list was cut.
    fn total_if_cut(&self) -> Option<u32> {
        self.cut().then_some(self.total)
    }
}

/// One figure's counts and the first ids of each list.
#[derive(Debug, Default)]
pub(super) struct FigureTally {
    pub(super) numerator: Listing<OperationId>,
    pub(super) denominator: Listing<OperationId>,
    pub(super) unverified: Listing<OperationId>,
    pub(super) shortfalls: Listing<(OperationId, String)>,
}

/// The report's facts folded page by page.
#[derive(Debug, Default)]
pub struct Tally {
    figures: BTreeMap<MetricId, FigureTally>,
    pub(super) vetoes: Listing<Veto>,
    pub(super) logical_operations: u32,
    pub(super) by_state: BTreeMap<State, u32>,
    pub(super) unknown_since: Vec<(OperationId, DateTime<Utc>)>,
    pub(super) overdue: Listing<OperationId>,
    pub(super) by_layer: BTreeMap<Option<Layer>, LayerFigure>,
    pub(super) throttled: Listing<String>,
    pub(super) partial_in_progress: Listing<PartialProgress>,
    pub(super) pending_proposals: Listing<PendingProposal>,
    pub(super) repeated: Groups,
}

impl Tally {
    /// The tally of figure `id`.
    pub(super) fn figure(&mut self, id: MetricId) -> &mut FigureTally {
        self.figures.entry(id).or_default()
    }

    /// Folds in the facts of one page; pages come in operation id order and
    /// name each operation once.
    pub fn add(&mut self, facts: Facts) {
        for figure in facts.figures {
            let tally = self.figures.entry(figure.id).or_default();
            for (op, verdict) in figure.rows {
                tally.denominator.push(op.clone());
                match verdict {
                    Verdict::Counted => tally.numerator.push(op),
                    Verdict::Short(why) => tally.shortfalls.push((op, why)),
                    Verdict::Unverified(why) => {
                        tally.unverified.push(op.clone());
                        tally.shortfalls.push((op, why));
                    }
                }
            }
        }
        self.vetoes.extend(release::vetoes(facts.findings));
        self.add_operational(facts.operational);
    }

    fn add_operational(&mut self, o: OperationalFacts) {
        self.logical_operations = self.logical_operations.saturating_add(o.logical_operations);
        for (state, n) in o.by_state {
            *self.by_state.entry(state).or_default() += n;
        }
        self.unknown_since.extend(o.unknown_since);
        self.overdue.extend(o.overdue);
        for layer in o.by_layer {
            let key = Layer::parse(&layer.layer);
            let sum = self.by_layer.entry(key).or_insert_with(|| LayerFigure {
                layer: layer.layer.clone(),
                attempts: 0,
                requests: 0,
                repeats: 0,
                operations: 0,
                max_per_operation: 0,
            });
            sum.attempts += layer.attempts;
            sum.requests += layer.requests;
            sum.repeats += layer.repeats;
            sum.operations += layer.operations;
            sum.max_per_operation = sum.max_per_operation.max(layer.max_per_operation);
        }
        self.throttled.extend(o.throttled);
        self.partial_in_progress.extend(o.partial_in_progress);
        self.pending_proposals.extend(o.pending_proposals);
        for part in o.repeated {
            self.repeated.add(part);
        }
    }

    /// The report at `now`: the figures from the counts, the lists cut.
    pub fn finish(self, now: DateTime<Utc>) -> Report {
        let mut figures = self.figures;
        let metrics: Vec<Metric> = MetricId::ALL
            .iter()
            .map(|id| {
                let t = figures.remove(id).unwrap_or_default();
                let cut = t.numerator.cut()
                    || t.denominator.cut()
                    || t.unverified.cut()
                    || t.shortfalls.cut();
                Metric {
                    id: *id,
                    numerator: t.numerator.total,
                    denominator: t.denominator.total,
                    percent: percent(t.numerator.total, t.denominator.total),
                    numerator_ids: t.numerator.first,
                    denominator_ids: t.denominator.first,
                    unverified_ids: t.unverified.first,
                    shortfalls: t.shortfalls.first,
                    listed_at_most: cut.then_some(count(LISTED)),
                }
            })
            .collect();
        let evaluated = super::evaluated(&metrics);
        let release = Release {
            disposition: Disposition::decide(self.vetoes.total, evaluated),
            vetoes_total: self.vetoes.total_if_cut(),
            vetoes: self.vetoes.first,
        };
        let throttled_total = self.throttled.total;
        let overdue_total = self.overdue.total_if_cut();
        let partial_total = self.partial_in_progress.total_if_cut();
        let pending_total = self.pending_proposals.total_if_cut();
        let facts = OperationalFacts {
            logical_operations: self.logical_operations,
            by_state: self.by_state.into_iter().filter(|(_, n)| *n > 0).collect(),
            unknown_since: self.unknown_since,
            overdue: self.overdue.first,
            by_layer: self.by_layer.into_values().collect(),
            throttled: self.throttled.first,
            partial_in_progress: self.partial_in_progress.first,
            pending_proposals: self.pending_proposals.first,
            repeated: Vec::new(),
        };
        let mut operational = super::operational::assemble(facts, now);
        operational.throttled.throttled = throttled_total;
        operational.throttled.percent = percent(throttled_total, operational.throttled.requests);
        operational.unknown_age.overdue_total = overdue_total;
        operational.partial_total = partial_total;
        operational.pending_total = pending_total;
        operational.repeated = self.repeated.finish(Some(LISTED));
        Report {
            now,
            metrics,
            release,
            operational,
        }
    }
}
