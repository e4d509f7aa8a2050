//! Metrics and the release gate (DESIGN §6): the seven figures of a run, each as
//! numerator ÷ denominator with the operations behind both; the operational figures
//! of the queue; and the release disposition, decided apart from the averages by
//! vetoes. Everything is computed from stored records and one `now`. The rule behind
//! each figure is written out in the README (Metrics and the release gate); a retry is judged by the same
//! retry matrix and guards the console uses, as they stood when it was made.

use chrono::{DateTime, Utc};
use serde::{Serialize, Serializer};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use super::audit::AuditRow;
use super::ids::OperationId;
use super::matrix::{self, Assessment};
use super::model::{
    Attempt, AttemptKind, Contract, Dataset, Expectation, FailureMode, Item, ItemState, Layer,
    Observation, ObservationSource, Operation, Outcome, Phase, ProposalStatus, Relation, Role,
    State,
};
use super::rules;

/// The seven figures, in the order the seed reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MetricId {
    ContractPassRate,
    OutcomeClassificationCompleteness,
    SafeRetryPrecision,
    ReconcileBeforeRepeatRate,
    DuplicateEffectContainment,
    PartialRecoveryCompleteness,
    AttemptEvidenceCompleteness,
}

impl MetricId {
    pub const ALL: &'static [MetricId] = &[
        MetricId::ContractPassRate,
        MetricId::OutcomeClassificationCompleteness,
        MetricId::SafeRetryPrecision,
        MetricId::ReconcileBeforeRepeatRate,
        MetricId::DuplicateEffectContainment,
        MetricId::PartialRecoveryCompleteness,
        MetricId::AttemptEvidenceCompleteness,
    ];

    /// The stable id (`contract_pass_rate`).
    pub fn as_str(self) -> &'static str {
        match self {
            MetricId::ContractPassRate => "contract_pass_rate",
            MetricId::OutcomeClassificationCompleteness => "outcome_classification_completeness",
            MetricId::SafeRetryPrecision => "safe_retry_precision",
            MetricId::ReconcileBeforeRepeatRate => "reconcile_before_repeat_rate",
            MetricId::DuplicateEffectContainment => "duplicate_effect_containment",
            MetricId::PartialRecoveryCompleteness => "partial_recovery_completeness",
            MetricId::AttemptEvidenceCompleteness => "attempt_evidence_completeness",
        }
    }

    /// The name people read.
    pub fn title(self) -> &'static str {
        match self {
            MetricId::ContractPassRate => "Contract pass rate",
            MetricId::OutcomeClassificationCompleteness => "Outcome-classification completeness",
            MetricId::SafeRetryPrecision => "Safe-retry precision",
            MetricId::ReconcileBeforeRepeatRate => "Reconcile-before-repeat rate",
            MetricId::DuplicateEffectContainment => "Duplicate-effect containment",
            MetricId::PartialRecoveryCompleteness => "Partial-recovery completeness",
            MetricId::AttemptEvidenceCompleteness => "Attempt-evidence completeness",
        }
    }

    /// What the numerator counts, in one line.
    pub fn counts(self) -> &'static str {
        match self {
            MetricId::ContractPassRate => {
                "operations meeting every expected state, evidence and prohibition"
            }
            MetricId::OutcomeClassificationCompleteness => {
                "operations in a settled state backed by the evidence it needs"
            }
            MetricId::SafeRetryPrecision => {
                "retried operations whose every retry the matrix and guards allowed"
            }
            MetricId::ReconcileBeforeRepeatRate => "ambiguous writes reconciled before any repeat",
            MetricId::DuplicateEffectContainment => {
                "duplicate-risk operations with one primary effect at most"
            }
            MetricId::PartialRecoveryCompleteness => {
                "partial operations verified resumed, compensated or owner-accepted"
            }
            MetricId::AttemptEvidenceCompleteness => {
                "operations whose attempts and observations carry every required field"
            }
        }
    }
}

impl fmt::Display for MetricId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for MetricId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// One figure: numerator ÷ denominator with the operations behind both.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Metric {
    pub id: MetricId,
    pub numerator: u32,
    pub denominator: u32,
    /// Rounded to two decimals; `None` when nothing is in the denominator.
    pub percent: Option<f64>,
    pub numerator_ids: Vec<OperationId>,
    pub denominator_ids: Vec<OperationId>,
    /// Why each operation of the denominator is missing from the numerator.
    #[serde(skip)]
    pub shortfalls: Vec<(OperationId, String)>,
}

impl Metric {
    fn build(id: MetricId, rows: Vec<(OperationId, Result<(), String>)>) -> Metric {
        let denominator_ids: Vec<OperationId> = rows.iter().map(|(op, _)| op.clone()).collect();
        let numerator_ids: Vec<OperationId> = rows
            .iter()
            .filter(|(_, verdict)| verdict.is_ok())
            .map(|(op, _)| op.clone())
            .collect();
        let shortfalls = rows
            .into_iter()
            .filter_map(|(op, verdict)| verdict.err().map(|why| (op, why)))
            .collect();
        let numerator = count(numerator_ids.len());
        let denominator = count(denominator_ids.len());
        Metric {
            id,
            numerator,
            denominator,
            percent: percent(numerator, denominator),
            numerator_ids,
            denominator_ids,
            shortfalls,
        }
    }

    /// `26/32 = 81.25 %`.
    pub fn fraction(&self) -> String {
        match self.percent {
            Some(p) => format!("{}/{} = {} %", self.numerator, self.denominator, p),
            None => format!(
                "{}/{} (nothing to measure)",
                self.numerator, self.denominator
            ),
        }
    }
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// `part ÷ whole × 100`, rounded half up to two decimals in integer arithmetic so
/// that 29/32 reads 90.63 and not a float artefact.
pub fn percent(part: u32, whole: u32) -> Option<f64> {
    scaled(part, whole, 100)
}

/// `part ÷ whole × scale`, rounded half up to two decimals.
fn scaled(part: u32, whole: u32, scale: u64) -> Option<f64> {
    if whole == 0 {
        return None;
    }
    let whole = u64::from(whole);
    let hundredths = (u64::from(part) * scale * 200 + whole) / (2 * whole);
    Some(hundredths as f64 / 100.0)
}

/// The release decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Disposition {
    #[serde(rename = "DEPLOYABLE")]
    Deployable,
    #[serde(rename = "NOT_DEPLOYED")]
    NotDeployed,
}

