//! Whether every decision the chain records is one the rules allow: an
//! operation's audit rows replayed one by one through the one decision function
//! ([`crate::core::rules::decide`]) on the operation as the chain leaves it just
//! before each row, so that a row with a correct hash but no lawful decision
//! behind it is named by its `seq`.
//!
//! What the replay knows of an operation at a row comes from the chain: its state
//! and version (every earlier row of it), the records it holds (those an earlier
//! `ingest`/`record` row names as `attempt:ID`, `observation:ID`, `item:N` or
//! `expectation`, and those an earlier `reconcile` row names), its proposals (the
//! proposable rows the rules turned into proposals, and the `confirm`/`reject`
//! rows that closed them), its children (their `create` rows) and the states of
//! its dependencies and children at that `seq` (their own rows). The contents of
//! the records are the stored ones, each held to its `record_hash` by the record
//! comparison; a stored record no row names, or a named one no longer stored, is
//! itself a divergence. The grants are those the `grant`/`revoke` rows leave at
//! that `seq`.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use super::audit::{AuditRow, CREATE, INGEST, RECORD, TRANSITION};
use super::cause::{self, RootCause};
use super::clock::parse_instant;
use super::detail::OperationDetail;
use super::ledger::{Divergence, NEXT_OBSERVATION, OWNER};
use super::model::{ActionKind, ChildLink, Grant, ProposalStatus, State, TransitionRecord};
use super::rules::catalog::{self, Params};
use super::rules::moves::{Move, classify};
use super::rules::{Action, Actor, Effect, Rationale, ReconcileInput, decide};
use super::work;

/// The action a `transition` row (a move a file reported) stands for when it is
/// a reviewer decision, as every door classifies it
/// ([`crate::core::rules::moves::classify`]); `None` for a move the system may
/// make on its own. Ingest now writes such a decision as a row of its own action;
/// a `transition` row making one is older, or written by hand.
pub fn reviewer_move(t: &TransitionRecord) -> Option<Action> {
    match classify(t) {
        Move::Decision(action) => Some(action),
        Move::System => None,
    }
}

/// The states an operation passed through, each with the `seq` of the row that
/// moved it there, in `seq` order.
#[derive(Debug, Clone, Default)]
pub struct StatesBySeq(pub Vec<(i64, State)>);

impl StatesBySeq {
    /// The rows of one operation, as their states.
    pub fn of(rows: &[AuditRow]) -> StatesBySeq {
        StatesBySeq(
            rows.iter()
                .filter_map(|r| r.draft.to.map(|to| (r.seq, to)))
                .collect(),
        )
    }

    /// The state just before row `seq`: `None` when it did not exist yet.
    pub fn before(&self, seq: i64) -> Option<State> {
        self.0
            .iter()
            .take_while(|(s, _)| *s < seq)
            .last()
            .map(|(_, state)| *state)
    }
}

/// What the replay of one operation needs besides the operation itself.
pub struct Surroundings<'a> {
    /// Its dependencies' and children's states by `seq`.
    pub relatives: &'a BTreeMap<String, StatesBySeq>,
    /// The grants the chain's grant rows leave just before a `seq`.
    pub grants_before: &'a dyn Fn(i64) -> Vec<Grant>,
}

/// The evidence entry of `row` starting with `prefix`, the last one.
fn entry<'a>(row: &'a AuditRow, prefix: &str) -> Option<&'a str> {
    row.draft
        .evidence
        .iter()
        .rev()
        .find_map(|e| e.strip_prefix(prefix))
}

/// The review action a row of action `kind` records, with the parameters the
/// row carries; `None` when the row does not say enough to decide it again.
fn action_of(row: &AuditRow, kind: ActionKind) -> Option<Action> {
    catalog::action(kind, &mut Recorded(row)).ok()
}

/// The parameters an audit row records, as its draft and evidence carry them.
struct Recorded<'a>(&'a AuditRow);

