//! The effect under construction: the plan every action fills, the guards the
//! per-action plans share, and how a finished plan becomes an [`Effect`].

mod lookup;
mod manage;
mod proposal;
mod repair;
mod resolve;
mod settle;

pub use self::resolve::{RESOLVE_TARGETS, resolve_target};

use chrono::{DateTime, Utc};

use super::transitions::transition_makers;
use super::{
    Action, ActionKind, Actor, Asked, Commit, Effect, MadeBy, Rationale, join_ids, plan_with,
    prohibited,
};
use crate::core::audit::AuditDraft;
use crate::core::detail::OperationDetail;
use crate::core::ids::OperationId;
use crate::core::matrix::{self, Assessment};
use crate::core::model::{
    Attempt, Item, Observation, Operation, Proposal, ProposalStatus, Role, State,
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
    /// Asked only whether the action is allowed: reasons are not worded.
    quiet: bool,
    /// The state a `resolve` asks for: the other targets stay open to name.
    resolving: Option<State>,
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
        asked: Asked,
    ) -> Self {
        Plan {
            detail,
            actor,
            role,
            rationale,
            now,
            kind,
            confirming: asked.confirming,
            quiet: asked.quiet,
            resolving: None,
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
            Action::Resolve { to } => {
                self.resolving = Some(*to);
                self.resolve(*to)
            }
            Action::AuthorizeRetry => self.proposable(Plan::authorize_retry),
            Action::ApproveCompensation => self.proposable(Plan::approve_compensation),
            Action::ApproveResume => self.proposable(Plan::approve_resume),
            Action::MarkCompensated => self.mark_compensated(),
            Action::MarkResumed => self.mark_resumed(),
            Action::Revalidate => self.revalidate(),
            Action::Approve => self.proposable(Plan::approve),
            Action::Accept { repair_ref } => self.accept(repair_ref),
            Action::Block => self.block(),
            Action::Assign { owner } => self.assign(owner),
            Action::Schedule { at } => self.schedule(*at),
            Action::Comment => self.comment(),
            Action::Classify { layer } => self.classify(*layer),
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

    /// Whether this actor may take `action` now: what a refusal may point to.
    fn allows(&self, action: &Action) -> bool {
        quietly(self.detail, action, self.actor, self.rationale, self.now).is_some()
    }

    /// What is left once a retry or repair is refused: the options that move
    /// the operation and that this actor may take now, in words. A refusal
    /// names exactly the actions [`super::options`] allows.
    fn remaining(&self) -> String {
        if self.quiet {
            return String::new();
        }
        let refused = |action: &Action| match action {
            Action::Resolve { to } => self.resolving == Some(*to),
            other => other.kind() == self.kind,
        };
        super::remaining_in_words(&moves_open(
            self.detail,
            self.actor,
            self.rationale,
            self.now,
            &refused,
        ))
    }

    /// The hold as it will be once this plan commits: its state, records,
    /// schedule and owner.
    fn detail_after(&self) -> OperationDetail {
        let extra = &self.commit_extra;
        let mut after = self.detail.clone();
        if let Some(to) = self.to {
            after.row.operation.state = to;
        }
        if let Some(next) = extra.new_next_observation_at {
            after.row.operation.next_observation_at = next;
        }
        if let Some(owner) = &extra.new_owner {
            after.row.operation.owner.clone_from(owner);
        }
        after.attempts.extend(extra.attempts.iter().cloned());
        after
            .observations
            .extend(extra.observations.iter().cloned());
        after
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
        let still_prohibited = prohibited(&self.detail_after(), self.now);
        let extra = self.commit_extra;
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

/// The plan of `action` when this actor may take it now, asked quietly.
fn quietly<'a>(
    detail: &'a OperationDetail,
    action: &Action,
    actor: &'a Actor,
    rationale: &'a Rationale,
    now: DateTime<Utc>,
) -> Option<Plan<'a>> {
    let asked = Asked {
        confirming: false,
        quiet: true,
    };
    plan_with(
        detail,
        action,
        actor,
        rationale,
        detail.row.version,
        now,
        asked,
    )
    .ok()
}

/// The labels of the options ([`super::options::candidates`]) that move the
/// hold in `detail` — change its state, create a child or open a proposal —
/// and that `actor` may take now, leaving out those `except` names.
fn moves_open(
    detail: &OperationDetail,
    actor: &Actor,
    rationale: &Rationale,
    now: DateTime<Utc>,
    except: &dyn Fn(&Action) -> bool,
) -> Vec<String> {
    super::options::candidates(detail, now)
        .into_iter()
        .filter(|(_, action)| !except(action))
        .filter(|(_, action)| {
            quietly(detail, action, actor, rationale, now).is_some_and(|plan| plan.moves())
        })
        .map(|(label, _)| label)
        .collect()
}

impl Plan<'_> {
    /// Whether the planned effect moves the operation (see [`super::moves`]).
    fn moves(&self) -> bool {
        self.to.is_some() || self.proposal_only || !self.commit_extra.children.is_empty()
    }
}
