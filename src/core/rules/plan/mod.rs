//! The effect under construction: the plan every action fills, the guards the
//! per-action plans share, and how a finished plan becomes an [`Effect`].

mod manage;
mod proposal;
mod repair;
mod resolve;
mod settle;

pub use self::resolve::{RESOLVE_TARGETS, resolve_target};

use chrono::{DateTime, Utc};

use super::transitions::transition_makers;
use super::{
    Action, ActionKind, Actor, Commit, Effect, MadeBy, Rationale, decide_with, join_ids, prohibited,
};
use crate::core::audit::AuditDraft;
use crate::core::ids::OperationId;
use crate::core::matrix::{self, Assessment};
use crate::core::model::{
    Attempt, Item, Observation, Operation, OperationDetail, Proposal, ProposalStatus, Role, State,
};
use crate::core::refusal::{Refusal, Rule, refuse};

/// The effect under construction.
pub(super) struct Plan<'a> {
    detail: &'a OperationDetail,
    actor: &'a Actor,
    /// The role the actor takes this action under.
    role: Role,
    rationale: &'a Rationale,
    now: DateTime<Utc>,
    kind: ActionKind,
    /// Applying a confirmed proposal: no second proposal is opened.
    confirming: bool,
    to: Option<State>,
    proposal_only: bool,
    consequences: Vec<String>,
    evidence: Vec<String>,
    commit_extra: CommitExtra,
}

/// What a plan writes besides the state change and the audit row.
#[derive(Default)]
struct CommitExtra {
    new_owner: Option<String>,
    new_next_observation_at: Option<Option<DateTime<Utc>>>,
    attempts: Vec<Attempt>,
    observations: Vec<Observation>,
    children: Vec<Operation>,
    child_items: Vec<Item>,
    open_proposal: Option<Proposal>,
    close_proposal: Option<(i64, ProposalStatus)>,
}

impl<'a> Plan<'a> {
    pub(super) fn new(
        detail: &'a OperationDetail,
        actor: &'a Actor,
        role: Role,
        rationale: &'a Rationale,
        kind: ActionKind,
        now: DateTime<Utc>,
        confirming: bool,
    ) -> Self {
        Plan {
            detail,
            actor,
            role,
            rationale,
            now,
            kind,
            confirming,
            to: None,
            proposal_only: false,
            consequences: Vec::new(),
            evidence: Vec::new(),
            commit_extra: CommitExtra::default(),
        }
    }

    /// Fills the plan for `action`: each action's own guards and consequences.
    pub(super) fn apply(&mut self, action: &Action, expected_version: i64) -> Result<(), Refusal> {
        match action {
            Action::Reconcile(input) => self.reconcile(input),
            Action::Lookup(input) => self.lookup(input),
            Action::Resolve { to } => self.resolve(*to),
            Action::AuthorizeRetry => self.proposable(Plan::authorize_retry),
            Action::ApproveCompensation => self.proposable(Plan::approve_compensation),
            Action::ApproveResume => self.proposable(Plan::approve_resume),
            Action::MarkCompensated => self.mark_compensated(),
            Action::MarkResumed => self.mark_resumed(),
            Action::Revalidate => self.revalidate(),
            Action::Accept { repair_ref } => self.accept(repair_ref),
            Action::Block => self.block(),
            Action::Assign { owner } => self.assign(owner),
            Action::Schedule { at } => self.schedule(*at),
            Action::Comment => self.comment(),
            Action::Confirm => self.confirm(expected_version),
            Action::Reject => self.reject(),
        }
    }

