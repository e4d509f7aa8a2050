//! The in-memory producer of the facts: every stored record of a `Dataset`
//! gathered per operation once, then walked to judge each operation and count the
//! operational figures.

use chrono::{DateTime, Utc};
use std::collections::{BTreeMap, BTreeSet};

use super::facts::{Facts, LayerFigure, OperationalFacts, PartialProgress, PendingProposal};
use super::operational::{is_overdue, is_throttled, unknown_since};
use super::ratio::count;
use super::repeated::{self, Groups};
use super::view::View;
use crate::core::cause;
use crate::core::contract::Contract;
use crate::core::detail::Dataset;
use crate::core::ids::OperationId;
use crate::core::model::{AttemptKind, Layer, ProposalStatus, State};

/// Every operation's view, the clock and the records behind them.
pub(super) struct Index<'a> {
    pub(super) views: BTreeMap<OperationId, View<'a>>,
    pub(super) now: DateTime<Utc>,
    dataset: &'a Dataset,
    /// The operations whose facts are wanted, when not all: the others are in
    /// the dataset as relatives whose records the rules read.
    judged: Option<BTreeSet<OperationId>>,
}

impl<'a> Index<'a> {
    pub(super) fn new(dataset: &'a Dataset, now: DateTime<Utc>) -> Self {
        let contracts: BTreeMap<&str, &Contract> = dataset
            .contracts
            .iter()
            .map(|c| (c.tool.as_str(), c))
            .collect();
        let mut keys: BTreeMap<(&str, &str), BTreeSet<&str>> = BTreeMap::new();
        for op in &dataset.operations {
            if let Some(key) = &op.idempotency_key {
                keys.entry((op.tenant.as_str(), key.as_str()))
                    .or_default()
                    .insert(op.payload_hash.as_str());
            }
        }
        let mut views: BTreeMap<OperationId, View<'a>> = dataset
            .operations
            .iter()
            .map(|op| {
                let key_conflict = op.idempotency_key.as_ref().is_some_and(|k| {
                    keys.get(&(op.tenant.as_str(), k.as_str()))
                        .is_some_and(|payloads| payloads.len() > 1)
                });
                let view = View {
                    op,
                    contract: contracts.get(op.tool.as_str()).copied(),
                    attempts: Vec::new(),
                    observations: Vec::new(),
                    items: Vec::new(),
                    audit: Vec::new(),
                    expectation: None,
                    children: Vec::new(),
                    key_conflict,
                };
                (op.id.clone(), view)
            })
            .collect();
        for a in &dataset.attempts {
            if let Some(v) = views.get_mut(&a.operation) {
                v.attempts.push(a.clone());
            }
        }
        for o in &dataset.observations {
            if let Some(v) = views.get_mut(&o.operation) {
                v.observations.push(o.clone());
            }
        }
        for i in &dataset.items {
            if let Some(v) = views.get_mut(&i.operation) {
                v.items.push(i.clone());
            }
        }
        for row in &dataset.audit {
            if let Some(v) = views.get_mut(&row.draft.operation) {
                v.audit.push(row);
            }
        }
        for e in &dataset.expectations {
            if let Some(v) = views.get_mut(&e.operation) {
                v.expectation = Some(e);
            }
        }
        for op in &dataset.operations {
            if let Some(parent) = &op.parent
                && let Some(v) = views.get_mut(parent)
            {
                v.children.push(op);
            }
        }
        for v in views.values_mut() {
            v.attempts.sort_by_key(|a| (a.started_at, a.seq));
            v.observations.sort_by_key(|o| o.observed_at);
            v.items.sort_by_key(|i| i.index);
            v.audit.sort_by_key(|r| r.seq);
        }
        Index {
            views,
            now,
            dataset,
            judged: None,
        }
    }

    /// The same index, giving facts for the `judged` operations only.
    pub(super) fn judging(mut self, judged: BTreeSet<OperationId>) -> Self {
        self.judged = Some(judged);
        self
    }

    /// Whether the facts cover `id`.
    pub(super) fn judges(&self, id: &OperationId) -> bool {
        self.judged.as_ref().is_none_or(|j| j.contains(id))
    }

