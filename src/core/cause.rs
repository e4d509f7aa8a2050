//! Root causes: the seed's fourth step, "review failures by root cause". Every
//! failed or held operation names the layer whose change would stop it from
//! happening again — model selection, argument generation, authorization,
//! integration, provider, parser, queue, policy or reviewer — so remediation goes
//! to the component that can change the behaviour.
//!
//! The layer is derived from the recorded evidence where the evidence decides it
//! ([`derive`], one table, pinned by the tests below and printed in the README);
//! otherwise the operation is unclassified until a reviewer sets the layer with
//! the audited `classify` action, whose audit row carries it as the evidence
//! entry `root-cause:LAYER` ([`EVIDENCE_PREFIX`]). A reviewer's classification
//! overrides what the evidence suggests; the newest one counts.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::audit::AuditRow;
use super::detail::OperationDetail;
use super::model::{ActionKind, Attempt, FailureMode, Operation, Outcome, State};
use super::names::text_enum;

text_enum!(
    /// The layers of the seed's root-cause review.
    RootCause {
        ModelSelection => "model_selection",
        ArgumentGeneration => "argument_generation",
        Authorization => "authorization",
        Integration => "integration",
        Provider => "provider",
        Parser => "parser",
        Queue => "queue",
        Policy => "policy",
        Reviewer => "reviewer",
    }
);

/// The evidence entry of a `classify` audit row that names the layer:
/// `root-cause:provider`.
pub const EVIDENCE_PREFIX: &str = "root-cause:";

/// The evidence entry a `classify` of `layer` records.
pub fn evidence(layer: RootCause) -> String {
    format!("{EVIDENCE_PREFIX}{layer}")
}

/// The layer a `classify` audit row recorded, if it is one.
pub fn classified_in(row: &AuditRow) -> Option<RootCause> {
    if row.draft.action != ActionKind::Classify.as_str() {
        return None;
    }
    row.draft
        .evidence
        .iter()
        .find_map(|e| e.strip_prefix(EVIDENCE_PREFIX).and_then(RootCause::parse))
}

/// Whether an operation in `state` has a root cause to review: it failed or it
/// is held.
pub fn applies(state: State) -> bool {
    state == State::Failed || state.is_held()
}

/// What the evidence says of the layer, and the evidence that says it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Derived {
    pub layer: RootCause,
    /// The record that decides it, in words: `attempt #2 answered HTTP 403`.
    pub because: String,
}

/// The root cause of one failed or held operation, as every surface shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum Cause {
    /// A reviewer set it (`classify`): who, and the audit row.
    Classified {
        layer: RootCause,
        by: String,
        seq: i64,
    },
    /// The evidence decides it.
    Derived(Derived),
    /// Nothing decides it yet: a reviewer classifies it.
    Unclassified,
}

impl Cause {
    /// The layer, when one is known.
    pub fn layer(&self) -> Option<RootCause> {
        match self {
            Cause::Classified { layer, .. } => Some(*layer),
            Cause::Derived(d) => Some(d.layer),
            Cause::Unclassified => None,
        }
    }

    /// The layer's name, `unclassified` when none is known.
    pub fn name(&self) -> &'static str {
        self.layer().map_or("unclassified", RootCause::as_str)
    }

    /// Why it is this layer, in words.
    pub fn because(&self) -> String {
        match self {
            Cause::Classified { by, seq, .. } => format!("classified by {by} (audit #{seq})"),
            Cause::Derived(d) => format!("derived: {}", d.because),
            Cause::Unclassified => "no record decides it: classify it".to_owned(),
        }
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} — {}", self.name(), self.because())
    }
}

/// The root cause of `detail`'s operation; `None` for one that neither failed
/// nor is held.
pub fn of(detail: &OperationDetail) -> Option<Cause> {
    of_records(&detail.row.operation, &detail.attempts, &detail.audit)
}

/// The root cause of `op` from its attempts and its audit rows (in `seq`
/// order); `None` for an operation that neither failed nor is held.
pub fn of_records<'a>(
    op: &Operation,
    attempts: &[Attempt],
    audit: impl IntoIterator<Item = &'a AuditRow, IntoIter: DoubleEndedIterator> + Clone,
) -> Option<Cause> {
    if !applies(op.state) {
        return None;
    }
    let classified = audit.clone().into_iter().rev().find_map(|row| {
        classified_in(row).map(|layer| Cause::Classified {
            layer,
            by: row.draft.by.clone(),
            seq: row.seq,
        })
    });
    Some(
        classified
            .or_else(|| derive(op, attempts, audit).map(Cause::Derived))
            .unwrap_or(Cause::Unclassified),
    )
}

/// Since when `op` has been in its state: the instant of the newest audited move
/// into it, or its creation when it was recorded in that state.
pub fn since<'a>(
    op: &Operation,
    audit: impl IntoIterator<Item = &'a AuditRow, IntoIter: DoubleEndedIterator>,
) -> chrono::DateTime<chrono::Utc> {
    audit
        .into_iter()
        .rev()
        .find(|r| r.draft.to == Some(op.state) && r.draft.from.is_some())
        .map_or(op.created_at, |r| r.draft.at)
}

