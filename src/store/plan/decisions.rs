//! Ingested reviewer decisions: a transition a file reports out of a held state
//! into SUCCEEDED, FAILED, ACCEPTED or COMPENSATED, on an operation the store
//! already holds, is the decision a reviewer makes with `review`, so it passes the
//! same decision function ([`decide`]) on what the store and the batch hold at
//! that instant, or is refused with the rule.

use crate::core::model::{OperationDetail, State, TransitionRecord};
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
            _ => {}
        }
    }
    detail.attempts.sort_by_key(|a| a.seq);
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