impl Params for Recorded<'_> {
    type Error = ();
    fn to(&mut self) -> Result<State, ()> {
        self.0.draft.to.ok_or(())
    }
    fn owner(&mut self) -> Result<String, ()> {
        entry(self.0, OWNER).map(str::to_owned).ok_or(())
    }
    fn at(&mut self) -> Result<DateTime<Utc>, ()> {
        let at = entry(self.0, NEXT_OBSERVATION).ok_or(())?;
        parse_instant(at).map_err(|_| ())
    }
    fn repair_ref(&mut self) -> Result<String, ()> {
        Ok(entry(self.0, "repair:").unwrap_or_default().to_owned())
    }
    /// A reconcile records what a lookup showed: a fact, judged by the records
    /// it names, not a move.
    fn lookup(&mut self) -> Result<ReconcileInput, ()> {
        Err(())
    }
    fn layer(&mut self) -> Result<RootCause, ()> {
        entry(self.0, cause::EVIDENCE_PREFIX)
            .and_then(RootCause::parse)
            .ok_or(())
    }
}

/// The operation `stored` (as the store holds it now) with everything the chain
/// has not yet said taken away: the start of its replay.
fn bare(stored: &OperationDetail) -> OperationDetail {
    let mut detail = stored.clone();
    detail.attempts.clear();
    detail.items.clear();
    detail.observations.clear();
    detail.audit.clear();
    detail.expectation = None;
    detail.children.clear();
    detail.dependencies.clear();
    detail.proposals.clear();
    detail.row.version = 0;
    // The budget its record (or else its tool's contract) set, not a column
    // that could have been changed beside it.
    detail.row.max_attempts = detail
        .row
        .operation
        .max_attempts
        .or_else(|| detail.contract.as_ref().map(|c| c.max_attempts));
    detail.row.attempts_used = 0;
    detail.row.held_dependencies.clear();
    detail.row.pending_proposal = false;
    detail
}

/// The operation as the chain leaves it and the records its rows named.
struct Walked<'a> {
    now: OperationDetail,
    named_attempts: Vec<&'a str>,
    named_observations: Vec<&'a str>,
    named_items: Vec<u32>,
    named_expectation: bool,
    last_seq: i64,
}