/// The layer the evidence decides, first match wins:
///
/// | evidence | layer |
/// |---|---|
/// | a request answered HTTP 401 or 403, or the failure mode `auth_denied` | authorization |
/// | a request answered HTTP 400 or 422 | argument generation |
/// | the failure mode `validation_failed` with no request sent | argument generation |
/// | a response that could not be read (`invalid_response`) | parser |
/// | a request answered HTTP 429, or the failure mode `rate_limited` | provider |
/// | a request answered HTTP 5xx | provider |
/// | a request lost to DNS or a reset connection | integration |
/// | a request that failed at the queue layer | queue |
/// | the failure mode `duplicate_replay` | integration |
/// | a BLOCKED operation whose move into BLOCKED names a policy | policy |
///
/// The newest failed request is read first, then the failure mode the caller
/// recorded, then the move into BLOCKED. A timeout, a partial write or unsafe output
/// alone does not say whose defect it is: unclassified.
pub fn derive<'a>(
    op: &Operation,
    attempts: &[Attempt],
    audit: impl IntoIterator<Item = &'a AuditRow, IntoIter: DoubleEndedIterator>,
) -> Option<Derived> {
    let failed = attempts
        .iter()
        .filter(|a| a.spends_budget() && a.outcome != Outcome::Ok)
        .max_by_key(|a| a.seq);
    if let Some(found) = failed.and_then(from_attempt) {
        return Some(found);
    }
    let mode = |layer, because: &str| {
        Some(Derived {
            layer,
            because: because.to_owned(),
        })
    };
    match op.failure_mode {
        Some(FailureMode::AuthDenied) => {
            return mode(RootCause::Authorization, "failure mode auth_denied");
        }
        Some(FailureMode::RateLimited) => {
            return mode(RootCause::Provider, "failure mode rate_limited");
        }
        Some(FailureMode::DuplicateReplay) => {
            return mode(RootCause::Integration, "failure mode duplicate_replay");
        }
        Some(FailureMode::ValidationFailed)
            if !attempts
                .iter()
                .any(|a| a.spends_budget() && a.phase.may_have_crossed_boundary()) =>
        {
            return mode(
                RootCause::ArgumentGeneration,
                "validation refused the arguments before anything was sent",
            );
        }
        _ => {}
    }
    let blocked_by = (op.state == State::Blocked)
        .then(|| {
            audit
                .into_iter()
                .rev()
                .find(|r| r.draft.to == Some(State::Blocked))
        })
        .flatten()
        .and_then(|r| r.draft.policy.as_deref().map(|p| (p, r.seq)));
    blocked_by.map(|(policy, seq)| Derived {
        layer: RootCause::Policy,
        because: format!("blocked by the policy {policy} (audit #{seq})"),
    })
}