    fn op(&self) -> &'a Operation {
        &self.detail.row.operation
    }

    fn assess(&self) -> Assessment {
        matrix::assess_detail(self.detail, self.now)
    }

    /// Moves to `to`, checking the table for the maker this actor acts as.
    fn transition(&mut self, to: State, maker: MadeBy) -> Result<(), Refusal> {
        let from = self.op().state;
        match transition_makers(from, to) {
            Some(makers) if makers.contains(&maker) => {
                self.to = Some(to);
                self.consequences.push(format!("state {from} → {to}"));
                Ok(())
            }
            _ => refuse(
                Rule::G1,
                format!("the transition {from} → {to} is not in the table"),
            ),
        }
    }

    fn no_key_conflict(&self, what: &str) -> Result<(), Refusal> {
        if self.detail.key_conflicts.is_empty() {
            return Ok(());
        }
        refuse(
            Rule::G3,
            format!(
                "idempotency key {} is also used by {} with a different payload: no {what}; {}",
                self.op().idempotency_key.as_deref().unwrap_or("-"),
                join_ids(&self.detail.key_conflicts),
                self.remaining()
            ),
        )
    }

    /// Whether [`decide_with`] allows `action` to this actor now: what a refusal
    /// may point to.
    fn allows(&self, action: &Action) -> bool {
        decide_with(
            self.detail,
            action,
            self.actor,
            self.rationale,
            self.detail.row.version,
            self.now,
            false,
        )
        .is_ok()
    }

    /// What is left once a retry or repair is refused: of accept, resolve to
    /// FAILED and block, those [`decide_with`] allows this actor now, in words.
    /// A refusal names only actions that would be allowed.
    fn remaining(&self) -> String {
        let candidates = [
            (
                "accept",
                Action::Accept {
                    repair_ref: "REF".into(),
                },
            ),
            ("resolve --to FAILED", Action::Resolve { to: State::Failed }),
            ("block", Action::Block),
        ];
        let allowed: Vec<&str> = candidates
            .iter()
            .filter(|(_, action)| self.allows(action))
            .map(|(label, _)| *label)
            .collect();
        match allowed.as_slice() {
            [] => "nothing else is open to you now".into(),
            [one] => format!("only {one} remains"),
            [init @ .., last] => format!("only {} or {last} remain", init.join(", ")),
        }
    }

    /// The guard every repair and revalidation starts with: the operation is in
    /// `from` (G1; `otherwise` says in words why not) and no other payload shares
    /// its idempotency key (G3; `what` names what that rules out).
    fn starts_from(
        &self,
        from: State,
        otherwise: impl FnOnce(&Operation) -> String,
        what: &str,
    ) -> Result<&'a Operation, Refusal> {
        let op = self.op();
        if op.state != from {
            return refuse(Rule::G1, otherwise(op));
        }
        self.no_key_conflict(what)?;
        Ok(op)
    }

    fn dependencies_settled(&self) -> Result<(), Refusal> {
        let held: Vec<&OperationId> = self
            .detail
            .dependencies
            .iter()
            .filter(|(_, s)| !matches!(s, State::Succeeded | State::Accepted))
            .map(|(id, _)| id)
            .collect();
        if held.is_empty() {
            return Ok(());
        }
        let names: Vec<String> = held.iter().map(|id| id.to_string()).collect();
        refuse(
            Rule::G9,
            format!(
                "depends on {} which has not succeeded: it cannot be confirmed yet",
                names.join(", ")
            ),
        )
    }

    pub(super) fn finish(self, expected_version: i64) -> Effect {
        let op = self.op();
        let extra = self.commit_extra;
        let still_prohibited = {
            let mut after = self.detail.clone();
            if let Some(to) = self.to {
                after.row.operation.state = to;
            }
            after.attempts.extend(extra.attempts.iter().cloned());
            after
                .observations
                .extend(extra.observations.iter().cloned());
            prohibited(&after, self.now)
        };
        let audit = AuditDraft {
            operation: op.id.clone(),
            action: self.kind.as_str().to_owned(),
            from: Some(op.state),
            to: self.to,
            by: self.actor.identity.clone(),
            role: self.role,
            policy: self.actor.policy.clone(),
            on_behalf_of: self.actor.on_behalf_of.clone(),
            rationale: Some(self.rationale.as_str().to_owned()),
            evidence: self.evidence,
            at: self.now,
        };
        Effect {
            action: self.kind,
            from: op.state,
            to: self.to,
            proposal_only: self.proposal_only,
            consequences: self.consequences,
            still_prohibited,
            commit: Commit {
                operation: op.id.clone(),
                expected_version,
                new_state: self.to,
                new_owner: extra.new_owner,
                new_next_observation_at: extra.new_next_observation_at,
                attempts: extra.attempts,
                observations: extra.observations,
                children: extra.children,
                child_items: extra.child_items,
                open_proposal: extra.open_proposal,
                close_proposal: extra.close_proposal,
                audit,
            },
        }
    }
}
