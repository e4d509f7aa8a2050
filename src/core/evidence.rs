//! The compact evidence bundle a reviewer sees for one hold (DESIGN §4), assembled
//! from stored records only. Secrets and protected payloads are never part of it:
//! the store keeps hashes, and untrusted output only as a quarantined excerpt.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::clock::human_instant;
use super::detail::OperationDetail;
use super::ids::{OperationId, Sha256};
use super::matrix::{self, Decision, Recommendation};
use super::model::{
    AttemptKind, ChildLink, FailureMode, Matches, ObservationSource, ProposalStatus, Relation,
    Risk, Role, State,
};
use super::rules::{self, Actor, Rule};

/// The approval and whether it still binds this exact call (G11).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApprovalView {
    pub by: String,
    pub policy: String,
    pub at: Option<DateTime<Utc>>,
    pub payload_hash: Option<Sha256>,
    pub expires_at: Option<DateTime<Utc>>,
    /// `valid`, or why it no longer binds.
    pub status: String,
}

/// The idempotency key with its scope and retention.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeyView {
    pub key: String,
    pub scope: Option<String>,
    pub retention_hours: Option<u32>,
    /// When the key stops protecting a repeat (first request + retention).
    pub expires_at: Option<DateTime<Utc>>,
    pub expired: bool,
    /// Operations using the same key with a different payload (G3).
    pub conflicts: Vec<OperationId>,
}

/// One target observation with its field-by-field comparison.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ObservationView {
    pub id: String,
    pub observed_at: DateTime<Utc>,
    pub source: ObservationSource,
    pub found: bool,
    pub matches: Option<Matches>,
    pub effect_count: Option<u32>,
    pub note: Option<String>,
}

/// Attempts used against the budget, and time left.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BudgetView {
    pub attempts_used: u32,
    pub max_attempts: Option<u32>,
    /// Status queries made (they observe; they spend no attempt).
    pub status_queries: u32,
    /// Tries a gateway refused before they left (repeats of a held call):
    /// counted apart, they spend no attempt.
    pub refused_by_gateway: u32,
    pub deadline: Option<DateTime<Utc>>,
    /// Seconds to the deadline; negative once passed.
    pub seconds_left: Option<i64>,
    pub exhausted: Option<String>,
}

/// One action as offered now: allowed, or refused with its rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ActionView {
    pub label: String,
    pub allowed: bool,
    /// For an allowed action, `from → to` or the note that only a proposal opens.
    pub effect: Option<String>,
    pub rule: Option<Rule>,
    pub reason: Option<String>,
}

/// Why the operation is in its current state: the transition that moved it
/// there, with its reason and evidence (DESIGN §4). It comes first in every
/// rendering of the bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WhyHeld {
    pub from: Option<State>,
    pub to: State,
    /// The audit row that records the move.
    pub seq: i64,
    pub action: String,
    pub by: String,
    pub role: Role,
    pub at: DateTime<Utc>,
    /// The reason given for the move (the wire transition's `reason`, or a
    /// reviewer's rationale).
    pub reason: Option<String>,
    pub evidence: Vec<EvidenceRef>,
}

/// One piece of evidence a transition names, with what it is when this
/// operation's own records say so.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EvidenceRef {
    pub id: String,
    /// `request, request_sent, timeout` for an attempt, the observation in words;
    /// `None` for a record this operation does not hold.
    pub what: Option<String>,
}

impl WhyHeld {
    /// `VALIDATED → BLOCKED by svc:policy-gate (system) at …`.
    pub fn headline(&self) -> String {
        format!(
            "{} → {} by {} ({}) at {}",
            self.from.map_or_else(|| "-".to_owned(), |s| s.to_string()),
            self.to,
            self.by,
            self.role,
            human_instant(self.at)
        )
    }
}

/// The transition into the operation's current state, from its audit rows.
fn why_held(detail: &OperationDetail) -> Option<WhyHeld> {
    let state = detail.row.operation.state;
    let row = detail
        .audit
        .iter()
        .rev()
        .find(|r| r.draft.to == Some(state))?;
    let what = |id: &str| -> Option<String> {
        let bare = id.strip_prefix("attempt:").unwrap_or(id);
        if let Some(a) = detail.attempts.iter().find(|a| a.id == bare) {
            return Some(format!("{}, {}, {}", a.kind, a.phase, a.outcome));
        }
        if let Some(o) = detail.observations.iter().find(|o| o.id == bare) {
            return Some(describe_observation(o));
        }
        detail
            .children
            .iter()
            .find(|c| c.id.as_str() == bare)
            .map(|c| format!("{}, {}", c.relation, c.state))
    };
    let author = row.draft.author();
    let reason = match &author.claimed {
        Some((claimed, role)) => Some(format!(
            "{} (the source reports {claimed} as {role})",
            row.draft.rationale.as_deref().unwrap_or("no reason"),
        )),
        None => row.draft.rationale.clone(),
    };
    let (by, role) = (author.who, author.role);
    Some(WhyHeld {
        from: row.draft.from,
        to: state,
        seq: row.seq,
        action: row.draft.action.clone(),
        by,
        role,
        at: row.draft.at,
        reason,
        evidence: row
            .draft
            .evidence
            .iter()
            .map(|id| EvidenceRef {
                id: id.clone(),
                what: what(id),
            })
            .collect(),
    })
}