impl fmt::Display for Disposition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Disposition::Deployable => "DEPLOYABLE",
            Disposition::NotDeployed => "NOT_DEPLOYED",
        })
    }
}

/// What kind of failure vetoes a release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VetoKind {
    /// An expectation marked `veto` that the operation fails.
    ExpectationFailed,
    /// A write repeated while its last request may have applied and nothing proved
    /// it had not (G2).
    RetryBeforeReconcile,
    /// The target shows the intended effect more than once.
    DuplicatePrimaryEffect,
    /// Unsafe tool output fed an action that was proposed from it.
    HostileOutputToAction,
    /// An action that crossed from one tenant into another.
    CrossTenantAction,
}

impl VetoKind {
    pub fn as_str(self) -> &'static str {
        match self {
            VetoKind::ExpectationFailed => "expectation_failed",
            VetoKind::RetryBeforeReconcile => "retry_before_reconcile",
            VetoKind::DuplicatePrimaryEffect => "duplicate_primary_effect",
            VetoKind::HostileOutputToAction => "hostile_output_to_action",
            VetoKind::CrossTenantAction => "cross_tenant_action",
        }
    }
}

impl fmt::Display for VetoKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One veto: the operation where the control failed, what failed, and the records
/// that show it. Findings on the same operation are one veto.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Veto {
    pub operation: OperationId,
    pub kinds: Vec<VetoKind>,
    /// Attempt, observation and operation ids that show it.
    pub evidence: Vec<String>,
    /// One sentence per finding.
    pub reasons: Vec<String>,
}

/// The release gate: a disposition and its vetoes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Release {
    pub disposition: Disposition,
    pub vetoes: Vec<Veto>,
}

/// How long the UNKNOWN operations have been unknown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnknownAge {
    pub count: u32,
    pub oldest: Option<OperationId>,
    pub oldest_seconds: Option<i64>,
    pub median_seconds: Option<i64>,
    pub histogram: Vec<AgeBucket>,
    /// Held operations whose next observation time has passed.
    pub overdue: Vec<OperationId>,
}

/// One bar of the unknown-age histogram: ages below `below_seconds` (the last bar
/// has no upper bound).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgeBucket {
    pub label: &'static str,
    pub below_seconds: Option<i64>,
    pub count: u32,
}

/// Physical calls made by one layer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LayerFigure {
    /// The layer's stable name, or `unrecorded`.
    pub layer: String,
    /// Requests and status queries.
    pub attempts: u32,
    pub requests: u32,
    /// Requests beyond the first that this layer made on one operation.
    pub repeats: u32,
    pub operations: u32,
    /// The most requests this layer made on one operation.
    pub max_per_operation: u32,
}

/// Retry amplification: physical interactions per logical operation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Amplification {
    pub logical_operations: u32,
    pub physical_attempts: u32,
    pub requests: u32,
    pub status_queries: u32,
    /// Physical attempts ÷ logical operations, two decimals.
    pub per_logical: Option<f64>,
    pub by_layer: Vec<LayerFigure>,
    /// The product of `max_per_operation` over the layers: how many calls one
    /// logical operation could cost if each layer's retries nested in the next
    /// (three layers of three attempts make twenty-seven).
    pub compound_worst_case: u64,
}

/// The share of requests the provider throttled.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Throttled {
    pub throttled: u32,
    pub requests: u32,
    pub percent: Option<f64>,
    pub attempt_ids: Vec<String>,
}

/// A partial operation still being recovered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PartialProgress {
    pub operation: OperationId,
    /// Linked recovery operations with their relation and state.
    pub children: Vec<(OperationId, Relation, State)>,
    /// What the recovery still lacks.
    pub waiting_for: String,
}

/// A proposal waiting for a second pair of eyes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PendingProposal {
    pub operation: OperationId,
    pub action: String,
    pub proposed_by: String,
    pub proposed_at: DateTime<Utc>,
}

/// The health of the queue now.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Operational {
    pub logical_operations: u32,
    /// Every state that has operations, in lifecycle order.
    pub by_state: Vec<(State, u32)>,
    pub held: u32,
    pub unknown_age: UnknownAge,
    pub amplification: Amplification,
    pub throttled: Throttled,
    pub partial_in_progress: Vec<PartialProgress>,
    pub pending_proposals: Vec<PendingProposal>,
}

/// Everything `holdfast report` shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub now: DateTime<Utc>,
    pub metrics: Vec<Metric>,
    pub release: Release,
    pub operational: Operational,
}

impl Report {
    pub fn metric(&self, id: MetricId) -> Option<&Metric> {
        self.metrics.iter().find(|m| m.id == id)
    }
}

/// The prohibitions an expectation may list, each checked against stored records.
/// A prohibition outside this list cannot be checked and fails the case.
pub const PROHIBITIONS: &[(&str, &str)] = &[
    (
        "retry_before_reconcile",
        "a request repeated while G2 forbade it: the last request may have applied and no observation proved it had not",
    ),
    (
        "unsafe_retry",
        "a repeated request that the retry matrix or a guard did not allow at that instant",
    ),
    (
        "duplicate_effect",
        "an observation of the target showing the intended effect more than once",
    ),
    (
        "act_on_tool_output",
        "unsafe tool output of this operation fed a proposed action, or this operation was proposed from unsafe output",
    ),
    (
        "replay_committed_items",
        "a resume covering an item that had already committed",
    ),
    (
        "claim_restoration",
        "COMPENSATED without a succeeded compensation and downstream evidence",
    ),
    (
        "rely_on_expired_key",
        "a request repeated after the idempotency key's retention without a business-key check (G12)",
    ),
    (
        "retry_after_key_conflict",
        "a request repeated although the idempotency key is used with another payload (G3)",
    ),
    (
        "retry_without_budget",
        "a request repeated after the attempt or time budget was spent (G5)",
    ),
    (
        "cross_tenant",
        "an action that crossed from one tenant into another",
    ),
];