/// Replays the rows of `stored` before `until` through the rules (see
/// [`replay`]): the operation as they leave it, or the first row they refuse.
fn walk<'a>(
    stored: &'a OperationDetail,
    around: &Surroundings<'_>,
    until: i64,
) -> Result<Walked<'a>, Divergence> {
    let id = stored.row.operation.id.as_str();
    let mut now = bare(stored);
    let mut named_attempts: Vec<&str> = Vec::new();
    let mut named_observations: Vec<&str> = Vec::new();
    let mut named_items: Vec<u32> = Vec::new();
    let mut named_expectation = false;
    let mut proposal_ids = 0i64;
    let mut last_seq = 0;
    for row in stored.audit.iter().take_while(|r| r.seq < until) {
        let seq = row.seq;
        last_seq = seq;
        let unlawful = |reason: String| Divergence {
            seq,
            reason: format!("operation {id}: {reason}"),
        };
        let action = row.draft.action.as_str();
        if work::is_work_action(action) {
            continue;
        }
        // The operation as the chain leaves it just before this row.
        now.dependencies = stored
            .row
            .operation
            .depends_on
            .iter()
            .filter_map(|dep| {
                around
                    .relatives
                    .get(dep.as_str())
                    .and_then(|s| s.before(seq))
                    .map(|state| (dep.clone(), state))
            })
            .collect();
        now.row.held_dependencies = now
            .dependencies
            .iter()
            .filter(|(_, s)| s.is_held())
            .map(|(d, _)| d.clone())
            .collect();
        now.children = stored
            .children
            .iter()
            .filter_map(|child| {
                let state = around.relatives.get(child.id.as_str())?.before(seq)?;
                Some(ChildLink {
                    state,
                    ..child.clone()
                })
            })
            .collect();
        now.row.attempts_used =
            u32::try_from(now.attempts.iter().filter(|a| a.spends_budget()).count())
                .unwrap_or(u32::MAX);
        now.row.pending_proposal = now
            .proposals
            .iter()
            .any(|p| p.status == ProposalStatus::Pending);

        // The records this row adds.
        let mut adds = |entry: &str, reviewer: bool| -> Result<(), Divergence> {
            let (kind, key) = match entry.split_once(':') {
                Some((kind @ ("attempt" | "observation" | "item"), key)) => (kind, key),
                _ if entry == "expectation" => ("expectation", ""),
                // A reviewer row names its new records bare.
                _ if reviewer => {
                    if let Some(a) = stored.attempts.iter().find(|a| a.id == entry) {
                        if !now.attempts.iter().any(|x| x.id == a.id) {
                            named_attempts.push(&a.id);
                            now.attempts.push(a.clone());
                        }
                    } else if let Some(o) = stored.observations.iter().find(|o| o.id == entry)
                        && !now.observations.iter().any(|x| x.id == o.id)
                    {
                        named_observations.push(&o.id);
                        now.observations.push(o.clone());
                    }
                    return Ok(());
                }
                _ => return Ok(()),
            };
            let gone = |what: &str| {
                Err(unlawful(format!(
                    "{what} is named by this row but is no longer stored"
                )))
            };
            match kind {
                "attempt" => match stored.attempts.iter().find(|a| a.id == key) {
                    Some(a) => {
                        named_attempts.push(&a.id);
                        now.attempts.push(a.clone());
                    }
                    None => return gone(&format!("attempt {key}")),
                },
                "observation" => match stored.observations.iter().find(|o| o.id == key) {
                    Some(o) => {
                        named_observations.push(&o.id);
                        now.observations.push(o.clone());
                    }
                    None => return gone(&format!("observation {key}")),
                },
                "item" => match stored
                    .items
                    .iter()
                    .find(|i| key.parse::<u32>().is_ok_and(|n| n == i.index))
                {
                    Some(i) => {
                        named_items.push(i.index);
                        now.items.push(i.clone());
                    }
                    None => return gone(&format!("item {key}")),
                },
                _ => match &stored.expectation {
                    Some(e) => {
                        named_expectation = true;
                        now.expectation = Some(e.clone());
                    }
                    None => return gone("its expectation"),
                },
            }
            Ok(())
        };
        let reviewer_row = ActionKind::parse(action).is_some();
        for e in &row.draft.evidence {
            adds(e, reviewer_row)?;
        }
        now.attempts.sort_by_key(|a| (a.seq, a.id.clone()));
        now.observations
            .sort_by_key(|o| (o.observed_at, o.id.clone()));
        now.items.sort_by_key(|i| i.index);

        let moved = |now: &mut OperationDetail, to: Option<State>, at: DateTime<Utc>| {
            if let Some(to) = to {
                now.row.operation.state = to;
                now.row.state_since = at;
            }
        };
        match action {
            INGEST | CREATE => {
                if action == CREATE {
                    // A child's items (a resume's uncommitted subset) are
                    // written with the row that creates it.
                    named_items.extend(stored.items.iter().map(|i| i.index));
                    now.items.clone_from(&stored.items);
                }
                now.row.version = 1;
                moved(&mut now, row.draft.to, row.draft.at);
                continue;
            }
            RECORD => continue,
            _ => {}
        }
        let judged = if action == TRANSITION {
            let (Some(from), Some(to)) = (row.draft.from, row.draft.to) else {
                return Err(unlawful(
                    "a transition row names no from or to state".into(),
                ));
            };
            let t = TransitionRecord {
                operation: stored.row.operation.id.clone(),
                from,
                to,
                by: row
                    .draft
                    .on_behalf_of
                    .clone()
                    .unwrap_or_else(|| row.draft.by.clone()),
                role: Some(row.draft.role),
                at: row.draft.at,
                reason: row.draft.rationale.clone(),
                evidence: row.draft.evidence.clone(),
            };
            match reviewer_move(&t) {
                None => None,
                Some(decision) => {
                    // Judged as ingest judges a reported decision: as the row's
                    // author with the grants it held then (in single-user mode,
                    // the local user), whoever the source said made it.
                    let grants = (around.grants_before)(seq);
                    let actor = Actor::from_grants(&row.draft.by, None, &grants);
                    Some((decision, actor, rationale_of(row)))
                }
            }
        } else if let Some(kind) = ActionKind::parse(action) {
            let judged = action_of(row, kind);
            if judged.is_none() && row.draft.to.is_some() {
                // A row that cannot be decided again (a reconcile, a schedule
                // to no time) records no move either.
                return Err(unlawful(format!(
                    "a {action} row moves it to {}, which no {action} does",
                    row.draft.to.map_or("nothing".to_owned(), |s| s.to_string())
                )));
            }
            judged.map(|decision| {
                let principal = row
                    .draft
                    .on_behalf_of
                    .clone()
                    .unwrap_or_else(|| row.draft.by.clone());
                let grants = (around.grants_before)(seq);
                let mut actor = Actor::from_grants(&principal, row.draft.policy.clone(), &grants);
                actor.identity.clone_from(&row.draft.by);
                actor.on_behalf_of.clone_from(&row.draft.on_behalf_of);
                (decision, actor, rationale_of(row))
            })
        } else {
            return Err(unlawful(format!(
                "row action {action:?} is no action the rules know"
            )));
        };
        if let Some((decision, actor, rationale)) = judged {
            let effect = decide(
                &now,
                &decision,
                &actor,
                &rationale,
                now.row.version,
                row.draft.at,
            )
            .map_err(|refusal| {
                unlawful(format!(
                    "{} {}: the rules refuse it ({}: {})",
                    row.draft.by, action, refusal.rule, refusal.reason
                ))
            })?;
            if effect.to != row.draft.to {
                let say = |s: Option<State>| s.map_or("no move".to_owned(), |s| s.to_string());
                return Err(unlawful(format!(
                    "{} {}: the rules allow {} here{}, but the row records {}",
                    row.draft.by,
                    action,
                    say(effect.to),
                    if effect.proposal_only {
                        " (only a proposal a second approver confirms)"
                    } else {
                        ""
                    },
                    say(row.draft.to)
                )));
            }
            apply(&mut now, &effect, &mut proposal_ids);
        }
        now.row.version += 1;
        moved(&mut now, row.draft.to, row.draft.at);
    }
    Ok(Walked {
        now,
        named_attempts,
        named_observations,
        named_items,
        named_expectation,
        last_seq,
    })
}