/// A tool's autonomy level in the bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AutonomyView {
    pub level: super::ladder::Level,
    pub meaning: String,
    /// Why the tool's status lookup is unchecked, which caps it at `manual`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lookup_unchecked: Option<String>,
}

impl AutonomyView {
    /// `manual: a person runs every lookup and every piece of work`, and the
    /// flag of an unchecked lookup when there is one.
    pub fn describe(&self) -> String {
        match &self.lookup_unchecked {
            Some(why) => format!(
                "{}: {} (LOOKUP UNCHECKED, capped at manual: {why})",
                self.level, self.meaning
            ),
            None => format!("{}: {}", self.level, self.meaning),
        }
    }
}

/// Everything a reviewer needs to decide about one hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EvidenceBundle {
    pub id: OperationId,
    pub state: State,
    /// Why it is in this state: the transition into it, first of all.
    pub why_held: Option<WhyHeld>,
    pub version: i64,
    pub state_since: DateTime<Utc>,
    pub tenant: String,
    pub actor: String,
    pub tool: String,
    /// How the tool's status is looked up, or that it has no status path.
    pub status_lookup: String,
    /// The tool's autonomy level and what it lets holdfast do on its own.
    pub autonomy: AutonomyView,
    pub action: String,
    pub target: String,
    pub risk: Risk,
    pub intent_hash: Option<Sha256>,
    pub payload_hash: Sha256,
    pub approval: Option<ApprovalView>,
    pub idempotency: Option<KeyView>,
    pub business_key: Option<String>,
    pub correlation_id: Option<String>,
    /// The newest observation, in words, and when it was made.
    pub last_verified: Option<(String, DateTime<Utc>)>,
    pub provider_request_ids: Vec<String>,
    pub observations: Vec<ObservationView>,
    pub budget: BudgetView,
    pub owner: String,
    /// Who the hold goes to by its unresolved state ([`crate::core::routing`]),
    /// when the tool's contract names owners per state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub routed: Option<crate::core::routing::Routed>,
    pub next_observation_at: Option<DateTime<Utc>>,
    pub next_observation_overdue: bool,
    pub failure_mode: Option<FailureMode>,
    /// The root-cause layer of a failed or held operation, and what says so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root_cause: Option<crate::core::cause::Cause>,
    pub recommendation: Recommendation,
    pub prohibited: Vec<String>,
    pub actions: Vec<ActionView>,
    pub parent: Option<(OperationId, Relation)>,
    pub children: Vec<ChildLink>,
    /// Dependencies that are not settled: this one is held by them (G9).
    pub held_by: Vec<(OperationId, State)>,
    pub pending_proposal: Option<String>,
}