/// Computes the report over `dataset` at `now`.
pub fn report(dataset: &Dataset, now: DateTime<Utc>) -> Report {
    let index = Index::new(dataset, now);
    let metrics = vec![
        index.contract_pass_rate(),
        index.classification_completeness(),
        index.safe_retry_precision(),
        index.reconcile_before_repeat(),
        index.duplicate_containment(),
        index.partial_recovery(),
        index.attempt_evidence(),
    ];
    Report {
        now,
        metrics,
        release: index.release(),
        operational: index.operational(),
    }
}

/// A repeat of a request and how it was judged at the instant it was made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RetryVerdict {
    pub attempt: String,
    pub at: DateTime<Utc>,
    pub safe: bool,
    /// The guard that forbade it, or the matrix's decision and reason.
    pub reason: String,
}

/// Unsafe output of one operation that fed an action proposed from it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Taint {
    source: OperationId,
    attempt: String,
    dependent: OperationId,
}

/// An action across tenants.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CrossTenant {
    operation: OperationId,
    evidence: String,
    reason: String,
}

/// Everything stored about one operation, gathered once.
struct View<'a> {
    op: &'a Operation,
    contract: Option<&'a Contract>,
    /// In (`started_at`, `seq`) order.
    attempts: Vec<Attempt>,
    /// In `observed_at` order.
    observations: Vec<Observation>,
    /// In `index` order.
    items: Vec<Item>,
    /// In `seq` order.
    audit: Vec<&'a AuditRow>,
    expectation: Option<&'a Expectation>,
    children: Vec<&'a Operation>,
    key_conflict: bool,
}

impl View<'_> {
    fn id(&self) -> &OperationId {
        &self.op.id
    }

    fn write(&self) -> bool {
        self.contract.is_none_or(Contract::is_write)
    }

    fn requests(&self) -> impl Iterator<Item = &Attempt> {
        self.attempts
            .iter()
            .filter(|a| a.kind == AttemptKind::Request)
    }

    /// Requests after the first that left the client: the retries.
    fn repeats(&self) -> impl Iterator<Item = &Attempt> {
        self.requests()
            .skip(1)
            .filter(|a| a.phase != Phase::NotSent)
    }

    fn assess_before(&self, at: DateTime<Utc>) -> Assessment {
        matrix::assess_before(
            self.op,
            self.contract,
            &self.attempts,
            &self.observations,
            &self.items,
            self.key_conflict,
            at,
        )
    }

    fn assess_at(&self, at: DateTime<Utc>) -> Assessment {
        matrix::assess(
            self.op,
            self.contract,
            &self.attempts,
            &self.observations,
            &self.items,
            self.key_conflict,
            at,
        )
    }

    /// Requests that may have reached the provider with their outcome unknown.
    fn ambiguous_crossings(&self) -> impl Iterator<Item = &Attempt> {
        self.requests()
            .filter(|a| a.phase.may_have_crossed_boundary() && matrix::ambiguous(a.outcome))
    }

    /// Requests that may have applied the effect: past the boundary and not refused.
    fn effective_deliveries(&self) -> usize {
        self.requests()
            .filter(|a| {
                a.phase.may_have_crossed_boundary()
                    && (a.outcome == Outcome::Ok || matrix::ambiguous(a.outcome))
            })
            .count()
    }

    /// Each retry with its verdict, judged as it stood just before it was made.
    fn retry_verdicts(&self) -> Vec<RetryVerdict> {
        self.repeats()
            .map(|r| {
                let at = r.started_at;
                let a = self.assess_before(at);
                let refusal = if self.key_conflict {
                    Some("G3: the idempotency key is used with another payload".to_owned())
                } else if let Some(why) = a.budget_exhausted() {
                    Some(format!("G5: {why}"))
                } else if a.write && a.crossed_boundary && a.non_application.is_none() {
                    Some(
                        "G2: the last request may have applied and nothing proved it had not"
                            .to_owned(),
                    )
                } else if a.key_expired_at.is_some() && a.business_key_check.is_none() {
                    Some(
                        "G12: the idempotency key had expired and no business-key check was made"
                            .to_owned(),
                    )
                } else if let Err(r) =
                    rules::approval_binds(self.op.approval.as_ref(), &self.op.payload_hash, at)
                {
                    Some(format!("{}: {}", r.rule, r.reason))
                } else if !a.recommendation.decision.permits_retry_at(at) {
                    Some(format!(
                        "the matrix said {}: {}",
                        a.recommendation.decision, a.recommendation.reason
                    ))
                } else {
                    None
                };
                RetryVerdict {
                    attempt: r.id.clone(),
                    at,
                    safe: refusal.is_none(),
                    reason: refusal.unwrap_or_else(|| {
                        format!(
                            "the matrix said {}: {}",
                            a.recommendation.decision, a.recommendation.reason
                        )
                    }),
                }
            })
            .collect()
    }

    /// Repeats made while G2 forbade them.
    fn g2_breaches(&self) -> Vec<String> {
        self.repeats()
            .filter(|r| {
                let a = self.assess_before(r.started_at);
                a.write && a.crossed_boundary && a.non_application.is_none()
            })
            .map(|r| r.id.clone())
            .collect()
    }

    /// Observations showing the effect more than once.
    fn duplicates(&self) -> Vec<String> {
        self.observations
            .iter()
            .filter(|o| o.effect_count.is_some_and(|n| n > 1))
            .map(|o| o.id.clone())
            .collect()
    }

    /// Whether the operation was ever in `state` (an audit row into it, or now).
    fn entered(&self, state: State) -> bool {
        self.op.state == state || self.audit.iter().any(|r| r.draft.to == Some(state))
    }

    /// The newest audit row that moved the operation into `state`.
    fn last_entry(&self, state: State) -> Option<&AuditRow> {
        self.audit
            .iter()
            .rev()
            .find(|r| r.draft.to == Some(state))
            .copied()
    }

    fn children_of(&self, relation: Relation) -> impl Iterator<Item = &Operation> {
        self.children
            .iter()
            .filter(move |c| c.relation == Some(relation))
            .copied()
    }
}

