//! The rows an ingest plan becomes, the same for every backend: each table's
//! columns computed once in plain Rust (final states, versions, queue flags, the
//! sealed audit rows), so a backend only binds them into multi-row inserts.

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use super::codec::{ms, observe_order, risk_rank};
use super::decisions::transition_key;
use super::ingest::{History, Known, Plan};
use crate::core::audit::{AuditDraft, AuditRow, seal};
use crate::core::ids::{OperationId, Sha256};
use crate::core::model::{Operation, Role, State};
use crate::core::rules::moves::reported_reason;
use crate::wire::Record;

/// A value as an index or search column holds it: U+0000 becomes U+2400 (`␀`,
/// as the sanitizer shows it), since PostgreSQL's `text` cannot hold U+0000. The
/// columns only find and order rows; what is shown, exported and hashed is the
/// stored wire record, which keeps every byte (JSON escapes U+0000).
pub fn indexed(text: &str) -> String {
    text.replace('\0', "\u{2400}")
}

/// The columns of one `operations` row, plus its dependencies.
#[derive(Debug, Clone)]
pub struct OperationColumns {
    pub id: String,
    pub tenant: String,
    pub tool: String,
    pub owner: String,
    pub state: String,
    pub risk_rank: i64,
    pub failure_mode: Option<String>,
    pub target: String,
    pub payload_hash: String,
    pub idempotency_key: Option<String>,
    pub business_key: Option<String>,
    pub correlation_id: Option<String>,
    pub parent: Option<String>,
    pub max_attempts: Option<i64>,
    pub deadline_ms: Option<i64>,
    pub created_ms: i64,
    pub state_since_ms: i64,
    pub next_observation_ms: Option<i64>,
    pub observe_order: i64,
    pub queued: i64,
    pub version: i64,
    pub wire: String,
    pub record_hash: Option<String>,
    pub depends_on: Vec<String>,
}

impl OperationColumns {
    /// The row of `op`, whose canonical wire line is `wire`.
    pub fn new(
        op: &Operation,
        wire: String,
        state: State,
        state_since: DateTime<Utc>,
        version: i64,
        queued: bool,
        record_hash: Option<String>,
    ) -> OperationColumns {
        OperationColumns {
            id: op.id.as_str().to_owned(),
            tenant: op.tenant.clone(),
            tool: op.tool.clone(),
            owner: op.owner.clone(),
            state: state.as_str().to_owned(),
            risk_rank: risk_rank(op.risk),
            failure_mode: op.failure_mode.map(|m| m.as_str().to_owned()),
            target: indexed(&op.target),
            payload_hash: op.payload_hash.as_str().to_owned(),
            idempotency_key: op.idempotency_key.clone(),
            business_key: op.business_key.as_deref().map(indexed),
            correlation_id: op.correlation_id.clone(),
            parent: op.parent.as_ref().map(|p| p.as_str().to_owned()),
            max_attempts: op.max_attempts.map(i64::from),
            deadline_ms: op.deadline.map(ms),
            created_ms: ms(op.created_at),
            state_since_ms: ms(state_since),
            next_observation_ms: op.next_observation_at.map(ms),
            observe_order: observe_order(op.next_observation_at),
            queued: i64::from(queued),
            version,
            wire,
            record_hash,
            depends_on: op
                .depends_on
                .iter()
                .map(|d| d.as_str().to_owned())
                .collect(),
        }
    }
}

/// A stored record keyed by its own id and its operation: attempts (`order` = seq,
/// `kind`, `provider_request_id`), observations (`order` = observed ms), items
/// (`order` = index), expectations, and contracts (`key` = tool, `order` =
/// max attempts).
#[derive(Debug, Clone, Default)]
pub struct RecordColumns {
    pub key: String,
    pub operation: String,
    pub order: i64,
    pub kind: Option<String>,
    pub provider_request_id: Option<String>,
    /// An attempt's URL (redacted), kept beside its wire line.
    pub url: Option<String>,
    /// 1 for a try a gateway refused before it left
    /// ([`crate::core::model::Attempt::refused_by_gateway`]), else 0.
    pub refused: i64,
    pub wire: String,
    pub hash: String,
}

impl RecordColumns {
    /// The row of any record but an operation or a transition, whose canonical
    /// wire line is `wire` and content hash `hash`.
    pub fn of(record: &Record, wire: String, hash: &Sha256) -> RecordColumns {
        let base = RecordColumns {
            wire,
            hash: hash.as_str().to_owned(),
            ..RecordColumns::default()
        };
        match record {
            Record::Contract(c) => RecordColumns {
                key: c.tool.clone(),
                order: i64::from(c.max_attempts),
                ..base
            },
            Record::Attempt(a) => RecordColumns {
                key: a.id.clone(),
                operation: a.operation.as_str().to_owned(),
                order: i64::from(a.seq),
                kind: Some(a.kind.as_str().to_owned()),
                provider_request_id: a.provider_request_id.as_deref().map(indexed),
                url: a.url.clone(),
                refused: i64::from(a.refused_by_gateway()),
                ..base
            },
            Record::Observation(o) => RecordColumns {
                key: o.id.clone(),
                operation: o.operation.as_str().to_owned(),
                order: ms(o.observed_at),
                ..base
            },
            Record::Item(i) => RecordColumns {
                operation: i.operation.as_str().to_owned(),
                order: i64::from(i.index),
                ..base
            },
            Record::Expectation(e) => RecordColumns {
                operation: e.operation.as_str().to_owned(),
                ..base
            },
            Record::Operation(_) | Record::Transition(_) => base,
        }
    }
}

