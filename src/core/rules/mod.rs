//! The one decision function every reviewer action passes: the console's dialog,
//! the command line and bulk triage all ask [`decide`], which answers "allowed, with
//! this exact effect" or "refused: rule Gn, because …".

mod action;
pub mod actor;
mod approval;
pub mod catalog;
mod effect;
pub mod moves;
mod options;
mod plan;
mod races;
mod transitions;

use chrono::{DateTime, Utc};

pub use self::action::{Action, FoundField, Rationale, ReconcileInput};
pub use self::actor::{Actor, permits};
pub use self::approval::approval_binds;
pub use self::effect::{Commit, Effect};
pub use self::options::{
    ActionOption, allowed_in_words, moves, options, prohibited, remaining_in_words,
};
pub use self::plan::{RESOLVE_TARGETS, resolve_target};
pub use self::races::may_overtake;
pub use self::transitions::{MadeBy, transition_allowed, transition_makers};
pub use crate::core::model::ActionKind;
pub use crate::core::refusal::{Refusal, Rule};

use crate::core::detail::OperationDetail;
use crate::core::ids::OperationId;
use crate::core::refusal::refuse;
use plan::Plan;

/// Decides one action on one operation at `now`. The same function runs for the
/// preview and again at commit time; the store then re-checks the version (G8).
pub fn decide(
    detail: &OperationDetail,
    action: &Action,
    actor: &Actor,
    rationale: &Rationale,
    expected_version: i64,
    now: DateTime<Utc>,
) -> Result<Effect, Refusal> {
    decide_with(
        detail,
        action,
        actor,
        rationale,
        expected_version,
        now,
        false,
    )
}

/// [`decide`], or, with `confirming`, the proposed action applied for the second
/// approver who confirms it.
fn decide_with(
    detail: &OperationDetail,
    action: &Action,
    actor: &Actor,
    rationale: &Rationale,
    expected_version: i64,
    now: DateTime<Utc>,
    confirming: bool,
) -> Result<Effect, Refusal> {
    let asked = Asked {
        confirming,
        quiet: false,
    };
    plan_with(
        detail,
        action,
        actor,
        rationale,
        expected_version,
        now,
        asked,
    )
    .map(|plan| plan.finish(expected_version))
}

/// How a plan is asked for: `confirming` applies a proposed action for its
/// second approver; `quiet` asks only whether the action is allowed, so a
/// refusal's reason is not worded (it would ask every other action again).
#[derive(Debug, Clone, Copy)]
struct Asked {
    confirming: bool,
    quiet: bool,
}

/// The plan of `action`, every guard checked, before it becomes an effect.
fn plan_with<'a>(
    detail: &'a OperationDetail,
    action: &Action,
    actor: &'a Actor,
    rationale: &'a Rationale,
    expected_version: i64,
    now: DateTime<Utc>,
    asked: Asked,
) -> Result<Plan<'a>, Refusal> {
    // What a reviewer typed is redacted before it can reach an effect, exactly as
    // ingest redacts a record: whatever door the action came through.
    let action = &action.redacted();
    let op = &detail.row.operation;
    let kind = action.kind();
    if !actor.sees(&op.tenant) {
        return refuse(
            Rule::G7,
            format!(
                "{} holds no grant for tenant {}; ask an owner of {} for one",
                actor.name(),
                op.tenant,
                op.tenant
            ),
        );
    }
    if expected_version != detail.row.version {
        return refuse(
            Rule::G8,
            format!(
                "{} changed since it was loaded (version {} → {}); reload and decide again",
                op.id, expected_version, detail.row.version
            ),
        );
    }
    let role = actor.role_for(&op.tenant, kind)?;
    domain_review(detail, actor, kind)?;
    if crate::core::ladder::is_agent(actor.principal()) && !asked.confirming {
        use crate::core::model::ActionKind::{ApproveCompensation, ApproveResume, AuthorizeRetry};
        if !matches!(kind, AuthorizeRetry | ApproveCompensation | ApproveResume) {
            return refuse(
                Rule::A4,
                format!(
                    "{} is an agent identity: agents only open proposals (authorize-retry, approve-compensation, approve-resume) for a person to confirm",
                    actor.principal()
                ),
            );
        }
        crate::core::ladder::require(
            &op.tool,
            detail.autonomy,
            crate::core::ladder::Capability::AgentProposal,
        )?;
    }
    // A comment relies on no state; a failed operation's root cause is still
    // classified.
    let still_taken = kind == ActionKind::Comment
        || (kind == ActionKind::Classify && crate::core::cause::applies(op.state));
    if op.state.is_terminal() && !still_taken {
        return refuse(
            Rule::G1,
            format!(
                "{} is {}, a terminal state: nothing moves it any more",
                op.id, op.state
            ),
        );
    }
    let mut plan = Plan::new(detail, actor, role, rationale, kind, now, asked);
    plan.apply(action, expected_version)?;
    Ok(plan)
}

/// G13: a recovery action ([`catalog::RECOVERY`]) on a hold of a tool whose
/// contract names a `domain_review` needs the actor to hold that domain's
/// grant on the tenant as well as the role that takes the action. The local
/// user of a store without grants holds every role, so it is never refused.
fn domain_review(detail: &OperationDetail, actor: &Actor, kind: ActionKind) -> Result<(), Refusal> {
    let op = &detail.row.operation;
    let Some(domain) = detail.contract.as_ref().and_then(|c| c.domain_review) else {
        return Ok(());
    };
    let grant = domain.grant();
    if !catalog::RECOVERY.contains(&kind) || actor.holds(&op.tenant, grant) {
        return Ok(());
    }
    refuse(
        Rule::G13,
        format!(
            "{kind} is recovery on a hold of {}, whose contract asks {domain} review: {} holds no {grant} grant on tenant {}; an owner of {} grants it with `holdfast grant {} --role {grant} --tenant {}`",
            op.tool,
            actor.name(),
            op.tenant,
            op.tenant,
            actor.principal(),
            op.tenant
        ),
    )
}

/// Operation ids as a comma-separated list, for reasons.
fn join_ids(ids: &[OperationId]) -> String {
    ids.iter()
        .map(|i| i.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
