//! Moves reported by a file or a worker's completion, judged as the console
//! judges them (`core::rules::moves`): a move out of a held state, or an
//! authorized retry, is the decision a reviewer makes with `review`, so it passes
//! the same decision function ([`decide`]) as the identity really importing it, on
//! what the store and the batch hold at that instant, or is refused with the rule;
//! a system move that ends a call (SUCCEEDED, FAILED, ACKNOWLEDGED) or approves
//! one must be proved by the records. That holds for an operation the store
//! already holds and for one the same file creates ([`created_detail`]): a file
//! cannot create a hold and decide it past the rules in one go.

use crate::core::contract::Contract;
use crate::core::detail::OperationDetail;
use crate::core::ids::OperationId;
use crate::core::ladder::Level;
use crate::core::model::{
    ActionKind, Attempt, ChildLink, Item, Operation, OperationRow, Role, State, TransitionRecord,
};
use crate::core::rules::moves::{self, Move, classify};
use crate::core::rules::{Actor, Rationale, decide};
use crate::wire::{LineError, Record};

use super::ingest::Staged;

/// Whether `t` is a reviewer's decision (judged with [`decide`]) rather than a
/// system move.
pub fn is_decision(t: &TransitionRecord) -> bool {
    matches!(classify(t), Move::Decision(_))
}

/// Whether the system move `t` needs the records to prove it.
pub fn needs_proof(t: &TransitionRecord) -> bool {
    use State::*;
    matches!(
        (t.from, t.to),
        (Validated, Approved) | (Sent | Acknowledged, Succeeded | Failed | Acknowledged)
    )
}

/// How a reported move was allowed: for a decision, its action and the role the
/// importing identity took it under; the audit row records these, never the
/// line's own `by` and `role`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decided {
    pub action: ActionKind,
    pub role: Role,
}

/// A reported transition's key within a batch: its operation, states and instant.
pub type TransitionKey = (String, State, State, i64);

/// The key of `t`.
pub fn transition_key(t: &TransitionRecord) -> TransitionKey {
    (
        t.operation.as_str().to_owned(),
        t.from,
        t.to,
        t.at.timestamp_millis(),
    )
}

/// The decisions of a batch that were allowed, by transition.
pub type Decisions = std::collections::HashMap<TransitionKey, Decided>;

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
            routed_owner: None,
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

/// Adds the batch's records of `detail`'s operation that come before `line` to
/// it: what a decision or a system move on that line may rest on.
pub fn add_earlier(detail: &mut OperationDetail, staged: &[Staged], line: usize) {
    let id = detail.row.operation.id.as_str().to_owned();
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
    detail.row.attempts_used =
        u32::try_from(detail.attempts.iter().filter(|a| a.spends_budget()).count())
            .unwrap_or(u32::MAX);
    detail.observations.sort_by_key(|o| o.observed_at);
    detail.items.sort_by_key(|i| i.index);
}

/// Proves the system move `t` (line `line`) of `op` from `attempts`, those
/// recorded of it before the line (stored, and earlier in the batch).
pub fn prove(
    op: &Operation,
    attempts: &[Attempt],
    t: &TransitionRecord,
    line: usize,
) -> Result<(), LineError> {
    let record = moves::Record {
        payload_hash: &op.payload_hash,
        approval: op.approval.as_ref(),
        attempts,
    };
    moves::prove_system_move(&record, t).map_err(|refusal| LineError {
        line,
        field: "to".into(),
        reason: format!("{}: {}", refusal.rule, refusal.reason),
    })
}

/// Judges the move `t` (line `line`) on `detail`, the operation as stored, with
/// the batch's records of it that come before the line added: a decision passes
/// [`decide`] as `decider` (the identity really importing it, with its grants;
/// `None` for a door that may import no decision, such as a worker's
/// completion), a system move must be proved by the records. On success the
/// detail moves to `t.to`, for a later move of the same batch.
pub fn judge(
    detail: &mut OperationDetail,
    staged: &[Staged],
    t: &TransitionRecord,
    line: usize,
    decider: Option<&Actor>,
) -> Result<Option<Decided>, LineError> {
    add_earlier(detail, staged, line);
    detail.row.operation.state = t.from;
    let refused = |rule: String, reason: String| LineError {
        line,
        field: "to".into(),
        reason: format!(
            "{rule}: {} → {} is a reviewer decision and passes the same rules as \
             `holdfast review`: {reason}",
            t.from, t.to
        ),
    };
    let decided = match classify(t) {
        Move::System => {
            if needs_proof(t) {
                prove(&detail.row.operation, &detail.attempts, t, line)?;
            }
            None
        }
        Move::Decision(action) => {
            let Some(actor) = decider else {
                return Err(refused(
                    "G6".into(),
                    "a worker's completion reports facts and the system moves they prove; \
                     a decision is a reviewer's, made with `holdfast review`"
                        .into(),
                ));
            };
            let version = detail.row.version;
            let effect = decide(detail, &action, actor, &rationale(t), version, t.at)
                .map_err(|refusal| refused(refusal.rule.to_string(), refusal.reason))?;
            if effect.proposal_only || effect.to != Some(t.to) {
                return Err(refused(
                    "G6".into(),
                    format!(
                        "for {} the rules allow only {}; a file cannot make the move itself",
                        actor.name(),
                        if effect.proposal_only {
                            "a proposal that a second reviewer must confirm".to_owned()
                        } else {
                            format!(
                                "a move to {}",
                                effect.to.map_or("no state".into(), |s| s.to_string())
                            )
                        }
                    ),
                ));
            }
            Some(Decided {
                action: action.kind(),
                role: effect.commit.audit.role,
            })
        }
    };
    detail.row.operation.state = t.to;
    Ok(decided)
}
