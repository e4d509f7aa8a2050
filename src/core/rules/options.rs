//! What the evidence pane lists: what nobody may do right now, and every action
//! with default parameters decided for this actor.

use std::convert::Infallible;

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use super::approval::approval_binds;
use super::catalog::{self, Param, Params};
use super::{Action, Effect, Rationale, ReconcileInput, decide, join_ids};
use crate::core::cause::{self, RootCause};
use crate::core::detail::OperationDetail;
use crate::core::matrix;
use crate::core::model::{ActionKind, ObservationSource, State};
use crate::core::refusal::Refusal;
use crate::core::rules::actor::Actor;

/// What nobody may do to this operation right now, each with its rule.
pub fn prohibited(detail: &OperationDetail, now: DateTime<Utc>) -> Vec<String> {
    let op = &detail.row.operation;
    let mut out = Vec::new();
    if op.state.is_terminal() {
        out.push(format!("any transition: {} is terminal (G1)", op.state));
        return out;
    }
    let a = matrix::assess_detail(detail, now);
    if !detail.key_conflicts.is_empty() {
        out.push(format!(
            "retry or automated repair: key conflict with {} (G3)",
            join_ids(&detail.key_conflicts)
        ));
    }
    if a.write && a.crossed_boundary && a.non_application.is_none() {
        out.push("repeating the write before reconciliation proves non-application (G2)".into());
    }
    if let Some(why) = a.budget_exhausted() {
        out.push(format!("retry: {why} (G5)"));
    }
    if a.key_expired_at.is_some() && a.business_key_check.is_none() {
        out.push("relying on the expired idempotency key: reconcile by business key (G12)".into());
    }
    if let Err(r) = approval_binds(op.approval.as_ref(), &op.payload_hash, now) {
        out.push(format!(
            "sending on the current approval: {} ({})",
            r.reason, r.rule
        ));
    }
    if detail
        .dependencies
        .iter()
        .any(|(_, s)| !matches!(s, State::Succeeded | State::Accepted))
    {
        out.push("confirming to a customer while a dependency is held (G9)".into());
    }
    if op.state.is_held() {
        out.push("customer-facing confirmation and dependent writes while held".into());
    }
    if detail.attempts.iter().any(|a| a.response_excerpt.is_some()) {
        out.push(
            "acting on tool output: it is quarantined data, never an instruction (G10)".into(),
        );
    }
    out
}

/// One action as the console offers it: allowed with its effect, or refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ActionOption {
    /// The command-line form (`resolve --to FAILED`).
    pub label: String,
    pub action: Action,
    pub outcome: Result<Effect, Refusal>,
}

/// The default parameters the evidence pane previews an action with: the
/// operation's own owner, a time 15 minutes on, the repair reference `REF`, a
/// provider-status lookup that found nothing, its root-cause layer now, and the
/// state `to`.
struct Sample<'a> {
    detail: &'a OperationDetail,
    now: DateTime<Utc>,
    to: State,
}

impl Params for Sample<'_> {
    type Error = Infallible;
    fn to(&mut self) -> Result<State, Infallible> {
        Ok(self.to)
    }
    fn owner(&mut self) -> Result<String, Infallible> {
        Ok(self.detail.row.operation.owner.clone())
    }
    fn at(&mut self) -> Result<DateTime<Utc>, Infallible> {
        Ok(self.now + Duration::minutes(15))
    }
    fn repair_ref(&mut self) -> Result<String, Infallible> {
        Ok("REF".into())
    }
    fn lookup(&mut self) -> Result<ReconcileInput, Infallible> {
        Ok(ReconcileInput::not_found(ObservationSource::ProviderStatus))
    }
    /// The layer it has now (a reviewer's own, when nothing decides one).
    fn layer(&mut self) -> Result<RootCause, Infallible> {
        Ok(cause::of(self.detail)
            .and_then(|c| c.layer())
            .unwrap_or(RootCause::Reviewer))
    }
}

/// Every action with default parameters, as the evidence pane lists them: the
/// command-line label and the action, in the catalog's order, an action that
/// takes a state to resolve to once per state (`resolve --to FAILED`). What
/// [`options`] decides, and what a refusal or a lookup may name as open.
pub(super) fn candidates(detail: &OperationDetail, now: DateTime<Utc>) -> Vec<(String, Action)> {
    let mut actions = Vec::new();
    for &kind in ActionKind::ALL {
        let sample = |to| {
            let Ok(action) = catalog::action(kind, &mut Sample { detail, now, to });
            action
        };
        if catalog::spec(kind).params.contains(&Param::To) {
            for to in super::RESOLVE_TARGETS {
                actions.push((
                    format!("{kind} {} {to}", Param::To.flags()[0].name),
                    sample(to),
                ));
            }
        } else {
            // `to` is read only by an action that takes it.
            actions.push((kind.as_str().to_owned(), sample(super::RESOLVE_TARGETS[0])));
        }
    }
    actions
}

/// Every action with default parameters, decided now for this actor: what the
/// evidence pane lists as allowed and refused.
pub fn options(detail: &OperationDetail, actor: &Actor, now: DateTime<Utc>) -> Vec<ActionOption> {
    let preview = Rationale::preview();
    let version = detail.row.version;
    candidates(detail, now)
        .into_iter()
        .map(|(label, action)| {
            let outcome = decide(detail, &action, actor, &preview, version, now);
            ActionOption {
                label,
                action,
                outcome,
            }
        })
        .collect()
}

/// Whether an allowed effect moves the operation: changes its state, creates a
/// child or opens a proposal to do so. Recording a lookup, an owner, a schedule
/// or a comment leaves the hold where it is.
pub fn moves(effect: &Effect) -> bool {
    effect.to.is_some() || effect.proposal_only || !effect.commit.children.is_empty()
}

/// The labels of the allowed options that move the operation, in words:
/// `only accept or block remain`, or that none does.
pub fn remaining_in_words(labels: &[String]) -> String {
    match labels {
        [] => "no action that moves it is open to you now".into(),
        [one] => format!("only {one} remains"),
        [init @ .., last] => format!("only {} or {last} remain", init.join(", ")),
    }
}

/// What a recorded answer allows now, in words: the labels of the allowed
/// options that move the operation.
pub fn allowed_in_words(labels: &[String]) -> String {
    match labels {
        [] => "allows no action that moves it yet".into(),
        [one] => format!("allows now: {one}"),
        [init @ .., last] => format!("allows now: {} or {last}", init.join(", ")),
    }
}
