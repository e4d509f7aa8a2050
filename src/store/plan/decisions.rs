//! Ingested reviewer decisions: a transition a file reports out of a held state
//! into SUCCEEDED, FAILED, ACCEPTED or COMPENSATED is the decision a reviewer makes
//! with `review`, so it passes the same decision function ([`decide`]) on what the
//! store and the batch hold at that instant, or is refused with the rule. That
//! holds for an operation the store already holds and for one the same file
//! creates ([`created_detail`]): a file cannot create a hold and decide it past
//! the rules in one go.

use crate::core::autonomy::Level;
use crate::core::ids::OperationId;
use crate::core::model::{
    AttemptKind, ChildLink, Contract, Item, Operation, OperationDetail, OperationRow, State,
    TransitionRecord,
};
use crate::core::rules::{Action, Actor, Rationale, decide};
use crate::wire::{LineError, Record};

use super::ingest::Staged;

/// The `review` action that makes `from → to`, when it is a reviewer decision.
pub fn action_for(t: &TransitionRecord) -> Option<Action> {
    if !t.from.is_held() {
        return None;
    }
    match t.to {
        State::Succeeded if t.from == State::Partial => Some(Action::MarkResumed),
        State::Succeeded | State::Failed => Some(Action::Resolve { to: t.to }),
        State::Compensated => Some(Action::MarkCompensated),
        State::Accepted => Some(Action::Accept {
            repair_ref: t.reason.clone().unwrap_or_default(),
        }),
        _ => None,
    }
}

/// The rationale a reported decision is judged with: its reason, or words that
/// say it came from the source without one.
fn rationale(t: &TransitionRecord) -> Rationale {
    t.reason
        .as_deref()
        .and_then(|r| Rationale::parse(r).ok())
        .or_else(|| Rationale::parse("reported by the source without a reason").ok())
        .unwrap_or_else(|| unreachable!("the fixed rationale is long enough"))
}

/// What the store will know of an operation the batch creates, besides its own
/// record and those the batch adds with it.
pub struct Surroundings {
    pub contract: Option<Contract>,
    /// The autonomy level of its tool.
    pub autonomy: Level,
    /// The states of the operations it depends on.
    pub dependencies: Vec<(OperationId, State)>,
    /// Other operations under its idempotency key with another payload (G3).
    pub key_conflicts: Vec<OperationId>,
}

/// The linked children of `parent` that `staged` creates, each with its declared
/// state and its items.
pub fn staged_children(parent: &OperationId, staged: &[Staged]) -> Vec<ChildLink> {
    staged
        .iter()
        .filter_map(|s| match &s.record {
            Record::Operation(o) if o.parent.as_ref() == Some(parent) => {
                let relation = o.relation?;
                let mut items: Vec<Item> = staged
                    .iter()
                    .filter_map(|s| match &s.record {
                        Record::Item(i) if i.operation == o.id => Some(i.clone()),
                        _ => None,
                    })
                    .collect();
                items.sort_by_key(|i| i.index);
                Some(ChildLink {
                    id: o.id.clone(),
                    relation,
                    state: o.state,
                    items,
                })
            }
            _ => None,
        })
        .collect()
}

/// The detail of `op`, which the batch `staged` creates, as the store will hold it
/// once created: its own record, its children in the batch and what `around`
/// says. [`judge`] adds the batch's attempts, observations, items and expectation.
pub fn created_detail(op: &Operation, staged: &[Staged], around: Surroundings) -> OperationDetail {
    let Surroundings {
        contract,
        autonomy,
        dependencies,
        key_conflicts,
    } = around;
    OperationDetail {
        row: OperationRow {
            operation: op.clone(),
            version: 1,
            attempts_used: 0,
            max_attempts: op
                .max_attempts
                .or_else(|| contract.as_ref().map(|c| c.max_attempts)),
            state_since: op.created_at,
            held_dependencies: dependencies
                .iter()
                .filter(|(_, state)| state.is_held())
                .map(|(id, _)| id.clone())
                .collect(),
            pending_proposal: false,
        },
        contract,
        attempts: Vec::new(),
        items: Vec::new(),
        observations: Vec::new(),
        audit: Vec::new(),
        expectation: None,
        children: staged_children(&op.id, staged),
        dependencies,
        proposals: Vec::new(),
        key_conflicts,
        autonomy,
        redactions: Vec::new(),
        lookup_unchecked: None,
    }
}

/// Judges the decision `t` (line `line`) on `detail`, the operation as stored,
/// with the batch's records of it that come before the line added. On success
/// the detail moves to `t.to`, for a later decision of the same batch.
pub fn judge(
    detail: &mut OperationDetail,
    staged: &[Staged],
    t: &TransitionRecord,
    line: usize,
) -> Result<(), LineError> {
    let Some(action) = action_for(t) else {
        return Ok(());
    };
    let id = t.operation.as_str();
    for s in staged.iter().filter(|s| s.line < line) {
        match &s.record {
            Record::Attempt(a)
                if a.operation.as_str() == id && !detail.attempts.iter().any(|x| x.id == a.id) =>
            {
                detail.attempts.push(a.clone());
            }
            Record::Observation(o)
                if o.operation.as_str() == id
                    && !detail.observations.iter().any(|x| x.id == o.id) =>
            {
                detail.observations.push(o.clone());
            }
            Record::Item(i)
                if i.operation.as_str() == id
                    && !detail.items.iter().any(|x| x.index == i.index) =>
            {
                detail.items.push(i.clone());
            }
            Record::Expectation(e)
                if e.operation.as_str() == id && detail.expectation.is_none() =>
            {
                detail.expectation = Some(e.clone());
            }
            _ => {}
        }
    }
    detail.attempts.sort_by_key(|a| a.seq);
    detail.row.attempts_used = u32::try_from(
        detail
            .attempts
            .iter()
            .filter(|a| a.kind == AttemptKind::Request)
            .count(),
    )
    .unwrap_or(u32::MAX);
    detail.observations.sort_by_key(|o| o.observed_at);
    detail.items.sort_by_key(|i| i.index);
    detail.row.operation.state = t.from;
    let actor = Actor::local(&t.by, None);
    let version = detail.row.version;
    decide(detail, &action, &actor, &rationale(t), version, t.at).map_err(|refusal| LineError {
        line,
        field: "to".into(),
        reason: format!(
            "{}: {} → {} is a reviewer decision and passes the same rules as `holdfast review`: {}",
            refusal.rule, t.from, t.to, refusal.reason
        ),
    })?;
    detail.row.operation.state = t.to;
    Ok(())
}