/// Assembles the bundle for `actor` at `now`.
pub fn bundle(detail: &OperationDetail, actor: &Actor, now: DateTime<Utc>) -> EvidenceBundle {
    let op = &detail.row.operation;
    let assessment = matrix::assess_detail(detail, now);
    let approval = op.approval.as_ref().map(|a| ApprovalView {
        by: a.by.clone(),
        policy: a.policy.clone(),
        at: a.at,
        payload_hash: a.payload_hash.clone(),
        expires_at: a.expires_at,
        status: match rules::approval_binds(Some(a), &op.payload_hash, now) {
            Ok(()) => "valid".into(),
            Err(r) => r.reason,
        },
    });
    let first_request = detail
        .attempts
        .iter()
        .filter(|a| a.kind == AttemptKind::Request)
        .map(|a| a.started_at)
        .min();
    let idempotency = op.idempotency_key.as_ref().map(|key| {
        let scope = detail
            .contract
            .as_ref()
            .and_then(|c| c.idempotency.scope.clone());
        let retention = detail
            .contract
            .as_ref()
            .and_then(|c| c.idempotency.retention_hours);
        let expires_at = first_request
            .zip(retention)
            .and_then(|(t, h)| t.checked_add_signed(chrono::Duration::hours(i64::from(h))));
        KeyView {
            key: key.clone(),
            scope,
            retention_hours: retention,
            expires_at,
            expired: expires_at.is_some_and(|e| e <= now),
            conflicts: detail.key_conflicts.clone(),
        }
    });
    let observations: Vec<ObservationView> = detail
        .observations
        .iter()
        .map(|o| ObservationView {
            id: o.id.clone(),
            observed_at: o.observed_at,
            source: o.source,
            found: o.found,
            matches: o.matches.clone(),
            effect_count: o.effect_count,
            note: o.note.clone(),
        })
        .collect();
    let last_verified = detail
        .observations
        .iter()
        .max_by_key(|o| o.observed_at)
        .map(|o| (describe_observation(o), o.observed_at));
    let mut provider_request_ids: Vec<String> = detail
        .attempts
        .iter()
        .filter_map(|a| a.provider_request_id.clone())
        .collect();
    provider_request_ids.dedup();
    let status_queries = detail
        .attempts
        .iter()
        .filter(|a| a.kind == AttemptKind::StatusQuery)
        .count();
    let refused = detail
        .attempts
        .iter()
        .filter(|a| a.refused_by_gateway())
        .count();
    let budget = BudgetView {
        attempts_used: assessment.attempts_used,
        max_attempts: assessment.max_attempts,
        status_queries: u32::try_from(status_queries).unwrap_or(u32::MAX),
        refused_by_gateway: u32::try_from(refused).unwrap_or(u32::MAX),
        deadline: assessment.deadline,
        seconds_left: assessment.deadline.map(|d| (d - now).num_seconds()),
        exhausted: assessment.budget_exhausted(),
    };
    let actions = rules::options(detail, actor, now)
        .into_iter()
        .map(|o| match o.outcome {
            Ok(effect) => ActionView {
                label: o.label,
                allowed: true,
                effect: Some(if effect.proposal_only {
                    "opens a proposal for a second approver".into()
                } else {
                    match effect.to {
                        Some(to) => format!("{} → {to}", effect.from),
                        None => "no state change".into(),
                    }
                }),
                rule: None,
                reason: None,
            },
            Err(refusal) => ActionView {
                label: o.label,
                allowed: false,
                effect: None,
                rule: Some(refusal.rule),
                reason: Some(refusal.reason),
            },
        })
        .collect();
    EvidenceBundle {
        id: op.id.clone(),
        state: op.state,
        why_held: why_held(detail),
        version: detail.row.version,
        state_since: detail.row.state_since,
        tenant: op.tenant.clone(),
        actor: op.actor.clone(),
        tool: op.tool.clone(),
        status_lookup: detail.contract.as_ref().map_or_else(
            || "unknown: no contract is recorded for the tool".to_owned(),
            |c| c.status_lookup.describe(),
        ),
        autonomy: AutonomyView {
            level: detail.autonomy,
            meaning: detail.autonomy.meaning().to_owned(),
            lookup_unchecked: detail.lookup_unchecked.clone(),
        },
        action: op.action.clone(),
        target: op.target.clone(),
        risk: op.risk,
        intent_hash: op.intent_hash.clone(),
        payload_hash: op.payload_hash.clone(),
        approval,
        idempotency,
        business_key: op.business_key.clone(),
        correlation_id: op.correlation_id.clone(),
        last_verified,
        provider_request_ids,
        observations,
        budget,
        owner: op.owner.clone(),
        routed: detail
            .contract
            .as_ref()
            .filter(|c| c.owners.is_some())
            .map(|_| crate::core::routing::of(detail, now)),
        next_observation_at: op.next_observation_at,
        next_observation_overdue: op.state.is_held()
            && op.next_observation_at.is_some_and(|t| t < now),
        failure_mode: op.failure_mode,
        root_cause: crate::core::cause::of(detail),
        recommendation: if op.state.is_terminal() {
            Recommendation {
                decision: Decision::DoNotRetry,
                reason: format!(
                    "{} is terminal: nothing is left to recommend; the history stays in the timeline",
                    op.state
                ),
            }
        } else {
            assessment.recommendation
        },
        prohibited: rules::prohibited(detail, now),
        actions,
        parent: op.parent.clone().zip(op.relation),
        children: detail.children.clone(),
        held_by: detail
            .dependencies
            .iter()
            .filter(|(_, s)| !matches!(s, State::Succeeded | State::Accepted))
            .cloned()
            .collect(),
        pending_proposal: detail
            .proposals
            .iter()
            .find(|p| p.status == ProposalStatus::Pending)
            .map(|p| {
                format!(
                    "#{} {} by {} at {}",
                    p.id,
                    p.action,
                    p.proposed_by,
                    human_instant(p.proposed_at)
                )
            }),
    }
}

/// One observation in words: `found, all fields match, 1 effect (provider_status)`.
pub fn describe_observation(o: &super::model::Observation) -> String {
    describe(o.found, o.matches.as_ref(), o.effect_count, o.source)
}

impl ObservationView {
    /// This observation in words, as [`describe_observation`].
    pub fn describe(&self) -> String {
        describe(
            self.found,
            self.matches.as_ref(),
            self.effect_count,
            self.source,
        )
    }
}

fn describe(
    found: bool,
    matches: Option<&Matches>,
    effect_count: Option<u32>,
    source: ObservationSource,
) -> String {
    let mut text = if found {
        "found".to_owned()
    } else {
        "not found".to_owned()
    };
    if let Some(m) = matches {
        if m.all() {
            text.push_str(", all fields match");
        } else {
            let differ: Vec<&str> = [
                ("target", m.target),
                ("payload_hash", m.payload_hash),
                ("owner", m.owner),
                ("version", m.version),
            ]
            .iter()
            .filter(|(_, v)| *v != Some(true))
            .map(|(n, _)| *n)
            .collect();
            text.push_str(&format!(", differs or unknown: {}", differ.join(" ")));
        }
    }
    if let Some(n) = effect_count {
        text.push_str(&format!(", {n} effect{}", if n == 1 { "" } else { "s" }));
    }
    text.push_str(&format!(" ({source})"));
    text
}
