//! The seven figures' per-operation rules: which operations enter each
//! denominator, and whether each one is counted, short or unverified.

use super::dataset::Index;
use super::facts::{FigureFacts, MetricId, Verdict};
use super::findings::{CrossTenant, Taint};
use super::view::View;
use std::collections::BTreeSet;

use crate::core::model::{ActionKind, FailureMode, Outcome, Phase, Relation, Role, State};

impl Index<'_> {
    /// The seven figures' facts, in the order the seed reports them.
    pub(super) fn figures(&self, taints: &[Taint], crossings: &[CrossTenant]) -> Vec<FigureFacts> {
        vec![
            self.measure(
                MetricId::ContractPassRate,
                |v| v.expectation.is_some(),
                |v| match v.expectation {
                    Some(e) => self.contract_check(v, e, taints, crossings).into(),
                    None => Verdict::Counted,
                },
            ),
            self.measure(
                MetricId::OutcomeClassificationCompleteness,
                |_| true,
                |v| self.classification(v).into(),
            ),
            self.measure(
                MetricId::SafeRetryPrecision,
                |v| v.repeats().next().is_some(),
                safe_retries,
            ),
            self.measure(
                MetricId::ReconcileBeforeRepeatRate,
                |v| v.write() && v.ambiguous_crossings().next().is_some(),
                |v| Self::reconciled_before_repeat(v).into(),
            ),
            self.measure(
                MetricId::DuplicateEffectContainment,
                at_duplicate_risk,
                containment,
            ),
            self.measure(
                MetricId::PartialRecoveryCompleteness,
                |v| v.entered(State::Partial),
                |v| self.recovery(v).into(),
            ),
            self.measure(
                MetricId::AttemptEvidenceCompleteness,
                |_| true,
                |v| Verdict::unless("missing ", missing_evidence(v)),
            ),
        ]
    }

    /// One figure: the operations `include` admits, each judged by `judge`.
    fn measure(
        &self,
        id: MetricId,
        include: impl Fn(&View<'_>) -> bool,
        judge: impl Fn(&View<'_>) -> Verdict,
    ) -> FigureFacts {
        let rows = self
            .judged_views()
            .filter(|v| include(v))
            .map(|v| (v.id().clone(), judge(v)))
            .collect();
        FigureFacts { id, rows }
    }

    /// Whether a partial operation reached a verified resumed, compensated or
    /// owner-accepted state.
    fn recovery(&self, v: &View<'_>) -> Result<(), String> {
        match v.op.state {
            State::Succeeded => self.resume_verified(v),
            State::Compensated => self.compensation_verified(v),
            State::Accepted => super::classification::owner_acceptance(v),
            State::Partial => Err(self.waiting_for(v)),
            other => Err(format!("{other} is not a recovered state")),
        }
    }

    /// What a PARTIAL operation's recovery still lacks.
    pub(super) fn waiting_for(&self, v: &View<'_>) -> String {
        if v.children.is_empty() {
            return "no resume or compensation approved yet".into();
        }
        let compensation = v
            .children_of(Relation::CompensationOf)
            .next()
            .map(|_| self.compensation_verified(v));
        let resume = v
            .children_of(Relation::ResumeOf)
            .next()
            .map(|_| self.resume_verified(v));
        let open: Vec<String> = [compensation, resume]
            .into_iter()
            .flatten()
            .filter_map(Result::err)
            .collect();
        if open.is_empty() {
            "recovery verified; waiting for a reviewer to mark it".into()
        } else {
            open.join("; ")
        }
    }
}

/// Every retry allowed when it was made.
fn safe_retries(v: &View<'_>) -> Verdict {
    let unsafe_retries = v
        .retry_verdicts()
        .into_iter()
        .filter(|r| !r.safe)
        .map(|r| format!("{}: {}", r.attempt, r.reason))
        .collect();
    Verdict::unless("", unsafe_retries)
}

/// At duplicate risk: failure mode `duplicate_replay`, an expectation with
/// `duplicate_risk`, an attempt marked replayed, or a write delivered more than
/// once in a way that may have applied.
fn at_duplicate_risk(v: &View<'_>) -> bool {
    v.op.failure_mode == Some(FailureMode::DuplicateReplay)
        || v.expectation
            .is_some_and(|e| e.duplicate_risk == Some(true))
        || v.attempts.iter().any(|a| a.replayed == Some(true))
        || (v.write() && v.effective_deliveries() > 1)
}

/// Contained: at least one observation of the target exists and none shows the
/// effect more than once. Without an observation containment is unverified, never
/// assumed.
fn containment(v: &View<'_>) -> Verdict {
    if v.observations.is_empty() {
        return Verdict::Unverified(
            "unverified: no observation of the target shows how often the effect applied".into(),
        );
    }
    Verdict::unless(
        "the target shows the effect more than once: ",
        v.duplicates(),
    )
}

/// The ids of the status queries and observations a person recorded: the
/// evidence a reviewer's `reconcile` audit row names.
fn entered_by_person<'v>(v: &'v View<'_>) -> BTreeSet<&'v str> {
    v.audit
        .iter()
        .filter(|r| {
            r.draft.action == ActionKind::Reconcile.as_str() && r.draft.role != Role::System
        })
        .flat_map(|r| r.draft.evidence.iter().map(String::as_str))
        .collect()
}

/// The fields an attempt or observation lacks, named `A017.provider_request_id`.
/// A status query a reviewer recorded was made by a person, not a client: it
/// needs no layer, trace id, request hash or transport fields, and its
/// observation is complete with either the raw answer's hash or a reference to
/// where the reviewer looked.
pub(super) fn missing_evidence(v: &View<'_>) -> Vec<String> {
    let mut missing = Vec::new();
    if v.entered(State::Sent) && v.requests().next().is_none() {
        missing.push("a request attempt".to_owned());
    }
    let by_person = entered_by_person(v);
    for a in &v.attempts {
        if by_person.contains(a.id.as_str()) {
            let fields = [
                ("ended_at", a.ended_at.is_some()),
                ("resend_count", a.resend_count.is_some()),
            ];
            missing.extend(
                fields
                    .iter()
                    .filter(|(_, present)| !present)
                    .map(|(name, _)| format!("{}.{name}", a.id)),
            );
            continue;
        }
        let answered = matches!(a.phase, Phase::Acknowledged | Phase::ResponseReceived);
        let fields = [
            ("ended_at", a.ended_at.is_some()),
            ("layer", a.layer.is_some()),
            ("trace_id", a.trace_id.is_some()),
            ("request_hash", a.request_hash.is_some()),
            ("resend_count", a.resend_count.is_some()),
            (
                "provider_request_id",
                !answered || a.provider_request_id.is_some(),
            ),
            ("response_hash", !answered || a.response_hash.is_some()),
            (
                "http_status",
                a.phase != Phase::ResponseReceived || a.http_status.is_some(),
            ),
            (
                "error_type",
                a.outcome == Outcome::Ok || a.error_type.is_some(),
            ),
        ];
        missing.extend(
            fields
                .iter()
                .filter(|(_, present)| !present)
                .map(|(name, _)| format!("{}.{name}", a.id)),
        );
    }
    for o in &v.observations {
        let matched = o.matches.is_some()
            && crate::core::lookup::compared_fields(o)
                .iter()
                .all(Option::is_some);
        let sourced = if by_person.contains(o.id.as_str()) {
            (
                "raw_hash_or_reference",
                o.raw_hash.is_some() || o.note.is_some(),
            )
        } else {
            ("raw_hash", o.raw_hash.is_some())
        };
        let fields = [
            sourced,
            ("matches", !o.found || matched),
            ("effect_count", !o.found || o.effect_count.is_some()),
        ];
        missing.extend(
            fields
                .iter()
                .filter(|(_, present)| !present)
                .map(|(name, _)| format!("{}.{name}", o.id)),
        );
    }
    missing
}
