//! The contract check of one expectation row: the expected state, the evidence it
//! needs, reconciliation before a repeat, no duplicate effect, and none of its
//! prohibitions violated.

use super::dataset::Index;
use super::findings::{CrossTenant, Taint};
use super::prohibition::Prohibition;
use super::view::View;
use crate::core::model::{Expectation, ItemState, Relation, State};

impl Index<'_> {
    /// Violations of `prohibition` by `v`: the ids that show each.
    fn violations(
        &self,
        v: &View<'_>,
        prohibition: Prohibition,
        taints: &[Taint],
        crossings: &[CrossTenant],
    ) -> Vec<String> {
        match prohibition {
            Prohibition::RetryBeforeReconcile => v.g2_breaches(),
            Prohibition::UnsafeRetry => v
                .retry_verdicts()
                .into_iter()
                .filter(|r| !r.safe)
                .map(|r| r.attempt)
                .collect(),
            Prohibition::DuplicateEffect => v.duplicates(),
            Prohibition::ActOnToolOutput => taints
                .iter()
                .filter(|t| &t.source == v.id() || &t.dependent == v.id())
                .map(|t| format!("{} -> {}", t.attempt, t.dependent))
                .collect(),
            Prohibition::ReplayCommittedItems => self.replayed_items(v),
            Prohibition::ClaimRestoration if v.op.state == State::Compensated => {
                self.compensation_verified(v).err().into_iter().collect()
            }
            Prohibition::ClaimRestoration => Vec::new(),
            Prohibition::RelyOnExpiredKey => v
                .repeats()
                .filter(|r| {
                    let a = v.assess_before(r.started_at);
                    a.key_expired_at.is_some() && a.business_key_check.is_none()
                })
                .map(|r| r.id.clone())
                .collect(),
            Prohibition::RetryAfterKeyConflict if v.key_conflict => {
                v.repeats().map(|r| r.id.clone()).collect()
            }
            Prohibition::RetryAfterKeyConflict => Vec::new(),
            Prohibition::RetryWithoutBudget => v
                .repeats()
                .filter(|r| v.assess_before(r.started_at).budget_exhausted().is_some())
                .map(|r| r.id.clone())
                .collect(),
            Prohibition::CrossTenant => crossings
                .iter()
                .filter(|c| &c.operation == v.id())
                .map(|c| c.evidence.clone())
                .collect(),
        }
    }

    /// Items a resume covered although they had already committed.
    pub(super) fn replayed_items(&self, v: &View<'_>) -> Vec<String> {
        let overlap = |parent: &View<'_>, resume: &View<'_>| -> Vec<String> {
            resume
                .items
                .iter()
                .filter(|c| {
                    parent
                        .items
                        .iter()
                        .any(|p| p.index == c.index && p.state == ItemState::Succeeded)
                })
                .map(|c| format!("{} item {}", resume.id(), c.index))
                .collect()
        };
        let mut out: Vec<String> = v
            .children_of(Relation::ResumeOf)
            .filter_map(|c| self.view(&c.id))
            .flat_map(|resume| overlap(v, resume))
            .collect();
        if v.op.relation == Some(Relation::ResumeOf)
            && let Some(parent) = v.op.parent.as_ref().and_then(|p| self.view(p))
        {
            out.extend(overlap(parent, v));
        }
        out
    }

    /// Why `v` fails the reconcile-before-repeat rule, if it does.
    pub(super) fn reconciled_before_repeat(v: &View<'_>) -> Result<(), String> {
        let breaches = v.g2_breaches();
        if !breaches.is_empty() {
            return Err(format!(
                "repeated the write before reconciliation ({})",
                breaches.join(", ")
            ));
        }
        let Some(last) = v.ambiguous_crossings().last() else {
            return Ok(());
        };
        let since = last.last_instant();
        if v.observations.iter().any(|o| o.observed_at > since) {
            Ok(())
        } else {
            Err(format!("no observation of the target after {}", last.id))
        }
    }

    pub(super) fn contract_check(
        &self,
        v: &View<'_>,
        expectation: &Expectation,
        taints: &[Taint],
        crossings: &[CrossTenant],
    ) -> Result<(), String> {
        let mut failures = Vec::new();
        if v.op.state != expectation.expected_state {
            failures.push(format!(
                "ended {}, expected {}",
                v.op.state, expectation.expected_state
            ));
        }
        if let Err(why) = self.classification(v) {
            failures.push(format!("evidence: {why}"));
        }
        if expectation.requires_reconciliation == Some(true)
            && let Err(why) = Self::reconciled_before_repeat(v)
        {
            failures.push(why);
        }
        if expectation.duplicate_risk == Some(true) {
            let dups = v.duplicates();
            if !dups.is_empty() {
                failures.push(format!("duplicate effect ({})", dups.join(", ")));
            }
        }
        for text in &expectation.prohibited {
            match Prohibition::parse(text) {
                Some(prohibition) => {
                    let found = self.violations(v, prohibition, taints, crossings);
                    if !found.is_empty() {
                        failures.push(format!("{text} ({})", found.join(", ")));
                    }
                }
                None => failures.push(format!("prohibition {text} is not one holdfast can check")),
            }
        }
        if failures.is_empty() {
            Ok(())
        } else {
            Err(failures.join("; "))
        }
    }
}