/// What one failed request decides, if anything.
fn from_attempt(a: &Attempt) -> Option<Derived> {
    let layer = match (a.http_status, a.outcome) {
        (Some(401 | 403), _) => RootCause::Authorization,
        (Some(400 | 422), _) => RootCause::ArgumentGeneration,
        (_, Outcome::InvalidResponse) => RootCause::Parser,
        (Some(429), _) => RootCause::Provider,
        (Some(500..=599), _) => RootCause::Provider,
        (_, Outcome::DnsFailure | Outcome::ConnectionReset) => RootCause::Integration,
        _ if a.layer == Some(super::model::Layer::Queue) => RootCause::Queue,
        _ => return None,
    };
    let because = match a.http_status {
        Some(status) if !matches!(layer, RootCause::Parser | RootCause::Integration) => {
            format!("attempt #{} answered HTTP {status}", a.seq)
        }
        _ if layer == RootCause::Queue => format!("attempt #{} failed in the queue", a.seq),
        _ => format!("attempt #{} ended {}", a.seq, a.outcome),
    };
    Some(Derived { layer, because })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ids::Sha256;
    use crate::core::model::{Layer, Phase};
    use chrono::{TimeZone, Utc};

    fn op(state: State, mode: Option<FailureMode>) -> Operation {
        let created = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        let mut op = Operation::bare("op-1", state, created);
        op.failure_mode = mode;
        op
    }

    fn attempt(seq: u32, outcome: Outcome, status: Option<u16>) -> Attempt {
        let mut a = Attempt::bare_request(
            &format!("A-{seq}"),
            "op-1",
            seq,
            Phase::ResponseReceived,
            outcome,
        );
        a.layer = Some(Layer::Sdk);
        a.http_status = status;
        a
    }

    fn layer(op: &Operation, attempts: &[Attempt]) -> Option<RootCause> {
        derive(op, attempts, &[]).map(|d| d.layer)
    }

    #[test]
    fn the_table_of_what_the_evidence_decides() {
        let held = op(State::Unknown, None);
        let http = |status| vec![attempt(1, Outcome::HttpError, Some(status))];
        assert_eq!(layer(&held, &http(401)), Some(RootCause::Authorization));
        assert_eq!(layer(&held, &http(403)), Some(RootCause::Authorization));
        assert_eq!(
            layer(&held, &http(400)),
            Some(RootCause::ArgumentGeneration)
        );
        assert_eq!(
            layer(&held, &http(422)),
            Some(RootCause::ArgumentGeneration)
        );
        assert_eq!(layer(&held, &http(429)), Some(RootCause::Provider));
        assert_eq!(layer(&held, &http(503)), Some(RootCause::Provider));
        assert_eq!(layer(&held, &http(409)), None);
        assert_eq!(
            layer(&held, &[attempt(1, Outcome::InvalidResponse, Some(200))]),
            Some(RootCause::Parser)
        );
        assert_eq!(
            layer(&held, &[attempt(1, Outcome::ConnectionReset, None)]),
            Some(RootCause::Integration)
        );
        assert_eq!(
            layer(&held, &[attempt(1, Outcome::DnsFailure, None)]),
            Some(RootCause::Integration)
        );
        let mut queued = attempt(1, Outcome::Rejected, None);
        queued.layer = Some(Layer::Queue);
        assert_eq!(layer(&held, &[queued]), Some(RootCause::Queue));
        // A timeout alone does not say whose defect it is.
        assert_eq!(layer(&held, &[attempt(1, Outcome::Timeout, None)]), None);
        assert_eq!(layer(&held, &[]), None);
    }

    #[test]
    fn the_newest_failed_request_decides_then_the_failure_mode_then_the_approval() {
        let held = op(State::Unknown, Some(FailureMode::RateLimited));
        let attempts = [
            attempt(1, Outcome::HttpError, Some(403)),
            attempt(2, Outcome::HttpError, Some(503)),
            attempt(3, Outcome::Ok, Some(200)),
        ];
        let d = derive(&held, &attempts, &[]).unwrap();
        assert_eq!(d.layer, RootCause::Provider);
        assert_eq!(d.because, "attempt #2 answered HTTP 503");
        // With no decisive request, the recorded failure mode decides.
        assert_eq!(
            layer(&held, &[attempt(1, Outcome::Timeout, None)]),
            Some(RootCause::Provider)
        );
        for (mode, expected) in [
            (FailureMode::AuthDenied, Some(RootCause::Authorization)),
            (FailureMode::DuplicateReplay, Some(RootCause::Integration)),
            (FailureMode::TimeoutUnknown, None),
            (FailureMode::PartialWrite, None),
            (FailureMode::UnsafeOutput, None),
            (FailureMode::TransientError, None),
        ] {
            assert_eq!(
                layer(&op(State::Unknown, Some(mode)), &[]),
                expected,
                "{mode}"
            );
        }
        // A validation failure is the arguments' only when nothing was sent.
        let validation = op(State::Blocked, Some(FailureMode::ValidationFailed));
        assert_eq!(layer(&validation, &[]), Some(RootCause::ArgumentGeneration));
        let mut sent = attempt(1, Outcome::Timeout, None);
        sent.phase = Phase::RequestSent;
        assert_eq!(layer(&validation, &[sent]), None);
        // A blocked call whose move into BLOCKED names a policy.
        let blocked = op(State::Blocked, None);
        let row = |policy: Option<&str>| AuditRow {
            seq: 7,
            draft: crate::core::audit::AuditDraft {
                operation: blocked.id.clone(),
                action: "ingest".into(),
                from: Some(State::Validated),
                to: Some(State::Blocked),
                by: "gw".into(),
                role: crate::core::model::Role::System,
                policy: policy.map(str::to_owned),
                on_behalf_of: None,
                rationale: None,
                evidence: Vec::new(),
                at: blocked.created_at,
            },
            encoding: 2,
            prev_hash: Sha256::of(b"a"),
            hash: Sha256::of(b"b"),
        };
        let d = derive(&blocked, &[], &[row(Some("no-refunds"))]).unwrap();
        assert_eq!(d.layer, RootCause::Policy);
        assert_eq!(d.because, "blocked by the policy no-refunds (audit #7)");
        assert_eq!(derive(&blocked, &[], &[row(None)]), None);
    }

    #[test]
    fn a_try_the_gateway_refused_decides_nothing() {
        let mut refused = attempt(2, Outcome::Rejected, Some(403));
        refused.phase = Phase::NotSent;
        refused.layer = Some(Layer::Gateway);
        let held = op(State::Unknown, None);
        assert_eq!(
            layer(&held, &[attempt(1, Outcome::HttpError, Some(503)), refused]),
            Some(RootCause::Provider)
        );
    }

    #[test]
    fn a_classify_row_names_its_layer_and_nothing_else_does() {
        for layer in RootCause::ALL {
            assert_eq!(
                evidence(*layer).strip_prefix(EVIDENCE_PREFIX),
                Some(layer.as_str())
            );
        }
        assert!(applies(State::Failed) && applies(State::Partial));
        assert!(!applies(State::Succeeded) && !applies(State::Sent));
    }
}
