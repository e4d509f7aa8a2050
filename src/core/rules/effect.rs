//! What an allowed action does: the effect previewed before anyone confirms it and
//! the commit that writes it in one transaction.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::core::audit::AuditDraft;
use crate::core::ids::OperationId;
use crate::core::model::{
    ActionKind, Attempt, Item, Observation, Operation, Proposal, ProposalStatus, State,
};

/// Everything a commit of one allowed action writes, in one transaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Commit {
    pub operation: OperationId,
    /// The version the decision was made against (G8).
    pub expected_version: i64,
    /// The new state, when the action changes it.
    pub new_state: Option<State>,
    /// New owner, for `assign`.
    pub new_owner: Option<String>,
    /// New next observation time, for `schedule`.
    pub new_next_observation_at: Option<Option<DateTime<Utc>>>,
    /// Records the action adds (a reconcile's status query and observation).
    pub attempts: Vec<Attempt>,
    pub observations: Vec<Observation>,
    /// Child operations to create, in APPROVED, linked to this one.
    pub children: Vec<Operation>,
    /// The items a child covers (a resume's uncommitted subset).
    pub child_items: Vec<Item>,
    /// A proposal to open, or the id of one to close with its new status.
    pub open_proposal: Option<Proposal>,
    pub close_proposal: Option<(i64, ProposalStatus)>,
    pub audit: AuditDraft,
}

/// An allowed action: what it will do, exactly, before anyone confirms it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Effect {
    pub action: ActionKind,
    pub from: State,
    /// The state after the commit; `None` when the state does not change.
    pub to: Option<State>,
    /// Whether this only opens a proposal that a different approver must confirm.
    pub proposal_only: bool,
    /// One line per consequence, in words, for the preview.
    pub consequences: Vec<String>,
    /// What stays prohibited after it.
    pub still_prohibited: Vec<String>,
    pub commit: Commit,
}