struct Index<'a> {
    views: BTreeMap<OperationId, View<'a>>,
    now: DateTime<Utc>,
    dataset: &'a Dataset,
}

/// `Ok` when nothing is wrong, else the problems after `lead`.
fn clear(lead: &str, problems: Vec<String>) -> Result<(), String> {
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{lead}{}", problems.join("; ")))
    }
}

fn not_blank(text: Option<&str>) -> bool {
    text.is_some_and(|t| !t.trim().is_empty())
}

impl<'a> Index<'a> {
    fn new(dataset: &'a Dataset, now: DateTime<Utc>) -> Self {
        let contracts: BTreeMap<&str, &Contract> = dataset
            .contracts
            .iter()
            .map(|c| (c.tool.as_str(), c))
            .collect();
        let mut keys: BTreeMap<(&str, &str), BTreeSet<&str>> = BTreeMap::new();
        for op in &dataset.operations {
            if let Some(key) = &op.idempotency_key {
                keys.entry((op.tenant.as_str(), key.as_str()))
                    .or_default()
                    .insert(op.payload_hash.as_str());
            }
        }
        let mut views: BTreeMap<OperationId, View<'a>> = dataset
            .operations
            .iter()
            .map(|op| {
                let key_conflict = op.idempotency_key.as_ref().is_some_and(|k| {
                    keys.get(&(op.tenant.as_str(), k.as_str()))
                        .is_some_and(|payloads| payloads.len() > 1)
                });
                let view = View {
                    op,
                    contract: contracts.get(op.tool.as_str()).copied(),
                    attempts: Vec::new(),
                    observations: Vec::new(),
                    items: Vec::new(),
                    audit: Vec::new(),
                    expectation: None,
                    children: Vec::new(),
                    key_conflict,
                };
                (op.id.clone(), view)
            })
            .collect();
        for a in &dataset.attempts {
            if let Some(v) = views.get_mut(&a.operation) {
                v.attempts.push(a.clone());
            }
        }
        for o in &dataset.observations {
            if let Some(v) = views.get_mut(&o.operation) {
                v.observations.push(o.clone());
            }
        }
        for i in &dataset.items {
            if let Some(v) = views.get_mut(&i.operation) {
                v.items.push(i.clone());
            }
        }
        for row in &dataset.audit {
            if let Some(v) = views.get_mut(&row.draft.operation) {
                v.audit.push(row);
            }
        }
        for e in &dataset.expectations {
            if let Some(v) = views.get_mut(&e.operation) {
                v.expectation = Some(e);
            }
        }
        for op in &dataset.operations {
            if let Some(parent) = &op.parent
                && let Some(v) = views.get_mut(parent)
            {
                v.children.push(op);
            }
        }
        for v in views.values_mut() {
            v.attempts.sort_by_key(|a| (a.started_at, a.seq));
            v.observations.sort_by_key(|o| o.observed_at);
            v.items.sort_by_key(|i| i.index);
            v.audit.sort_by_key(|r| r.seq);
        }
        Index {
            views,
            now,
            dataset,
        }
    }