    /// The views the facts cover, in id order.
    pub(super) fn judged_views(&self) -> impl Iterator<Item = &View<'a>> {
        self.views.values().filter(|v| self.judges(v.id()))
    }

    pub(super) fn view(&self, id: &OperationId) -> Option<&View<'a>> {
        self.views.get(id)
    }

    /// Every fact the report is assembled from.
    pub(super) fn facts(&self) -> Facts {
        let taints = self.taints();
        let crossings = self.cross_tenant();
        Facts {
            figures: self.figures(&taints, &crossings),
            findings: self.findings(&taints, &crossings),
            operational: self.operational_facts(),
        }
    }

    /// The operational figures' counts, by walking every record.
    fn operational_facts(&self) -> OperationalFacts {
        let by_state = State::ALL
            .iter()
            .map(|s| {
                (
                    *s,
                    count(self.judged_views().filter(|v| v.op.state == *s).count()),
                )
            })
            .filter(|(_, n)| *n > 0)
            .collect();
        let unknown_since = self
            .judged_views()
            .filter(|v| v.op.state == State::Unknown)
            .map(|v| (v.id().clone(), unknown_since(v.op, v.audit.iter().copied())))
            .collect();
        let overdue = self
            .judged_views()
            .filter(|v| is_overdue(v.op, self.now))
            .map(|v| v.id().clone())
            .collect();
        let mut layers: BTreeMap<Option<Layer>, BTreeMap<&OperationId, (u32, u32)>> =
            BTreeMap::new();
        for a in self
            .dataset
            .attempts
            .iter()
            .filter(|a| self.judges(&a.operation))
        {
            let per_op = layers.entry(a.layer).or_default();
            let (all, reqs) = per_op.entry(&a.operation).or_default();
            *all += 1;
            if a.kind == AttemptKind::Request {
                *reqs += 1;
            }
        }
        let by_layer = layers
            .into_iter()
            .map(|(layer, per_op)| LayerFigure {
                layer: layer.map_or_else(|| "unrecorded".to_owned(), |l| l.as_str().to_owned()),
                attempts: per_op.values().map(|(all, _)| all).sum(),
                requests: per_op.values().map(|(_, reqs)| reqs).sum(),
                repeats: per_op
                    .values()
                    .map(|(_, reqs)| reqs.saturating_sub(1))
                    .sum(),
                operations: count(per_op.len()),
                max_per_operation: per_op.values().map(|(_, reqs)| *reqs).max().unwrap_or(0),
            })
            .collect();
        let throttled = self
            .dataset
            .attempts
            .iter()
            .filter(|a| self.judges(&a.operation) && is_throttled(a))
            .map(|a| a.id.clone())
            .collect();
        let pending_proposals = self
            .dataset
            .proposals
            .iter()
            .filter(|p| self.judges(&p.operation) && p.status == ProposalStatus::Pending)
            .map(|p| PendingProposal {
                operation: p.operation.clone(),
                action: p.action.as_str().to_owned(),
                proposed_by: p.proposed_by.clone(),
                proposed_at: p.proposed_at,
            })
            .collect();
        let partial_in_progress = self
            .judged_views()
            .filter(|v| v.op.state == State::Partial)
            .map(|v| PartialProgress {
                operation: v.id().clone(),
                children: v
                    .children
                    .iter()
                    .filter_map(|c| c.relation.map(|r| (c.id.clone(), r, c.state)))
                    .collect(),
                waiting_for: self.waiting_for(v),
            })
            .collect();
        let repeated = self
            .judged_views()
            .filter_map(|v| {
                let op = v.op;
                let cause = cause::of_records(op, &v.attempts, v.audit.iter().copied())?;
                let key = (op.owner.clone(), cause.name().to_owned(), op.tool.clone());
                let since = cause::since(op, v.audit.iter().copied());
                Some(repeated::one(key, v.id(), since, self.now))
            })
            .collect::<Groups>()
            .into_parts();
        OperationalFacts {
            logical_operations: count(self.judged_views().count()),
            by_state,
            unknown_since,
            overdue,
            by_layer,
            throttled,
            partial_in_progress,
            pending_proposals,
            repeated,
        }
    }
}