/// A transition received on the wire, by its natural key.
#[derive(Debug, Clone)]
pub struct TransitionColumns {
    pub operation: String,
    pub from_state: String,
    pub to_state: String,
    pub at_ms: i64,
    pub hash: String,
}

/// An operation already stored whose state this batch moves.
#[derive(Debug, Clone)]
pub struct Moved {
    pub id: String,
    pub state: State,
    pub since: DateTime<Utc>,
    /// Transitions applied: the version moves by as many.
    pub steps: i64,
}

/// Every row a plan writes.
#[derive(Debug, Clone, Default)]
pub struct PlanRows {
    pub contracts: Vec<RecordColumns>,
    /// New versions of stored contracts: each replaces its tool's row.
    pub contract_updates: Vec<RecordColumns>,
    /// The system's drops of tools whose drill a material new version made
    /// stale (`core::rerun::stale_drop`).
    pub level_drops: Vec<crate::core::autonomy::LevelChange>,
    pub operations: Vec<OperationColumns>,
    pub attempts: Vec<RecordColumns>,
    pub observations: Vec<RecordColumns>,
    pub items: Vec<RecordColumns>,
    pub expectations: Vec<RecordColumns>,
    pub transitions: Vec<TransitionColumns>,
    pub moved: Vec<Moved>,
    /// Sealed after the chain head the backend read inside its transaction.
    pub audit: Vec<AuditRow>,
}

/// Where an operation's history ends: its state, since when, and how many steps.
fn end_of(history: &History, start: State, created: DateTime<Utc>) -> (State, DateTime<Utc>, i64) {
    match history.transitions.last() {
        Some(last) => (last.to, last.at, history.transitions.len() as i64),
        None => (start, created, 0),
    }
}