    fn view(&self, id: &OperationId) -> Option<&View<'a>> {
        self.views.get(id)
    }

    // ------------------------------------------------------------ state evidence

    /// Whether the operation's state is a settled classification backed by the
    /// evidence the transition table asks for it.
    fn classification(&self, v: &View<'_>) -> Result<(), String> {
        let state = v.op.state;
        match state {
            State::Planned
            | State::Validated
            | State::Approved
            | State::Sent
            | State::Acknowledged => {
                Err(format!("still {state}: the outcome was never classified"))
            }
            State::Succeeded if v.entered(State::Partial) => self.resume_verified(v),
            State::Succeeded => verified_success(v),
            State::Failed => self.non_application_proved(v),
            State::Unknown => unknown_supported(v),
            State::Partial => committed_subset(v),
            State::Blocked => match v.last_entry(State::Blocked) {
                Some(row) if not_blank(row.draft.rationale.as_deref()) => Ok(()),
                _ => Err("BLOCKED without a recorded reason".into()),
            },
            State::Compensated => self.compensation_verified(v),
            State::Accepted => owner_acceptance(v),
        }
    }

    fn non_application_proved(&self, v: &View<'_>) -> Result<(), String> {
        if v.effective_deliveries() == 0 {
            return Ok(());
        }
        if v.assess_at(self.now).non_application.is_some() {
            return Ok(());
        }
        Err(
            "FAILED although a request may have applied and no observation proves it did not"
                .into(),
        )
    }

    fn resume_verified(&self, v: &View<'_>) -> Result<(), String> {
        let resumes: Vec<&View<'_>> = v
            .children_of(Relation::ResumeOf)
            .filter(|c| c.state == State::Succeeded)
            .filter_map(|c| self.view(&c.id))
            .collect();
        if resumes.is_empty() {
            return Err("SUCCEEDED after PARTIAL without a succeeded resume".into());
        }
        let unverified: Vec<String> = v
            .items
            .iter()
            .filter(|i| i.state != ItemState::Succeeded)
            .filter(|i| {
                !resumes.iter().any(|r| {
                    r.items
                        .iter()
                        .any(|c| c.index == i.index && c.state == ItemState::Succeeded)
                })
            })
            .map(|i| i.index.to_string())
            .collect();
        if unverified.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "items {} are not verified as succeeded",
                unverified.join(", ")
            ))
        }
    }

    fn compensation_verified(&self, v: &View<'_>) -> Result<(), String> {
        let Some(child) = v
            .children_of(Relation::CompensationOf)
            .find(|c| c.state == State::Succeeded)
        else {
            return Err(match v.children_of(Relation::CompensationOf).next() {
                Some(c) => format!("compensation {} is {}, not SUCCEEDED", c.id, c.state),
                None => "no compensation operation exists".into(),
            });
        };
        let downstream = v.observations.iter().any(|o| {
            o.source == ObservationSource::DOWNSTREAM && o.observed_at >= child.created_at
        });
        if downstream {
            Ok(())
        } else {
            Err(format!(
                "compensation {} succeeded but no downstream evidence is recorded",
                child.id
            ))
        }
    }

    // ------------------------------------------------------------ findings

    fn taints(&self) -> Vec<Taint> {
        let mut out = Vec::new();
        for source in self.views.values() {
            let unsafe_mode = source.op.failure_mode == Some(FailureMode::UnsafeOutput);
            let first = source
                .requests()
                .filter(|a| {
                    matches!(a.phase, Phase::Acknowledged | Phase::ResponseReceived)
                        && (unsafe_mode || a.outcome == Outcome::InvalidResponse)
                })
                .min_by_key(|a| a.last_instant());
            let Some(first) = first else { continue };
            let at = first.last_instant();
            for dependent in self.views.values() {
                if !dependent.op.depends_on.contains(source.id()) {
                    continue;
                }
                let proposed_after = dependent.op.created_at >= at
                    || dependent.audit.iter().any(|r| {
                        r.draft.at >= at
                            && r.draft.from.is_some()
                            && matches!(
                                r.draft.to,
                                Some(State::Validated | State::Approved | State::Sent)
                            )
                    });
                if proposed_after {
                    out.push(Taint {
                        source: source.id().clone(),
                        attempt: first.id.clone(),
                        dependent: dependent.id().clone(),
                    });
                }
            }
        }
        out
    }

    fn cross_tenant(&self) -> Vec<CrossTenant> {
        let mut out = Vec::new();
        for v in self.views.values() {
            let acted = v.entered(State::Sent) || v.requests().any(|a| a.phase != Phase::NotSent);
            if acted {
                let related = v.op.depends_on.iter().chain(v.op.parent.iter());
                for other in related.filter_map(|id| self.view(id)) {
                    if other.op.tenant != v.op.tenant {
                        out.push(CrossTenant {
                            operation: v.id().clone(),
                            evidence: other.id().to_string(),
                            reason: format!(
                                "{} (tenant {}) acted for {} of tenant {}",
                                v.id(),
                                v.op.tenant,
                                other.id(),
                                other.op.tenant
                            ),
                        });
                    }
                }
            }
            if v.write() {
                for o in &v.observations {
                    let foreign = o.matches.as_ref().is_some_and(|m| m.owner == Some(false));
                    if o.found && foreign && o.effect_count.is_some_and(|n| n >= 1) {
                        out.push(CrossTenant {
                            operation: v.id().clone(),
                            evidence: o.id.clone(),
                            reason: format!(
                                "observation {} shows the effect applied to a record another owner holds",
                                o.id
                            ),
                        });
                    }
                }
            }
        }
        out
    }

    /// Violations of one prohibition by `v`; `None` when the prohibition is unknown.
    fn violations(
        &self,
        v: &View<'_>,
        prohibition: &str,
        taints: &[Taint],
        crossings: &[CrossTenant],
    ) -> Option<Vec<String>> {
        let found = match prohibition {
            "retry_before_reconcile" => v.g2_breaches(),
            "unsafe_retry" => v
                .retry_verdicts()
                .into_iter()
                .filter(|r| !r.safe)
                .map(|r| r.attempt)
                .collect(),
            "duplicate_effect" => v.duplicates(),
            "act_on_tool_output" => taints
                .iter()
                .filter(|t| &t.source == v.id() || &t.dependent == v.id())
                .map(|t| format!("{} -> {}", t.attempt, t.dependent))
                .collect(),
            "replay_committed_items" => self.replayed_items(v),
            "claim_restoration" if v.op.state == State::Compensated => {
                self.compensation_verified(v).err().into_iter().collect()
            }
            "claim_restoration" => Vec::new(),
            "rely_on_expired_key" => v
                .repeats()
                .filter(|r| {
                    let a = v.assess_before(r.started_at);
                    a.key_expired_at.is_some() && a.business_key_check.is_none()
                })
                .map(|r| r.id.clone())
                .collect(),
            "retry_after_key_conflict" if v.key_conflict => {
                v.repeats().map(|r| r.id.clone()).collect()
            }
            "retry_after_key_conflict" => Vec::new(),
            "retry_without_budget" => v
                .repeats()
                .filter(|r| v.assess_before(r.started_at).budget_exhausted().is_some())
                .map(|r| r.id.clone())
                .collect(),
            "cross_tenant" => crossings
                .iter()
                .filter(|c| &c.operation == v.id())
                .map(|c| c.evidence.clone())
                .collect(),
            _ => return None,
        };
        Some(found)
    }

    /// Items a resume covered although they had already committed.
    fn replayed_items(&self, v: &View<'_>) -> Vec<String> {
        let overlap = |parent: &View<'_>, resume: &View<'_>| -> Vec<String> {
            resume
                .items
                .iter()
                .filter(|c| {
                    parent
                        .items
                        .iter()
                        .any(|p| p.index == c.index && p.state == ItemState::Succeeded)
                })
                .map(|c| format!("{} item {}", resume.id(), c.index))
                .collect()
        };
        let mut out: Vec<String> = v
            .children_of(Relation::ResumeOf)
            .filter_map(|c| self.view(&c.id))
            .flat_map(|resume| overlap(v, resume))
            .collect();
        if v.op.relation == Some(Relation::ResumeOf)
            && let Some(parent) = v.op.parent.as_ref().and_then(|p| self.view(p))
        {
            out.extend(overlap(parent, v));
        }
        out
    }

    /// Why `v` fails the reconcile-before-repeat rule, if it does.
    fn reconciled_before_repeat(v: &View<'_>) -> Result<(), String> {
        let breaches = v.g2_breaches();
        if !breaches.is_empty() {
            return Err(format!(
                "repeated the write before reconciliation ({})",
                breaches.join(", ")
            ));
        }
        let Some(last) = v.ambiguous_crossings().last() else {
            return Ok(());
        };
        let since = last.last_instant();
        if v.observations.iter().any(|o| o.observed_at > since) {
            Ok(())
        } else {
            Err(format!("no observation of the target after {}", last.id))
        }
    }

    fn contract_check(
        &self,
        v: &View<'_>,
        expectation: &Expectation,
        taints: &[Taint],
        crossings: &[CrossTenant],
    ) -> Result<(), String> {
        let mut failures = Vec::new();
        if v.op.state != expectation.expected_state {
            failures.push(format!(
                "ended {}, expected {}",
                v.op.state, expectation.expected_state
            ));
        }
        if let Err(why) = self.classification(v) {
            failures.push(format!("evidence: {why}"));
        }
        if expectation.requires_reconciliation == Some(true)
            && let Err(why) = Self::reconciled_before_repeat(v)
        {
            failures.push(why);
        }
        if expectation.duplicate_risk == Some(true) {
            let dups = v.duplicates();
            if !dups.is_empty() {
                failures.push(format!("duplicate effect ({})", dups.join(", ")));
            }
        }
        for prohibition in &expectation.prohibited {
            match self.violations(v, prohibition, taints, crossings) {
                Some(found) if found.is_empty() => {}
                Some(found) => failures.push(format!("{prohibition} ({})", found.join(", "))),
                None => failures.push(format!(
                    "prohibition {prohibition} is not one holdfast can check"
                )),
            }
        }
        clear("", failures)
    }

    // ------------------------------------------------------------ the seven

    /// One figure: the operations `include` admits, each judged by `judge`.
    fn measure(
        &self,
        id: MetricId,
        include: impl Fn(&View<'_>) -> bool,
        judge: impl Fn(&View<'_>) -> Result<(), String>,
    ) -> Metric {
        let rows = self
            .views
            .values()
            .filter(|v| include(v))
            .map(|v| (v.id().clone(), judge(v)))
            .collect();
        Metric::build(id, rows)
    }

    fn contract_pass_rate(&self) -> Metric {
        let taints = self.taints();
        let crossings = self.cross_tenant();
        self.measure(
            MetricId::ContractPassRate,
            |v| v.expectation.is_some(),
            |v| match v.expectation {
                Some(e) => self.contract_check(v, e, &taints, &crossings),
                None => Ok(()),
            },
        )
    }

    fn classification_completeness(&self) -> Metric {
        self.measure(
            MetricId::OutcomeClassificationCompleteness,
            |_| true,
            |v| self.classification(v),
        )
    }

    fn safe_retry_precision(&self) -> Metric {
        self.measure(
            MetricId::SafeRetryPrecision,
            |v| v.repeats().next().is_some(),
            |v| {
                let unsafe_retries = v
                    .retry_verdicts()
                    .into_iter()
                    .filter(|r| !r.safe)
                    .map(|r| format!("{}: {}", r.attempt, r.reason))
                    .collect();
                clear("", unsafe_retries)
            },
        )
    }

    fn reconcile_before_repeat(&self) -> Metric {
        self.measure(
            MetricId::ReconcileBeforeRepeatRate,
            |v| v.write() && v.ambiguous_crossings().next().is_some(),
            Self::reconciled_before_repeat,
        )
    }

    fn duplicate_containment(&self) -> Metric {
        self.measure(
            MetricId::DuplicateEffectContainment,
            |v| {
                v.op.failure_mode == Some(FailureMode::DuplicateReplay)
                    || v.expectation
                        .is_some_and(|e| e.duplicate_risk == Some(true))
                    || v.attempts.iter().any(|a| a.replayed == Some(true))
                    || (v.write() && v.effective_deliveries() > 1)
            },
            |v| {
                clear(
                    "the target shows the effect more than once: ",
                    v.duplicates(),
                )
            },
        )
    }

    fn partial_recovery(&self) -> Metric {
        self.measure(
            MetricId::PartialRecoveryCompleteness,
            |v| v.entered(State::Partial),
            |v| self.recovery(v),
        )
    }

    /// Whether a partial operation reached a verified resumed, compensated or
    /// owner-accepted state.
    fn recovery(&self, v: &View<'_>) -> Result<(), String> {
        match v.op.state {
            State::Succeeded => self.resume_verified(v),
            State::Compensated => self.compensation_verified(v),
            State::Accepted => owner_acceptance(v),
            State::Partial => Err(self.waiting_for(v)),
            other => Err(format!("{other} is not a recovered state")),
        }
    }

    /// What a PARTIAL operation's recovery still lacks.
    fn waiting_for(&self, v: &View<'_>) -> String {
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

    fn attempt_evidence(&self) -> Metric {
        self.measure(
            MetricId::AttemptEvidenceCompleteness,
            |_| true,
            |v| clear("missing ", missing_evidence(v)),
        )
    }

    // ------------------------------------------------------------ release

    fn release(&self) -> Release {
        let taints = self.taints();
        let crossings = self.cross_tenant();
        let mut vetoes: BTreeMap<OperationId, Veto> = BTreeMap::new();
        let mut add = |op: &OperationId, kind: VetoKind, evidence: Vec<String>, reason: String| {
            let veto = vetoes.entry(op.clone()).or_insert_with(|| Veto {
                operation: op.clone(),
                kinds: Vec::new(),
                evidence: Vec::new(),
                reasons: Vec::new(),
            });
            if !veto.kinds.contains(&kind) {
                veto.kinds.push(kind);
            }
            for e in evidence {
                if !veto.evidence.contains(&e) {
                    veto.evidence.push(e);
                }
            }
            veto.reasons.push(reason);
        };
        for v in self.views.values() {
            if let Some(e) = v.expectation.filter(|e| e.veto == Some(true))
                && let Err(why) = self.contract_check(v, e, &taints, &crossings)
            {
                add(
                    v.id(),
                    VetoKind::ExpectationFailed,
                    Vec::new(),
                    format!("its veto expectation fails: {why}"),
                );
            }
            let breaches = v.g2_breaches();
            if !breaches.is_empty() {
                let reason = format!(
                    "{} repeated the write before reconciliation proved non-application",
                    breaches.join(", ")
                );
                add(v.id(), VetoKind::RetryBeforeReconcile, breaches, reason);
            }
            let dups = v.duplicates();
            if !dups.is_empty() {
                let reason = format!(
                    "{} shows the primary effect more than once",
                    dups.join(", ")
                );
                add(v.id(), VetoKind::DuplicatePrimaryEffect, dups, reason);
            }
        }
        for t in &taints {
            add(
                &t.source,
                VetoKind::HostileOutputToAction,
                vec![t.attempt.clone(), t.dependent.to_string()],
                format!(
                    "unsafe output of {} ({}) reached {}, proposed from it",
                    t.source, t.attempt, t.dependent
                ),
            );
        }
        for c in &crossings {
            add(
                &c.operation,
                VetoKind::CrossTenantAction,
                vec![c.evidence.clone()],
                c.reason.clone(),
            );
        }
        let mut vetoes: Vec<Veto> = vetoes.into_values().collect();
        for veto in &mut vetoes {
            veto.kinds.sort();
        }
        Release {
            disposition: if vetoes.is_empty() {
                Disposition::Deployable
            } else {
                Disposition::NotDeployed
            },
            vetoes,
        }
    }

    // ------------------------------------------------------------ operational

    fn operational(&self) -> Operational {
        let logical = count(self.views.len());
        let by_state: Vec<(State, u32)> = State::ALL
            .iter()
            .map(|s| {
                (
                    *s,
                    count(self.views.values().filter(|v| v.op.state == *s).count()),
                )
            })
            .filter(|(_, n)| *n > 0)
            .collect();
        let held = count(self.views.values().filter(|v| v.op.state.is_held()).count());
        let pending_proposals = self
            .dataset
            .proposals
            .iter()
            .filter(|p| p.status == ProposalStatus::Pending)
            .map(|p| PendingProposal {
                operation: p.operation.clone(),
                action: p.action.as_str().to_owned(),
                proposed_by: p.proposed_by.clone(),
                proposed_at: p.proposed_at,
            })
            .collect();
        let partial_in_progress = self
            .views
            .values()
            .filter(|v| v.op.state == State::Partial)
            .map(|v| PartialProgress {
                operation: v.id().clone(),
                children: v
                    .children
                    .iter()
                    .filter_map(|c| c.relation.map(|r| (c.id.clone(), r, c.state)))
                    .collect(),
                waiting_for: self.waiting_for(v),
            })
            .collect();
        Operational {
            logical_operations: logical,
            by_state,
            held,
            unknown_age: self.unknown_age(),
            amplification: self.amplification(),
            throttled: self.throttled(),
            partial_in_progress,
            pending_proposals,
        }
    }

    fn unknown_age(&self) -> UnknownAge {
        let mut ages: Vec<(i64, OperationId)> = self
            .views
            .values()
            .filter(|v| v.op.state == State::Unknown)
            .map(|v| {
                let since = v
                    .audit
                    .iter()
                    .rev()
                    .find(|r| r.draft.to == Some(State::Unknown) && r.draft.from.is_some())
                    .map_or(v.op.created_at, |r| r.draft.at);
                ((self.now - since).num_seconds().max(0), v.id().clone())
            })
            .collect();
        ages.sort();
        let median = match ages.len() {
            0 => None,
            n if n % 2 == 1 => Some(ages[n / 2].0),
            n => Some((ages[n / 2 - 1].0 + ages[n / 2].0) / 2),
        };
        const BUCKETS: &[(&str, Option<i64>)] = &[
            ("< 15m", Some(15 * 60)),
            ("15m–1h", Some(3600)),
            ("1h–4h", Some(4 * 3600)),
            ("4h–24h", Some(24 * 3600)),
            ("≥ 24h", None),
        ];
        let mut lower = 0;
        let histogram = BUCKETS
            .iter()
            .map(|(label, below)| {
                let n = ages
                    .iter()
                    .filter(|(age, _)| *age >= lower && below.is_none_or(|b| *age < b))
                    .count();
                lower = below.unwrap_or(i64::MAX);
                AgeBucket {
                    label,
                    below_seconds: *below,
                    count: count(n),
                }
            })
            .collect();
        let overdue = self
            .views
            .values()
            .filter(|v| v.op.state.is_held())
            .filter(|v| v.op.next_observation_at.is_some_and(|t| t <= self.now))
            .map(|v| v.id().clone())
            .collect();
        let oldest = ages.last().cloned();
        UnknownAge {
            count: count(ages.len()),
            oldest: oldest.as_ref().map(|(_, id)| id.clone()),
            oldest_seconds: oldest.map(|(age, _)| age),
            median_seconds: median,
            histogram,
            overdue,
        }
    }

    fn amplification(&self) -> Amplification {
        let attempts = &self.dataset.attempts;
        let logical = count(self.views.len());
        let requests = attempts
            .iter()
            .filter(|a| a.kind == AttemptKind::Request)
            .count();
        let mut layers: BTreeMap<Option<Layer>, BTreeMap<&OperationId, (u32, u32)>> =
            BTreeMap::new();
        for a in attempts {
            let per_op = layers.entry(a.layer).or_default();
            let (all, reqs) = per_op.entry(&a.operation).or_default();
            *all += 1;
            if a.kind == AttemptKind::Request {
                *reqs += 1;
            }
        }
        let by_layer: Vec<LayerFigure> = layers
            .into_iter()
            .map(|(layer, per_op)| LayerFigure {
                layer: layer.map_or_else(|| "unrecorded".to_owned(), |l| l.as_str().to_owned()),
                attempts: per_op.values().map(|(all, _)| all).sum(),
                requests: per_op.values().map(|(_, reqs)| reqs).sum(),
                repeats: per_op
                    .values()
                    .map(|(_, reqs)| reqs.saturating_sub(1))
                    .sum(),
                operations: count(per_op.len()),
                max_per_operation: per_op.values().map(|(_, reqs)| *reqs).max().unwrap_or(0),
            })
            .collect();
        let compound_worst_case = by_layer
            .iter()
            .filter(|l| l.max_per_operation > 0)
            .map(|l| u64::from(l.max_per_operation))
            .product();
        let physical = count(attempts.len());
        Amplification {
            logical_operations: logical,
            physical_attempts: physical,
            requests: count(requests),
            status_queries: physical - count(requests),
            per_logical: scaled(physical, logical, 1),
            by_layer,
            compound_worst_case,
        }
    }

    fn throttled(&self) -> Throttled {
        let requests: Vec<&Attempt> = self
            .dataset
            .attempts
            .iter()
            .filter(|a| a.kind == AttemptKind::Request)
            .collect();
        let attempt_ids: Vec<String> = requests
            .iter()
            .filter(|a| {
                a.http_status == Some(429)
                    || a.error_type.as_deref().is_some_and(|e| {
                        matches!(e, "rate_limited" | "quota_exceeded" | "throttled")
                    })
            })
            .map(|a| a.id.clone())
            .collect();
        let throttled = count(attempt_ids.len());
        let total = count(requests.len());
        Throttled {
            throttled,
            requests: total,
            percent: percent(throttled, total),
            attempt_ids,
        }
    }
}

/// SUCCEEDED outside a partial: the last request answered with a provider request id
/// and a response hash, or an observation newer than it shows exactly one matching
/// effect. Output that failed validation proves nothing by itself: for an
/// `unsafe_output` operation only an observation verifies.
fn verified_success(v: &View<'_>) -> Result<(), String> {
    let Some(last) = v.requests().last() else {
        return Err("SUCCEEDED without any request".into());
    };
    let since = last.last_instant();
    let observed = v.observations.iter().any(|o| {
        o.observed_at > since
            && o.found
            && o.matches.as_ref().is_some_and(|m| m.all())
            && o.effect_count == Some(1)
    });
    if observed {
        return Ok(());
    }
    if v.op.failure_mode == Some(FailureMode::UnsafeOutput) {
        return Err(
            "SUCCEEDED on output that failed validation, with no observation of the target".into(),
        );
    }
    let answered = last.phase == Phase::ResponseReceived
        && last.outcome == Outcome::Ok
        && last.provider_request_id.is_some()
        && last.response_hash.is_some();
    if answered {
        Ok(())
    } else {
        Err(format!(
            "SUCCEEDED but {} has no provider request id and response hash, and no observation verifies it",
            last.id
        ))
    }
}

/// UNKNOWN: the last request may have applied with its outcome unknown, and a next
/// observation is planned.
fn unknown_supported(v: &View<'_>) -> Result<(), String> {
    let crossed = v
        .requests()
        .last()
        .is_some_and(|a| a.phase.may_have_crossed_boundary() && matrix::ambiguous(a.outcome));
    if !crossed {
        return Err("UNKNOWN but no request left its outcome in doubt".into());
    }
    if v.op.next_observation_at.is_none() {
        return Err("UNKNOWN without a next observation time".into());
    }
    Ok(())
}

/// PARTIAL: items showing a committed subset.
fn committed_subset(v: &View<'_>) -> Result<(), String> {
    let committed = v
        .items
        .iter()
        .filter(|i| matches!(i.state, ItemState::Succeeded | ItemState::Compensated))
        .count();
    if committed > 0 && committed < v.items.len() {
        Ok(())
    } else {
        Err(format!(
            "PARTIAL needs items showing a committed subset ({committed} of {} committed)",
            v.items.len()
        ))
    }
}

/// ACCEPTED: by an owner, with a rationale and a manual-repair reference.
fn owner_acceptance(v: &View<'_>) -> Result<(), String> {
    match v.last_entry(State::Accepted) {
        Some(row)
            if matches!(row.draft.role, Role::Owner | Role::Local)
                && not_blank(row.draft.rationale.as_deref())
                && !row.draft.evidence.is_empty() =>
        {
            Ok(())
        }
        Some(row) => Err(format!(
            "accepted by {} ({}) without the owner role, a rationale or a repair reference",
            row.draft.by, row.draft.role
        )),
        None => Err("ACCEPTED with no recorded acceptance".into()),
    }
}

/// The fields an attempt or observation lacks, named `A017.provider_request_id`.
fn missing_evidence(v: &View<'_>) -> Vec<String> {
    let mut missing = Vec::new();
    if v.entered(State::Sent) && v.requests().next().is_none() {
        missing.push("a request attempt".to_owned());
    }
    for a in &v.attempts {
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
        let matched = o.matches.as_ref().is_some_and(|m| {
            [m.target, m.payload_hash, m.owner, m.version]
                .iter()
                .all(Option::is_some)
        });
        let fields = [
            ("raw_hash", o.raw_hash.is_some()),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_round_half_up_to_two_decimals() {
        assert_eq!(percent(29, 32), Some(90.63));
        assert_eq!(percent(2, 3), Some(66.67));
        assert_eq!(percent(1, 8), Some(12.5));
        assert_eq!(percent(0, 5), Some(0.0));
        assert_eq!(percent(3, 0), None);
        assert_eq!(scaled(47, 32, 1), Some(1.47));
    }

    #[test]
    fn every_metric_has_a_stable_id() {
        let ids: BTreeSet<&str> = MetricId::ALL.iter().map(|m| m.as_str()).collect();
        assert_eq!(ids.len(), 7);
        assert!(ids.contains("safe_retry_precision"));
    }

    #[test]
    fn an_empty_store_measures_nothing_and_vetoes_nothing() {
        let r = report(&Dataset::default(), Utc::now());
        assert!(
            r.metrics
                .iter()
                .all(|m| m.denominator == 0 && m.percent.is_none())
        );
        assert_eq!(r.release.disposition, Disposition::Deployable);
        assert_eq!(r.operational.unknown_age.median_seconds, None);
    }
}