/// `stored` as the chain leaves it just before row `seq`, its rules replayed
/// on the way ([`replay`]): its state, the records earlier rows named, its
/// proposals and its earlier rows; `None` when no row had made it yet. What
/// `audit verify` judges the vetoes open at an autonomy raise on (gate A3).
pub fn before(
    stored: &OperationDetail,
    around: &Surroundings<'_>,
    seq: i64,
) -> Result<Option<OperationDetail>, Divergence> {
    let mut now = walk(stored, around, seq)?.now;
    if now.row.version == 0 {
        return Ok(None);
    }
    now.audit = stored
        .audit
        .iter()
        .filter(|r| r.seq < seq)
        .cloned()
        .collect();
    Ok(Some(now))
}

/// Replays the rows of one operation (`stored.audit`, in `seq` order) through
/// the rules: the first row they would refuse, or whose outcome differs from
/// what the row says, and every stored record no row accounts for.
pub fn replay(stored: &OperationDetail, around: &Surroundings<'_>) -> Result<(), Divergence> {
    let id = stored.row.operation.id.as_str();
    let Walked {
        named_attempts,
        named_observations,
        named_items,
        named_expectation,
        last_seq,
        ..
    } = walk(stored, around, i64::MAX)?;
    let unnamed = |what: String| {
        Err(Divergence {
            seq: last_seq,
            reason: format!("operation {id}: {what} is stored but no audit row added it"),
        })
    };
    if let Some(a) = stored
        .attempts
        .iter()
        .find(|a| !named_attempts.contains(&a.id.as_str()))
    {
        return unnamed(format!("attempt {}", a.id));
    }
    if let Some(o) = stored
        .observations
        .iter()
        .find(|o| !named_observations.contains(&o.id.as_str()))
    {
        return unnamed(format!("observation {}", o.id));
    }
    if let Some(i) = stored
        .items
        .iter()
        .find(|i| !named_items.contains(&i.index))
    {
        return unnamed(format!("item {}", i.index));
    }
    if stored.expectation.is_some() && !named_expectation {
        return unnamed("its expectation".into());
    }
    Ok(())
}