/// Turns a plan into rows; `head` is the chain's (seq, hash) before this batch.
pub fn plan_rows(
    known: &Known,
    plan: &Plan,
    by: &str,
    now: DateTime<Utc>,
    head: (i64, &Sha256),
) -> PlanRows {
    let histories: HashMap<&str, &History> = plan
        .histories
        .iter()
        .map(|h| (h.operation.as_str(), h))
        .collect();
    let mut states: HashMap<String, State> = known
        .operations
        .iter()
        .map(|(id, stored)| (id.clone(), stored.state))
        .collect();
    let mut rows = PlanRows::default();
    let mut new_ops = Vec::new();
    for staged in &plan.staged {
        match &staged.record {
            Record::Operation(op) => {
                let history = histories.get(op.id.as_str());
                let (state, since, steps) = match history {
                    Some(h) => {
                        let start = h.created.map_or(op.state, |c| c.0);
                        end_of(h, start, op.created_at)
                    }
                    None => (op.state, op.created_at, 0),
                };
                states.insert(op.id.as_str().to_owned(), state);
                new_ops.push((op, staged, state, since, steps));
            }
            Record::Transition(t) => rows.transitions.push(TransitionColumns {
                operation: t.operation.as_str().to_owned(),
                from_state: t.from.as_str().to_owned(),
                to_state: t.to.as_str().to_owned(),
                at_ms: ms(t.at),
                hash: staged.hash.as_str().to_owned(),
            }),
            other => {
                let columns = RecordColumns::of(other, staged.wire.clone(), &staged.hash);
                match other {
                    Record::Contract(c) if plan.versions.iter().any(|v| v.tool == c.tool) => {
                        rows.contract_updates.push(columns);
                    }
                    Record::Contract(_) => rows.contracts.push(columns),
                    Record::Attempt(_) => rows.attempts.push(columns),
                    Record::Observation(_) => rows.observations.push(columns),
                    Record::Item(_) => rows.items.push(columns),
                    _ => rows.expectations.push(columns),
                }
            }
        }
    }
    for history in &plan.histories {
        if history.created.is_some() || history.transitions.is_empty() {
            continue;
        }
        let id = history.operation.as_str();
        let start = states.get(id).copied().unwrap_or(State::Planned);
        let (state, since, steps) = end_of(history, start, now);
        states.insert(id.to_owned(), state);
        rows.moved.push(Moved {
            id: id.to_owned(),
            state,
            since,
            steps,
        });
    }
    let held = |id: &OperationId| states.get(id.as_str()).is_some_and(|s| s.is_held());
    for (op, staged, state, since, steps) in new_ops {
        let queued = state.is_held() || op.depends_on.iter().any(held);
        rows.operations.push(OperationColumns::new(
            op,
            staged.wire.clone(),
            state,
            since,
            1 + steps,
            queued,
            Some(staged.hash.as_str().to_owned()),
        ));
    }

    let (mut seq, prev) = head;
    let mut prev = prev.clone();
    let mut push = |draft: AuditDraft| {
        seq += 1;
        let row = seal(&prev, seq, draft);
        prev = row.hash.clone();
        rows.audit.push(row);
    };
    // A new contract version is recorded on the drill ledger by whoever
    // ingested it; a material one drops its tool to the stale floor, the
    // system's act, in the same transaction.
    for version in &plan.versions {
        push(version.draft(by, Role::System, now));
        if version.material.is_empty() {
            continue;
        }
        let current = known
            .levels
            .get(&version.tool)
            .copied()
            .unwrap_or(crate::core::ladder::Level::Manual);
        if let Some(drop) =
            crate::core::rerun::stale_drop(&version.tool, current, &version.words(), by, now)
        {
            push(drop.audit.clone());
            rows.level_drops.push(drop);
        }
    }
    for history in &plan.histories {
        let draft =
            |action: &str, to: Option<State>, rationale: &str, at: DateTime<Utc>| AuditDraft {
                operation: history.operation.clone(),
                action: action.to_owned(),
                from: None,
                to,
                by: by.to_owned(),
                role: Role::System,
                policy: None,
                on_behalf_of: None,
                rationale: Some(rationale.to_owned()),
                evidence: history.evidence.clone(),
                at,
            };
        if let Some((state, at)) = history.created {
            push(draft(
                crate::core::audit::INGEST,
                Some(state),
                "created from wire format v1",
                at,
            ));
        } else if !history.evidence.is_empty() {
            push(draft(
                crate::core::audit::RECORD,
                None,
                "records added from wire format v1",
                now,
            ));
        }
        // The identity that ingested is the row's author, under the role the rules
        // let it take the move with: a decision's row is that decision (`resolve`,
        // `accept`, …) under the role `decide` allowed; any other move is the
        // system's. Who the source says made it, and as what, is only what it
        // claims: kept in the rationale, never as who acted.
        for t in &history.transitions {
            let (action, role) = match plan.decided.get(&transition_key(t)) {
                Some(how) => (how.action.as_str().to_owned(), how.role),
                None => (crate::core::audit::TRANSITION.to_owned(), Role::System),
            };
            push(AuditDraft {
                operation: history.operation.clone(),
                action,
                from: Some(t.from),
                to: Some(t.to),
                by: by.to_owned(),
                role,
                policy: None,
                on_behalf_of: None,
                rationale: Some(reported_reason(t, by)),
                evidence: t.evidence.clone(),
                at: t.at,
            });
        }
    }
    rows
}

/// Characters after which a new searchable word starts.
const WORD_STARTS: &[char] = &[':', '/', '-', '.', '@', '_', ' '];

/// The longest term kept; a longer value is searchable by its first characters.
const MAX_TERM_BYTES: usize = 200;

/// The search terms of one operation: each value lower-cased (ASCII), whole and from
/// after each separator, so a search by the start of any word finds it.
pub fn search_terms<'a>(
    operation: &str,
    values: impl IntoIterator<Item = &'a str>,
) -> Vec<(String, String)> {
    let mut terms: Vec<String> = Vec::new();
    for value in values {
        let value = indexed(value).to_ascii_lowercase();
        let starts = std::iter::once(0).chain(
            value
                .char_indices()
                .filter(|(_, c)| WORD_STARTS.contains(c))
                .map(|(i, c)| i + c.len_utf8()),
        );
        for start in starts.take(16) {
            let mut term = &value[start..];
            if term.is_empty() {
                continue;
            }
            if term.len() > MAX_TERM_BYTES {
                let mut end = MAX_TERM_BYTES;
                while !term.is_char_boundary(end) {
                    end -= 1;
                }
                term = &term[..end];
            }
            terms.push(term.to_owned());
        }
    }
    terms.sort();
    terms.dedup();
    terms
        .into_iter()
        .map(|term| (term, operation.to_owned()))
        .collect()
}

/// The bounds of a search by prefix: every term `>= low` and `< high` starts with it.
pub fn prefix_range(needle: &str) -> (String, String) {
    let low = needle.trim().to_ascii_lowercase();
    let high = format!("{low}{}", char::MAX);
    (low, high)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_of_a_value_is_a_search_start() {
        let terms: Vec<String> = search_terms("F09", ["ticket-queue:7", "K-F09"])
            .into_iter()
            .map(|(t, _)| t)
            .collect();
        assert_eq!(terms, ["7", "f09", "k-f09", "queue:7", "ticket-queue:7"]);
        let (low, high) = prefix_range(" Queue ");
        assert!(low.as_str() <= "queue:7" && "queue:7" < high.as_str());
        assert!("queuf" >= high.as_str());
    }
}
