//! One operation with everything stored about it, gathered once, and the questions
//! every rule asks of it: its requests and retries, how each retry was judged, its
//! duplicates, the states it entered.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::core::audit::AuditRow;
use crate::core::contract::Contract;
use crate::core::ids::OperationId;
use crate::core::matrix::{self, Assessment};
use crate::core::model::{
    Attempt, AttemptKind, Expectation, Item, Observation, Operation, Outcome, Phase, Relation,
    State,
};
use crate::core::rules;

/// A repeat of a request and how it was judged at the instant it was made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RetryVerdict {
    pub attempt: String,
    pub at: DateTime<Utc>,
    pub safe: bool,
    /// The guard that forbade it, or the matrix's decision and reason.
    pub reason: String,
}

/// One of the matrix's assessments over an operation's records at an instant.
type Assess = fn(
    &Operation,
    Option<&Contract>,
    &[Attempt],
    &[Observation],
    &[Item],
    bool,
    DateTime<Utc>,
) -> Assessment;

/// Everything stored about one operation, gathered once.
pub(super) struct View<'a> {
    pub(super) op: &'a Operation,
    pub(super) contract: Option<&'a Contract>,
    /// In (`started_at`, `seq`) order.
    pub(super) attempts: Vec<Attempt>,
    /// In `observed_at` order.
    pub(super) observations: Vec<Observation>,
    /// In `index` order.
    pub(super) items: Vec<Item>,
    /// In `seq` order.
    pub(super) audit: Vec<&'a AuditRow>,
    pub(super) expectation: Option<&'a Expectation>,
    pub(super) children: Vec<&'a Operation>,
    pub(super) key_conflict: bool,
}

impl View<'_> {
    pub(super) fn id(&self) -> &OperationId {
        &self.op.id
    }

    pub(super) fn write(&self) -> bool {
        self.contract.is_none_or(Contract::is_write)
    }

    pub(super) fn requests(&self) -> impl Iterator<Item = &Attempt> {
        self.attempts
            .iter()
            .filter(|a| a.kind == AttemptKind::Request)
    }

    /// Requests after the first that left the client: the retries.
    pub(super) fn repeats(&self) -> impl Iterator<Item = &Attempt> {
        self.requests()
            .skip(1)
            .filter(|a| a.phase != Phase::NotSent)
    }

    /// The matrix's assessment just before `at` (what a retry made at `at` saw).
    pub(super) fn assess_before(&self, at: DateTime<Utc>) -> Assessment {
        self.assess_with(matrix::assess_before, at)
    }

    /// The matrix's assessment at `at`.
    pub(super) fn assess_at(&self, at: DateTime<Utc>) -> Assessment {
        self.assess_with(matrix::assess, at)
    }

    fn assess_with(&self, assess: Assess, at: DateTime<Utc>) -> Assessment {
        assess(
            self.op,
            self.contract,
            &self.attempts,
            &self.observations,
            &self.items,
            self.key_conflict,
            at,
        )
    }

    /// Requests that may have reached the provider with their outcome unknown.
    pub(super) fn ambiguous_crossings(&self) -> impl Iterator<Item = &Attempt> {
        self.requests()
            .filter(|a| a.phase.may_have_crossed_boundary() && matrix::ambiguous(a.outcome))
    }

    /// Requests that may have applied the effect: past the boundary and not refused.
    pub(super) fn effective_deliveries(&self) -> usize {
        self.requests()
            .filter(|a| {
                a.phase.may_have_crossed_boundary()
                    && (a.outcome == Outcome::Ok || matrix::ambiguous(a.outcome))
            })
            .count()
    }

    /// Each retry with its verdict, judged as it stood just before it was made.
    pub(super) fn retry_verdicts(&self) -> Vec<RetryVerdict> {
        self.repeats()
            .map(|r| {
                let at = r.started_at;
                let a = self.assess_before(at);
                let refusal = if self.key_conflict {
                    Some("G3: the idempotency key is used with another payload".to_owned())
                } else if let Some(why) = a.budget_exhausted() {
                    Some(format!("G5: {why}"))
                } else if a.write && a.crossed_boundary && a.non_application.is_none() {
                    Some(
                        "G2: the last request may have applied and nothing proved it had not"
                            .to_owned(),
                    )
                } else if a.key_expired_at.is_some() && a.business_key_check.is_none() {
                    Some(
                        "G12: the idempotency key had expired and no business-key check was made"
                            .to_owned(),
                    )
                } else if let Err(r) =
                    rules::approval_binds(self.op.approval.as_ref(), &self.op.payload_hash, at)
                {
                    Some(format!("{}: {}", r.rule, r.reason))
                } else if !a.recommendation.decision.permits_retry_at(at) {
                    Some(format!(
                        "the matrix said {}: {}",
                        a.recommendation.decision, a.recommendation.reason
                    ))
                } else {
                    None
                };
                RetryVerdict {
                    attempt: r.id.clone(),
                    at,
                    safe: refusal.is_none(),
                    reason: refusal.unwrap_or_else(|| {
                        format!(
                            "the matrix said {}: {}",
                            a.recommendation.decision, a.recommendation.reason
                        )
                    }),
                }
            })
            .collect()
    }

    /// Repeats made while G2 forbade them.
    pub(super) fn g2_breaches(&self) -> Vec<String> {
        self.repeats()
            .filter(|r| {
                let a = self.assess_before(r.started_at);
                a.write && a.crossed_boundary && a.non_application.is_none()
            })
            .map(|r| r.id.clone())
            .collect()
    }

    /// Observations showing the effect more than once.
    pub(super) fn duplicates(&self) -> Vec<String> {
        self.observations
            .iter()
            .filter(|o| o.effect_count.is_some_and(|n| n > 1))
            .map(|o| o.id.clone())
            .collect()
    }

    /// Whether the operation was ever in `state` (an audit row into it, or now).
    pub(super) fn entered(&self, state: State) -> bool {
        self.op.state == state || self.audit.iter().any(|r| r.draft.to == Some(state))
    }

    /// The newest audit row that moved the operation into `state`.
    pub(super) fn last_entry(&self, state: State) -> Option<&AuditRow> {
        self.audit
            .iter()
            .rev()
            .find(|r| r.draft.to == Some(state))
            .copied()
    }

    pub(super) fn children_of(&self, relation: Relation) -> impl Iterator<Item = &Operation> {
        self.children
            .iter()
            .filter(move |c| c.relation == Some(relation))
            .copied()
    }
}