/// The rationale a row records, as the rules take it.
fn rationale_of(row: &AuditRow) -> Rationale {
    row.draft
        .rationale
        .as_deref()
        .and_then(|r| Rationale::parse(r).ok())
        .or_else(|| Rationale::parse("recorded without a rationale").ok())
        .unwrap_or_else(|| unreachable!("the fixed rationale is long enough"))
}

/// What an allowed decision leaves on the operation besides its state: the
/// proposal it opens or closes. (The records it adds are those its row names.)
fn apply(now: &mut OperationDetail, effect: &Effect, ids: &mut i64) {
    if let Some(open) = &effect.commit.open_proposal {
        *ids += 1;
        let mut open = open.clone();
        open.id = *ids;
        now.proposals.push(open);
    }
    if let Some((closed, status)) = effect.commit.close_proposal
        && let Some(p) = now.proposals.iter_mut().find(|p| p.id == closed)
    {
        p.status = status;
    }
    if let Some(owner) = &effect.commit.new_owner {
        now.row.operation.owner.clone_from(owner);
    }
    if let Some(next) = effect.commit.new_next_observation_at {
        now.row.operation.next_observation_at = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::clock::parse_instant;
    use crate::core::ids::OperationId;

    fn moved(from: State, to: State) -> TransitionRecord {
        TransitionRecord {
            operation: OperationId::parse("F27").unwrap(),
            from,
            to,
            by: "rev:maya".into(),
            role: None,
            at: parse_instant("2026-09-05T10:00:00Z").unwrap(),
            reason: None,
            evidence: Vec::new(),
        }
    }

    #[test]
    fn a_move_out_of_a_hold_or_into_approved_is_a_decision_and_a_system_move_is_not() {
        assert_eq!(
            reviewer_move(&moved(State::Unknown, State::Approved)),
            Some(Action::AuthorizeRetry)
        );
        assert_eq!(
            reviewer_move(&moved(State::Blocked, State::Validated)),
            Some(Action::Revalidate)
        );
        assert_eq!(reviewer_move(&moved(State::Sent, State::Unknown)), None);
        assert_eq!(reviewer_move(&moved(State::Approved, State::Sent)), None);
        // Not in the table at all: no decision could make it.
        assert_eq!(
            reviewer_move(&moved(State::Approved, State::Succeeded)),
            None
        );
    }

    #[test]
    fn a_relative_s_state_before_a_row_is_the_one_its_earlier_rows_left() {
        let states = StatesBySeq(vec![
            (1, State::Approved),
            (5, State::Sent),
            (9, State::Unknown),
        ]);
        assert_eq!(states.before(1), None);
        assert_eq!(states.before(2), Some(State::Approved));
        assert_eq!(states.before(9), Some(State::Sent));
        assert_eq!(states.before(100), Some(State::Unknown));
    }
}
